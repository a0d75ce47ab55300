"""RULER's variable tracking, common and frequent words: made by RULER's rules, to the token.

Each prompt is built as the worker builds it (``prepare_call``) at 1K, 8K and 32K
tokens, then read back as a checker would: the chains resolve to the expected names,
the common words are listed exactly their count and more often than any other word, the
expected coded words are the three most frequent. Scoring is RULER's recall, checked
against RULER's own ``string_match_all`` on hand-written answers.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from niah.core.prompts.texts import LOCAL_TEMPLATE
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.models.tokenizer import SentencePieceTokenizer
from niah.service.cells.prompt import prepare_call
from niah.tasks import get_task
from niah.tasks.frequent_words import NOISE_WORD, zeta
from tests.fakes import MemoryBlobs

LENGTHS = [1_000, 8_000, 32_000]
ENTRY = re.compile(r"(?:^|\s)\d+\. (\S+)")


def built(task: str, length: int, tokenizer: SentencePieceTokenizer, **options: Any) -> Any:
    spec = RunRequest(task=task, context_lengths=[length], seed=7, **options)
    cell = Cell(length, 50.0, 1)
    sample = get_task(task).sample(spec, cell)
    prompt = prepare_call(
        spec,
        cell,
        sample,
        default_template=LOCAL_TEMPLATE,
        tokenizer=tokenizer,
        blobs=MemoryBlobs(),
    ).built
    return spec, sample, prompt


def resolve(context: str, value: str) -> set[str]:
    """Every variable that ends up holding ``value``, read off the text in order."""
    holders: set[str] = set()
    for name, source, number in re.findall(r"VAR ([A-Z]+) = (?:VAR ([A-Z]+)|(\d+))", context):
        if number == value or source in holders:
            holders.add(name)
    return holders


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("chains", [1, 3])
def test_variable_chains_resolve_to_exactly_the_expected_names(
    tokenizer: SentencePieceTokenizer, length: int, chains: int
) -> None:
    spec, sample, prompt = built(
        "variable_tracking", length, tokenizer, num_chains=chains, haystack_dir="noise"
    )
    assert len(tokenizer.encode(prompt.prompt)) == length
    value = sample.details["value"]
    assert resolve(prompt.context, value) == set(sample.expected)
    assert len(sample.expected) == get_task("variable_tracking").options_of(spec).num_hops + 1 == 5
    assert len(re.findall(r"VAR [A-Z]{5} = ", prompt.context)) == chains * 5
    # RULER's template around it, its question naming the value and the count.
    assert prompt.prompt.startswith("Memorize and track the chain(s) of variable assignment")
    assert prompt.prompt.endswith(f"5 variables are assigned the value {value}, they are:")


@pytest.mark.parametrize("length", LENGTHS)
def test_common_words_are_listed_exactly_their_count_and_most_often(
    tokenizer: SentencePieceTokenizer, length: int
) -> None:
    spec, sample, prompt = built("common_words", length, tokenizer)
    assert len(tokenizer.encode(prompt.prompt)) == length
    entries = ENTRY.findall(prompt.context)
    # Numbered 1, 2, 3, ... as RULER's list is.
    assert [int(n) for n in re.findall(r"(?:^|\s)(\d+)\. ", prompt.context)] == list(
        range(1, len(entries) + 1)
    )
    counts = Counter(entries)
    common, uncommon = get_task("common_words").options_of(spec).repeats(length)
    assert (common, uncommon) == ((6, 1) if length < 4096 else (30, 3))
    assert len(sample.expected) == 10
    for word in sample.expected:
        assert counts[word] == common
    others = [n for word, n in counts.items() if word not in sample.expected]
    assert max(others) < common
    # The others are listed freq_ucw times, but for the few listed once to land the length.
    assert Counter(others)[uncommon] >= len(others) - 12
    assert prompt.prompt.startswith("Below is a numbered list of words.")


@pytest.mark.parametrize("length", LENGTHS)
def test_the_expected_coded_words_are_the_three_most_frequent(
    tokenizer: SentencePieceTokenizer, length: int
) -> None:
    _, sample, prompt = built("frequent_words", length, tokenizer)
    assert len(tokenizer.encode(prompt.prompt)) == length
    counts = Counter(word for word in prompt.context.split() if word != NOISE_WORD)
    ranked = counts.most_common()
    assert {word for word, _ in ranked[:3]} == set(sample.expected)
    assert ranked[2][1] > ranked[3][1]  # no tie with the fourth
    assert sample.details["vocab_size"] == (length - 50) // 50  # RULER's default
    # The noise word is the most frequent of all, as RULER's rank 1.
    assert prompt.context.split().count(NOISE_WORD) > ranked[0][1]


def test_options_change_the_lists_as_ruler_s_do(tokenizer: SentencePieceTokenizer) -> None:
    _, sample, prompt = built("common_words", 8_000, tokenizer, num_cw=5, freq_cw=12, freq_ucw=2)
    counts = Counter(ENTRY.findall(prompt.context))
    assert len(sample.expected) == 5
    assert {counts[word] for word in sample.expected} == {12}
    assert "What are the 5 most common words" in prompt.prompt
    _, sample, prompt = built("frequent_words", 8_000, tokenizer, alpha=3.0, vocab_size=40)
    assert sample.details == {"alpha": 3.0, "vocab_size": 40}
    assert len(set(prompt.context.split())) <= 40
    _, sample, prompt = built(
        "variable_tracking", 8_000, tokenizer, num_chains=2, num_hops=7, haystack_dir="noise"
    )
    assert len(sample.expected) == 8
    assert resolve(prompt.context, sample.details["value"]) == set(sample.expected)


def test_zeta_matches_the_known_values() -> None:
    assert zeta(2.0) == pytest.approx(1.6449340668482264, abs=1e-12)  # pi^2 / 6
    assert zeta(4.0) == pytest.approx(1.0823232337111382, abs=1e-12)  # pi^4 / 90


def test_a_length_too_short_for_the_list_is_refused_clearly(
    tokenizer: SentencePieceTokenizer,
) -> None:
    from niah.errors import ContextTooShortError

    with pytest.raises(ContextTooShortError, match="longer context"):
        built("common_words", 300, tokenizer)


# --- scoring: RULER's recall ------------------------------------------------------------


def ruler_string_match_all(preds: list[str], refs: list[list[str]]) -> float:
    """RULER's metric, verbatim.

    NVIDIA/RULER scripts/eval/synthetic/constants.py, read 2026-11-26 at c3f5e3b.
    """
    score = (
        sum(
            [
                sum([1.0 if r.lower() in pred.lower() else 0.0 for r in ref]) / len(ref)
                for pred, ref in zip(preds, refs, strict=True)
            ]
        )
        / len(preds)
        * 100
    )
    return round(score, 2)


NAMES = ("QXKZD", "MBRTA", "LOPWE", "ZZAVC", "HUJNE")
ANSWERS = {
    "full": ("QXKZD MBRTA LOPWE ZZAVC HUJNE", 100.0, "correct"),
    "full, any case and order": ("hujne, zzavc, lopwe, mbrta, qxkzd.", 100.0, "correct"),
    "partial": ("1. QXKZD 2. LOPWE", 40.0, "wrong"),
    "none": ("I cannot tell.", 0.0, "wrong"),
    "extra items": ("QXKZD MBRTA LOPWE ZZAVC HUJNE ABCDE FGHIJ", 100.0, "correct"),
    "partial with extras": ("QXKZD, ABCDE, FGHIJ", 20.0, "wrong"),
}


@pytest.mark.parametrize("case", list(ANSWERS))
@pytest.mark.parametrize("task", ["variable_tracking", "common_words", "frequent_words"])
def test_the_score_is_ruler_s_recall(task: str, case: str) -> None:
    answer, percent, outcome = ANSWERS[case]
    sample = get_task(task).sample(RunRequest(task=task, context_lengths=[4000]), Cell(4000, 50))
    sample = type(sample)(insertions=(), question="", expected=NAMES)
    verdict = get_task(task).score(sample, answer)
    assert ruler_string_match_all([answer], [list(NAMES)]) == percent
    assert round(verdict.score * 100, 2) == percent
    assert verdict.outcome == outcome


def test_a_run_s_mean_is_ruler_s_task_score() -> None:
    """RULER averages the samples' recalls: the run's mean of task scores is the same."""
    answers = [ANSWERS[case][0] for case in ANSWERS]
    task = get_task("common_words")
    sample = get_task("common_words").sample(
        RunRequest(task="common_words", context_lengths=[4000]), Cell(4000, 50)
    )
    sample = type(sample)(insertions=(), question="", expected=NAMES)
    mean = sum(task.score(sample, a).score for a in answers) / len(answers) * 100
    assert round(mean, 2) == ruler_string_match_all(answers, [list(NAMES)] * len(answers))


# --- options belong to their task --------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"task": "single", "num_hops": 3}, "num_hops applies to task variable_tracking"),
        ({"task": "multi_key", "num_chains": 2}, "num_chains applies to task variable_tracking"),
        ({"task": "frequent_words", "freq_cw": 20}, "freq_cw applies to task common_words"),
        ({"task": "common_words", "alpha": 1.5}, "alpha applies to task frequent_words"),
        ({"task": "variable_tracking", "vocab_size": 50}, "vocab_size applies to task frequent"),
        ({"task": "common_words", "freq_cw": 3, "freq_ucw": 3}, "freq_cw (3) must exceed"),
        ({"task": "frequent_words", "alpha": 1.0}, "alpha"),
    ],
)
def test_an_option_for_another_task_is_refused_by_name(options: dict[str, Any], named: str) -> None:
    from niah.errors import RequestError
    from niah.service.runs.request_body import parse_request

    with pytest.raises(RequestError, match=re.escape(named)):
        parse_request({"context_lengths": [4000], **options})
