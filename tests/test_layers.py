"""The layering stays true (docs/architecture.md): every import of every module — TYPE_CHECKING
and function-local imports included — points down the layers, and no modules import each other in a loop.

Layers, bottom up: the foundation (``graphcore.errors``, ``types``, ``settings``, ``keys``, ``messages``,
``lite_messages``, ``managed``) < ``graphcore.checkpoints`` < ``graphcore.engine`` < ``graphcore.backend`` <
``graphcore`` (the package face) < ``graphq.worker``, ``graphq.scheduler`` < ``graphq.console`` <
``graphq.cli``.
``graphq.examples`` may use everything but ``graphq.cli``; ``graphq`` (the package face for client code)
the layers up to ``graphq.worker``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# package -> its folder (graphq's subpackages are the repository's top-level folders, graphq/<name> links)
PACKAGES = {
    "graphcore": "graphcore",
    "graphq.worker": "worker",
    "graphq.scheduler": "scheduler",
    "graphq.console": "console",
    "graphq.cli": "cli",
    "graphq.examples": "examples",
}
FOUNDATION = (
    "graphcore.errors",
    "graphcore.types",
    "graphcore.settings",
    "graphcore.keys",
    "graphcore.messages",
    "graphcore.lite_messages",
    "graphcore.managed",
)

# layer name -> the layers it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "foundation": set(),
    "checkpoints": {"foundation"},
    "engine": {"foundation", "checkpoints"},
    "backend": {"foundation", "checkpoints", "engine"},
    "face": {"foundation", "checkpoints", "engine"},
    "worker": {"foundation", "checkpoints", "engine", "backend", "face"},
    "scheduler": {"foundation", "checkpoints", "engine", "backend", "face", "worker"},
    "console": {"foundation", "checkpoints", "engine", "backend", "face", "worker", "scheduler"},
    "cli": {"foundation", "checkpoints", "engine", "backend", "face", "worker", "scheduler", "console"},
    "examples": {"foundation", "checkpoints", "engine", "backend", "face", "worker"},
    "public": {"foundation", "checkpoints", "engine", "backend", "face", "worker"},
}


def layer(module: str) -> str:
    """The layer of a first-party module name."""
    if module in FOUNDATION or any(module.startswith(f + ".") for f in FOUNDATION):
        return "foundation"
    parts = module.split(".")
    if parts[0] == "graphcore":
        return parts[1] if len(parts) > 1 and parts[1] in ("checkpoints", "engine", "backend") else "face"
    assert parts[0] == "graphq", module
    return parts[1] if len(parts) > 1 else "public"


def modules() -> dict[str, Path]:
    """Every first-party module name → its file."""
    found = {"graphq": ROOT / "graphq" / "__init__.py"}
    for package, folder in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [package, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(path: Path, module: str, known: dict[str, Path]) -> set[str]:
    """First-party modules that ``path`` imports anywhere in it. ``from p import m`` counts as importing
    ``p.m`` when that is a module, else ``p`` (a package's own ``__init__``, which Python runs for any of its
    submodules, is not counted as a dependency of them)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import; the packages use absolute imports"
            base = node.module or ""
            for alias in node.names:  # `from p import m` is an import of module p.m when there is one
                names.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {n for n in names if n in known and n != module}


GRAPH = {name: imports(path, name, modules()) for name, path in modules().items()}


def test_the_layer_map_knows_every_module() -> None:
    assert {layer(m) for m in GRAPH} <= set(ALLOWED)
    known = {"graphcore.engine.algo", "graphcore.backend.client", "graphq", "graphq.worker.step.job"}
    assert known <= set(GRAPH)


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_point_down_the_layers(module: str) -> None:
    mine = layer(module)
    upward = sorted(t for t in GRAPH[module] if layer(t) != mine and layer(t) not in ALLOWED[mine])
    assert upward == [], f"{module} ({mine}) imports a higher layer: {upward}"


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph`` that have more than one member (import loops)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
            if target in stack:
                low[node] = min(low[node], low[target])
        if low[node] == index[node]:
            component = stack[stack.index(node) :]
            del stack[stack.index(node) :]
            if len(component) > 1:
                loops.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return loops


def test_no_import_cycles() -> None:
    assert strongly_connected(GRAPH) == []


def test_the_checks_can_fail() -> None:
    """A loop is found, and an engine module importing the backend is refused."""
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer("graphcore.backend.client") not in ALLOWED[layer("graphcore.engine.algo")]
    assert layer("graphcore.keys") == "foundation" and layer("graphcore") == "face"
    assert (layer("graphq"), layer("graphq.cli.main")) == ("public", "cli")


# graphq.worker's role folders, bottom up: what all three share (the queue, logs, metrics, health)
# < the housekeeping loops < the step job < the worker process and its supervisor.
WORKER_ROLES: dict[str, set[str]] = {
    "shared": set(),
    "housekeeping": {"shared"},
    "step": {"shared", "housekeeping"},
    "process": {"shared", "housekeeping", "step"},
}


def role(module: str) -> str:
    """The role folder of a ``graphq.worker`` module ("shared" for the modules at its top)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[2] in WORKER_ROLES else "shared"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith("graphq.worker.")))
def test_worker_roles_import_down(module: str) -> None:
    mine = role(module)
    targets = [t for t in GRAPH[module] if t.startswith("graphq.worker.")]
    upward = sorted(t for t in targets if role(t) != mine and role(t) not in WORKER_ROLES[mine])
    assert upward == [], f"{module} ({mine}) imports a higher role of graphq.worker: {upward}"


def test_worker_roles_are_known() -> None:
    assert (role("graphq.worker.queue"), role("graphq.worker.step.job")) == ("shared", "step")
    assert (role("graphq.worker.process.supervisor"), role("graphq.worker.housekeeping.reaper")) == (
        "process",
        "housekeeping",
    )
