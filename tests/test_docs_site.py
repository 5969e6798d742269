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


def table_rows(site: Path, page: str) -> list[list[str]]:
    """The body rows of a built page's tables, each a list of its cells' text."""
    page_html = (site / page / "index.html").read_text()
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", page_html, re.DOTALL):
        cells = re.findall(r"<td>(.*?)</td>", row, re.DOTALL)
        if cells:
            rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return rows


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
    every = {row[0]: row for row in table_rows(site, "reference/settings")}
    rows = {name: row for name, row in every.items() if len(row) == 5}
    assert set(rows) == {f"GRAPHQ_{field.upper()}" for field in Settings.model_fields}
    others = {name: row[1] for name, row in every.items() if len(row) == 2}
    assert others == {name: meaning.replace("`", "") for name, meaning in OTHER_VARIABLES.items()}
    for field, info in Settings.model_fields.items():
        _, _, _, allowed, meaning = rows[f"GRAPHQ_{field.upper()}"]
        assert allowed == allowed_range(field), field
        assert meaning == " ".join((info.description or "").replace("`", "").split()), field
    assert rows["GRAPHQ_LEASE_TTL_S"][1:4] == ["number", "20", "0 < value ≤ 3600"]
    assert rows["GRAPHQ_QUEUE"][4].startswith(
        "Prefix of the RQ queues carrying step jobs (<prefix>:<workflow>)"
    )
    assert Settings.model_fields["lease_ttl_s"].default == 20.0
    assert rows["GRAPHQ_REDIS_URL"][1:3] == ["text or unset", "unset"]
    assert rows["GRAPHQ_LOG_FORMAT"][1:3] == ["text or json", "text"]
    assert rows["GRAPHQ_ENABLED"][1:3] == ["boolean (true/false)", "true"]


def test_the_metrics_page_has_every_metric_with_its_type_and_labels(site: Path) -> None:
    rows = {row[0]: row for row in table_rows(site, "reference/metrics")}
    assert set(rows) == set(metrics.METRICS)
    exposed = metrics.exposed_names()
    for name, (doc, labels) in metrics.METRICS.items():
        kind = "histogram" if f"{name}_bucket" in exposed else "gauge"
        kind = "counter" if name.endswith("_total") else kind
        assert rows[name][1:] == [kind, ", ".join(labels) or "none", doc], name
    assert rows["graphq_steps_total"][1:3] == ["counter", "workflow, outcome"]


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
