"""graphq's lightweight chat messages: small pydantic models shaped like langchain-core's.

:mod:`graphcore.messages` names these classes when langchain-core is not installed (and langchain-core's own
classes when it is). They carry langchain-core's fields (``content``, ``id``, ``name``, ``additional_kwargs``,
``response_metadata``, ``type``; an AI message's ``tool_calls`` and ``usage_metadata``; a tool message's
``tool_call_id``, ``status`` and ``artifact``; a chat message's ``role``), print as langchain-core prints its
messages, and keep extra keyword arguments as fields. Content may be given positionally
(``HumanMessage("hi")``). The ``...MessageChunk`` classes are their message class with the chunk's ``type``
(they do not add up with ``+`` as langchain-core's do): they exist so that a thread holding langchain-core
chunks loads here as the same types.

The checkpoint serde stores every message, of either kind, as its ``type`` and its fields, and loads it as
the class of that ``type`` in :data:`graphcore.messages.MESSAGE_CLASSES`.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator
from typing_extensions import TypedDict

__all__ = [
    "CLASSES",
    "AIMessage",
    "AIMessageChunk",
    "BaseMessage",
    "ChatMessage",
    "ChatMessageChunk",
    "FunctionMessage",
    "FunctionMessageChunk",
    "HumanMessage",
    "HumanMessageChunk",
    "RemoveMessage",
    "SystemMessage",
    "SystemMessageChunk",
    "ToolCall",
    "ToolMessage",
    "ToolMessageChunk",
    "UsageMetadata",
]

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


class ChatMessage(BaseMessage):
    """A message with an arbitrary ``role`` (``type == "chat"``)."""

    type: Literal["chat"] = "chat"
    role: str

    def __init__(self, content: Content | None = None, **kwargs: Any) -> None:  # positional content (mypy)
        super().__init__(content, **kwargs)


class FunctionMessage(BaseMessage):
    """The result of a (legacy OpenAI) function call (``type == "function"``); ``name`` is the function's."""

    type: Literal["function"] = "function"
    name: str  # required here, as in langchain-core

    def __init__(self, content: Content | None = None, **kwargs: Any) -> None:  # positional content (mypy)
        super().__init__(content, **kwargs)


class AIMessageChunk(AIMessage):
    """A piece of a streamed :class:`AIMessage` (``type == "AIMessageChunk"``)."""

    type: Literal["AIMessageChunk"] = "AIMessageChunk"  # type: ignore[assignment]


class HumanMessageChunk(HumanMessage):
    """A piece of a :class:`HumanMessage` (``type == "HumanMessageChunk"``)."""

    type: Literal["HumanMessageChunk"] = "HumanMessageChunk"  # type: ignore[assignment]


class SystemMessageChunk(SystemMessage):
    """A piece of a :class:`SystemMessage` (``type == "SystemMessageChunk"``)."""

    type: Literal["SystemMessageChunk"] = "SystemMessageChunk"  # type: ignore[assignment]


class ToolMessageChunk(ToolMessage):
    """A piece of a :class:`ToolMessage` (``type == "ToolMessageChunk"``)."""

    type: Literal["ToolMessageChunk"] = "ToolMessageChunk"  # type: ignore[assignment]


class ChatMessageChunk(ChatMessage):
    """A piece of a :class:`ChatMessage` (``type == "ChatMessageChunk"``)."""

    type: Literal["ChatMessageChunk"] = "ChatMessageChunk"  # type: ignore[assignment]


class FunctionMessageChunk(FunctionMessage):
    """A piece of a :class:`FunctionMessage` (``type == "FunctionMessageChunk"``)."""

    type: Literal["FunctionMessageChunk"] = "FunctionMessageChunk"  # type: ignore[assignment]


CLASSES: tuple[type[BaseMessage], ...] = (
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
"""Every lightweight message class, one per ``type``."""
