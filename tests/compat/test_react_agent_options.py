"""``create_react_agent``'s options: prompt forms, ``name``, ``response_format``,
``pre_model_hook`` / ``post_model_hook``, ``return_direct`` tools, ``version``, ``context_schema``,
``interrupt_before``, ``store``; each case runs with ``langgraph.prebuilt``'s and with graphq's. What graphq
does not take (a model name, a function choosing the model, an unknown keyword) is refused with a
ConfigError naming it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from pydantic import BaseModel

from graphcore.errors import ConfigError
from graphcore.prebuilt import create_react_agent
from tests.compat.conftest import Imports
from tests.workflows.lc_agent import ToolCallingFakeModel

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


@tool
def lookup(city: str) -> str:
    """Look a city's weather up."""
    return f"sunny in {city}"


@tool(return_direct=True)
def final(text: str) -> str:
    """Answer directly."""
    return f"final: {text}"


class Weather(BaseModel):
    city: str
    sky: str


class Heard(ToolCallingFakeModel):
    """The scripted fake model, remembering the messages of each call; ``with_structured_output`` answers
    :class:`Weather` from the last tool message."""

    heard: list[list[tuple[str, Any]]] = []

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.heard.append([(m.type, m.content) for m in messages])
        return super()._generate(messages, *args, **kwargs)

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        def answer(messages: Any) -> Any:
            self.heard.append([(m.type, m.content) for m in messages])
            return schema(city="sf", sky=messages[-1].content)

        return RunnableLambda(answer)


def calls_lookup() -> AIMessage:
    return AIMessage("", id="a1", tool_calls=[{"name": "lookup", "args": {"city": "sf"}, "id": "c1"}])


def model(*responses: AIMessage) -> Heard:
    return Heard(responses=list(responses), heard=[])


def shown(messages: list[Any]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.content, m.name) for m in messages]


QUESTION = {"messages": [HumanMessage("weather?", id="h1")]}


def test_name_names_the_agent_and_its_replies(lg: Imports) -> None:
    """LangGraph: ``name`` names the graph and each of the model's replies (``AIMessage.name``)."""
    agent = lg.create_react_agent(
        model(calls_lookup(), AIMessage("sunny", id="a2")), [lookup], name="weather"
    )
    out = agent.invoke(QUESTION)
    assert agent.name == "weather"
    assert shown(out["messages"]) == [
        ("human", "weather?", None),
        ("ai", "", "weather"),
        ("tool", "sunny in sf", "lookup"),
        ("ai", "sunny", "weather"),
    ]


@pytest.mark.parametrize("form", ["str", "system", "function", "runnable"])
def test_each_prompt_form_comes_before_the_messages(lg: Imports, form: str) -> None:
    """LangGraph: ``prompt`` as a string, a SystemMessage, a function of the state or a Runnable."""
    prompts: dict[str, Any] = {
        "str": "Be brief.",
        "system": SystemMessage("Be brief."),
        "function": lambda state: [SystemMessage("Be brief."), *state["messages"]],
        "runnable": ChatPromptTemplate.from_messages(
            [("system", "Be brief."), ("placeholder", "{messages}")]
        ),
    }
    chat = model(AIMessage("ok", id="a1"))
    lg.create_react_agent(chat, [lookup], prompt=prompts[form]).invoke(QUESTION)
    assert chat.heard == [[("system", "Be brief."), ("human", "weather?")]]


@pytest.mark.parametrize("with_prompt", [False, True])
def test_response_format_adds_the_structured_response(lg: Imports, with_prompt: bool) -> None:
    """LangGraph: after the loop the model's structured output (``with_structured_output(schema)`` on the
    messages, after the format's own system prompt) is the state's ``structured_response``."""
    chat = model(calls_lookup(), AIMessage("sunny", id="a2"))
    fmt: Any = ("Fill the form.", Weather) if with_prompt else Weather
    out = lg.create_react_agent(chat, [lookup], response_format=fmt).invoke(QUESTION)
    assert out["structured_response"] == Weather(city="sf", sky="sunny")
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    first = [("system", "Fill the form.")] if with_prompt else []
    assert chat.heard[-1] == [
        *first,
        ("human", "weather?"),
        ("ai", ""),
        ("tool", "sunny in sf"),
        ("ai", "sunny"),
    ]
    assert "generate_structured_response" in lg.create_react_agent(chat, [lookup], response_format=fmt).nodes


def test_pre_model_hook_gives_the_model_its_llm_input_messages(lg: Imports) -> None:
    """LangGraph: ``pre_model_hook`` runs before each model call; its ``llm_input_messages`` are the model's
    input and are not kept in the state; its ``messages`` update the state."""

    def last_only(state: Any) -> dict[str, Any]:
        return {"llm_input_messages": state["messages"][-1:]}

    chat = model(calls_lookup(), AIMessage("sunny", id="a2"))
    agent = lg.create_react_agent(chat, [lookup], pre_model_hook=last_only)
    out = agent.invoke(QUESTION)
    assert chat.heard == [[("human", "weather?")], [("tool", "sunny in sf")]]
    assert sorted(out) == ["messages"]
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]


def test_pre_model_hook_may_rewrite_the_messages(lg: Imports) -> None:
    """LangGraph: a hook returning ``messages`` (all removed, then new ones) changes the state."""

    def trimmed(state: Any) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id="__remove_all__"), HumanMessage("short?", id="h2")]}

    chat = model(AIMessage("ok", id="a1"))
    out = lg.create_react_agent(chat, [lookup], pre_model_hook=trimmed).invoke(QUESTION)
    assert chat.heard == [[("human", "short?")]]
    assert [(m.type, m.content) for m in out["messages"]] == [("human", "short?"), ("ai", "ok")]


def test_post_model_hook_runs_after_each_model_call(lg: Imports) -> None:
    """LangGraph: ``post_model_hook`` runs after each model call, then pending tool calls go to the tools,
    otherwise the run ends."""
    seen: list[str] = []

    def after(state: Any) -> dict[str, Any]:
        seen.append(state["messages"][-1].content or "<calls>")
        return {}

    chat = model(calls_lookup(), AIMessage("sunny", id="a2"))
    agent = lg.create_react_agent(chat, [lookup], post_model_hook=after)
    out = agent.invoke(QUESTION)
    assert seen == ["<calls>", "sunny"]
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    updates = [list(chunk) for chunk in agent.stream(QUESTION, stream_mode="updates")]
    assert updates == [["agent"], ["post_model_hook"], ["tools"], ["agent"], ["post_model_hook"]]


def test_a_return_direct_tool_ends_the_run(lg: Imports) -> None:
    """LangGraph: after a tool with ``return_direct=True`` the run ends with its message."""
    call = AIMessage("", id="a1", tool_calls=[{"name": "final", "args": {"text": "done"}, "id": "c1"}])
    chat = model(call, AIMessage("never", id="a2"))
    out = lg.create_react_agent(chat, [lookup, final]).invoke(QUESTION)
    assert [(m.type, m.content) for m in out["messages"]] == [
        ("human", "weather?"),
        ("ai", ""),
        ("tool", "final: done"),
    ]
    assert len(chat.heard) == 1


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_both_versions_give_the_same_messages(lg: Imports, version: str) -> None:
    two = AIMessage(
        "",
        id="a1",
        tool_calls=[
            {"name": "lookup", "args": {"city": "sf"}, "id": "c1"},
            {"name": "lookup", "args": {"city": "nyc"}, "id": "c2"},
        ],
    )
    out = lg.create_react_agent(model(two, AIMessage("ok", id="a2")), [lookup], version=version).invoke(
        QUESTION
    )
    assert [(m.type, m.content) for m in out["messages"]] == [
        ("human", "weather?"),
        ("ai", ""),
        ("tool", "sunny in sf"),
        ("tool", "sunny in nyc"),
        ("ai", "ok"),
    ]


def test_an_unknown_version_is_a_value_error(lg: Imports) -> None:
    with pytest.raises(ValueError, match=r"Invalid version v3\. Supported versions are 'v1' and 'v2'\."):
        lg.create_react_agent(model(), [lookup], version="v3")


def test_no_tools_is_the_model_call_alone(lg: Imports) -> None:
    """LangGraph: without tools the graph calls the model once (with a post hook and a format too)."""
    chat = model(AIMessage("sunny", id="a1"))
    agent = lg.create_react_agent(chat, [], post_model_hook=lambda s: {}, response_format=Weather)
    out = agent.invoke(QUESTION)
    assert [m.content for m in out["messages"]] == ["weather?", "sunny"]
    assert out["structured_response"] == Weather(city="sf", sky="sunny")


@dataclass
class User:
    name: str


def test_context_schema_gives_nodes_the_run_context(lg: Imports) -> None:
    """LangGraph: with ``context_schema`` the run's ``context`` reaches the nodes (here a pre-model hook
    reading ``get_runtime().context``)."""

    def greet(state: Any) -> dict[str, Any]:
        user = lg.get_runtime().context.name
        return {"llm_input_messages": [SystemMessage(f"user {user}"), *state["messages"]]}

    chat = model(AIMessage("hi", id="a1"))
    agent = lg.create_react_agent(chat, [lookup], pre_model_hook=greet, context_schema=User)
    agent.invoke(QUESTION, context=User("ann"))
    assert chat.heard == [[("system", "user ann"), ("human", "weather?")]]


def test_interrupt_before_tools_pauses_the_agent(lg: Imports) -> None:
    """LangGraph: ``interrupt_before=["tools"]`` with a checkpointer pauses before the tools run."""
    agent = lg.create_react_agent(
        model(calls_lookup(), AIMessage("sunny", id="a2")),
        [lookup],
        checkpointer=lg.InMemorySaver(),
        interrupt_before=["tools"],
    )
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke(QUESTION, config)
    assert agent.get_state(config).next == ("tools",)
    out = agent.invoke(None, config)
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]


def test_store_is_the_graphs_store(lg: Imports) -> None:
    """LangGraph: ``store=`` is given to ``compile``: the agent's ``store`` and its tools' ``get_store()``."""
    store = lg.InMemoryStore()
    store.put(("user",), "city", {"city": "paris"})

    @tool
    def favourite() -> str:
        """Read the user's favourite city from the store."""
        return str(lg.get_store().get(("user",), "city").value["city"])

    calls = AIMessage("", id="a1", tool_calls=[{"name": "favourite", "args": {}, "id": "c1"}])
    agent = lg.create_react_agent(model(calls, AIMessage("done", id="a2")), [favourite], store=store)
    out = agent.invoke(QUESTION)
    assert agent.store is store
    assert shown(out["messages"]) == [
        ("human", "weather?", None),
        ("ai", "", None),
        ("tool", "paris", "favourite"),
        ("ai", "done", None),
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model": "openai:gpt-4o"}, "create_react_agent: model 'openai:gpt-4o': a model name needs"),
        ({"model": lambda state, runtime: None}, "create_react_agent: model: a function choosing the model"),
        ({"config_schema": dict}, r"create_react_agent: unknown keyword argument\(s\) \['config_schema'\]"),
    ],
)
def test_what_graphq_does_not_take_is_refused_by_name(options: dict[str, Any], message: str) -> None:
    given = {"model": model(), **options}
    with pytest.raises(ConfigError, match=message):
        create_react_agent(given.pop("model"), [lookup], **given)
