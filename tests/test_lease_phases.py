"""A lease's phases (:mod:`graphq.worker.step.lease`): the moves :data:`MOVES` allows, and the ones it
refuses, on a real Redis (the lease's own calls: enter, dropping, commit_later, settle, leave, release,
the keeper's loss)."""

from __future__ import annotations

import pytest
import redis

from graphq.worker.step.lease import MOVES, Lease, Phase, PhaseError, _keeper

TTL_S, HEARTBEAT_S = 5.0, 1.0


def lease_in(kv: redis.Redis, phase: Phase) -> Lease:
    """A lease forced into ``phase`` (only ``move`` changes it afterwards)."""
    lease = Lease(kv, "t-phases", "r-phases", TTL_S, HEARTBEAT_S)
    lease.phase = phase
    return lease


LEGAL = [(a, b) for a in Phase for b in Phase if b in MOVES[a]]
ILLEGAL = [(a, b) for a in Phase for b in Phase if b not in MOVES[a]]


def test_the_table_names_every_phase_and_ends_in_three() -> None:
    assert set(MOVES) == set(Phase)
    assert {p for p, to in MOVES.items() if not to} == {Phase.DROPPED, Phase.RELEASED, Phase.LEFT}
    assert len(LEGAL) == 20 and len(ILLEGAL) == 44


@pytest.mark.parametrize(("start", "to"), LEGAL, ids=[f"{a.value}->{b.value}" for a, b in LEGAL])
def test_every_legal_move_moves(redis_client: redis.Redis, start: Phase, to: Phase) -> None:
    lease = lease_in(redis_client, start)
    assert lease.move(to) is True
    assert lease.phase is to


@pytest.mark.parametrize(("start", "to"), ILLEGAL, ids=[f"{a.value}->{b.value}" for a, b in ILLEGAL])
def test_an_illegal_move_is_refused_and_changes_nothing(
    redis_client: redis.Redis, start: Phase, to: Phase
) -> None:
    lease = lease_in(redis_client, start)
    with pytest.raises(PhaseError, match=f"no move from {start.value} to {to.value}"):
        lease.move(to)
    assert lease.phase is start
    assert issubclass(PhaseError, AssertionError)


def test_a_conditional_move_from_another_phase_changes_nothing(redis_client: redis.Redis) -> None:
    lease = lease_in(redis_client, Phase.COMMITTING)
    assert lease.move(Phase.LOST, only_from=Phase.HELD) is False
    assert lease.phase is Phase.COMMITTING


def test_a_step_that_commits_drops_its_lease(redis_client: redis.Redis) -> None:
    lease = Lease(redis_client, "t-phases", "r-commit", TTL_S, HEARTBEAT_S)
    assert lease.acquire() and lease.phase is Phase.CLAIMED
    with lease:
        assert lease.phase is Phase.HELD
        lease.dropping()
        lease.dropping()  # a step run again after a transient error announces it again
        assert lease.phase is Phase.COMMITTING
        redis_client.delete(lease.key)  # what the commit script does
        lease.dropped()
        assert lease.phase is Phase.DROPPED
    lease.release()  # nothing to give back
    lease.leave()
    assert lease.phase is Phase.DROPPED


def test_a_released_lease_is_given_back_once(redis_client: redis.Redis) -> None:
    lease = Lease(redis_client, "t-phases", "r-release", TTL_S, HEARTBEAT_S)
    assert lease.acquire()
    with lease:
        pass
    lease.release()
    assert (lease.phase, redis_client.get(lease.key)) == (Phase.RELEASED, None)
    redis_client.set(lease.key, lease.token)  # were it sent again, the script would delete this
    lease.release()
    assert (lease.phase, redis_client.get(lease.key)) == (Phase.RELEASED, lease.token.encode())


def test_a_later_commit_keeps_the_lease_until_its_reply(redis_client: redis.Redis) -> None:
    applied = Lease(redis_client, "t-phases", "r-later", TTL_S, HEARTBEAT_S)
    refused = Lease(redis_client, "t-phases", "r-refused", TTL_S, HEARTBEAT_S)
    for lease in (applied, refused):
        assert lease.acquire()
        with lease:
            lease.commit_later()
        lease.release()  # the step job's end: the commit is not sent yet
        assert (lease.phase, redis_client.get(lease.key)) == (Phase.COMMIT_LATER, lease.token.encode())
    applied.settle(committed=True)
    refused.settle(committed=False)
    assert (applied.phase, refused.phase) == (Phase.DROPPED, Phase.RELEASED)
    assert redis_client.get(refused.key) is None


def test_a_later_commit_that_could_not_end_the_run_leaves_the_lease_to_lapse(
    redis_client: redis.Redis,
) -> None:
    lease = Lease(redis_client, "t-phases", "r-left", TTL_S, HEARTBEAT_S)
    assert lease.acquire()
    with lease:
        lease.commit_later()
    lease.leave()
    lease.settle(committed=False)  # gives nothing back: the key stays until its TTL
    assert (lease.phase, redis_client.get(lease.key)) == (Phase.LEFT, lease.token.encode())


def test_the_keeper_finds_a_held_lease_gone_lost_and_a_committing_one_not(redis_client: redis.Redis) -> None:
    keeper = _keeper(redis_client, HEARTBEAT_S)
    held = Lease(redis_client, "t-phases", "r-held", TTL_S, HEARTBEAT_S)
    committing = Lease(redis_client, "t-phases", "r-committing", TTL_S, HEARTBEAT_S)
    for lease in (held, committing):
        assert lease.acquire()
        lease.__enter__()
    committing.dropping()  # before its key goes, as a commit announces it (the keeper ticks meanwhile)
    redis_client.delete(held.key, committing.key)
    keeper._tick(held)
    keeper._tick(committing)
    assert (held.phase, committing.phase) == (Phase.LOST, Phase.COMMITTING)
    assert (held in keeper.leases, committing in keeper.leases) == (False, True)
    committing.dropped()
    held.release()
    assert (held.phase, committing.phase) == (Phase.RELEASED, Phase.DROPPED)


def test_a_later_commit_sent_again_after_an_append_conflict_settles_once(redis_client: redis.Redis) -> None:
    """The commit ridden on RQ's success pipeline met an append conflict and was sent again in a round trip
    of its own (COMMIT_LATER -> COMMITTING -> DROPPED): its settle finds the lease dropped already."""
    lease = Lease(redis_client, "t-phases", "r-conflict", TTL_S, HEARTBEAT_S)
    assert lease.acquire()
    with lease:
        lease.commit_later()
    lease.dropping()
    lease.dropped()
    lease.settle(committed=True)
    assert lease.phase == Phase.DROPPED


def test_a_later_commit_applied_after_the_lease_was_left_settles_quietly(redis_client: redis.Redis) -> None:
    """A cold stop between commit_later and the job's end leaves the lease; the commit still goes as the job
    ends, and its reply does not move a left lease (it raised PhaseError: left -> dropped)."""
    lease = Lease(redis_client, "t-phases", "r-left-later", TTL_S, HEARTBEAT_S)
    assert lease.acquire()
    with lease:
        lease.commit_later()
    lease.leave()
    lease.settle(committed=True)
    assert lease.phase == Phase.LEFT
