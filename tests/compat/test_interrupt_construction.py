"""``Interrupt`` built as LangGraph programs build it: ``value`` first, positional."""

from __future__ import annotations

import pytest

from tests.compat.conftest import Imports


def test_an_interrupt_takes_its_value_first_and_its_id_by_keyword(lg: Imports) -> None:
    """LangGraph: ``Interrupt("value", id="x")`` — ``value`` is the first positional parameter."""
    made = lg.Interrupt("ok?", id="x")
    assert (made.value, made.id) == ("ok?", "x")
    assert made == lg.Interrupt(value="ok?", id="x")


def test_an_interrupt_takes_value_and_id_positionally(lg: Imports) -> None:
    """LangGraph: ``Interrupt(value, id)`` in that order."""
    made = lg.Interrupt({"q": 1}, "abc")
    assert (made.value, made.id) == ({"q": 1}, "abc")
    assert made != lg.Interrupt("abc", {"q": 1})


def test_an_interrupt_without_an_id_has_langgraphs_placeholder(lg: Imports) -> None:
    """LangGraph: the id defaults to ``"placeholder-id"``."""
    made = lg.Interrupt("ok?")
    assert (made.value, made.id) == ("ok?", "placeholder-id")
    assert made == lg.Interrupt(value="ok?", id="placeholder-id")
    with pytest.raises(TypeError):
        hash(made)
