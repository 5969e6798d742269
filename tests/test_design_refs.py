"""Every design id the code and the docs use (I1, R18, K3, P6b, ...) is defined in ``docs/design/``, every
relative link in ``docs/`` reaches its file and anchor, and nothing points outside the repository (the ids
used to point at ``../shared/DESIGN.md``, a page in the team's workspace, not in the repository; code and
tests named the team's issue tracker, "issue 8 item 5", and ids of cases no page defined)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from docs_hooks.reference import fill

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design"
SCANNED = ("graphcore", "worker", "scheduler", "cli", "bench", "docs", "charts", "README.md", "Makefile")
# Where a reference must resolve: the scanned files, the tests and the examples (``graphq/``'s folders are
# links to the scanned ones). This file spells the forms out to test its regexes, so it is left out.
EVERYWHERE = (*SCANNED, "examples", "tests", "graphq/__init__.py")
HERE = Path(__file__).resolve()

# An id: a family letter and a number (P2b, P6b: a benchmark's second line), not inside a word, a dotted
# name or a hex string (``0xC1``, ``foo.P1``).
ID = re.compile(r"(?<![\w.])([IGCXRKOP]\d{1,2}b?)(?!\w)")
ANCHOR = re.compile(r'<a id="([a-z0-9_-]+)"></a>')
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A pointer into the team's issue tracker, not in the repository: "issue 8", "Issue 23:", "issues 8 and 9",
# "item 5 of issue 8", "the hardening issue, item 6". The word in other senses ("an issue with X", a GitHub
# link ``.../issues/12``) is not one.
ISSUE = re.compile(
    r"\bissues? #?\d|\bitems? \d+(?:[-\u2013]\d+)? of issue\b|\bissue, items? \d", re.IGNORECASE
)
# Anything shaped like an id (a family of one to three capitals and a number; not ``A-Z0`` in a regex, a
# dotted name, a word), for the family check.
ANY_ID = re.compile(r"(?<![\w.-])([A-Z]{1,3})(\d{1,2}[a-z]?)(?!\w|\.\w)")


def text_files(names: tuple[str, ...] = SCANNED) -> list[Path]:
    """The named files and every text file under the named folders (no caches, no binaries)."""
    found: list[Path] = []
    for name in names:
        path = ROOT / name
        paths = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        found += [p for p in paths if "__pycache__" not in p.parts and p.suffix not in {".pyc", ".bin"}]
    return found


def all_files() -> list[Path]:
    """Every text file of EVERYWHERE, but this one."""
    return [p for p in text_files(EVERYWHERE) if p.resolve() != HERE]


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


def broken_links(docs: Path, root: Path = ROOT, pages: list[Path] | None = None) -> list[str]:
    """Each relative link of a page under ``docs`` (or of ``pages``, under ``docs``) whose file is missing or
    outside ``root``, or whose anchor the file lacks: ``page.md: target``."""
    broken = []
    for page in sorted(docs.rglob("*.md")) if pages is None else pages:
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
    """Each id used in the code, docs and tests, and where (``path:line``)."""
    used: dict[str, set[str]] = {}
    for path in all_files():
        for number, line in enumerate(read(path).splitlines(), 1):
            for found in ID.findall(line):
                used.setdefault(found, set()).add(f"{path.relative_to(ROOT)}:{number}")
    return used


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of what a reader reads as words: a Python file's comments and docstrings
    (every string that is a statement of its own), every line of any other file."""
    text = read(path)
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), 1)
        return
    lines = text.splitlines()
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            end = node.end_lineno or node.lineno
            yield from ((n, lines[n - 1]) for n in range(node.lineno, end + 1))
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def defined_families() -> set[str]:
    """The id families ``docs/design/`` defines: the letters of its ids (I, G, ..., P)."""
    return {re.sub(r"\d.*", "", anchor).upper() for anchor in defined_ids() if ID.fullmatch(anchor.upper())}


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
    """In ``docs/`` and in the README, which links to the documentation's pages."""
    assert broken_links(ROOT / "docs") == []
    assert broken_links(ROOT, pages=[ROOT / "README.md"]) == []


def test_every_module_and_test_a_design_page_names_exists() -> None:
    """The pages of ``docs/`` (the design pages, the architecture, the guides, ...) say where each entry lives
    (``worker/step/lease.py``) and which tests show it: a file moved or renamed must not leave a page naming
    it."""
    named = re.compile(r"`((?:graphcore|worker|scheduler|cli|bench|tests|charts|examples)/[\w./-]*)`")
    paths = {path for page in (ROOT / "docs").rglob("*.md") for path in named.findall(read(page))}
    assert len(paths) > 100
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []


def test_nothing_points_outside_the_repository() -> None:
    outside = re.compile(r"\.\./shared|shared/DESIGN|\bDESIGN\.md\b")
    pointing = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in [*all_files(), ROOT / "pyproject.toml"]
        for number, line in enumerate(read(path).splitlines(), 1)
        if outside.search(line)
    ]
    assert pointing == []


def test_the_issue_regex_tells_a_tracker_pointer_from_the_word() -> None:
    pointers = [
        "issue 8 item 5",
        "(item 5 of issue 8)",
        "Issue 23: warns",
        "issues 8 and 9",
        "issue 11's first",
        "items 1-2 of issue 8",
        "(the LangChain interop issue, item 2)",
        "hardening issue, items 2 and 3",
    ]
    words = ["an issue with X", "https://github.com/rq/rq/issues/2015", "Issue ``warnings.warn``", "no issue"]
    assert [p for p in pointers if not ISSUE.search(p)] == []
    assert [w for w in words if ISSUE.search(w)] == []


def test_the_family_scan_sees_ids_in_prose_only(tmp_path: Path) -> None:
    """An id is seen in a docstring, a comment or a line of a page, not in code, a regex or a dotted name."""
    found = ANY_ID.findall("B18, F1. P6b 0xC1 [A-Z0-9] foo.B1 SIGUSR1 2026-09-10T05:00")
    assert found == [("B", "18"), ("F", "1"), ("P", "6b")]
    module = tmp_path / "m.py"
    module.write_text('"""Case B18."""\n\nclass S2:  # M1\n    V2 = "N1"\n', encoding="utf-8")
    assert list(prose(module)) == [(1, '"""Case B18."""'), (3, "# M1")]


def test_nothing_points_into_the_issue_tracker() -> None:
    """Code, docs and tests say the thing itself (or a design id), not "issue 8 item 5": the tracker is not in
    the repository, a reader of the code cannot decode the number."""
    pointing = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in all_files()
        for number, line in enumerate(read(path).splitlines(), 1)
        if ISSUE.search(line)
    ]
    assert pointing == []


def test_every_id_in_comments_and_docs_is_of_a_family_docs_design_defines() -> None:
    """An id such as ``B18`` or ``F1`` (a case of a list no page holds) is as opaque as an issue number."""
    families = defined_families()
    assert families == set("IGCXRKOP")
    foreign = [
        f"{path.relative_to(ROOT)}:{number}: {family}{number_}"
        for path in all_files()
        for number, line in prose(path)
        for family, number_ in ANY_ID.findall(line)
        if family not in families
    ]
    assert foreign == []
