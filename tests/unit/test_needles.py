from niah.core.prompts.needles import needle_for
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest


def test_dynamic_needle_is_reproducible_per_seed_and_cell() -> None:
    spec = RunRequest()
    first = needle_for(spec, Cell(1000, 50))
    assert first == needle_for(RunRequest(), Cell(1000, 50))
    assert first.expected_answer in first.text
    assert first.text.startswith(" The special magic ")
    assert len(first.expected_answer) == 7
    others = {
        needle_for(spec, Cell(length, depth)).text
        for length in (1000, 2000, 3000)
        for depth in (0, 25, 50, 75, 100)
    }
    assert len(others) == 15, "cells must not share needles"
    assert needle_for(RunRequest(seed=1), Cell(1000, 50)) != first


def test_static_needle_is_the_users() -> None:
    spec = RunRequest(
        dynamic_needle=False,
        needle="Pineapples are blue.",
        retrieval_question="What colour are pineapples?",
        expected_answer="blue",
    )
    needle = needle_for(spec, Cell(1000, 50))
    assert needle.text == "Pineapples are blue."
    assert needle.expected_answer == "blue"
    assert needle.answer_lead == ""
