"""``approval``: a payment that a human approves or rejects — the human-in-the-loop demo workflow.

Shape::

    START -> assess --(audit_seconds > 0)--> slow_audit --> approve --("approved")--> execute -> END
                    \\--(otherwise)------------------------^        \\--("rejected")--> reject  -> END

* ``assess`` checks the input (a positive ``amount``, a ``requester``) and logs it.
* ``slow_audit`` (only with ``audit_seconds`` > 0) takes that many seconds, one at a time, watching the run's
  cancel token, so that ``graphq runs cancel RUN --interrupt`` stops it within about a second.
* ``approve`` asks a human with ``interrupt({"question": ..., "amount": ...})``: the run pauses, waiting for
  input. The answer is ``"yes"`` or ``"no"`` (any case), or ``{"decision": "yes"|"no", "note": "..."}``;
  anything else asks again.
* ``execute`` or ``reject`` logs the outcome.

Walkthrough (no Redis needed: ``graphq run`` starts an embedded one with its data in ``.graphq/``)::

    graphq run approval --input '{"amount": 120, "requester": "ana"}'
    # -> exit 3: run RUN is waiting for input, with the request and the command answering it
    graphq runs answer RUN --value '"yes"'
    # -> continues the run here and prints the summary: approved, executed
    graphq runs cancel RUN --interrupt     # a paused (or, on a shared Redis, running) run ends canceled
    graphq runs resume RUN                 # continues a canceled or failed run's thread in a new run
    graphq runs answer RUN --request ID --value '"no"' --again   # change your mind: a new branch
    graphq state THREAD --history          # both branches, with parents; a fork has source "fork"

Every value in the state is a plain ``str``/``float``/``list`` so checkpoints stay msgpack-safe.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

from graphcore import END, START, CompiledGraph, StateGraph, get_cancel_token, interrupt
from graphcore.checkpoints.protocol import CheckpointStore

__all__ = ["ApprovalState", "build_graph", "format_result", "graph", "parse_answer"]

_YES_NO = {"yes": "approved", "no": "rejected"}


class ApprovalState(TypedDict, total=False):
    """State of an ``approval`` run.

    Attributes:
        amount: how much is asked for (input, > 0).
        requester: who asks (input).
        audit_seconds: how long the slow audit takes, whole seconds (input, default 0: no audit).
        decision: ``"approved"`` or ``"rejected"``, the human's answer.
        note: the human's note, if any.
        log: what happened, one line per node (a reducer channel: lines are appended).
    """

    amount: float
    requester: str
    audit_seconds: int
    decision: str
    note: str
    log: Annotated[list[str], operator.add]


def assess(state: ApprovalState) -> dict[str, Any]:
    """Check the request and log it.

    Raises:
        ValueError: the amount is not a positive number, or there is no requester (the run fails).
    """
    amount, requester = state.get("amount"), state.get("requester")
    if isinstance(amount, bool) or not isinstance(amount, int | float) or amount <= 0:
        raise ValueError(f"amount must be a positive number, got {amount!r}")
    if not requester:
        raise ValueError("requester is missing")
    return {"log": [f"assessed {amount} for {requester}"]}


def after_assess(state: ApprovalState) -> str:
    """Audit first when ``audit_seconds`` asks for it."""
    return "slow_audit" if state.get("audit_seconds", 0) > 0 else "approve"


def slow_audit(state: ApprovalState) -> dict[str, Any]:
    """Spend ``audit_seconds`` seconds auditing, one second at a time; stop early when the run is canceled.

    Raises:
        Cancelled: the run was canceled with ``--interrupt`` (the run ends canceled; checkpoints are kept).
    """
    token = get_cancel_token()
    seconds = state.get("audit_seconds", 0)
    for _ in range(seconds):
        if token.wait(1.0):
            token.raise_if_cancelled()
    return {"log": [f"audited for {seconds} s"]}


def parse_answer(answer: Any) -> tuple[str, str] | None:
    """A human's answer as ``(decision, note)``, or None when it is not one.

    Accepts ``"yes"``/``"no"`` (any case, surrounding blanks ignored) and ``{"decision": "yes"|"no",
    "note": "..."}`` (the note is optional).
    """
    note: Any = ""
    if isinstance(answer, Mapping):
        answer, note = answer.get("decision"), answer.get("note", "")
    if not isinstance(answer, str) or not isinstance(note, str):
        return None
    decision = _YES_NO.get(answer.strip().lower())
    return None if decision is None else (decision, note)


def approve(state: ApprovalState) -> dict[str, Any]:
    """Ask a human to approve; ask again, saying why, until the answer is one :func:`parse_answer` takes."""
    amount, requester = state["amount"], state["requester"]
    question = f"Approve {amount} for {requester}?"
    while True:
        answer = interrupt({"question": question, "amount": amount})  # pauses the run until answered
        parsed = parse_answer(answer)
        if parsed is not None:
            break
        question = f"Approve {amount} for {requester}? Please answer yes or no (got {answer!r})."
    decision, note = parsed
    if not note:
        return {"decision": decision, "log": [f"{decision} by a human"]}
    return {"decision": decision, "note": note, "log": [f"{decision} by a human: {note}"]}


def route(state: ApprovalState) -> str:
    """``execute`` an approved payment, ``reject`` the rest."""
    return "execute" if state.get("decision") == "approved" else "reject"


def execute(state: ApprovalState) -> dict[str, Any]:
    """Pay (here: log the payment)."""
    return {"log": [f"paid {state['amount']} to {state['requester']}"]}


def reject(state: ApprovalState) -> dict[str, Any]:
    """Refuse (here: log the refusal)."""
    return {"log": [f"told {state['requester']} no"]}


def build_graph(checkpointer: CheckpointStore | None = None) -> CompiledGraph:
    """Compile the ``approval`` workflow (with ``checkpointer`` for in-process ``invoke`` and resume)."""
    g = StateGraph(ApprovalState)
    g.add_node("assess", assess)
    g.add_node("slow_audit", slow_audit)
    g.add_node("approve", approve)
    g.add_node("execute", execute)
    g.add_node("reject", reject)
    g.add_edge(START, "assess")
    g.add_conditional_edges("assess", after_assess, ["slow_audit", "approve"])
    g.add_edge("slow_audit", "approve")
    g.add_conditional_edges("approve", route, ["execute", "reject"])
    g.add_edge("execute", END)
    g.add_edge("reject", END)
    compiled = g.compile(name="approval", checkpointer=checkpointer)
    compiled.formatter = format_result
    return compiled


def format_result(state: Mapping[str, Any]) -> str:
    """The final state of a run, for people: the decision and the log (``graphq run`` prints this)."""
    decision = state.get("decision", "undecided")
    note = f" ({state['note']})" if state.get("note") else ""
    lines = [f"{state.get('amount')} for {state.get('requester')}: {decision}{note}"]
    return "\n".join(lines + [f"  - {line}" for line in state.get("log", [])])


graph: CompiledGraph = build_graph()
"""The workflow, registered as the ``approval`` entry point."""
