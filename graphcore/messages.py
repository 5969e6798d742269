"""Chat messages and the ``add_messages`` reducer, shaped like langchain-core's and LangGraph's.

A LangGraph program that imports its messages from ``langchain_core.messages`` and ``add_messages`` /
``MessagesState`` from ``langgraph.graph`` runs with them imported from ``graphcore.messages`` and
``graphcore`` instead; langchain-core itself is never imported.

* :class:`HumanMessage`, :class:`AIMessage`, :class:`SystemMessage`, :class:`ToolMessage`,
  :class:`RemoveMessage` — small pydantic models with langchain-core's fields (``content``, ``id``, ``name``,
  ``additional_kwargs``, ``response_metadata``, ``type``; an AI message's ``tool_calls`` and
  ``usage_metadata``; a tool message's ``tool_call_id`` and ``status``). Content may be given positionally
  (``HumanMessage("hi")``). They are on the checkpoint allow-list (graphcore.checkpoints.serde), so they
  are stored and read back by queue workers.
* :data:`AnyMessage` — the annotation of a message list item (``list[AnyMessage]``); pydantic validation
  picks the class by ``type`` and coerces strings, ``(role, content)`` pairs and dicts as
  :func:`add_messages` does.
* :func:`add_messages` — LangGraph 1.x's message reducer (coercion, ids, replace and remove by id,
  :data:`REMOVE_ALL_MESSAGES`).

langchain-core message objects (any object with ``id``, ``type`` and ``content`` attributes) are accepted
by :func:`add_messages` in-process as they are; they are not on the allow-list, so a queued workflow uses
these classes.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, field_validator
from typing_extensions import TypedDict

from graphcore.errors import InvalidUpdateError

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "AIMessage",
    "AnyMessage",
    "BaseMessage",
    "HumanMessage",
    "MessagesState",
    "MessagesStateModel",
    "RemoveMessage",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "UsageMetadata",
    "add_messages",
    "coerce_message",
]

REMOVE_ALL_MESSAGES = "__remove_all__"
"""``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` in an update deletes every message before it (LangGraph's)."""

Content: TypeAlias = str | list[str | dict[str, Any]]


class ToolCall(TypedDict):
    """One tool call of an AI message: ``{"name", "args", "id", "type": "tool_call"}``."""

    name: str
    args: dict[str, Any]
    id: str | None
    type: Literal["tool_call"]


class UsageMetadata(TypedDict, total=False):
    """Token counts a model reports for one call (langchain-core's keys)."""

    input_tokens: int
    output_tokens: int
    total_tokens: int


class BaseMessage(BaseModel):
    """A chat message: ``content`` (a string, or a list of content blocks), ``type``, ``id``, ``name``.

    Extra keyword arguments are kept as fields, as langchain-core's messages keep them.
    """

    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)

    content: Content
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)
    response_metadata: dict[str, Any] = Field(default_factory=dict)
    type: str
    name: str | None = None
    id: str | None = None

    def __init__(self, content: Content | None = None, **kwargs: Any) -> None:
        if content is not None:
            kwargs["content"] = content
        super().__init__(**kwargs)

    def __repr_args__(self) -> Any:
        """As langchain-core prints a message: without its ``type`` and the fields that are None."""
        return [(k, v) for k, v in super().__repr_args__() if k != "type" and v is not None]

    @property
    def text(self) -> str:
        """The text of the message: ``content`` itself, or its string and ``"text"`` blocks joined."""
        if isinstance(self.content, str):
            return self.content
        parts = [b if isinstance(b, str) else b.get("text", "") for b in self.content if _is_text(b)]
        return "".join(parts)

    def pretty_repr(self) -> str:
        """The message as langchain-core prints it: a title line, then the text."""
        title = f" {self.type.title()} Message "
        side = "=" * ((80 - len(title)) // 2)
        lines = [f"{side}{title}{side}{'=' if len(title) % 2 else ''}"]
        if self.name is not None:
            lines.append(f"Name: {self.name}")
        return "\n".join(lines) + f"\n\n{self.text}"

    def pretty_print(self) -> None:
        """Print :meth:`pretty_repr`."""
        print(self.pretty_repr())  # it is the method's job


def _is_text(block: Any) -> bool:
    return isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")


class HumanMessage(BaseMessage):
    """A message from the user (``type == "human"``)."""

    type: Literal["human"] = "human"

    def __init__(self, content: Content | None = None, **kwargs: Any) -> None:  # positional content (mypy)
        super().__init__(content, **kwargs)


class SystemMessage(BaseMessage):
    """Instructions for the model (``type == "system"``)."""

    type: Literal["system"] = "system"

    def __init__(self, content: Content | None = None, **kwargs: Any) -> None:  # positional content (mypy)
        super().__init__(content, **kwargs)


class AIMessage(BaseMessage):
    """A model's reply (``type == "ai"``).

    Attributes:
        tool_calls: the tools it asks to run, each ``{"name", "args", "id", "type": "tool_call"}`` (the
            ``"type"`` is added when missing).
        usage_metadata: ``{"input_tokens", "output_tokens", "total_tokens"}`` of the call, or None.
    """

    type: Literal["ai"] = "ai"
    tool_calls: list[ToolCall] = Field(default_factory=list)
    invalid_tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    usage_metadata: UsageMetadata | None = None

    def __init__(self, content: Content | None = None, **kwargs: Any) -> None:  # positional content (mypy)
        super().__init__(content, **kwargs)

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _typed_calls(cls, calls: Any) -> Any:
        if not isinstance(calls, list):
            return calls
        return [{**c, "type": "tool_call"} if isinstance(c, dict) and "type" not in c else c for c in calls]

    def pretty_repr(self) -> str:
        lines = []
        if self.tool_calls:
            lines.append("Tool Calls:")
            for call in self.tool_calls:
                lines += [f"  {call['name']} ({call['id']})", f" Call ID: {call['id']}", "  Args:"]
                lines += [f"    {key}: {value}" for key, value in call["args"].items()]
        return (super().pretty_repr().strip() + "\n" + "\n".join(lines)).strip()


class ToolMessage(BaseMessage):
    """The result of one tool call (``type == "tool"``).

    Attributes:
        tool_call_id: the ``id`` of the tool call it answers.
        status: ``"success"`` or ``"error"`` (the tool failed; ``content`` says how).
        artifact: anything the tool returns besides its content (not sent to a model).
    """

    type: Literal["tool"] = "tool"
    tool_call_id: str
    status: Literal["success", "error"] = "success"
    artifact: Any = None

    def __init__(self, content: Content | None = None, **kwargs: Any) -> None:  # positional content (mypy)
        super().__init__(content, **kwargs)


class RemoveMessage(BaseMessage):
    """Write ``RemoveMessage(id=...)`` (or ``RemoveMessage("id")``) into an :func:`add_messages` channel to
    delete the message with that id; ``id=REMOVE_ALL_MESSAGES`` deletes all before it.

    Raises:
        ValueError: ``content`` is given (a removal has none).
    """

    type: Literal["remove"] = "remove"

    def __init__(self, id: str, **kwargs: Any) -> None:  # langchain-core's name
        if "content" in kwargs:
            raise ValueError("RemoveMessage does not take content; give only the id of the message to delete")
        super().__init__(content="", id=id, **kwargs)


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
_OURS = frozenset(_CLASSES.values())
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


def add_messages(left: Any, right: Any) -> list[Any]:
    """Reducer for a message list, as LangGraph 1.x's ``add_messages``: appends, replaces by id, removes.

    Each side is a list or one message; items are read by :func:`coerce_message` (strings, ``(role,
    content)`` pairs and dicts become messages). A message without an id gets ``str(uuid.uuid4())`` (set on
    the message object, as LangGraph does). A right-hand message whose id is already present replaces that
    message in place; otherwise it is appended. ``RemoveMessage(id=...)`` deletes a message — a later
    message with the same id in the same update keeps the new message (in the old one's place);
    ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` drops everything before it, left and right: the result is the
    messages after it.

    Args:
        left: the current messages.
        right: the update: one message or a list.

    Returns:
        A new list; ``left`` is not modified. When ``right`` only appends, the result starts with ``left``'s
        items unchanged (the stores then write only the new items, I4).

    Raises:
        InvalidUpdateError: (a ValueError, as LangGraph raises) removing an id that is not present, or an
            item that is not a message (see :func:`coerce_message`); a stored dict without role and content
            (graphq's form before LangGraph's messages) is named with how to convert the thread.
    """
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
                raise InvalidUpdateError(f"RemoveMessage: no message with id {message.id!r} to delete")
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
    return kind if kind in _CLASSES else None


def _validated(value: Any) -> Any:
    """Pydantic's view of a list item declared :data:`AnyMessage`: coerced, a foreign message copied into
    the graphq class of its type."""
    if isinstance(value, str | tuple) or (isinstance(value, dict) and "role" in value):
        return coerce_message(value)
    if type(value) not in _OURS and _is_message(value) and hasattr(value, "model_dump"):
        return value.model_dump()
    return value


AnyMessage: TypeAlias = Annotated[
    Annotated[
        Annotated[AIMessage, Tag("ai")]
        | Annotated[HumanMessage, Tag("human")]
        | Annotated[SystemMessage, Tag("system")]
        | Annotated[ToolMessage, Tag("tool")]
        | Annotated[RemoveMessage, Tag("remove")],
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
