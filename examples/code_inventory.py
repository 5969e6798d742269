"""``code-inventory``: a map-reduce inventory of a Python source tree (the real-input demo workflow).

Shape::

    START -> list_files --(one Send per .py file)--> parse_file -> report -> END
                        \\--(no files)-----------------------------^

* ``list_files`` walks ``root`` (default: this Python's standard library, without ``site-packages`` and
  ``dist-packages``) in sorted order and lists the ``.py`` files as relative POSIX paths.
* ``parse_file`` runs once per file (a :class:`~graphcore.Send` each): it reads the file as UTF-8, parses it
  with :mod:`ast` and appends one record to ``modules`` — or one to ``failures`` when it cannot.
* ``report`` runs once, after every parse task, and folds the records into totals and top lists;
  :func:`format_report` renders that as plain text.

Every record is a plain dict of ``str``/``int`` so checkpoints stay msgpack-safe.
"""

from __future__ import annotations

import ast
import io
import operator
import os
import sysconfig
import threading
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import END, START, CompiledGraph, Send, StateGraph

__all__ = ["InventoryState", "build_report", "format_report", "format_result", "graph", "inventory_module"]

EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages"})
"""Directory names never descended into (third-party code, not the tree's own)."""

_PARSE_LOCK = threading.Lock()
"""CPython 3.11's parser is not safe to run from several threads at once ("AST constructor recursion depth
mismatch" seen here under 3.11.7); parse tasks of one super-step share a thread pool, so they take turns.
Parsing holds the GIL anyway, so nothing is lost."""

TOP_MODULES = 10
"""How many of the largest modules the report lists."""

Record = dict[str, Any]
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
Definition = FunctionNode | ast.ClassDef


class InventoryState(TypedDict, total=False):
    """State of a ``code-inventory`` run.

    Attributes:
        root: the directory inventoried (input; filled with the default when empty).
        files: ``.py`` files under ``root``, relative POSIX paths, sorted.
        modules: one record per parsed file (see :func:`inventory_module`).
        failures: ``{"path", "error"}`` per file that could not be read or parsed.
        report: the summary built by :func:`build_report`.
    """

    root: str
    files: list[str]
    modules: Annotated[list[Record], operator.add]
    failures: Annotated[list[Record], operator.add]
    report: Record


# ---------------------------------------------------------------------------------------------------------
# list_files
# ---------------------------------------------------------------------------------------------------------


def default_root() -> str:
    """The running Python's standard library directory."""
    return sysconfig.get_paths()["stdlib"]


def find_python_files(root: Path) -> list[str]:
    """Relative POSIX paths of the ``.py`` files under ``root``, sorted; skips :data:`EXCLUDED_DIRS`.

    Raises:
        ValueError: ``root`` does not exist or is not a directory.
    """
    if not root.is_dir():
        problem = "is not a directory" if root.exists() else "does not exist"
        raise ValueError(f"code-inventory root {str(root)!r} {problem}")
    found: list[str] = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in EXCLUDED_DIRS)
        base = Path(directory)
        found += [(base / n).relative_to(root).as_posix() for n in sorted(names) if n.endswith(".py")]
    return sorted(found)


def list_files(state: InventoryState) -> InventoryState:
    """Node: resolve ``root`` (default: the stdlib) and list its Python files."""
    root = state.get("root") or default_root()
    return {"root": root, "files": find_python_files(Path(root))}


def fan_out(state: InventoryState) -> list[Send] | str:
    """Router after ``list_files``: one ``parse_file`` task per file, or straight to ``report``."""
    files = state.get("files", [])
    if not files:
        return "report"
    return [Send("parse_file", {"root": state["root"], "path": rel}) for rel in files]


# ---------------------------------------------------------------------------------------------------------
# parse_file
# ---------------------------------------------------------------------------------------------------------


@dataclass
class _Tally:
    """Counts gathered while walking one module's AST."""

    functions: int = 0
    classes: int = 0
    documented: int = 0
    definitions: int = 0
    largest: str = ""
    largest_lines: int = 0

    def add(self, node: Definition, qualname: str) -> None:
        """Count one class or function definition named ``qualname``."""
        self.definitions += 1
        self.documented += ast.get_docstring(node, clean=False) is not None
        if isinstance(node, ast.ClassDef):
            self.classes += 1
            return
        self.functions += 1
        span = (node.end_lineno or node.lineno) - node.lineno + 1
        if span > self.largest_lines:
            self.largest, self.largest_lines = qualname, span


_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)
"""Nodes that can hold statements; definitions never sit inside expressions, so those are skipped."""


def _tally(tree: ast.Module) -> _Tally:
    """Walk the statements of ``tree`` in source order, qualifying names by their enclosing definitions.

    Iterative, so deeply nested code cannot hit the recursion limit.
    """
    tally = _Tally(definitions=1, documented=int(ast.get_docstring(tree, clean=False) is not None))
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        children: list[tuple[ast.AST, str]] = []
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                tally.add(child, prefix + child.name)
                children.append((child, f"{prefix}{child.name}."))
            elif isinstance(child, _BLOCKS):
                children.append((child, prefix))
        stack.extend(reversed(children))
    return tally


def count_lines(text: str) -> int:
    """Physical lines of ``text`` (read with universal newlines): a last line without ``\\n`` counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def inventory_module(path: str, text: str) -> Record:
    """The inventory record of one module's source.

    Raises:
        SyntaxError, ValueError, RecursionError: ``text`` does not parse.
    """
    with _PARSE_LOCK:
        tree = ast.parse(text, filename=path)
    tally = _tally(tree)
    return {
        "path": path,
        "lines": count_lines(text),
        "functions": tally.functions,
        "classes": tally.classes,
        "documented": tally.documented,
        "definitions": tally.definitions,
        "largest_function": tally.largest,
        "largest_function_lines": tally.largest_lines,
    }


def describe_error(exc: Exception) -> str:
    """One-line reason for a failure, e.g. ``"SyntaxError: invalid syntax (line 3)"``."""
    if isinstance(exc, SyntaxError):
        where = f" (line {exc.lineno})" if exc.lineno is not None else ""
        return f"{type(exc).__name__}: {exc.msg}{where}"
    return f"{type(exc).__name__}: {exc}"


def read_source(path: Path) -> str:
    """The text of a Python source file, decoded by its PEP 263 declaration or BOM (else UTF-8), with
    universal newlines.

    Raises:
        OSError: unreadable; SyntaxError: a bad coding declaration; UnicodeDecodeError: undecodable.
    """
    data = path.read_bytes()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return io.TextIOWrapper(io.BytesIO(data), encoding=encoding).read()


def parse_file(task: dict[str, str]) -> InventoryState:
    """Node (one per Send ``{"root", "path"}``): inventory one file, or record why it failed.

    The file is decoded as Python itself would (PEP 263: a ``coding:`` declaration or a BOM, else UTF-8);
    undecodable, unreadable or unparsable files become a ``failures`` record instead of failing the run.
    """
    path = task["path"]
    try:
        text = read_source(Path(task["root"]) / path)
        return {"modules": [inventory_module(path, text)]}
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError, RecursionError) as exc:
        return {"failures": [{"path": path, "error": describe_error(exc)}]}


# ---------------------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------------------


def _totals(modules: list[Record], failures: list[Record]) -> Record:
    """Sums over the parsed modules, with the docstring coverage in percent (one decimal)."""
    documented = sum(m["documented"] for m in modules)
    definitions = sum(m["definitions"] for m in modules)
    return {
        "files": len(modules) + len(failures),
        "parsed": len(modules),
        "failed": len(failures),
        "lines": sum(m["lines"] for m in modules),
        "functions": sum(m["functions"] for m in modules),
        "classes": sum(m["classes"] for m in modules),
        "documented": documented,
        "definitions": definitions,
        "docstring_coverage": round(100 * documented / definitions, 1) if definitions else 0.0,
    }


def _largest_modules(modules: list[Record]) -> list[Record]:
    """The :data:`TOP_MODULES` largest modules by lines (ties by path)."""
    ranked = sorted(modules, key=lambda m: (-m["lines"], m["path"]))[:TOP_MODULES]
    return [{k: m[k] for k in ("path", "lines", "functions", "classes")} for m in ranked]


def _largest_function(modules: list[Record]) -> Record | None:
    """The longest function of all modules (ties: first by path, then within the module); None if none."""
    candidates = [m for m in modules if m["largest_function_lines"] > 0]
    if not candidates:
        return None
    best = min(candidates, key=lambda m: (-m["largest_function_lines"], m["path"]))
    return {"path": best["path"], "name": best["largest_function"], "lines": best["largest_function_lines"]}


def build_report(root: str, modules: list[Record], failures: list[Record]) -> Record:
    """Fold the per-file records into the report (deterministic whatever the record order)."""
    return {
        "root": root,
        "totals": _totals(modules, failures),
        "largest_modules": _largest_modules(modules),
        "largest_function": _largest_function(modules),
        "failures": sorted(
            ({"path": f["path"], "error": f["error"]} for f in failures), key=lambda f: f["path"]
        ),
    }


def report(state: InventoryState) -> InventoryState:
    """Node: build the report once every ``parse_file`` task has written its record."""
    return {"report": build_report(state["root"], state.get("modules", []), state.get("failures", []))}


def format_report(summary: Record) -> str:
    """Render a report from :func:`build_report` as readable plain text."""
    t = summary["totals"]
    lines = [
        f"Code inventory of {summary['root']}",
        f"  files {t['files']:,}  parsed {t['parsed']:,}  failed {t['failed']:,}",
        f"  lines {t['lines']:,}  functions {t['functions']:,}  classes {t['classes']:,}",
        f"  docstrings {t['documented']:,} of {t['definitions']:,} definitions ({t['docstring_coverage']}%)",
        "",
        f"Largest modules (top {len(summary['largest_modules'])}):",
    ]
    lines += [
        f"  {i:>2}. {m['lines']:>7,} lines {m['functions']:>5} functions {m['classes']:>4} classes"
        f"  {m['path']}"
        for i, m in enumerate(summary["largest_modules"], 1)
    ]
    fn = summary["largest_function"]
    lines += [
        "",
        f"Largest function: {fn['name']} in {fn['path']} ({fn['lines']:,} lines)"
        if fn
        else "Largest function: none",
    ]
    lines += ["", f"Failures ({len(summary['failures'])}):"]
    lines += [f"  {f['path']}: {f['error']}" for f in summary["failures"]] or ["  none"]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# the graph
# ---------------------------------------------------------------------------------------------------------


def build_graph() -> CompiledGraph:
    """Compile the ``code-inventory`` workflow."""
    g = StateGraph(InventoryState)
    g.add_node("list_files", list_files)
    g.add_node("parse_file", parse_file)
    g.add_node("report", report)
    g.add_edge(START, "list_files")
    g.add_conditional_edges("list_files", fan_out)
    g.add_edge("parse_file", "report")
    g.add_edge("report", END)
    return g.compile(name="code-inventory")


def format_result(state: dict[str, Any]) -> str:
    """The final state of a run, for people: its report as text (``graphq run`` prints this)."""
    return format_report(state["report"])


graph: CompiledGraph = build_graph()
"""The workflow, registered as the ``code-inventory`` entry point."""
graph.formatter = format_result
