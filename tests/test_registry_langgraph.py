"""A workflow module still importing LangGraph is refused with one line naming it and the import map (it
was silently a module without workflows: `graphq run app` said only "unknown workflow 'app'")."""

from __future__ import annotations

from tests.workers import graphq, worker_env


def test_a_module_of_langgraph_graphs_is_refused_naming_them(redis_url: str) -> None:
    env = worker_env(redis_url, "tests.workflows.langgraph_unchanged")
    done = graphq("run", "app", "--input", "{}", env=env)
    assert done.returncode == 2
    assert done.stderr == (
        "error: workflow module 'tests.workflows.langgraph_unchanged': ['app'] compiled by LangGraph, not "
        "graphq: change the module's imports to graphq's (docs/how-to/from-langgraph.md, the import map: "
        "from graphcore import StateGraph)\n"
    )
