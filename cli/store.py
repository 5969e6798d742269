"""``graphq store``: the long-term store the workers' runs share (:class:`RedisStore`): list namespaces, get,
put, delete and search items. A NAMESPACE is dotted (``users.alice``) or a JSON list (``'["users",
"alice"]'``); a value or filter is a JSON object."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from graphcore.backend.redis_store import RedisStore
from graphcore.checkpoints.store_base import MAX_TTL_MINUTES, Item
from graphq.cli.bounds import LIMIT, FiniteFloatRange
from graphq.cli.context import AppContext
from graphq.cli.errors import fail
from graphq.cli.inputs import loads
from graphq.cli.output import output_option, print_json, print_table, short

__all__ = ["store"]

_T = TypeVar("_T")

_INDEX = click.IntRange(0, sys.maxsize)
"""``--offset``: items skipped, up to the largest index a Python list takes."""
_DEPTH = click.IntRange(1, sys.maxsize)
"""``--max-depth``: labels kept of each namespace."""


def namespace_of(text: str, what: str = "NAMESPACE") -> tuple[str, ...]:
    """``text`` as a namespace: a JSON list of strings, or labels joined by ``.`` ("" is the root).

    Raises:
        CliError: (exit 2) a JSON list that is not of strings, or an empty label.
    """
    if text.startswith("["):
        try:
            labels = loads(text)
        except json.JSONDecodeError as exc:
            fail(f"{what}: not a JSON list: {exc}")
        except ValueError as exc:  # nested too deep, NaN
            fail(f"{what}: {exc}")
        if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
            fail(f"{what}: a JSON list of strings, got {text}")
        return tuple(labels)
    if not text:
        return ()
    labels = text.split(".")
    if not all(labels):
        fail(f"{what}: {text!r} has an empty label (write labels joined by '.', e.g. users.alice)")
    return tuple(labels)


def json_object(text: str, what: str) -> dict[str, Any]:
    """``text`` as a JSON object.

    Raises:
        CliError: (exit 2) not JSON, or not an object, naming ``what``.
    """
    try:
        value = loads(text)
    except json.JSONDecodeError as exc:
        fail(f"{what}: not JSON: {exc}")
    except ValueError as exc:  # nested too deep, NaN
        fail(f"{what}: {exc}")
    if not isinstance(value, dict):
        fail(f"{what}: a JSON object, got {text}")
    return value


def checked(call: Callable[[], _T]) -> _T:
    """``call()``; a refused argument (the store's ValueError or TypeError) exits 2 with its message."""
    try:
        return call()
    except (ValueError, TypeError) as exc:
        fail(str(exc))


def _store(app: AppContext) -> RedisStore:
    return RedisStore(app.kv(local=True, share=True))


def _print_items(items: list[Item], output: str, title: str) -> None:
    if output == "json":
        print_json([item.dict() for item in items])
        return
    rows = [
        [".".join(i.namespace), i.key, short(json.dumps(i.value)), i.updated_at.isoformat(timespec="seconds")]
        + ([] if getattr(i, "score", None) is None else [f"{getattr(i, 'score', 0):.3f}"])
        for i in items
    ]
    columns = ["namespace", "key", "value", "updated"] + (["score"] if any(len(r) == 5 for r in rows) else [])
    print_table(columns, [r + [""] * (len(columns) - len(r)) for r in rows], title=title)


@click.group(short_help="The long-term store: namespaces, get, put, delete, search.")
def store() -> None:
    """The long-term store (LangGraph's store) that every run on the workers shares: nodes reach it with
    get_store(), runtime.store or a store parameter. NAMESPACE is dotted (users.alice) or a JSON list."""


@store.command("namespaces", short_help="List namespaces that hold items.")
@click.option("--prefix", default="", help="Only namespaces under this one (dotted or a JSON list).")
@click.option("--max-depth", type=_DEPTH, default=None, help="Cut namespaces to N labels.")
@click.option("--limit", type=LIMIT, default=100, show_default=True)
@output_option
@click.pass_obj
def namespaces(app: AppContext, prefix: str, max_depth: int | None, limit: int, output: str) -> None:
    """List the namespaces that hold items, sorted, one per line (dotted). --output json prints a list of
    lists of labels."""
    under = namespace_of(prefix, "--prefix")
    found = checked(
        lambda: _store(app).list_namespaces(prefix=under or None, max_depth=max_depth, limit=limit)
    )
    if output == "json":
        print_json([list(ns) for ns in found])
    else:
        for ns in found:
            click.echo(".".join(ns))


@store.command("get", short_help="Show one item.")
@click.argument("namespace")
@click.argument("key")
@output_option
@click.pass_obj
def get(app: AppContext, namespace: str, key: str, output: str) -> None:
    """Show the item KEY of NAMESPACE (exit 2 when there is none). --output json prints {"namespace",
    "key", "value", "created_at", "updated_at"}."""
    labels = namespace_of(namespace)
    item = checked(lambda: _store(app).get(labels, key, refresh_ttl=False))
    if item is None:
        fail(f"no item {key!r} in namespace {'.'.join(labels)!r}")
    if output == "json":
        print_json(item.dict())
    else:
        click.echo(json.dumps(item.value, indent=2, ensure_ascii=False))


@store.command("put", short_help="Store one item.")
@click.argument("namespace")
@click.argument("key")
@click.option("--value", required=True, help="The item, a JSON object.")
@click.option(
    "--ttl",
    type=FiniteFloatRange(0, MAX_TTL_MINUTES, min_open=True),
    default=None,
    help="Expire after MINUTES (at most ten years).",
)
@click.pass_obj
def put(app: AppContext, namespace: str, key: str, value: str, ttl: float | None) -> None:
    """Store the JSON object --value as item KEY of NAMESPACE, replacing what was there (not embedded for
    semantic search: the embedder lives in the workflows' code)."""
    labels, item = namespace_of(namespace), json_object(value, "--value")
    checked(lambda: _store(app).put(labels, key, item, index=False, ttl=ttl))
    click.echo(f"put {'.'.join(labels)} {key}")


@store.command("delete", short_help="Delete one item.")
@click.argument("namespace")
@click.argument("key")
@click.pass_obj
def delete(app: AppContext, namespace: str, key: str) -> None:
    """Delete the item KEY of NAMESPACE (exit 2 when there is none)."""
    labels = namespace_of(namespace)
    kept = _store(app)
    if checked(lambda: kept.get(labels, key, refresh_ttl=False)) is None:
        fail(f"no item {key!r} in namespace {'.'.join(labels)!r}")
    kept.delete(labels, key)
    click.echo(f"deleted {'.'.join(labels)} {key}")


@store.command("search", short_help="Find items under a namespace.")
@click.argument("namespace_prefix", default="")
@click.option(
    "--query", default=None, help="Rank by similarity to TEXT (needs --workflow, for its embedder)."
)
@click.option("--workflow", default=None, help="The workflow whose store's index embeds --query.")
@click.option("--filter", "filter_", default=None, help='A JSON object, e.g. \'{"score": {"$gt": 3}}\'.')
@click.option("--limit", type=LIMIT, default=10, show_default=True)
@click.option("--offset", type=_INDEX, default=0, show_default=True)
@output_option
@click.pass_obj
def search(
    app: AppContext,
    namespace_prefix: str,
    query: str | None,
    workflow: str | None,
    filter_: str | None,
    limit: int,
    offset: int,
    output: str,
) -> None:
    """Items whose namespace starts with NAMESPACE_PREFIX (none: all), matching --filter, newest first, or
    ranked by --query. --output json prints a list of {"namespace", "key", "value", "created_at",
    "updated_at", "score"}."""
    prefix = namespace_of(namespace_prefix, "NAMESPACE_PREFIX")
    where = json_object(filter_, "--filter") if filter_ is not None else None
    kept = _store(app)
    if query is not None:
        kept = _indexed(app, kept, workflow)
    found = checked(lambda: kept.search(prefix, query=query, filter=where, limit=limit, offset=offset))
    _print_items(list(found), output, f"{len(found)} item(s)")


def _indexed(app: AppContext, kept: RedisStore, workflow: str | None) -> RedisStore:
    """The Redis store with the index of ``workflow``'s compile-time store (for ``--query``)."""
    if workflow is None:
        fail("--query needs --workflow NAME: the workflow whose store's index embeds the query")
    given = app.registry.get(workflow).store
    if given is None or given.index_config is None:
        fail(f"--workflow {workflow}: its graph was compiled without a store with an index")
    return RedisStore(kept.kv, index=given.index_config, ttl=given.ttl_config)
