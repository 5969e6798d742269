"""The documentation site (mkdocs.yml) builds strictly; its generated reference pages hold every command,
setting and metric of the code; a broken link or anchor fails the build, and the build and
tests/test_design_refs.py agree on which links are broken (the same heading anchors)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from mkdocs.exceptions import PluginError

from docs_hooks.reference import fill
from graphcore.settings import OTHER_VARIABLES, Settings, allowed_range
from graphq.cli.main import main
from graphq.worker import metrics
from tests.test_design_refs import broken_links, slug

ROOT = Path(__file__).resolve().parent.parent
BUILD_TIMEOUT_S = 300


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``, in a subprocess (as ``make docs`` runs it)."""
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        command, cwd=config.parent, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr
    return out


def text(site: Path, page: str) -> str:
    """A built page's article as text (tags dropped, entities decoded)."""
    page_html = (site / page / "index.html").read_text()
    article = page_html[page_html.index("<article") : page_html.index("</article>")]
    return html.unescape(re.sub(r"<[^>]+>", "", article))


def sections(site: Path, page: str) -> dict[str, list[str]]:
    """The ``<h2>`` and ``<h3>`` sections of a built page: heading text → the text of each paragraph under
    it (tags dropped, entities decoded)."""
    page_html = (site / page / "index.html").read_text()
    page_html = page_html[page_html.index("<article") : page_html.index("</article>")]
    found = {}
    for part in re.split(r"(?=<h[23] )", page_html)[1:]:
        heading = html.unescape(re.sub(r"<[^>]+>", "", part[: part.index("</h")])).rstrip("¶")
        paragraphs = re.findall(r"<p>(.*?)</p>", part, re.DOTALL)
        found[heading] = [" ".join(html.unescape(re.sub(r"<[^>]+>", "", p)).split()) for p in paragraphs]
    return found


def commands(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    """``(command path, command)`` for ``graphq`` and each of its commands and subcommands."""
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from commands(sub, f"{path} {name}")


def test_the_command_page_has_every_command_with_its_usage_and_options(site: Path) -> None:
    page_html = (site / "reference" / "cli" / "index.html").read_text()
    every = list(commands(main, "graphq"))
    assert len(every) > len(main.commands) > 10  # the walk goes into the groups (runs, schedules, ...)
    for path, command in every:
        anchor = page_html.index(f'id="{slug(path)}"')
        section = html.unescape(page_html[anchor : page_html.find("<h", anchor + 1)])
        assert f"Usage: {path} [OPTIONS]" in section, path
        for param in command.params:
            assert all(opt in section for opt in param.opts if isinstance(param, click.Option)), (path, param)
    for name in main.commands:
        assert f"graphq {name}" in text(site, "reference/cli")


def test_the_settings_page_has_every_setting_with_its_default_range_and_meaning(site: Path) -> None:
    found = sections(site, "reference/settings")
    variables = {f"GRAPHQ_{field.upper()}": info for field, info in Settings.model_fields.items()}
    assert set(found) == {*variables, "Other variables", *OTHER_VARIABLES}
    for variable, info in variables.items():
        facts, meaning = found[variable]
        assert meaning == " ".join((info.description or "").replace("`", "").split()), variable
        assert facts.endswith(allowed_range(variable.removeprefix("GRAPHQ_").lower())), variable
    assert found["GRAPHQ_LEASE_TTL_S"][0] == "number · default 20 · 0 < value ≤ 3600"
    assert Settings.model_fields["lease_ttl_s"].default == 20.0
    assert found["GRAPHQ_REDIS_URL"][0] == "text or unset · default unset"
    assert found["GRAPHQ_WORKFLOWS"][0] == "text · default empty"
    assert found["GRAPHQ_LOG_FORMAT"][0] == "text or json · default text"
    assert found["GRAPHQ_ENABLED"][0] == "boolean (true/false) · default true"
    assert found["GRAPHQ_QUEUE"][1].startswith(
        "Prefix of the RQ queues carrying step jobs (<prefix>:<workflow>)"
    )
    for variable, meaning in OTHER_VARIABLES.items():
        assert found[variable] == [meaning.replace("`", "")]


def test_the_metrics_page_has_every_metric_with_its_type_and_labels(site: Path) -> None:
    found = sections(site, "reference/metrics")
    assert set(found) == set(metrics.METRICS)
    exposed = metrics.exposed_names()
    for name, (doc, labels) in metrics.METRICS.items():
        kind = "histogram" if f"{name}_bucket" in exposed else "gauge"
        kind = "counter" if name.endswith("_total") else kind
        assert found[name] == [f"{kind} · labels {', '.join(labels) or 'none'}", doc], name
    assert found["graphq_steps_total"][0] == "counter · labels workflow, outcome"


TRICKY_HEADINGS = [
    "Step 3: `graphq runs answer --value` (R13)",
    "What is kept — and for how long?",
    "GRAPHQ_LEASE_TTL_S & the heartbeat",
    "Retry/backoff: 2 * 5 s, max_wait_s",
    "Überblick",
]
"""Headings whose anchors depend on the slug rule: backticks, punctuation, a dash between spaces,
underscores, a non-ASCII letter."""


def test_a_broken_link_or_anchor_fails_the_build_and_the_two_checks_agree(tmp_path: Path) -> None:
    """A copy of docs/ whose home page links to a missing page and a missing anchor, and to the anchors
    test_design_refs.slug gives tricky headings and to a generated heading: mkdocs refuses exactly the two
    broken links, as test_design_refs does."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "docs_hooks").symlink_to(ROOT / "docs_hooks")
    broken = ["missing.md", "reference/settings.md#no-such-anchor"]
    good = [f"#{slug(h)}" for h in TRICKY_HEADINGS] + ["reference/cli.md#graphq-runs-answer"]
    links = "\n".join(f"- [link {i}]({target})" for i, target in enumerate(good + broken))
    headings = "\n\n".join(f"## {h}\n\nText." for h in TRICKY_HEADINGS)
    with (tmp_path / "docs" / "index.md").open("a") as home:
        home.write(f"\n{links}\n\n{headings}\n")

    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")

    assert done.returncode != 0
    refused = re.findall(r"^WARNING +- +Doc file 'index.md' contains a link '([^']+)'", done.stderr, re.M)
    assert sorted(refused) == broken, done.stderr
    assert broken_links(tmp_path / "docs", tmp_path) == [
        "index.md: missing.md",
        "index.md: reference/settings.md#no-such-anchor (no such anchor)",
    ]


def test_a_page_asking_for_an_unknown_generated_section_stops_the_build_naming_it() -> None:
    with pytest.raises(PluginError) as raised:
        fill("# Settings\n\n<!-- generated: setings -->\n")
    assert str(raised.value) == "<!-- generated: setings -->: no such section (known: cli, settings, metrics)"
