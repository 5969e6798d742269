"""The agent loop, ready-made (DESIGN G8): a state that keeps the loop's accounts, and routers that end it.

An agent graph loops between a model node and a tools node until the model gives a final answer, a loop
limit is hit or a token budget runs out. :class:`AgentLoopState` holds the loop's accounts, each kept by
its reducer; a model node returns :func:`model_turn`'s update, which fills them from the model's reply; a
:class:`~graphcore.prebuilt.ToolNode` built with ``record_outcome=True`` fills ``last_result`` and
``last_error``. The conditions (:func:`has_tool_calls`, :func:`is_final_answer`, :func:`iteration_exceeds`,
:func:`budget_exhausted`, :func:`terminate_requested`) read a state; :func:`first_of` makes a router of
them::

    route = first_of(iteration_exceeds(5), budget_exhausted, otherwise=tools_condition)
    builder.add_conditional_edges("model", route, ["tools", END])
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeAlias

from typing_extensions import TypedDict

from graphcore.checkpoints import serde
from graphcore.messages import AnyMessage, add_messages
from graphcore.types import END


@dataclass(frozen=True)
class Spent:
    """A write to ``tokens_left``: ``tokens`` were used (see :func:`spend`)."""

    tokens: int


serde.allow_classes(Spent)  # a pending write on the queue


def spend(left: int | None, right: int | Spent | None) -> int | None:
    """Reducer of ``tokens_left``: an int (or None) sets the budget — the input's, or a new one for the next
    run of a thread; :class:`Spent` takes its tokens off a set budget (nothing when there is none)."""
    if isinstance(right, Spent):
        return None if left is None else left - right.tokens
    return right


def latest(left: Any, right: Any) -> Any:
    """Reducer that keeps the last write of a super-step (parallel writers do not conflict)."""
    return right


class Decision(TypedDict):
    """What the last model call decided: ``action`` is ``"call_tools"`` (with the tool ``names``, in call
    order) or ``"answer"`` (with the ``answer`` text)."""

    action: Literal["call_tools", "answer"]
    names: list[str]
    answer: str | None


class AgentLoopState(TypedDict, total=False):
    """The state of an agent loop; subclass it to add keys.

    Keys (and the reducer that keeps each):
        messages: the conversation (:func:`~graphcore.messages.add_messages`).
        iterations: model calls so far on the thread (``operator.add``; each :func:`model_turn` adds 1).
        tokens_left: the token budget remaining, or None for no budget (:func:`spend`: the input sets it,
            each model turn takes its ``usage_metadata["total_tokens"]`` off).
        last_result: the content of the last successful tool call (:func:`latest`).
        last_error: the content of the last failed tool call, or None when the last tools step had none
            (:func:`latest`).
        should_terminate: set by a node to end the loop at the next router (:func:`latest`).
        decision: the parsed decision of the last model call (:class:`Decision`).
    """

    messages: Annotated[list[AnyMessage], add_messages]
    iterations: Annotated[int, operator.add]
    tokens_left: Annotated[int | None, spend]
    last_result: Annotated[Any, latest]
    last_error: Annotated[str | None, latest]
    should_terminate: Annotated[bool, latest]
    decision: Decision


def _get(state: Any, key: str, default: Any = None) -> Any:
    return state.get(key, default) if isinstance(state, Mapping) else getattr(state, key, default)


def _last(state: Any) -> Any:
    messages = _get(state, "messages") or [None]
    return messages[-1]


def decision_of(message: Any) -> Decision:
    """The :class:`Decision` an AI message states: its tool calls, or its text as the answer."""
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        return {"action": "call_tools", "names": [c["name"] for c in calls], "answer": None}
    content = getattr(message, "content", "")
    return {"action": "answer", "names": [], "answer": content if isinstance(content, str) else str(content)}


def model_turn(state: Any, message: Any) -> dict[str, Any]:
    """The update of a model node that replied ``message`` (an AI message): the message, one more
    iteration, the parsed decision and, when the state has a budget, the tokens the reply used
    (``usage_metadata["total_tokens"]``, 0 without usage).

    Returns:
        ``{"messages": [message], "iterations": 1, "decision": ..., "tokens_left": Spent(n)}`` (no
        ``tokens_left`` without a budget).
    """
    update: dict[str, Any] = {"messages": [message], "iterations": 1, "decision": decision_of(message)}
    if _get(state, "tokens_left") is not None:
        usage = getattr(message, "usage_metadata", None) or {}
        update["tokens_left"] = Spent(int(usage.get("total_tokens", 0)))
    return update


Condition: TypeAlias = Callable[[Any], bool]
"""A test of the state: ``condition(state) -> bool``."""


def has_tool_calls(state: Any) -> bool:
    """Holds when the last message has tool calls (an AI message asking for tools)."""
    return bool(getattr(_last(state), "tool_calls", None))


def is_final_answer(state: Any) -> bool:
    """Holds when the last message is an AI message without tool calls (the model answered)."""
    last = _last(state)
    return getattr(last, "type", None) == "ai" and not getattr(last, "tool_calls", None)


def iteration_exceeds(n: int) -> Condition:
    """A condition that holds when ``iterations`` (model calls so far) is greater than ``n``; a loop routed
    by it after its model node makes at most ``n + 1`` model calls.

    Raises:
        ValueError: ``n`` is below 0.
    """
    if n < 0:
        raise ValueError(f"iteration_exceeds(n): n must be 0 or more (got {n})")

    def exceeded(state: Any) -> bool:
        return int(_get(state, "iterations", 0) or 0) > n

    exceeded.__name__ = f"iteration_exceeds({n})"
    return exceeded


def budget_exhausted(state: Any) -> bool:
    """Holds when a token budget is set (``tokens_left`` is not None) and none of it is left (``<= 0``)."""
    left = _get(state, "tokens_left")
    return left is not None and left <= 0


def terminate_requested(state: Any) -> bool:
    """Holds when a node set ``should_terminate``."""
    return bool(_get(state, "should_terminate", False))


def first_of(
    *conditions: Condition | tuple[Condition, str], then: str = END, otherwise: str | Callable[[Any], Any]
) -> Callable[[Any], Any]:
    """A router: the target of the first condition that holds, in the order given, else ``otherwise``.

    Args:
        conditions: conditions (they route to ``then``) or ``(condition, target)`` pairs.
        then: where a bare condition routes, ``END`` by default.
        otherwise: where to go when none holds: a node name (e.g. ``"tools"``) or a router whose answer is
            taken (e.g. :func:`~graphcore.prebuilt.tools_condition`).

    Returns:
        ``router(state) -> str``, for ``add_conditional_edges``.

    Raises:
        ValueError: no conditions are given.
    """
    if not conditions:
        raise ValueError("first_of needs at least one condition")
    rules = [c if isinstance(c, tuple) else (c, then) for c in conditions]

    def route(state: Any) -> Any:
        for holds, target in rules:
            if holds(state):
                return target
        return otherwise(state) if callable(otherwise) else otherwise

    return route
