"""A compiled graph's batch API, as LangChain's ``Runnable`` gives LangGraph's compiled graph: ``batch``,
``abatch``, ``batch_as_completed`` and ``abatch_as_completed`` run ``invoke`` / ``ainvoke`` once per input.

Configs: one config for every input, or a list of one per input (:func:`configs_for`). ``batch`` runs the
inputs in a thread pool (each thread with a copy of the caller's context), ``abatch`` gathers ``ainvoke``
calls; both run at most the first config's ``max_concurrency`` at once (None: no limit). With
``return_exceptions=True`` an input whose run raised an ``Exception`` gets it as its result.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from graphcore.engine.config import RunConfig
from graphcore.errors import warn_caller

__all__ = ["BatchMethods", "configs_for"]

Config = Mapping[str, Any] | RunConfig | None
T = TypeVar("T")


def configs_for(config: Config | Sequence[Config], count: int) -> list[Config]:
    """One config per input, as LangChain's ``get_config_list``: a list is taken as it is; one config is
    every input's, but its ``run_id`` (a run's id) goes to the first input only, with a ``RuntimeWarning``.

    Raises:
        ValueError: a list whose length is not ``count``
            (``config must be a list of the same length as inputs, but got 1 configs for 2 inputs``).
    """
    if isinstance(config, Sequence) and not isinstance(config, str):
        if len(config) != count:
            raise ValueError(
                "config must be a list of the same length as inputs, "
                f"but got {len(config)} configs for {count} inputs"
            )
        return list(config)
    if count > 1 and _run_id(config) is not None:
        warn_caller("Provided run_id be used only for the first element of the batch.", RuntimeWarning)
        return [config] + [_without_run_id(config)] * (count - 1)
    return [config] * count


def _run_id(config: Config) -> Any:
    if isinstance(config, RunConfig):
        return config.run_id
    return (config or {}).get("run_id")


def _without_run_id(config: Config) -> Config:
    if isinstance(config, RunConfig):
        return config.model_copy(update={"run_id": None})
    return {k: v for k, v in (config or {}).items() if k != "run_id"}


def _max_concurrency(config: Config) -> int | None:
    value = config.max_concurrency if isinstance(config, RunConfig) else (config or {}).get("max_concurrency")
    return None if value is None else int(value)


def _submit(pool: ThreadPoolExecutor, fn: Callable[..., T], *args: Any) -> Future[T]:
    """``fn(*args)`` in ``pool``, in a copy of the caller's context (a graph invoked in a node stays its
    child, as LangChain's ``ContextThreadPoolExecutor``)."""
    return pool.submit(contextvars.copy_context().run, fn, *args)


async def _gated(limit: asyncio.Semaphore | None, call: Awaitable[T]) -> T:
    if limit is None:
        return await call
    async with limit:
        return await call


class BatchMethods:
    """``batch`` and its kin for a class with ``invoke`` and ``ainvoke`` (the compiled graph)."""

    invoke: Callable[..., Any]
    ainvoke: Callable[..., Awaitable[Any]]

    def batch(
        self,
        inputs: Sequence[Any],
        config: Config | Sequence[Config] = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """``invoke`` each input, in threads (at most ``max_concurrency`` at once), as LangGraph's ``batch``.

        Args:
            inputs: one run's input each.
            config: one config for all, or a list with one per input (:func:`configs_for`).
            return_exceptions: an input whose run raised an ``Exception`` gets it as its result, instead of
                the batch raising.
            kwargs: ``invoke``'s keyword arguments (``stream_mode``, ``durability``, ...), for every input.

        Returns:
            The results, in input order; ``[]`` for no inputs.

        Raises:
            ValueError: a list of configs of another length than ``inputs``.
            Exception: without ``return_exceptions``, the error of the first input (in input order) whose
                run raised, once every run has ended.
        """
        if not inputs:
            return []
        configs = configs_for(config, len(inputs))
        if len(inputs) == 1:
            return [self._call(0, inputs[0], configs[0], return_exceptions, kwargs)[1]]
        with ThreadPoolExecutor(max_workers=_max_concurrency(configs[0])) as pool:
            calls = [
                _submit(pool, self._call, i, x, c, return_exceptions, kwargs)
                for i, (x, c) in enumerate(zip(inputs, configs, strict=True))
            ]
            return [call.result()[1] for call in calls]

    def batch_as_completed(
        self,
        inputs: Sequence[Any],
        config: Config | Sequence[Config] = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> Iterator[tuple[int, Any]]:
        """:meth:`batch`, yielding ``(index of the input, result)`` as each run ends, as LangGraph's
        ``batch_as_completed``; closing the iterator cancels the runs not started yet.

        Raises:
            ValueError: a list of configs of another length than ``inputs``.
            Exception: without ``return_exceptions``, the error of a run that raised, when it ends.
        """
        if not inputs:
            return
        configs = configs_for(config, len(inputs))
        if len(inputs) == 1:
            yield self._call(0, inputs[0], configs[0], return_exceptions, kwargs)
            return
        with ThreadPoolExecutor(max_workers=_max_concurrency(configs[0])) as pool:
            running = {
                _submit(pool, self._call, i, x, c, return_exceptions, kwargs)
                for i, (x, c) in enumerate(zip(inputs, configs, strict=True))
            }
            try:
                while running:
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    for call in done:
                        yield call.result()
            finally:
                for call in running:
                    call.cancel()

    async def abatch(
        self,
        inputs: Sequence[Any],
        config: Config | Sequence[Config] = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """``ainvoke`` each input concurrently (at most ``max_concurrency`` at once), as LangGraph's
        ``abatch``. Arguments, result and errors: :meth:`batch`'s (the error raised is the first one
        ``asyncio.gather`` sees)."""
        if not inputs:
            return []
        configs = configs_for(config, len(inputs))
        limit = _semaphore(configs[0])
        calls = [
            _gated(limit, self._acall(i, x, c, return_exceptions, kwargs))
            for i, (x, c) in enumerate(zip(inputs, configs, strict=True))
        ]
        return [out for _, out in await asyncio.gather(*calls)]

    async def abatch_as_completed(
        self,
        inputs: Sequence[Any],
        config: Config | Sequence[Config] = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> AsyncIterator[tuple[int, Any]]:
        """:meth:`abatch`, yielding ``(index of the input, result)`` as each run ends, as LangGraph's
        ``abatch_as_completed``."""
        if not inputs:
            return
        configs = configs_for(config, len(inputs))
        limit = _semaphore(configs[0])
        calls = [
            _gated(limit, self._acall(i, x, c, return_exceptions, kwargs))
            for i, (x, c) in enumerate(zip(inputs, configs, strict=True))
        ]
        for call in asyncio.as_completed(calls):
            yield await call

    def _call(
        self, index: int, input: Any, config: Config, catch: bool, kwargs: Mapping[str, Any]
    ) -> tuple[int, Any]:
        try:
            return index, self.invoke(input, config, **kwargs)
        except Exception as exc:
            if not catch:
                raise
            return index, exc

    async def _acall(
        self, index: int, input: Any, config: Config, catch: bool, kwargs: Mapping[str, Any]
    ) -> tuple[int, Any]:
        try:
            return index, await self.ainvoke(input, config, **kwargs)
        except Exception as exc:
            if not catch:
                raise
            return index, exc


def _semaphore(config: Config) -> asyncio.Semaphore | None:
    limit = _max_concurrency(config)
    return None if limit is None else asyncio.Semaphore(limit)
