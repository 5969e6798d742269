"""A node's cache policy (LangGraph's ``CachePolicy``) and its default key: what ``add_node(...,
cache_policy=...)`` takes. The cache itself and how a step uses it: :mod:`graphcore.engine.cache`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from graphcore.checkpoints import serde
from graphcore.errors import ConfigError

__all__ = ["CachePolicy", "check_policy", "default_cache_key"]

KeyFunc = TypeVar("KeyFunc", bound=Callable[..., str | bytes])


def _canonical(value: Any, depth: int = 10) -> Any:
    """``value`` with mappings as key-sorted pairs and sets sorted, so equal inputs give equal keys."""
    if depth <= 0:
        return value
    if isinstance(value, Mapping):
        pairs = ((k, _canonical(v, depth - 1)) for k, v in value.items())
        return tuple(sorted(pairs, key=lambda pair: repr(pair[0])))
    if isinstance(value, list | tuple):
        return tuple(_canonical(v, depth - 1) for v in value)
    if isinstance(value, set | frozenset):
        return tuple(sorted((_canonical(v, depth - 1) for v in value), key=repr))
    return value


def default_cache_key(*args: Any, **kwargs: Any) -> bytes:
    """The cache key of a node's input (``CachePolicy``'s default ``key_func``): the arguments in a
    canonical form (mapping keys sorted), serialised by graphq's checkpoint serde (LangGraph pickles them).

    Raises:
        SerializationError: a value the serde does not store (a class it does not allow); give the policy a
            ``key_func`` of your own.
    """
    return serde.dumps((_canonical(args), _canonical(kwargs)), path="cache key")


@dataclass(frozen=True)
class CachePolicy(Generic[KeyFunc]):
    """How a node's results are cached (LangGraph's ``CachePolicy``).

    Attributes:
        key_func: the node's input → a ``str`` or ``bytes`` key; equal keys share a cached result.
        ttl: seconds an entry lives; None: until the cache is cleared.
    """

    key_func: KeyFunc = default_cache_key  # type: ignore[assignment]
    ttl: float | None = None


def check_policy(where: str, policy: Any) -> CachePolicy[Any] | None:
    """A node's ``cache_policy``: None or a :class:`CachePolicy` (or LangGraph's: its ``key_func`` and
    ``ttl`` are read).

    Raises:
        ConfigError: anything else, or a ``ttl`` that is not None nor a number ≥ 0.
    """
    if policy is None:
        return None
    key_func, ttl = getattr(policy, "key_func", None), getattr(policy, "ttl", "missing")
    if not callable(key_func) or ttl == "missing":
        raise ConfigError(f"{where}: cache_policy must be a CachePolicy (got {policy!r})")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl < 0):
        raise ConfigError(f"{where}: CachePolicy.ttl must be None or seconds ≥ 0 (got {ttl!r})")
    return policy if isinstance(policy, CachePolicy) else CachePolicy(key_func, ttl)
