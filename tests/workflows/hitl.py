"""Workflows for human-in-the-loop, multi-turn and continuation tests (module-level: workers import them).

Counters in ``CALLS`` count node entries within one process (the tests work the queue in-process).
"""

from __future__ import annotations

import operator
from collections import Counter
from enum import Enum
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel

from graphcore import END, START, Send, StateGraph, add_messages
from graphcore.engine.interrupts import interrupt
from graphcore.messages import AIMessage, AnyMessage, ToolMessage

CALLS: Counter[str] = Counter()


class Ask(TypedDict, total=False):
    topic: str
    answers: Annotated[list[Any], operator.add]
    done: bool


def ask_twice(state: Ask) -> dict[str, Any]:
    CALLS["ask_twice"] += 1
    first = interrupt({"question": f"first about {state['topic']}?"})
    second = interrupt({"question": "second?"})
    return {"answers": [first, second]}


def finish(state: Ask) -> dict[str, Any]:
    CALLS["finish"] += 1
    return {"done": True}


_a = StateGraph(Ask)
_a.add_node("ask_twice", ask_twice)
_a.add_node("finish", finish)
_a.add_edge(START, "ask_twice")
_a.add_edge("ask_twice", "finish")
asking = _a.compile(name="asking")


class Review(TypedDict, total=False):
    items: list[str]
    approvals: Annotated[list[Any], operator.add]
    joined: int


def review_each(state: Review) -> list[Send]:
    return [Send("approve", item) for item in state["items"]]


def approve(item: str) -> dict[str, Any]:
    CALLS[f"approve:{item}"] += 1
    return {"approvals": [[item, interrupt(f"approve {item}?")]]}


def join(state: Review) -> dict[str, Any]:
    CALLS["join"] += 1
    return {"joined": len(state["approvals"])}


_r = StateGraph(Review)
_r.add_node("approve", approve)
_r.add_node("join", join)
_r.add_conditional_edges(START, review_each)
_r.add_edge("approve", "join")
reviewing = _r.compile(name="reviewing")


class Flaky(TypedDict, total=False):
    value: int
    sunk: Annotated[int, operator.add]


def produce(state: Flaky) -> dict[str, Any]:
    CALLS["produce"] += 1
    return {"value": 1}


def flaky_router(state: Flaky) -> str:
    CALLS["router"] += 1
    if CALLS["router"] == 1:
        raise RuntimeError("router fails the first time")
    return "sink"


def sink(state: Flaky) -> dict[str, Any]:
    CALLS["sink"] += 1
    return {"sunk": 1}


_f = StateGraph(Flaky)
_f.add_node("produce", produce)
_f.add_node("sink", sink)
_f.add_edge(START, "produce")
_f.add_conditional_edges("produce", flaky_router, ["sink"])
_f.add_edge("sink", END)
flaky = _f.compile(name="flaky")


class Loop(TypedDict, total=False):
    turns: Annotated[list[int], operator.add]
    count: int
    until: int


def tick(state: Loop) -> dict[str, Any]:
    return {"count": state.get("count", 0) + 1}


def again(state: Loop) -> str:
    return "tick" if state["count"] < state["until"] else END


_l = StateGraph(Loop)
_l.add_node("tick", tick)
_l.add_edge(START, "tick")
_l.add_conditional_edges("tick", again, ["tick", END])
looping = _l.compile(name="looping", config={"max_super_steps": 5})


class Order(BaseModel):
    class Status(Enum):
        OPEN = "open"
        APPROVED = "approved"

    id: int
    status: Status = Status.OPEN


class OrderState(BaseModel):
    order: Order
    note: str = ""


def sign_off(state: OrderState) -> dict[str, Any]:
    note = interrupt({"order": state.order.id, "status": state.order.status})
    return {"order": Order(id=state.order.id, status=Order.Status.APPROVED), "note": note}


_o = StateGraph(OrderState)
_o.add_node("sign_off", sign_off)
_o.add_edge(START, "sign_off")
ordering = _o.compile(name="ordering")


SLOW_TICKS = 20
"""Super-steps of ``slow-loop`` (0.3 s each): a cancel after its second step lands with 5 s to spare."""


class Slow(TypedDict, total=False):
    ticks: Annotated[list[int], operator.add]
    stopped: str


def slow_tick(state: Slow) -> dict[str, Any]:
    import time

    time.sleep(0.3)
    return {"ticks": [len(state.get("ticks", [])) + 1]}


def slow_more(state: Slow) -> str:
    return "slow_tick" if len(state["ticks"]) < SLOW_TICKS else END


_s = StateGraph(Slow)
_s.add_node("slow_tick", slow_tick)
_s.add_edge(START, "slow_tick")
_s.add_conditional_edges("slow_tick", slow_more, ["slow_tick", END])
slow_loop = _s.compile(name="slow-loop", config={"max_super_steps": 100})


def patient(state: Slow) -> dict[str, Any]:
    """Waits 30 s on its cancel token; first writes ``waiting`` to ``$GRAPHQ_TEST_DIR/patient.log``."""
    import os
    from pathlib import Path

    from graphcore import get_cancel_token

    token = get_cancel_token()
    (Path(os.environ["GRAPHQ_TEST_DIR"]) / "patient.log").write_text("waiting\n")
    if token.wait(30):
        token.raise_if_cancelled()
    return {"stopped": "never"}


_p = StateGraph(Slow)
_p.add_node("patient", patient)
_p.add_edge(START, "patient")
patient_graph = _p.compile(name="patient")


class Chat(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def agent(state: Chat) -> dict[str, Any]:
    CALLS["agent"] += 1
    last = state["messages"][-1]
    if last.type == "tool":
        return {"messages": [AIMessage(f"done: {last.content}", id="ai-final")]}
    call = {"name": "lookup", "args": {"q": last.content}, "id": "call-1"}
    return {"messages": [AIMessage("", id="ai-call", tool_calls=[call])]}


def tools(state: Chat) -> dict[str, Any]:
    CALLS["tools"] += 1
    [call] = state["messages"][-1].tool_calls
    verdict = interrupt({"approve": {"name": call["name"], "args": call["args"]}})
    content = f"{call['name']}({call['args']['q']}) approved={verdict}"
    return {"messages": [ToolMessage(content, id="tool-1", tool_call_id=call["id"])]}


def needs_tool(state: Chat) -> str:
    return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END


_c = StateGraph(Chat)
_c.add_node("agent", agent)
_c.add_node("tools", tools)
_c.add_edge(START, "agent")
_c.add_conditional_edges("agent", needs_tool, ["tools", END])
_c.add_edge("tools", "agent")
chat = _c.compile(name="chat")


class Pair(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


_pa = StateGraph(Pair)
_pa.add_node("left", lambda state: {"items": ["left"]})
_pa.add_node("right", lambda state: {"items": ["right"]})
_pa.add_edge(START, "left")
_pa.add_edge(START, "right")
pair = _pa.compile(name="pair")
"""Two nodes in one super-step: an update_state without as_node after it is ambiguous (LangGraph's rule)."""
