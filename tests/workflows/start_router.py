"""A router from START that takes ``config`` and ``writer``: ``start_router`` routes to ``a`` when
the run's ``configurable`` has ``go``, else to ``b``, after writing ``{"route": <its choice>}`` to the
``custom`` stream and recording what its config shows (:func:`shown`) in :data:`SEEN`."""

import operator
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from typing_extensions import TypedDict

import graphcore

SEEN: list[dict[str, Any]] = []
"""What the router's config showed, a dict per call (:func:`shown`)."""


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def shown(config: RunnableConfig) -> dict[str, Any]:
    """The parts of a router's ``config`` a LangGraph program reads: its metadata, tags and the
    ``configurable`` keys ``thread_id``, ``go`` and ``checkpoint_ns``, the task id in the namespaces (16 hex
    digits in graphq, a uuid in LangGraph) replaced by ``<id>``."""
    ns = config["configurable"]["checkpoint_ns"]
    node, _, task = ns.partition(":")
    metadata = dict(config["metadata"])
    assert metadata["langgraph_checkpoint_ns"] == ns and task
    metadata["langgraph_checkpoint_ns"] = f"{node}:<id>"
    configurable = {k: config["configurable"].get(k) for k in ("thread_id", "go")}
    configurable["ns"] = f"{node}:<id>"
    return {"metadata": metadata, "tags": config["tags"], "configurable": configurable}


def build(lg: Any) -> Any:
    """``start_router``'s builder from either side of the import map (``lg``: the ``lg`` fixture of
    tests/compat, or ``graphcore``)."""

    def route(state: Log, config: RunnableConfig, writer: lg.StreamWriter) -> str:  # type: ignore[name-defined]
        SEEN.append(shown(config))
        chosen = "a" if config["configurable"].get("go") else "b"
        writer({"route": chosen})
        return chosen

    builder = lg.StateGraph(Log)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_node("b", lambda state: {"log": ["b"]})
    builder.add_conditional_edges(lg.START, route, ["a", "b"])
    return builder


start_router = build(graphcore).compile(name="start_router")
