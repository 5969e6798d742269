"""The LangChain callback handler of an idle timeout (:mod:`graphcore.engine.timeouts`): every event of a
LangChain call a node makes is progress, as under LangGraph's ``refresh_on="auto"``. Imported only when a
node with an idle timeout runs and langchain-core is installed."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from graphcore.engine.timeouts import Progress

__all__ = ["ProgressHandler"]


class ProgressHandler(BaseCallbackHandler):
    """Records progress on each LangChain event of one try (models, tools, chains, retrievers, retries)."""

    run_inline = True  # in the calling thread, in order

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress

    def _progress(self, *args: Any, **kwargs: Any) -> None:
        self.progress.wrote()

    on_llm_start = _progress
    on_chat_model_start = _progress
    on_llm_new_token = _progress
    on_llm_end = _progress
    on_llm_error = _progress
    on_chain_start = _progress
    on_chain_end = _progress
    on_chain_error = _progress
    on_tool_start = _progress
    on_tool_end = _progress
    on_tool_error = _progress
    on_retriever_start = _progress
    on_retriever_end = _progress
    on_retriever_error = _progress
    on_agent_action = _progress
    on_agent_finish = _progress
    on_text = _progress
    on_retry = _progress
    on_custom_event = _progress
