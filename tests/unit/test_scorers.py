import pytest

from niah.core.results.scoring import exact_score


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        (" 7304912.", 10),
        ("The number is 7,304,912", 10),
        ("It is 7304913.", 1),
        ("17304912", 1),
        ("UNANSWERABLE", 1),
        ("", 1),
    ],
)
def test_exact_score_finds_the_number(answer: str, score: int) -> None:
    assert exact_score(answer, "7304912") == score


def test_exact_score_for_text_answers_ignores_case() -> None:
    assert exact_score("They eat a Sandwich in Dolores Park", "dolores park") == 10
