"""``ValidationNode``: LangGraph's node that validates the tool calls of the last AI message against
schemas without running any tool (``langgraph.prebuilt.ValidationNode``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from graphcore.messages import ToolCall, ToolMessage
from graphcore.prebuilt.tool_node import _args_model, _is_langchain_tool, _last_messages

__all__ = ["ValidationNode"]

FormatError = Callable[[BaseException, ToolCall, type[BaseModel]], str]
"""``format_error(error, call, schema) -> content`` of the ToolMessage of a call that does not validate."""


def _default_format_error(error: BaseException, call: ToolCall, schema: type[BaseModel]) -> str:
    """LangGraph's wording: the error's repr and a request to fix it."""
    return f"{error!r}\n\nRespond after fixing all validation errors."


def _schema_of(schema: Any) -> tuple[str, type[BaseModel]]:
    """A schema as ``(tool name, pydantic model)``: a model class (named after the class), a LangChain tool
    (its name and ``args_schema``) or a function (its name; a model of its parameters named
    ``Validation``, as LangGraph makes it).

    Raises:
        ValueError: a tool without a pydantic ``args_schema``, or something else.
    """
    if _is_langchain_tool(schema):
        args = schema.args_schema
        if not (isinstance(args, type) and issubclass(args, BaseModel)):
            raise ValueError(
                "Validation node only works with tools that have a pydantic BaseModel args_schema. "
                f"Got {schema.name} with args_schema: {args}."
            )
        return schema.name, args
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.__name__, schema
    if callable(schema) and getattr(schema, "__name__", None):
        return schema.__name__, _args_model(schema, skip=set(), name="Validation")
    raise ValueError(
        f"Unsupported input to ValidationNode. Expected BaseModel, tool or function. Got: {type(schema)}."
    )


class ValidationNode:
    """Validates each tool call of the last AI message against its schema, as LangGraph's
    ``ValidationNode``; it runs no tool.

    Given a list of messages it returns a list of :class:`ToolMessage` (one per call, in call order), given a
    state ``{"messages": [...]}`` the update ``{"messages": [...]}``. A call that validates gets the
    validated model as JSON (``model_dump_json()``); one that does not gets ``format_error(error, call,
    schema)`` with ``additional_kwargs={"is_error": True}``. Each message has the call's ``name`` and
    ``tool_call_id``.

    Args:
        schemas: pydantic model classes (the call name is the class name), LangChain tools (their
            ``args_schema``) or functions (a model of their parameters).
        format_error: the content of a call that does not validate; by default ``"<repr of the
            ValidationError>\\n\\nRespond after fixing all validation errors."``.
        name: the node's name, ``"validation"``.
        tags: kept as ``tags``; graphq does not use them.

    Raises:
        ValueError: (construction) a schema is none of the three, or a tool has no pydantic ``args_schema``;
            (a call) no messages, or the last message is not an AI message.
        KeyError: (a call) a tool call names no schema (its name).
    """

    def __init__(
        self,
        schemas: Sequence[Any],
        *,
        format_error: FormatError | None = None,
        name: str = "validation",
        tags: list[str] | None = None,
    ) -> None:
        self.schemas_by_name: dict[str, type[BaseModel]] = dict(map(_schema_of, schemas))
        self.name = self.__name__ = name
        self.tags = tags
        self._format_error = format_error or _default_format_error

    def __call__(self, state: Any) -> Any:
        """Validate the tool calls of ``state``'s last message (see the class docstring)."""
        messages = _last_messages(state, "messages")
        if getattr(messages[-1], "type", None) != "ai":
            raise ValueError("Last message is not an AIMessage")
        results = [self._validate(call) for call in messages[-1].tool_calls]
        return results if isinstance(state, list) else {"messages": results}

    invoke = __call__

    def _validate(self, call: ToolCall) -> ToolMessage:
        """One call's ToolMessage: the validated JSON, or the formatted error."""
        schema = self.schemas_by_name[call["name"]]
        name, call_id = call["name"], str(call["id"])
        try:
            content = schema.model_validate(call["args"]).model_dump_json()
        except ValidationError as exc:
            error = self._format_error(exc, call, schema)
            return ToolMessage(error, name=name, tool_call_id=call_id, additional_kwargs={"is_error": True})
        return ToolMessage(content, name=name, tool_call_id=call_id)
