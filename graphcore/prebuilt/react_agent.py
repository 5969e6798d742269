"""``create_react_agent``: LangGraph's prebuilt tool-calling agent (``langgraph.prebuilt``), for a LangChain
chat model and tools.

The graph has LangGraph's nodes: ``agent`` calls the model on the conversation (after the prompt) and
appends its reply (named after the agent); when the reply has tool calls, ``tools`` (a
:class:`~graphcore.prebuilt.ToolNode`) runs them and the agent is called again, otherwise the run ends.
Optional nodes as LangGraph's: ``pre_model_hook`` before each model call (its ``llm_input_messages`` are
the model's input without changing the state), ``post_model_hook`` after it, and
``generate_structured_response`` at the end (``response_format``: the model's structured output in the
state's ``structured_response``). A tool with ``return_direct`` ends the run after it. It runs in process
and on the workers (the messages are stored as any state's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NotRequired, get_type_hints

from pydantic import BaseModel, create_model
from typing_extensions import TypedDict

from graphcore.engine.builder import StateGraph
from graphcore.engine.executor import CompiledGraph
from graphcore.errors import ConfigError
from graphcore.managed import RemainingSteps
from graphcore.messages import AIMessage, AnyMessage, MessagesState, SystemMessage
from graphcore.prebuilt.tool_node import CALL_WITH_CONTEXT, ToolNode
from graphcore.types import END, START, Send

__all__ = ["AgentState", "create_react_agent"]

NEED_MORE_STEPS = "Sorry, need more steps to process this request."
"""The agent's last reply when the run has no super-steps left for the tool calls of the model's reply."""


class AgentState(MessagesState):
    """The agent's default state, as LangGraph's: the conversation and ``remaining_steps`` (a managed
    value, :mod:`graphcore.managed`: never stored, not in the result)."""

    remaining_steps: NotRequired[RemainingSteps]


PRE, AGENT, POST, TOOLS, STRUCTURED = (
    "pre_model_hook",
    "agent",
    "post_model_hook",
    "tools",
    "generate_structured_response",
)


def _structured_state(response_format: Any) -> type[Any]:
    """The default state with ``response_format``: the messages and ``structured_response``, annotated
    with the format's class when it is a pydantic model (so a queued run may store it)."""
    schema = response_format[1] if isinstance(response_format, tuple) else response_format
    kind = schema if isinstance(schema, type) and issubclass(schema, BaseModel) else Any
    fields = {**get_type_hints(AgentState, include_extras=True), "structured_response": kind}
    state: type[Any] = TypedDict("AgentStateWithStructuredResponse", fields)  # type: ignore[misc]
    return state


def _prompted(prompt: Any) -> Callable[[Any], Any]:
    """What the model is given for a state: its messages after a system prompt, or what ``prompt`` makes."""
    if prompt is None:
        return lambda state: _messages(state)
    if isinstance(prompt, str):
        prompt = SystemMessage(prompt)
    if isinstance(getattr(prompt, "type", None), str) and hasattr(prompt, "content"):
        return lambda state: [prompt, *_messages(state)]
    if callable(prompt):
        return prompt  # type: ignore[no-any-return]
    if callable(getattr(prompt, "invoke", None)):  # a LangChain Runnable (a prompt template)
        return prompt.invoke  # type: ignore[no-any-return]
    raise TypeError(
        f"prompt: a string, a SystemMessage, a function of the state or a Runnable; got {prompt!r}"
    )


def _get(state: Any, key: str) -> Any:
    return state.get(key) if isinstance(state, dict) else getattr(state, key, None)


def _messages(state: Any) -> list[Any]:
    return list(_get(state, "messages"))


def _with_messages(state: Any, messages: list[Any]) -> Any:
    """``state`` (a dict or a model) with ``messages`` as its messages."""
    if isinstance(state, dict):
        return {**state, "messages": messages}
    return state.model_copy(update={"messages": messages})


def _returning_directly(tool_node: ToolNode) -> set[str]:
    """The names of ``tool_node``'s tools that end the run after them (``return_direct``)."""
    return {t.name for t in tool_node.tools if getattr(t, "return_direct", False)}


def _more_steps_needed(state: Any, reply: Any, direct: set[str]) -> bool:
    """Whether the run has too few super-steps left for ``reply``'s tool calls (LangGraph's rule): fewer
    than 2 to run the tools and call the model again, none at all to run tools that all return directly.
    False when the state has no ``remaining_steps``."""
    remaining = _get(state, "remaining_steps")
    calls = getattr(reply, "tool_calls", None) or []
    if remaining is None or not isinstance(reply, AIMessage):
        return False
    all_direct = all(call["name"] in direct for call in calls)
    return (remaining < 1 and all_direct) or (remaining < 2 and bool(calls))


def _check_options(model: Any, version: str, deprecated: dict[str, Any]) -> None:
    """Refuse what graphq's agent does not take.

    Raises:
        ConfigError: a model name (``"provider:model"``) or a function choosing the model, an unknown
            keyword (LangGraph's deprecated ``config_schema`` included), each named.
        ValueError: ``version`` is not ``"v1"`` or ``"v2"`` (LangGraph's error).
    """
    if deprecated:
        raise ConfigError(f"create_react_agent: unknown keyword argument(s) {sorted(deprecated)}")
    if version not in ("v1", "v2"):
        raise ValueError(f"Invalid version {version}. Supported versions are 'v1' and 'v2'.")
    if isinstance(model, str):
        raise ConfigError(
            f"create_react_agent: model {model!r}: a model name needs langchain's init_chat_model; pass the "
            "chat model object"
        )
    if not callable(getattr(model, "invoke", None)):
        raise ConfigError(
            "create_react_agent: model: a function choosing the model per call is not supported; pass the "
            f"chat model object (got {model!r})"
        )


def _agent_node(
    respond: Callable[[Any, Callable[[Any], Any]], dict[str, Any]],
    prompt: Any,
    model_input: Callable[[Any], Any],
    bound: Any,
) -> Callable[[Any], dict[str, Any]]:
    """The ``agent`` node: ``respond(state, reply_of)``, where ``reply_of(state)`` is ``bound``'s reply to
    ``model_input(state)``. With a LangChain model, as LangGraph's agent runs it, so callbacks hear the same
    runs in the node's: ``call_model`` (the node's input and update) and beside it the prompt (a runnable
    named ``Prompt``, or the prompt Runnable) piped into the model (a ``RunnableSequence``)."""

    def plain(state: Any) -> dict[str, Any]:
        return respond(state, lambda given: bound.invoke(model_input(given)))

    try:
        from langchain_core.runnables import Runnable, RunnableLambda, ensure_config
    except ImportError:
        return plain
    if not isinstance(bound, Runnable):
        return plain
    chain = (prompt if isinstance(prompt, Runnable) else RunnableLambda(model_input, name="Prompt")) | bound

    def agent(state: Any) -> dict[str, Any]:
        config = ensure_config()  # the node's config, as LangGraph's
        if not config.get("callbacks"):  # nobody hears the runs (no handler, no messages stream): no chain
            return plain(state)
        reply_of = partial(chain.invoke, config=config)

        def call_model(state: Any) -> dict[str, Any]:
            return respond(state, reply_of)

        update: dict[str, Any] = RunnableLambda(call_model).invoke(state)
        return update

    return agent


def _bound(model: Any, tools: list[Any]) -> Any:
    """``model`` bound to ``tools`` (``bind_tools``), unless it has none, is bound already or has no
    ``bind_tools``."""
    already = "tools" in (getattr(model, "kwargs", None) or {})
    if not tools or already or not callable(getattr(model, "bind_tools", None)):
        return model
    return model.bind_tools(tools)


def _chat_model(model: Any) -> Any:
    """The chat model inside a bound model (``RunnableBinding.bound``)."""
    while "tools" in (getattr(model, "kwargs", None) or {}) and hasattr(model, "bound"):
        model = model.bound
    return model


def _with_llm_input(state_schema: type[Any]) -> type[Any]:
    """The ``agent`` node's input with a pre-model hook: the state and ``llm_input_messages`` (a channel of
    the node's own, not in the run's result)."""
    if isinstance(state_schema, type) and issubclass(state_schema, BaseModel):
        made: type[Any] = create_model(
            "CallModelInputSchema", llm_input_messages=(list[AnyMessage], ...), __base__=state_schema
        )
        return made

    class CallModelInputSchema(state_schema):  # type: ignore[misc]
        llm_input_messages: list[AnyMessage]

    return CallModelInputSchema


def create_react_agent(
    model: Any,
    tools: Sequence[Any] | ToolNode,
    *,
    prompt: Any = None,
    response_format: Any = None,
    pre_model_hook: Any = None,
    post_model_hook: Any = None,
    state_schema: type[Any] | None = None,
    context_schema: type[Any] | None = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    version: str = "v2",
    name: str | None = None,
    **deprecated_kwargs: Any,
) -> CompiledGraph:
    """A tool-calling agent graph, as LangGraph's ``create_react_agent``.

    Args:
        model: a LangChain chat model (``model.invoke(messages)`` returns an AI message); with tools, it is
            bound to them with ``model.bind_tools(tools)`` unless bound already.
        tools: the tools (see :class:`~graphcore.prebuilt.ToolNode`; dicts are the model's built-in tools,
            only bound), or a ToolNode. None of them: the graph is the model call alone.
        prompt: None; a string or a ``SystemMessage`` put before the messages; a function of the state
            returning the model's input; or a LangChain ``Runnable`` (a prompt template) invoked with it.
        response_format: a schema (pydantic class, TypedDict, JSON schema) or ``(system prompt, schema)``:
            after the loop, ``model.with_structured_output(schema)`` is called on the messages (after that
            prompt) and its answer is the state's ``structured_response``.
        pre_model_hook: a node (function or Runnable) run before each model call; its update's
            ``llm_input_messages`` are the model's input instead of the state's messages.
        post_model_hook: a node run after each model call; then pending tool calls go to ``tools``, a last
            tool message back to the model, otherwise the run ends (or makes its structured response).
        state_schema: the state (default :class:`AgentState`: ``messages`` and ``remaining_steps``, with
            ``structured_response`` when ``response_format`` is given); it needs ``messages``. With
            ``remaining_steps`` (:data:`~graphcore.managed.RemainingSteps`), a reply calling tools when
            fewer than 2 super-steps are left becomes an AI message "Sorry, need more steps to process this
            request." (the reply's id) and the run ends, as LangGraph's, instead of failing with
            StepLimitError.
        context_schema: the run context's schema (``StateGraph``'s).
        checkpointer, interrupt_before, interrupt_after, debug, name: as ``StateGraph.compile``'s; ``name``
            also names the model's replies (``AIMessage.name``), as LangGraph's.
        version: ``"v1"`` or ``"v2"``, as LangGraph's: with v2 (the default) the router after the model
            sends one ``tools`` task per tool call (``Send("tools", {"__type": "tool_call_with_context",
            "tool_call": call, "state": state})``), so a step with 2 calls has 2 ``tools`` tasks; with v1 one
            ``tools`` task runs all the calls of the last AI message. After a ``post_model_hook`` the calls
            not answered yet are sent one per task in both, as LangGraph's.
        store: the long-term store (``StateGraph.compile``'s): what ``get_store()`` and an
            ``InjectedStore`` tool argument get.

    Returns:
        The compiled graph: ``invoke({"messages": [...]})`` returns ``{"messages": [...]}`` (with the
        state's other keys).

    Raises:
        TypeError: ``prompt`` is none of those; a tool is neither a function nor a tool object.
        ValueError: ``version`` is neither ``"v1"`` nor ``"v2"``.
        ConfigError: ``model`` is a name or a function, or an unknown keyword.
    """
    _check_options(model, version, deprecated_kwargs)
    if isinstance(tools, ToolNode):
        tool_node, builtin = tools, []
    else:  # dicts are the model's built-in tools: bound, not run
        tool_node = ToolNode([t for t in tools if not isinstance(t, dict)])
        builtin = [t for t in tools if isinstance(t, dict)]
    bound = _bound(model, [*tool_node.tools, *builtin])
    model_input = _prompted(prompt)
    schema = state_schema or (
        _structured_state(response_format) if response_format is not None else AgentState
    )
    direct = _returning_directly(tool_node)

    def respond(state: Any, reply_of: Callable[[Any], Any]) -> dict[str, Any]:
        llm_input = _get(state, "llm_input_messages") if pre_model_hook is not None else None
        if llm_input:  # the model's input, not the state's messages
            state = _with_messages(state, llm_input)
        reply = reply_of(state)  # hears the run's callbacks (the task's context)
        reply.name = name
        if _more_steps_needed(state, reply, direct):
            return {"messages": [AIMessage(NEED_MORE_STEPS, id=reply.id)]}
        return {"messages": [reply]}

    agent = _agent_node(respond, prompt, model_input, bound)

    def structured(state: Any) -> dict[str, Any]:
        messages, schema_of = _messages(state), response_format
        if isinstance(response_format, tuple):
            system, schema_of = response_format
            messages = [SystemMessage(system), *messages]
        answer = _chat_model(model).with_structured_output(schema_of).invoke(messages)
        return {"structured_response": answer}

    builder = StateGraph(schema, context_schema)
    builder.add_node(AGENT, agent, input_schema=_with_llm_input(schema) if pre_model_hook else None)
    entry = _hooked(builder, pre_model_hook)
    done = STRUCTURED if response_format is not None else END
    if response_format is not None:
        builder.add_node(STRUCTURED, structured)
        builder.add_edge(STRUCTURED, END)
    per_call = version == "v2" and not tool_node.record_outcome  # one task's outcome, not the last task's
    _loop(builder, tool_node, entry, done, post_model_hook, per_call)
    options: dict[str, Any] = {"name": name} if name is not None else {}
    return builder.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        debug=debug,
        **options,
    )


def _hooked(builder: StateGraph, pre_model_hook: Any) -> str:
    """Start at ``agent``, or at the pre-model hook before it; returns the loop's entry node."""
    entry = AGENT
    if pre_model_hook is not None:
        builder.add_node(PRE, pre_model_hook)
        builder.add_edge(PRE, AGENT)
        entry = PRE
    builder.add_edge(START, entry)
    return entry


def _loop(
    builder: StateGraph, tool_node: ToolNode, entry: str, done: str, post_model_hook: Any, per_call: bool
) -> None:
    """The edges after the model call (through the post-model hook if any): to ``tools`` (one task per
    tool call when ``per_call``, v2) and back to ``entry`` (or to END after a ``return_direct`` tool), else
    to ``done``."""
    calling = bool(tool_node.tools_by_name)
    if calling:
        direct = _returning_directly(tool_node)
        builder.add_node(TOOLS, tool_node)
        if direct:
            builder.add_conditional_edges(TOOLS, _after_tools(direct, entry), [entry, END])
        else:
            builder.add_edge(TOOLS, entry)
    if post_model_hook is not None:
        builder.add_node(POST, post_model_hook)
        builder.add_edge(AGENT, POST)
        targets = [entry, TOOLS, done] if calling else [done]
        builder.add_conditional_edges(POST, _after_post_hook(tool_node, entry, done), targets)
    elif calling:
        builder.add_conditional_edges(AGENT, _after_model(tool_node, done, per_call), [TOOLS, done])
    else:
        builder.add_edge(AGENT, done)


def _per_call(tool_node: ToolNode, calls: list[Any], state: Any) -> list[Send]:
    """One ``tools`` task per tool call, each given its call (LangGraph's ``ToolCallWithContext``, what
    :class:`~graphcore.prebuilt.ToolNode` takes as one call's input) and the state when a tool has it
    injected (``InjectedState``, ``ToolRuntime``); else None: a task's input is stored with the checkpoint
    that schedules it, and N copies of a long conversation would make each tools step O(history), not
    O(change) (LangGraph always copies it)."""
    given = state if tool_node.needs_state else None
    return [Send(TOOLS, {"__type": CALL_WITH_CONTEXT, "tool_call": call, "state": given}) for call in calls]


def _after_model(tool_node: ToolNode, done: str, per_call: bool) -> Callable[[Any], str | list[Send]]:
    """The router after ``agent``: ``tools`` when the reply calls tools (one ``Send`` per call when
    ``per_call``), else ``done``."""

    def should_continue(state: Any) -> str | list[Send]:
        calls = getattr(_messages(state)[-1], "tool_calls", None)
        if not calls:
            return done
        return _per_call(tool_node, calls, state) if per_call else TOOLS

    return should_continue


def _after_post_hook(tool_node: ToolNode, entry: str, done: str) -> Callable[[Any], str | list[Send]]:
    """The router after ``post_model_hook`` (LangGraph's): one ``tools`` task per call of the last AI
    message with no tool message yet, back to ``entry`` after a tool message, else ``done``."""

    def post_model_hook_router(state: Any) -> str | list[Send]:
        messages = _messages(state)
        if not tool_node.tools_by_name:
            return done
        answered = {m.tool_call_id for m in messages if getattr(m, "type", None) == "tool"}
        last_ai = next((m for m in reversed(messages) if getattr(m, "type", None) == "ai"), None)
        pending = [call for call in getattr(last_ai, "tool_calls", None) or [] if call["id"] not in answered]
        if pending:  # LangGraph sends them in both versions; one task keeps record_outcome's last error
            return TOOLS if tool_node.record_outcome else _per_call(tool_node, pending, state)
        if getattr(messages[-1], "type", None) == "tool":
            return entry
        return done

    return post_model_hook_router


def _after_tools(direct: set[str], entry: str) -> Callable[[Any], str]:
    """The router after ``tools`` when some tools return directly: END after one of them, else ``entry``."""

    def route_tool_responses(state: Any) -> str:
        messages = _messages(state)
        for message in reversed(messages):
            if getattr(message, "type", None) != "tool":
                calls = getattr(message, "tool_calls", None) or []
                return END if any(call["name"] in direct for call in calls) else entry
            if message.name in direct:
                return END
        return entry

    return route_tool_responses
