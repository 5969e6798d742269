"""The replies of a step's claim and commit scripts, named (``claim_step.lua``, ``commit_step.lua``).

Each is an ``IntEnum`` or ``StrEnum``: a member equals the script's own reply (``ClaimResult.CLAIMED == 3``,
``CommitVerdict.AGAIN == "again"``), so code that compares to those values keeps working.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

__all__ = ["ClaimResult", "CommitVerdict", "Refusal"]


class ClaimResult(IntEnum):
    """What a step's claim found (:meth:`graphq.worker.step.lease.Lease.claim`)."""

    NO_RUN = 0
    """No such run (its thread expired or was deleted while the job waited)."""
    STALE = 1
    """The run has finished, or is at another step (a stale duplicate job)."""
    HELD_ELSEWHERE = 2
    """Another worker holds the step's lease (or held it and died: the reaper's)."""
    CLAIMED = 3
    """The lease is this worker's (also a claim made again with the same token after a lost reply)."""
    CANCELED = 4
    """A cancel request ended the run now, before its step (X1)."""
    OTHER_VERSION = 5
    """The run is pinned to a version of its workflow this worker does not serve: nothing was taken."""


class CommitVerdict(StrEnum):
    """A commit that applied (:func:`graphq.worker.step.commit_script.commit_verdict`)."""

    OK = "ok"
    AGAIN = "again"
    """This very commit had been applied before (a retry after a lost reply)."""
    CANCELED = "canceled"
    """A completing commit ended its run Canceled: a cancel request was recorded (X1)."""


class Refusal(StrEnum):
    """Why ``commit_step.lua`` wrote nothing (the fence, I1, or an append guard); :attr:`reason` in words."""

    LEASE = "lease"
    FINISHED = "finished"
    STEP = "step"
    LOG = "log"
    """A log append found its log grown by another branch."""

    @property
    def reason(self) -> str:
        """The refusal in words, for an error message."""
        return _REASONS[self]


_REASONS = {
    Refusal.LEASE: "lease no longer held",
    Refusal.FINISHED: "run already finished",
    Refusal.STEP: "run moved on",
    Refusal.LOG: "a log grew on another branch",
}
