"""The ``code-inventory`` demo workflow: exact report values on a known tree, errors, the real stdlib."""

from __future__ import annotations

import sysconfig
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import msgpack
import pytest

from graphcore import NodeError
from graphq.examples.code_inventory import describe_error, format_report, graph, inventory_module

SHAPES = '''"""Shapes."""


class Square:
    """A square."""

    def __init__(self, side: int) -> None:
        """Store the side."""
        self.side = side

    def area(self) -> int:
        return self.side * self.side
'''

SHAPES_RECORD = {
    "path": "pkg/shapes.py",
    "lines": 12,
    "functions": 2,
    "classes": 1,
    "documented": 3,  # module, class, __init__
    "definitions": 4,  # module, class, two methods
    "largest_function": "Square.__init__",
    "largest_function_lines": 3,
}

EMPTY_RECORD = {
    "path": "empty.py",
    "lines": 0,
    "functions": 0,
    "classes": 0,
    "documented": 0,
    "definitions": 1,
    "largest_function": "",
    "largest_function_lines": 0,
}

BROKEN_FAILURE = {"path": "broken.py", "error": "SyntaxError: invalid syntax (line 1)"}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Three known modules, plus a non-Python file and a site-packages module that must be ignored."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "shapes.py").write_text(SHAPES, encoding="utf-8")
    (tmp_path / "broken.py").write_text("def broken(:\n    pass\n", encoding="utf-8")
    (tmp_path / "empty.py").write_text("", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not python\n", encoding="utf-8")
    (tmp_path / "site-packages").mkdir()
    (tmp_path / "site-packages" / "vendored.py").write_text("x = 1\n", encoding="utf-8")
    return tmp_path


def test_inventory_of_known_tree_is_exact(tree: Path) -> None:
    out = graph.invoke({"root": str(tree)})
    assert out["files"] == ["broken.py", "empty.py", "pkg/shapes.py"]
    assert out["modules"] == [EMPTY_RECORD, SHAPES_RECORD]
    assert out["failures"] == [BROKEN_FAILURE]
    assert out["report"] == {
        "root": str(tree),
        "totals": {
            "files": 3,
            "parsed": 2,
            "failed": 1,
            "lines": 12,
            "functions": 2,
            "classes": 1,
            "documented": 3,
            "definitions": 5,
            "docstring_coverage": 60.0,
        },
        "largest_modules": [
            {"path": "pkg/shapes.py", "lines": 12, "functions": 2, "classes": 1},
            {"path": "empty.py", "lines": 0, "functions": 0, "classes": 0},
        ],
        "largest_function": {"path": "pkg/shapes.py", "name": "Square.__init__", "lines": 3},
        "failures": [BROKEN_FAILURE],
    }


def test_one_parse_task_per_file_then_one_report(tree: Path) -> None:
    steps = [next(iter(update)) for update in graph.stream({"root": str(tree)}, stream_mode="updates")]
    assert steps == ["list_files", "parse_file", "parse_file", "parse_file", "report"]


def test_state_is_msgpack_safe(tree: Path) -> None:
    out = graph.invoke({"root": str(tree)})
    assert msgpack.unpackb(msgpack.packb(out)) == out
    for record in out["modules"] + out["failures"]:
        assert all(type(v) in (str, int) for v in record.values())


def test_format_report_is_exact(tree: Path) -> None:
    text = format_report(graph.invoke({"root": str(tree)})["report"])
    assert text == "\n".join(
        [
            f"Code inventory of {tree}",
            "  files 3  parsed 2  failed 1",
            "  lines 12  functions 2  classes 1",
            "  docstrings 3 of 5 definitions (60.0%)",
            "",
            "Largest modules (top 2):",
            "   1.      12 lines     2 functions    1 classes  pkg/shapes.py",
            "   2.       0 lines     0 functions    0 classes  empty.py",
            "",
            "Largest function: Square.__init__ in pkg/shapes.py (3 lines)",
            "",
            "Failures (1):",
            "  broken.py: SyntaxError: invalid syntax (line 1)",
        ]
    )


def test_empty_directory_goes_straight_to_report(tmp_path: Path) -> None:
    steps = [next(iter(u)) for u in graph.stream({"root": str(tmp_path)}, stream_mode="updates")]
    assert steps == ["list_files", "report"]
    report = graph.invoke({"root": str(tmp_path)})["report"]
    assert report["totals"] == {
        "files": 0,
        "parsed": 0,
        "failed": 0,
        "lines": 0,
        "functions": 0,
        "classes": 0,
        "documented": 0,
        "definitions": 0,
        "docstring_coverage": 0.0,
    }
    assert (report["largest_modules"], report["largest_function"], report["failures"]) == ([], None, [])
    assert "Largest function: none" in format_report(report)
    assert format_report(report).endswith("Failures (0):\n  none")


@pytest.mark.parametrize(
    ("make", "problem"),
    [(lambda p: p / "missing", "does not exist"), (lambda p: p / "file.py", "is not a directory")],
)
def test_bad_root_fails_naming_the_path(tmp_path: Path, make: Any, problem: str) -> None:
    (tmp_path / "file.py").write_text("x = 1\n", encoding="utf-8")
    root = make(tmp_path)
    with pytest.raises(NodeError) as info:
        graph.invoke({"root": str(root)})
    assert info.value.node == "list_files"
    assert isinstance(info.value.error, ValueError)
    assert f"code-inventory root {str(root)!r} {problem}" in str(info.value)


def test_undecodable_file_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "latin.py").write_bytes(b"# caf\xe9\nx = 1\n")
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfx = 1\r\ny = 2\r\n")
    (tmp_path / "declared.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n")
    out = graph.invoke({"root": str(tmp_path)})
    assert out["failures"] == [
        {
            "path": "latin.py",
            "error": "SyntaxError: invalid or missing encoding declaration",  # what Python itself says
        }
    ]
    assert [(m["path"], m["lines"]) for m in out["modules"]] == [("bom.py", 2), ("declared.py", 2)]


NESTED = """async def outer():
    def inner():
        class Local:
            def method(self):
                pass
                pass
                pass
        return Local
    return inner
"""


def test_inventory_module_qualifies_nested_names_and_counts_async() -> None:
    record = inventory_module("nested.py", NESTED)
    assert record == {
        "path": "nested.py",
        "lines": 9,
        "functions": 3,
        "classes": 1,
        "documented": 0,
        "definitions": 5,
        "largest_function": "outer",
        "largest_function_lines": 9,
    }
    deeper = inventory_module("m.py", "def f():\n    pass\n\n\ndef g():\n    pass\n")
    assert (deeper["largest_function"], deeper["largest_function_lines"], deeper["lines"]) == ("f", 2, 6)


def test_inventory_module_counts_last_line_without_newline() -> None:
    assert inventory_module("m.py", "x = 1\ny = 2")["lines"] == 2


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = (\n", "SyntaxError: '(' was never closed (line 1)"),
        (
            "if x:\npass\n",
            "IndentationError: expected an indented block after 'if' statement on line 1 (line 2)",
        ),
    ],
)
def test_describe_error_of_parse_failures(source: str, expected: str) -> None:
    with pytest.raises(SyntaxError) as info:
        inventory_module("m.py", source)
    assert describe_error(info.value) == expected


def test_describe_error_without_line_number() -> None:
    assert describe_error(SyntaxError("bad")) == "SyntaxError: bad"
    assert describe_error(ValueError("nul byte")) == "ValueError: nul byte"


def test_registered_as_entry_point() -> None:
    assert graph.name == "code-inventory"
    (ep,) = [ep for ep in entry_points(group="graphq.workflows") if ep.name == "code-inventory"]
    assert ep.load() is graph


# ast.parse warns about invalid escapes in some stdlib test files
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
def test_default_root_is_the_standard_library() -> None:
    stdlib = sysconfig.get_paths()["stdlib"]
    out = graph.invoke({})
    totals = out["report"]["totals"]
    assert out["root"] == out["report"]["root"] == stdlib
    assert totals["files"] > 500
    assert totals["parsed"] + totals["failed"] == totals["files"] == len(out["files"])
    assert not [f for f in out["files"] if "site-packages/" in f or "dist-packages/" in f]
    assert len(out["report"]["largest_modules"]) == 10
