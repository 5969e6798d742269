"""Every design id the code and the docs use (I1, R18, K3, P6b, ...) is defined in ``docs/design/``, every
relative link in ``docs/`` reaches its file and anchor, and nothing points outside the repository (the ids
used to point at ``../shared/DESIGN.md``, a page in the team's workspace, not in the repository)."""

from __future__ import annotations

import re
from pathlib import Path

from docs_hooks.reference import fill

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design"
SCANNED = ("graphcore", "worker", "scheduler", "cli", "bench", "docs", "charts", "README.md", "Makefile")

# An id: a family letter and a number (P2b, P6b: a benchmark's second line), not inside a word, a dotted
# name or a hex string (``0xC1``, ``foo.P1``).
ID = re.compile(r"(?<![\w.])([IGCXRKOP]\d{1,2}b?)(?!\w)")
ANCHOR = re.compile(r'<a id="([a-z0-9_-]+)"></a>')
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def text_files() -> list[Path]:
    """The scanned files and every text file under the scanned folders (no caches, no binaries)."""
    found: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        paths = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        found += [p for p in paths if "__pycache__" not in p.parts and p.suffix not in {".pyc", ".bin"}]
    return found


def read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


def slug(heading: str) -> str:
    """The anchor GitHub and the site (mkdocs.yml's ``slugify``) give a heading: lower case, punctuation
    dropped (letters, digits, ``_`` and ``-`` stay), each space a hyphen (``a — b`` → ``a--b``)."""
    return re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page: its ``<a id>``s and its headings', the generated sections' included (the
    command reference's ``graphq runs answer`` heading: docs_hooks/reference.py)."""
    text = fill(read(page))
    return set(ANCHOR.findall(text)) | {slug(h) for h in HEADING.findall(text)}


def broken_links(docs: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of a page under ``docs`` whose file is missing or outside ``root``, or whose
    anchor the file lacks: ``page.md: target``."""
    broken = []
    for page in sorted(docs.rglob("*.md")):
        for target in LINK.findall(read(page)):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists() or root.resolve() not in path.parents:
                broken.append(f"{page.relative_to(docs)}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{page.relative_to(docs)}: {target} (no such anchor)")
    return broken


def defined_ids() -> dict[str, Path]:
    """Each id an explicit anchor of ``docs/design/`` defines (lower case, as linked), and its page."""
    return {anchor: page for page in sorted(DESIGN.glob("*.md")) for anchor in ANCHOR.findall(read(page))}


def used_ids() -> dict[str, set[str]]:
    """Each id used in the scanned files, and where (``path:line``)."""
    used: dict[str, set[str]] = {}
    for path in text_files():
        for number, line in enumerate(read(path).splitlines(), 1):
            for found in ID.findall(line):
                used.setdefault(found, set()).add(f"{path.relative_to(ROOT)}:{number}")
    return used


def test_the_scan_finds_the_ids_it_must() -> None:
    """The regex sees the ids as the code writes them (a scan that finds nothing passes anything)."""
    used = used_ids()
    assert {"I1", "G10", "C6", "X1", "R18", "K3", "O4", "P2b", "P6b"} <= set(used)
    assert "graphcore/keys.py:1" in used["I8"]
    assert not ID.findall("0xC1 foo.P1 P1x GP1 sP6b")


def test_every_design_id_used_is_defined_in_docs_design() -> None:
    defined = defined_ids()
    undefined = {i: sorted(where)[:3] for i, where in used_ids().items() if i.lower() not in defined}
    assert undefined == {}


def test_every_design_anchor_names_its_id_in_the_heading_after_it() -> None:
    """``<a id="r18"></a>`` is followed by a heading that starts with ``R18`` (a reader sees the id)."""
    wrong = []
    for page in sorted(DESIGN.glob("*.md")):
        for match in re.finditer(r'<a id="([a-z0-9_-]+)"></a>\n(#{1,6} \S+)', read(page)):
            anchor, heading = match.groups()
            if ID.fullmatch(anchor.upper()) and heading.split(" ", 1)[1] != anchor.upper():
                wrong.append((page.name, anchor, heading))
        bare = len(ANCHOR.findall(read(page))) - len(re.findall(r'<a id="[a-z0-9_-]+"></a>\n#', read(page)))
        assert bare == 0, f"{page.name}: an anchor not followed by a heading"
    assert wrong == []


def test_every_relative_link_in_docs_reaches_its_file_and_anchor() -> None:
    assert broken_links(ROOT / "docs") == []


def test_every_module_and_test_a_design_page_names_exists() -> None:
    """The pages say where each entry lives (``worker/step/lease.py``) and which tests show it: a file moved
    or renamed must not leave a page naming it."""
    named = re.compile(r"`((?:graphcore|worker|scheduler|cli|bench|tests|charts|examples)/[\w./-]*)`")
    paths = {path for page in DESIGN.glob("*.md") for path in named.findall(read(page))}
    assert len(paths) > 100
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []


def test_nothing_points_outside_the_repository() -> None:
    outside = re.compile(r"\.\./shared|shared/DESIGN|\bDESIGN\.md\b")
    pointing = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in [*text_files(), ROOT / "pyproject.toml"]
        for number, line in enumerate(read(path).splitlines(), 1)
        if outside.search(line)
    ]
    assert pointing == []
