"""The LangChain callback handler of ``stream_mode="messages"`` (:mod:`graphcore.engine.messages_stream`);
imported only when a run streams messages and langchain-core is installed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGenerationChunk

__all__ = ["LangChainMessages"]


class LangChainMessages(BaseCallbackHandler):
    """Shows, through ``shows`` (a :class:`graphcore.engine.messages_stream.MessagesHandler`), the tokens of
    the chat models called in a streamed run's nodes, or a model's whole reply when it did not stream; a
    streaming handler (langchain-core's ``_StreamingCallbackHandler`` protocol), so a model's ``invoke``
    streams under it, as under LangGraph's."""

    run_inline = True  # in order, in the model's thread

    def __init__(self, shows: Any) -> None:
        super().__init__()
        self.shows = shows
        self.runs: dict[UUID, tuple[tuple[str, ...], dict[str, Any]]] = {}

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the run's namespace and metadata when it is a node's model call not tagged ``nostream``
        that the stream shows (``shows.namespace``: a subgraph's only with ``subgraphs=True``), with its
        tags (but LangChain's ``seq:step:*``) as ``tags`` when it has some (LangGraph's)."""
        if metadata is None or "langgraph_node" not in metadata or "nostream" in (tags or []):
            return
        ns = self.shows.namespace(metadata)
        if ns is not None:
            shown = [t for t in tags or [] if not t.startswith("seq:step")]
            self.runs[run_id] = ns, ({**metadata, "tags": shown} if shown else metadata)

    def on_llm_new_token(self, token: Any, *, chunk: Any = None, run_id: UUID, **kwargs: Any) -> None:
        """Show a token's message chunk."""
        run = self.runs.get(run_id)
        if run is not None and isinstance(chunk, ChatGenerationChunk):
            self.shows.show(chunk.message, run[1], dedupe=False, ns=run[0])

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Show the reply unless its tokens were shown (same id)."""
        run = self.runs.pop(run_id, None)
        if run is None:
            return
        for message in [getattr(g, "message", None) for gs in response.generations for g in gs]:
            if message is not None:
                self.shows.show(message, run[1], dedupe=True, ns=run[0])

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.runs.pop(run_id, None)

    def tap_output_iter(self, run_id: UUID, output: Iterator[Any]) -> Iterator[Any]:
        return output

    def tap_output_aiter(self, run_id: UUID, output: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return output
