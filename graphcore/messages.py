"""Chat messages and the ``add_messages`` reducer: langchain-core's messages when it is installed.

A LangGraph program that imports its messages from ``langchain_core.messages`` and ``add_messages`` /
``MessagesState`` from ``langgraph.graph`` runs with ``add_messages`` / ``MessagesState`` imported from
``graphcore`` (its messages may stay langchain-core's, or come from ``graphcore.messages``).

* The message classes — :class:`HumanMessage`, :class:`AIMessage`, :class:`SystemMessage`,
  :class:`ToolMessage`, :class:`RemoveMessage`, :class:`ChatMessage`, :class:`FunctionMessage`, the
  ``...MessageChunk`` classes, :class:`BaseMessage`, :class:`ToolCall`, :class:`UsageMetadata` — are
  langchain-core's own classes when langchain-core is installed (``pip install graphq[langchain]``; then
  ``graphcore.messages.AIMessage is langchain_core.messages.AIMessage``), so LangChain chat models and tools
  take the messages of the state and return messages graphq stores. Without langchain-core they are
  graphq's lightweight look-alikes (:mod:`graphcore.lite_messages`), with the same fields.
  :data:`LANGCHAIN` says which.
* The checkpoint serde (graphcore.checkpoints.serde) stores a message of either kind in ONE form, its
  ``type`` and its fields (extension code 14), and loads it as the class of that ``type`` in
  :data:`MESSAGE_CLASSES`: the process's own classes. A thread written with langchain-core installed loads
  without it and the other way round; records written before (graphq's classes stored as pydantic models
  named ``graphcore.messages:HumanMessage``, ...) load as the process's classes too. No setting is needed,
  and nothing is pickled.
* :data:`AnyMessage` — the annotation of a message list item (``list[AnyMessage]``); pydantic validation
  picks the class by ``type`` and coerces strings, ``(role, content)`` pairs and dicts as
  :func:`add_messages` does; a message of the other kind is copied into the class of its type.
* :func:`add_messages` — LangGraph 1.x's message reducer (coercion, ids, replace and remove by id,
  :data:`REMOVE_ALL_MESSAGES`). It takes messages of both kinds (duck-typed: ``id``, ``type``, ``content``);
  the messages it makes from strings, pairs and dicts are of :data:`MESSAGE_CLASSES`.
"""

from __future__ import annotations

import functools
import uuid
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias, Union

from pydantic import BaseModel, BeforeValidator, Discriminator, Field, Tag
from typing_extensions import TypedDict

from graphcore.errors import InvalidUpdateError

if TYPE_CHECKING:  # checked against langchain-core's classes; the lightweight ones have the same shape
    from langchain_core.messages import (
        AIMessage,
        AIMessageChunk,
        BaseMessage,
        ChatMessage,
        ChatMessageChunk,
        FunctionMessage,
        FunctionMessageChunk,
        HumanMessage,
        HumanMessageChunk,
        RemoveMessage,
        SystemMessage,
        SystemMessageChunk,
        ToolCall,
        ToolMessage,
        ToolMessageChunk,
        UsageMetadata,
    )

    LANGCHAIN: bool
else:
    try:
        from langchain_core.messages import (
            AIMessage,
            AIMessageChunk,
            BaseMessage,
            ChatMessage,
            ChatMessageChunk,
            FunctionMessage,
            FunctionMessageChunk,
            HumanMessage,
            HumanMessageChunk,
            RemoveMessage,
            SystemMessage,
            SystemMessageChunk,
            ToolCall,
            ToolMessage,
            ToolMessageChunk,
            UsageMetadata,
        )

        LANGCHAIN = True
    except ImportError:
        from graphcore.lite_messages import (
            AIMessage,
            AIMessageChunk,
            BaseMessage,
            ChatMessage,
            ChatMessageChunk,
            FunctionMessage,
            FunctionMessageChunk,
            HumanMessage,
            HumanMessageChunk,
            RemoveMessage,
            SystemMessage,
            SystemMessageChunk,
            ToolCall,
            ToolMessage,
            ToolMessageChunk,
            UsageMetadata,
        )

        LANGCHAIN = False

__all__ = [
    "LANGCHAIN",
    "MESSAGE_CLASSES",
    "REMOVE_ALL_MESSAGES",
    "AIMessage",
    "AIMessageChunk",
    "AnyMessage",
    "BaseMessage",
    "ChatMessage",
    "ChatMessageChunk",
    "FunctionMessage",
    "FunctionMessageChunk",
    "HumanMessage",
    "HumanMessageChunk",
    "MessagesState",
    "MessagesStateModel",
    "RemoveMessage",
    "SystemMessage",
    "SystemMessageChunk",
    "ToolCall",
    "ToolMessage",
    "ToolMessageChunk",
    "UsageMetadata",
    "add_messages",
    "coerce_message",
]

REMOVE_ALL_MESSAGES = "__remove_all__"
"""``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` in an update deletes every message before it (LangGraph's)."""

MESSAGE_CLASSES: dict[str, type[Any]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        HumanMessage,
        AIMessage,
        SystemMessage,
        ToolMessage,
        RemoveMessage,
        ChatMessage,
        FunctionMessage,
        AIMessageChunk,
        HumanMessageChunk,
        SystemMessageChunk,
        ToolMessageChunk,
        ChatMessageChunk,
        FunctionMessageChunk,
    )
}
"""Each message ``type`` (``"human"``, ``"ai"``, ..., ``"AIMessageChunk"``) → this process's class for it:
the serde loads a stored message as this class."""

_CLASSES: dict[str, type[BaseMessage]] = {
    "human": HumanMessage,
    "user": HumanMessage,
    "ai": AIMessage,
    "assistant": AIMessage,
    "system": SystemMessage,
    "developer": SystemMessage,
    "tool": ToolMessage,
    "remove": RemoveMessage,
}
_OURS = frozenset(MESSAGE_CLASSES.values())
_FIELDS = frozenset({"name", "id", "tool_call_id", "tool_calls", "response_metadata", "status", "artifact"})


def _from_role(role: Any, content: Any, fields: dict[str, Any]) -> BaseMessage:
    """A message of ``role`` (langchain-core's role names) with ``content``; unknown keys of ``fields`` go to
    ``additional_kwargs``."""
    cls = _CLASSES.get(role) if isinstance(role, str) else None
    if cls is None:
        raise InvalidUpdateError(
            f"unexpected message role {role!r}; use one of 'human', 'user', 'ai', 'assistant', 'system', "
            "'developer', 'tool'"
        )
    kwargs = {k: v for k, v in fields.items() if k in _FIELDS}
    extra = {k: v for k, v in fields.items() if k not in _FIELDS}
    extra.update(extra.pop("additional_kwargs", None) or {})
    if role == "developer":
        extra["__openai_role__"] = "developer"
    if cls is RemoveMessage:
        return RemoveMessage(**kwargs)
    if cls is ToolMessage and "tool_call_id" not in kwargs:
        raise InvalidUpdateError(f"a {role!r} message needs a 'tool_call_id' (got {fields!r})")
    return cls(content=content or "", additional_kwargs=extra, **kwargs)


def _is_message(value: Any) -> bool:
    """A graphq message, or a langchain-core one (duck-typed: ``id``, ``type`` and ``content``)."""
    return type(value) in _OURS or (
        not isinstance(value, dict | str | tuple | list)
        and isinstance(getattr(value, "type", None), str)
        and hasattr(value, "content")
        and hasattr(value, "id")
    )


def coerce_message(value: Any) -> Any:
    """``value`` as a message, as LangGraph's ``add_messages`` reads it.

    A message (graphq's or langchain-core's) is returned as is; a string is a :class:`HumanMessage`; a
    ``(role, content)`` pair and a ``{"role" (or "type"): ..., "content": ...}`` dict (other keys: ``id``,
    ``name``, ``tool_calls``, ``tool_call_id``, ...; the rest go to ``additional_kwargs``) become a message
    of that role: ``"human"``/``"user"``, ``"ai"``/``"assistant"``, ``"system"``/``"developer"``, ``"tool"``.

    Raises:
        InvalidUpdateError: (a ValueError) the value is none of these, a dict has no role or content, the
            role is unknown, or a tool message has no ``tool_call_id``.
    """
    if _is_message(value):
        return value
    if isinstance(value, str):
        return HumanMessage(content=value)
    if isinstance(value, dict):
        fields = dict(value)
        role = fields.pop("role", None) or fields.pop("type", None)
        if role is None or "content" not in fields:
            raise InvalidUpdateError(
                f"a message dict must have 'role' (or 'type') and 'content' keys; got {value!r}"
            )
        return _from_role(role, fields.pop("content"), fields)
    if isinstance(value, tuple | list) and len(value) == 2 and isinstance(value[0], str):
        return _from_role(value[0], value[1], {})
    raise InvalidUpdateError(
        f"cannot read {value!r} as a message: give a message, a string, a (role, content) pair or a dict "
        "with 'role' and 'content'"
    )


def _coerced(value: Any) -> list[Any]:
    items = value if isinstance(value, list) else [value]
    if all(type(m) in _OURS for m in items):
        return items
    return [coerce_message(m) for m in items]


def _stored(value: Any) -> list[Any]:
    """The messages already in the state (``add_messages``' left side), read as :func:`_coerced` does; a
    dict without role and content is the form graphq's ``add_messages`` kept before it took LangGraph's
    messages (any dict with an ``"id"``): refused with what it lacks and how to convert the thread."""
    items = value if isinstance(value, list) else [value]
    if all(type(m) in _OURS for m in items):
        return items
    for m in items:
        if isinstance(m, dict) and not ("content" in m and (m.get("role") or m.get("type"))):
            raise InvalidUpdateError(_OLD_DICT.format(m, _lacking(m)))
    return [coerce_message(m) for m in items]


_OLD_DICT = (
    "add_messages: the state holds {0!r}, a message dict without {1}: graphq's add_messages kept such dicts "
    "before it took LangGraph's messages, LangGraph refuses them. Convert the thread's messages once with "
    "update_state(config, {{key: Overwrite([...])}}), each message a HumanMessage/AIMessage/... or a dict "
    "with 'role', 'content' and its 'id' (e.g. {{'role': 'user', 'content': ..., 'id': 'm1'}})"
)


def _lacking(message: dict[str, Any]) -> str:
    role = [] if message.get("role") or message.get("type") else ["'role' (or 'type')"]
    return " and ".join(role + ([] if "content" in message else ["'content'"]))


def _with_id(message: Any) -> Any:
    if message.id is None:
        message.id = str(uuid.uuid4())
    return message


def _is_removal(message: Any) -> bool:
    return bool(message.type == "remove")


def add_messages(left: Any = None, right: Any = None, *, format: str | None = None) -> Any:
    """Reducer for a message list, as LangGraph 1.x's ``add_messages``: appends, replaces by id, removes.

    Each side is a list or one message; items are read by :func:`coerce_message` (strings, ``(role,
    content)`` pairs and dicts become messages). A message without an id gets ``str(uuid.uuid4())`` (set on
    the message object, as LangGraph does). A right-hand message whose id is already present replaces that
    message in place; otherwise it is appended. ``RemoveMessage(id=...)`` deletes a message — a later
    message with the same id in the same update keeps the new message (in the old one's place);
    ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` drops everything before it, left and right: the result is the
    messages after it.

    ``add_messages(format="langchain-openai")`` (no messages given) is the reducer that returns its result
    in OpenAI's message format, as LangGraph's: each message's content a string or ``text`` /
    ``image_url`` blocks, tool results as their own ``ToolMessage`` (langchain-core's
    ``convert_to_openai_messages``, then back to messages). It needs langchain-core.

    Args:
        left: the current messages.
        right: the update: one message or a list.
        format: None (messages as they are) or ``"langchain-openai"``.

    Returns:
        A new list; ``left`` is not modified. When ``right`` only appends, the result starts with ``left``'s
        items unchanged (the stores then write only the new items, I4). With neither ``left`` nor ``right``:
        the reducer taking ``format`` (``functools.partial``).

    Raises:
        InvalidUpdateError: (a ValueError, as LangGraph raises) removing an id that is not present, or an
            item that is not a message (see :func:`coerce_message`); a stored dict without role and content
            (graphq's form before LangGraph's messages) is named with how to convert the thread.
        ValueError: only one of ``left`` and ``right`` given; an unknown ``format``.
        ImportError: ``format="langchain-openai"`` without langchain-core installed.
    """
    if left is None and right is None:
        _check_format(format)
        return functools.partial(add_messages, format=format)
    if left is None or right is None:
        given = "left" if left is not None else "right"
        raise ValueError(f"add_messages: give both 'left' and 'right' (only {given!r} was given)")
    _check_format(format)
    merged = _merged(left, right)
    if format is None:
        return merged
    from langchain_core.messages import convert_to_messages, convert_to_openai_messages

    return convert_to_messages(convert_to_openai_messages(merged))


def is_add_messages(reducer: Any) -> bool:
    """Whether ``reducer`` is :func:`add_messages`, with or without a ``format``."""
    return reducer is add_messages or (
        isinstance(reducer, functools.partial) and reducer.func is add_messages
    )


FORMATS = ("langchain-openai",)
"""The ``format`` values :func:`add_messages` takes (besides None)."""


def _check_format(format: str | None) -> None:
    """Raises:
    ValueError: ``format`` is not None nor one of :data:`FORMATS`.
    ImportError: ``"langchain-openai"`` without langchain-core.
    """
    if format is None:
        return
    if format not in FORMATS:
        raise ValueError(f"add_messages: unknown format={format!r}; expected one of {list(FORMATS)} or None")
    if not LANGCHAIN:
        raise ImportError(
            f"add_messages(format={format!r}) needs langchain-core (its convert_to_openai_messages): "
            "pip install graphq[langchain]"
        )


def _merged(left: Any, right: Any) -> list[Any]:
    """:func:`add_messages` of ``left`` and ``right``, unformatted."""
    lefts = [_with_id(m) for m in _stored(left)]
    rights = [_with_id(m) for m in _coerced(right)]
    cut = [i for i, m in enumerate(rights) if _is_removal(m) and m.id == REMOVE_ALL_MESSAGES]
    if cut:
        return rights[cut[-1] + 1 :]
    merged = list(lefts)
    index = {m.id: i for i, m in enumerate(merged)}
    removed: set[str] = set()
    for message in rights:
        at = index.get(message.id)
        if at is None:
            if _is_removal(message):
                raise InvalidUpdateError(  # LangGraph's words
                    f"Attempting to delete a message with an ID that doesn't exist ({message.id!r})"
                )
            index[message.id] = len(merged)
            merged.append(message)
        elif _is_removal(message):
            removed.add(message.id)
        else:
            removed.discard(message.id)
            merged[at] = message
    return [m for m in merged if m.id not in removed] if removed else merged


def _tag(value: Any) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in MESSAGE_CLASSES else None


def _validated(value: Any) -> Any:
    """Pydantic's view of a list item declared :data:`AnyMessage`: coerced, a message of the other kind
    (or any foreign message object) copied into the class of its type."""
    if isinstance(value, str | tuple) or (isinstance(value, dict) and "role" in value):
        return coerce_message(value)
    if type(value) not in _OURS and _is_message(value) and hasattr(value, "model_dump"):
        return value.model_dump()
    return value


if TYPE_CHECKING:
    AnyMessage: TypeAlias = BaseMessage
else:
    AnyMessage = Annotated[
        Annotated[
            Union[tuple(Annotated[cls, Tag(kind)] for kind, cls in MESSAGE_CLASSES.items())],  # noqa: UP007
            Discriminator(_tag),
        ],
        BeforeValidator(_validated),
    ]
"""Any of the message classes, for annotations: ``messages: Annotated[list[AnyMessage], add_messages]``."""


class MessagesState(TypedDict):
    """A ready state of one key, ``messages: Annotated[list[AnyMessage], add_messages]`` (LangGraph's
    ``MessagesState``); subclass it to add keys. The channel starts as ``[]``."""

    messages: Annotated[list[AnyMessage], add_messages]


class MessagesStateModel(BaseModel):
    """The pydantic variant of :class:`MessagesState`: nodes receive a model instance whose ``messages``
    (default ``[]``) is ``Annotated[list[AnyMessage], add_messages]``; subclass it to add fields. A model
    of one's own declaring the same field (``class S(BaseModel): messages: Annotated[list[AnyMessage],
    add_messages]``) works the same."""

    messages: Annotated[list[AnyMessage], add_messages] = Field(default_factory=list)
