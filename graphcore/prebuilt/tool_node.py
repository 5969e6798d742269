"""``ToolNode`` and ``tools_condition``: LangGraph's prebuilt tool-calling pieces (``langgraph.prebuilt``).

``ToolNode(tools)`` runs the tool calls of the last AI message: each call is its own task of a small inner
graph (one ``Send`` per call), so they run in parallel, each may call ``interrupt()`` (the run pauses with
one request per asking call; answered calls go on, finished ones are not run again), and on the queue a
call that finished survives a crash of its siblings' worker as pending writes. Its results are
:class:`~graphcore.messages.ToolMessage` objects in the order of the calls. Given one call with its state
(LangGraph's ``ToolCallWithContext``, what ``create_react_agent`` sends each ``tools`` task), it runs that
call in its own task, with no inner graph: the graph's tasks are the calls.

A tool parameter annotated ``Annotated[dict, InjectedState]`` (the graph's state), ``Annotated[list,
InjectedState("messages")]`` (one key of it), ``Annotated[Any, InjectedStore()]`` (the run's long-term
store) or ``ToolRuntime`` (all of these and more, see :class:`~graphcore.prebuilt.injected.ToolRuntime`;
also any parameter named ``runtime``) is filled by the ToolNode, as LangGraph's: the model never sees it (a
LangChain tool leaves it out of its schema) and a value the model gives for it is dropped.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Annotated, Any, Literal, NamedTuple, TypeAlias, Union

from pydantic import BaseModel, ValidationError, create_model
from typing_extensions import TypedDict

from graphcore.engine.builder import StateGraph
from graphcore.engine.config import current_task_or_none
from graphcore.engine.executor import INTERRUPT_KEY
from graphcore.engine.interrupts import GraphInterrupt
from graphcore.engine.loops import run_coroutine
from graphcore.engine.runtime import Runtime, runtime_of
from graphcore.errors import NodeError
from graphcore.messages import ToolCall, ToolMessage
from graphcore.types import END, START, Command, Send

__all__ = ["ToolNode", "tools_condition"]

CALL_WITH_CONTEXT = "tool_call_with_context"
"""The ``__type`` of one tool call's input, ``{"__type": CALL_WITH_CONTEXT, "tool_call": call, "state":
state}`` (LangGraph's ``ToolCallWithContext``): what ``create_react_agent`` sends each ``tools`` task."""

INVALID_TOOL = "Error: {name} is not a valid tool, try one of [{names}]."
INVALID_ARGS = (
    "Error invoking tool '{name}' with kwargs {args} with error:\n {error}\n"
    " Please fix the error and try again."
)
TOOL_ERROR = "Error: {error!r}\n Please fix your mistakes."
"""Error contents, worded as LangGraph's ``ToolNode`` words them."""

ErrorHandling: TypeAlias = bool | str | Callable[..., str] | type[Exception] | tuple[type[Exception], ...]


class _Given(NamedTuple):
    """What the running ToolNode task was given: its input state, its runtime and config."""

    state: Any
    runtime: Runtime[Any]
    config: Any


_GIVEN: contextvars.ContextVar[_Given] = contextvars.ContextVar("graphq_tool_node_given")
"""What the running ToolNode task was given: what its calls' injected parameters get."""


_Injection: TypeAlias = tuple[Literal["state", "store", "runtime"], Any]
"""What a tool parameter is filled with: ``("state", key or None)``, ``("store", None)`` or ``("runtime",
class)``: a ToolRuntime of the class the parameter's annotation names (graphq's
:class:`~graphcore.prebuilt.injected.ToolRuntime`, or LangGraph's for a tool written with it; None:
graphq's)."""


def _marker(meta: Any) -> _Injection | None:
    """The injection an ``Annotated`` metadata item or a parameter's type asks for (graphq's or LangGraph's
    markers, matched by class name; ``ToolRuntime[C, S]`` by its origin), or None."""
    cls = typing.get_origin(meta) or meta
    cls = cls if isinstance(cls, type) else type(cls)
    names = {c.__name__ for c in cls.__mro__}
    if "ToolRuntime" in names:
        return ("runtime", cls)
    if "InjectedStore" in names:
        return ("store", None)
    if "InjectedState" in names:
        return ("state", None if isinstance(meta, type) else getattr(meta, "field", None))
    return None


def _injection(hint: Any) -> _Injection | None:
    """The injection a parameter's annotation asks for: ``ToolRuntime`` as the type, or an ``Annotated``
    marker, also inside a union."""
    found_type = _marker(hint)
    if found_type is not None and found_type[0] == "runtime":
        return found_type
    origin = typing.get_origin(hint)
    if origin is Annotated:
        found = [m for m in map(_marker, hint.__metadata__) if m is not None]
        return found[0] if found else _injection(typing.get_args(hint)[0])
    if origin is Union or isinstance(hint, types.UnionType):
        found = [m for m in map(_injection, typing.get_args(hint)) if m is not None]
        return found[0] if found else None
    return None


def _hints(obj: Any) -> dict[str, Any]:
    """``obj``'s annotations with their ``Annotated`` extras (none when they do not resolve)."""
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except Exception:
        return {}


def _injections(tool: Any) -> dict[str, _Injection]:
    """The parameters of ``tool`` (a function, or a LangChain tool's function and ``args_schema``) that
    the ToolNode fills, by name; a parameter named ``runtime`` gets the ToolRuntime whatever its type
    (LangGraph's)."""
    func = getattr(tool, "func", None) or getattr(tool, "coroutine", None) or tool
    schema = getattr(tool, "args_schema", None)
    hints = _hints(func) if callable(func) else {}
    hints.update(_hints(schema) if isinstance(schema, type) else {})
    found = {name: _injection(hint) for name, hint in hints.items()}
    if found.get("runtime") is None and ("runtime" in hints or "runtime" in _parameters(func)):
        found["runtime"] = ("runtime", None)
    return {name: how for name, how in found.items() if how is not None}


def _parameters(func: Any) -> Mapping[str, inspect.Parameter]:
    """``func``'s parameters by name; none when it has no signature."""
    try:
        return inspect.signature(func).parameters
    except (TypeError, ValueError):
        return {}


def _defaulted(tool: Any) -> set[str]:
    """The parameters of ``tool`` (as :func:`_injections` reads it) that have a default."""
    schema = getattr(tool, "args_schema", None)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return {name for name, f in schema.model_fields.items() if not f.is_required()}
    func = getattr(tool, "func", None) or getattr(tool, "coroutine", None) or tool
    return {p.name for p in _parameters(func).values() if p.default is not p.empty}


def _given(state: Any) -> _Given:
    """What the running task gives its calls: ``state``, the task's runtime and config (outside a run a
    runtime with nothing set and no config)."""
    task = current_task_or_none()
    if task is None:
        return _Given(state, Runtime(), None)
    return _Given(state, runtime_of(task), task.config)


@contextmanager
def _giving(state: Any) -> Iterator[None]:
    """While the body runs, the task's calls are given ``state`` (:func:`_given`) for their injected
    parameters."""
    token = _GIVEN.set(_given(state))
    try:
        yield
    finally:
        _GIVEN.reset(token)


def _injected_value(how: _Injection, given: _Given, messages_key: str) -> Any:
    """The value of one injected ``InjectedState`` or ``InjectedStore`` parameter.

    Raises:
        ValueError: a store is asked for and the graph has none.
        KeyError / AttributeError: the state lacks the asked key.
    """
    kind, key = how
    state = given.state
    if kind == "store":
        store = given.runtime.store
        if store is None:
            raise ValueError(
                "Cannot inject store into tools with InjectedStore annotations - please compile your graph "
                "with a store."
            )
        return store
    if isinstance(state, list):
        state = {messages_key: state}
    if key is None:
        return state
    return state[key] if isinstance(state, Mapping) else getattr(state, key)


def _last_messages(state: Any, messages_key: str) -> list[Any]:
    if isinstance(state, list):
        return state
    messages = state.get(messages_key) if isinstance(state, Mapping) else getattr(state, messages_key, None)
    if not messages:
        raise ValueError(f"no messages found in the state (key {messages_key!r})")
    return list(messages)


def tools_condition(state: Any, messages_key: str = "messages") -> Literal["tools", "__end__"]:
    """Route to ``"tools"`` when the last message has tool calls, else to ``END`` (LangGraph's rule).

    Args:
        state: a dict or model with a list of messages under ``messages_key``, or the list itself.

    Returns:
        ``"tools"`` or ``"__end__"``.

    Raises:
        ValueError: the state has no messages.
    """
    last = _last_messages(state, messages_key)[-1]
    return "tools" if getattr(last, "tool_calls", None) else END  # type: ignore[return-value]


class _ToolCalls(TypedDict, total=False):
    """The inner graph's state: the calls to run and their results."""

    calls: list[ToolCall]
    results: Annotated[list[Any], _append]  # ToolMessages, and (call id, Command) for a tool's Command


def _append(left: list[Any], right: list[Any]) -> list[Any]:
    return [*left, *right]


def _call_id(result: Any) -> Any:
    """The tool call id of a call's result: a ToolMessage's, or the id paired with a tool's Command."""
    return result[0] if isinstance(result, tuple) else result.tool_call_id


def _content(value: Any) -> Any:
    """A tool's return value as message content, as langchain-core's tools write it: a string or a list of
    content blocks as is, anything else as JSON (``5`` → ``"5"``, ``None`` → ``"null"``), else ``str()``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(b, dict) and "type" in b for b in value):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


class _Tool:
    """One tool: a plain function (named after it, called with the call's args by keyword, validated and
    coerced by pydantic from its signature as langchain-core does), or an object with ``name`` and
    ``invoke(args)``. A LangChain tool (a ``BaseTool``: ``@tool``, ``StructuredTool``) is given the whole
    tool call ``{"name", "args", "id", "type": "tool_call"}`` as LangGraph gives it, so it returns a
    ToolMessage (with the call's id, an ``artifact``, an injected tool call id...)."""

    def __init__(self, tool: Any) -> None:
        self.injected = _injections(tool)
        """The parameters the ToolNode fills (``InjectedState``, ``InjectedStore``), by name."""
        self.defaulted = _defaulted(tool) if self.injected else set()
        """The parameters with a default: an ``InjectedState(key)`` one is left out when the state lacks
        the key."""
        invoke = getattr(tool, "invoke", None)
        if isinstance(getattr(tool, "name", None), str) and callable(invoke):
            self.name: str = tool.name
            if _is_langchain_tool(tool):
                if getattr(tool, "func", None) is None and getattr(tool, "coroutine", None) is not None:
                    invoke = tool.ainvoke  # an async-only tool: its coroutine is awaited (run_call)
                self.run: Callable[[dict[str, Any]], Any] = lambda call: invoke({**call, "type": "tool_call"})
            else:
                self.run = lambda call: invoke(call.get("args", {}))
            return
        if not callable(tool) or not getattr(tool, "__name__", None):
            raise TypeError(f"a tool is a named function or has .name and .invoke(args); got {tool!r}")
        self.name = tool.__name__
        model = _args_model(tool, skip=set(self.injected))
        self.run = lambda call: tool(**self._plain_args(model, call.get("args", {})))

    def _plain_args(self, model: type[BaseModel], args: dict[str, Any]) -> dict[str, Any]:
        """A plain function's keyword arguments: the model's, validated; the injected ones as they are."""
        given = {k: v for k, v in args.items() if k not in self.injected}
        return {**_validated(model, given), **{k: v for k, v in args.items() if k in self.injected}}


def _is_langchain_tool(tool: Any) -> bool:
    """Whether ``tool`` is a langchain-core ``BaseTool`` (checked by name: langchain-core is not imported)."""
    return any(
        c.__name__ == "BaseTool" and c.__module__.startswith("langchain_core.") for c in type(tool).__mro__
    )


def _args_model(fn: Callable[..., Any], skip: set[str], name: str | None = None) -> type[BaseModel]:
    """A pydantic model of ``fn``'s keyword parameters (``Any`` where unannotated), but those in ``skip``,
    named ``name`` (``<fn name>_args`` by default)."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # an annotation that does not resolve: leave that argument unchecked
        hints = {}
    fields: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in skip:
            continue
        fields[p.name] = (hints.get(p.name, Any), ... if p.default is p.empty else p.default)
    return create_model(name or f"{fn.__name__}_args", **fields)


def _validated(model: type[BaseModel], args: dict[str, Any]) -> dict[str, Any]:
    checked = model.model_validate(args)
    return {name: getattr(checked, name) for name in type(checked).model_fields}


def _invalid_args(name: str, args: Any, error: ValidationError) -> str:
    lines = "\n".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
    return INVALID_ARGS.format(name=name, args=args, error=lines)


def _handled_types(handler: Callable[..., str]) -> tuple[type[BaseException], ...]:
    """The exception types a handler function declares for its first parameter (``Exception`` without)."""
    try:
        params = list(inspect.signature(handler).parameters.values())
        hint = typing.get_type_hints(handler).get(params[0].name) if params else None
    except Exception:
        return (Exception,)
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) or typing.get_origin(hint) else ()
    found = [t for t in (args or (hint,)) if isinstance(t, type) and issubclass(t, BaseException)]
    return tuple(found) or (Exception,)


def _outcome(results: list[Any]) -> dict[str, Any]:
    """``last_result`` / ``last_error`` of a tools step (see ``record_outcome``)."""
    ok = [m.content for m in results if getattr(m, "status", "success") != "error"]
    failed = [m.content for m in results if getattr(m, "status", "success") == "error"]
    return ({"last_result": ok[-1]} if ok else {}) | {"last_error": failed[-1] if failed else None}


class ToolNode:
    """Runs the tool calls of the last AI message, as LangGraph's ``ToolNode`` (``langgraph.prebuilt``).

    ``graph.add_node("tools", ToolNode(tools))`` (or ``add_node(ToolNode(tools))``: its name is ``name``).
    Given a state (a dict or model with messages under ``messages_key``), it finds the last AI message and
    runs each of its tool calls as its own task, in parallel; the update is ``{messages_key: [ToolMessage,
    ...]}`` in call order, each with the call's ``tool_call_id`` and the tool's ``name``. Given a list of
    messages, the result is the list of tool messages. Given one call, ``{"__type":
    "tool_call_with_context", "tool_call": call, "state": state}`` (LangGraph's ``ToolCallWithContext``, a
    ``Send`` payload of ``create_react_agent``), it runs that call in this task (its ``InjectedState``
    parameters get ``state``); the update is ``{messages_key: [its ToolMessage]}``, or ``[its Command]``.

    Tools: plain functions (name = ``__name__``; the call's ``args`` are validated against the signature
    with pydantic, lax as langchain-core's, and passed by keyword; an ``async def`` tool is awaited, under
    ``invoke`` as under ``ainvoke``) or objects with ``name`` and ``invoke(args)`` (langchain tools,
    duck-typed). A tool may call ``interrupt()``, and may return a ``Command``: then the node returns, in
    call order, each call's Command or ``{messages_key: [its ToolMessage]}`` (LangGraph's), applied in turn.

    Content: a string or a list of content blocks as is; anything else as JSON text, ``str()`` when not
    JSON. Errors, as LangGraph 1.x's defaults: an unknown tool name and arguments that do not validate
    become a ToolMessage with ``status="error"`` (LangGraph's wording); an exception the tool raises fails
    the node (a :class:`~graphcore.errors.NodeError` whose ``error`` is the tool's) unless
    ``handle_tool_errors`` handles it: ``True`` (every exception, content ``"Error: <repr>\\n Please fix
    your mistakes."``), a string (that content), an exception type or tuple of types, or a function
    ``handler(e) -> str`` (handles the types its parameter's annotation names); ``False`` handles nothing,
    invalid arguments included.

    Args:
        tools: the tools.
        name: the node's name, ``"tools"``.
        handle_tool_errors: see above.
        messages_key: the state key of the messages.
        record_outcome: also write ``last_result`` (the content of the last successful call, when one
            succeeded) and ``last_error`` (the content of the last failed call, or None) — the keys of
            :class:`~graphcore.prebuilt.agent.AgentLoopState`.

    Raises:
        TypeError: (construction) a tool is neither a named function nor a ``.name``/``.invoke`` object.
        ValueError: (a call) the state has no messages, or no AI message.
    """

    def __init__(
        self,
        tools: Sequence[Any],
        *,
        name: str = "tools",
        handle_tool_errors: ErrorHandling | None = None,
        messages_key: str = "messages",
        record_outcome: bool = False,
    ) -> None:
        self.tools = list(tools)  # as given (a model is bound to them: create_react_agent)
        self.tools_by_name = {t.name: t for t in map(_Tool, tools)}
        self.name = self.__name__ = name
        self.messages_key = messages_key
        self._handling = handle_tool_errors
        self.record_outcome = record_outcome
        kinds = {kind for t in self.tools_by_name.values() for kind, _ in t.injected.values()}
        self.needs_state = bool(kinds & {"state", "runtime"})  # a call's task needs the state sent with it
        self._injects = bool(kinds)  # some call's parameters are filled from the task (_giving)
        inner = StateGraph(_ToolCalls)
        inner.add_node(name, self._call_task)
        inner.add_conditional_edges(START, self._fan_out, [name])
        inner.add_edge(name, END)
        self._calls = inner.compile(name=name)

    def __call__(self, state: Any) -> Any:
        """Run the tool calls of ``state``'s last AI message (see the class docstring).

        Raises:
            ValueError: no messages, or no AI message among them.
            GraphInterrupt: a tool asked a human (the node pauses).
        """
        if isinstance(state, Mapping) and state.get("__type") == CALL_WITH_CONTEXT:
            return self._run_one(state["tool_call"], state["state"])
        messages = _last_messages(state, self.messages_key)
        last_ai = next((m for m in reversed(messages) if getattr(m, "type", None) == "ai"), None)
        if last_ai is None:
            raise ValueError("no AIMessage found in the input")
        with _giving(state) if self._injects else nullcontext():
            results = self._run_calls([dict(c) for c in getattr(last_ai, "tool_calls", [])])
        if any(isinstance(r, Command) for r in results):  # LangGraph's: each call's Command or messages
            return [r if isinstance(r, Command) else self._update([r], state) for r in results]
        return self._update(results, state)

    def _update(self, results: list[Any], state: Any) -> Any:
        if isinstance(state, list):
            return results
        return {self.messages_key: results, **(_outcome(results) if self.record_outcome else {})}

    invoke = __call__

    def _run_one(self, call: Mapping[str, Any], state: Any) -> Any:
        """Run one tool call in this task (no inner graph), its ``InjectedState`` parameters given
        ``state``: the update ``{messages_key: [its ToolMessage]}``, or ``[its Command]`` (LangGraph's)."""
        with _giving(state) if self._injects else nullcontext():
            result = self.run_call(call)
        return [result[1]] if isinstance(result, tuple) else self._update([result], None)

    def _run_calls(self, calls: list[dict[str, Any]]) -> list[Any]:
        if not calls:
            return []
        try:
            final = self._calls.invoke({"calls": calls})
        except NodeError as exc:  # the tool's own error, once: the ToolNode's task wraps it again
            assert isinstance(exc.error, BaseException)  # only an error handler's may be a saved text
            raise exc.error from None
        paused = final.get(INTERRUPT_KEY)
        if paused:
            raise GraphInterrupt(*paused)
        order = {c.get("id"): i for i, c in enumerate(calls)}
        results = sorted(final.get("results", []), key=lambda m: order.get(_call_id(m), len(order)))
        return [m[1] if isinstance(m, tuple) else m for m in results]

    def _fan_out(self, state: _ToolCalls) -> list[Send]:
        """One task per tool call (the inner graph's one node is named after the ToolNode)."""
        return [Send(self.name, call) for call in state.get("calls", [])]

    def _call_task(self, payload: Any) -> dict[str, Any]:
        return {"results": [self.run_call(payload)]}

    def run_call(self, call: Mapping[str, Any]) -> Any:
        """Run one tool call ``{"name", "args", "id"}``; returns its :class:`ToolMessage`, or ``(call id,
        Command)`` when the tool returned a Command.

        Raises:
            Exception: what the tool raised, when ``handle_tool_errors`` does not handle it.
        """
        name, call_id, args = str(call["name"]), str(call["id"]), call.get("args", {})
        tool = self.tools_by_name.get(name)
        if tool is None:
            content = INVALID_TOOL.format(name=name, names=", ".join(self.tools_by_name))
            return ToolMessage(content, name=name, tool_call_id=call_id, status="error")
        if tool.injected:
            args = self._injected_args(tool, args, call_id)
        try:
            output = tool.run({"name": name, "args": args, "id": call_id})
            if inspect.isawaitable(output):  # an async def tool: awaited on graphq's loop for this thread
                output = run_coroutine(output)
        except ValidationError as exc:
            if self._handling is False:
                raise
            return self._error(name, call_id, _invalid_args(name, args, exc))
        except Exception as exc:
            handled = self._handled(exc)
            if handled is None:
                raise
            return self._error(name, call_id, handled)
        if isinstance(output, Command):
            return (call_id, output)
        if isinstance(output, ToolMessage):
            return output.model_copy(update={"content": _content(output.content)})
        return ToolMessage(_content(output), name=name, tool_call_id=call_id)

    def _injected_args(self, tool: _Tool, args: Mapping[str, Any], call_id: str) -> dict[str, Any]:
        """The call's ``args`` with the injected parameters filled (a value the model gave them dropped;
        an ``InjectedState(key)`` parameter with a default left out when the state lacks the key).

        Raises:
            ValueError: an ``InjectedStore`` parameter and no store.
            KeyError / AttributeError: an ``InjectedState(key)`` parameter without a default, and no such
                key in the state.
        """
        given = _GIVEN.get(None) or _given(None)
        filled = {k: v for k, v in args.items() if k not in tool.injected}
        for name, how in tool.injected.items():
            if how[0] == "runtime":
                filled[name] = self._tool_runtime(given, call_id, how[1])
                continue
            try:
                filled[name] = _injected_value(how, given, self.messages_key)
            except (KeyError, AttributeError):
                if name not in tool.defaulted:
                    raise
        return filled

    def _tool_runtime(self, given: _Given, call_id: str, cls: type[Any] | None) -> Any:
        """The ToolRuntime of one call, of class ``cls`` (LangGraph's has the same fields) or graphq's
        :class:`~graphcore.prebuilt.injected.ToolRuntime` (imported here: it imports langchain-core, which a
        tool that asks for it has imported already)."""
        from graphcore.prebuilt.injected import ToolRuntime

        runtime = given.runtime
        return (cls or ToolRuntime)(
            state=given.state,
            context=runtime.context,
            config=given.config,
            stream_writer=runtime.stream_writer,
            tool_call_id=call_id,
            store=runtime.store,
            tools=list(self.tools),
            execution_info=runtime.execution_info,
            server_info=runtime.server_info,
        )

    def _handled(self, exc: Exception) -> str | None:
        """The error content for ``exc`` when ``handle_tool_errors`` handles it, else None."""
        handling = self._handling
        if handling is None or handling is False:
            return None
        if handling is True:
            return TOOL_ERROR.format(error=exc)
        if isinstance(handling, str):
            return handling
        if isinstance(handling, type | tuple):
            return TOOL_ERROR.format(error=exc) if isinstance(exc, handling) else None
        return str(handling(exc)) if isinstance(exc, _handled_types(handling)) else None

    @staticmethod
    def _error(name: str, call_id: str, content: str) -> ToolMessage:
        return ToolMessage(content, name=name, tool_call_id=call_id, status="error")
