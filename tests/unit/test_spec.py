import pytest

from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import RequestError
from niah.service.runs.request_body import parse_request


def test_lengths_follow_the_harness_linspace() -> None:
    spec = RunRequest(
        context_lengths_min=1000, context_lengths_max=4000, context_lengths_num_intervals=4
    )
    assert spec.lengths() == [1000, 2000, 3000, 4000]
    # np.round(np.linspace(1000, 16000, 35)) starts 1000, 1441, 1882 ...
    harness = RunRequest(context_lengths_num_intervals=35)
    assert harness.lengths()[:3] == [1000, 1441, 1882]
    assert len(harness.lengths()) == 35
    assert len(RunRequest().lengths()) == 15  # our default: 15 x 15 fits the cap


def test_explicit_lists_win_and_are_sorted_and_deduplicated() -> None:
    spec = RunRequest(context_lengths=[4000, 1000, 4000], document_depth_percents=[50, 0, 50])
    assert spec.lengths() == [1000, 4000]
    assert spec.depths() == [0, 50]
    assert [c.cell_id for c in spec.cells()] == [
        "L00001000-D000000",
        "L00001000-D050000",
        "L00004000-D000000",
        "L00004000-D050000",
    ]


def test_linear_and_sigmoid_depths() -> None:
    assert RunRequest(document_depth_percent_intervals=5).depths() == [0, 25, 50, 75, 100]
    sigmoid = RunRequest(
        document_depth_percent_intervals=5, document_depth_percent_interval_type="sigmoid"
    ).depths()
    assert sigmoid == [0, 7.586, 50.0, 92.414, 100]


def test_run_id_names_what_the_run_measures() -> None:
    base = RunRequest(context_lengths=[1000, 2000])
    assert base.run_id() == RunRequest(context_lengths=[2000, 1000]).run_id()
    # The same grid written as a range, and bookkeeping options, name the same run.
    same = RunRequest(
        context_lengths_min=1000,
        context_lengths_max=2000,
        context_lengths_num_intervals=2,
        save_contexts=True,
        num_concurrent_requests=8,
        count_tokens_check=True,
        label="a name for people",
    )
    assert same.run_id() == base.run_id()
    for other in (
        RunRequest(context_lengths=[1000, 2000], results_version=2),
        RunRequest(context_lengths=[1000, 2000], seed=1),
        RunRequest(context_lengths=[1000, 2000], final_context_length_buffer=200),
    ):
        assert other.run_id() != base.run_id()
    assert base.run_id("haystack-v2") != base.run_id("haystack-v1")


def test_depths_that_differ_get_different_cells() -> None:
    depths = RunRequest(document_depth_percents=[10.001, 10.002, 10.0004]).depths()
    assert depths == [10.0, 10.001, 10.002]
    sigmoid = RunRequest(
        document_depth_percent_intervals=1000, document_depth_percent_interval_type="sigmoid"
    )
    ids = [
        cell.cell_id
        for cell in RunRequest(
            context_lengths=[1000],
            document_depth_percent_intervals=1000,
            document_depth_percent_interval_type="sigmoid",
        ).cells()
    ]
    assert len(ids) == len(set(ids)) == len(sigmoid.depths())


def test_cell_id_orders_by_length_then_depth() -> None:
    ids = [Cell(2000, 0).cell_id, Cell(1000, 100).cell_id, Cell(1000, 7.586).cell_id]
    assert sorted(ids) == [
        Cell(1000, 7.586).cell_id,
        Cell(1000, 100).cell_id,
        Cell(2000, 0).cell_id,
    ]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"context_lengths": []}, "context_lengths"),
        ({"context_lengths": [0]}, "context_lengths"),
        ({"context_lengths": ["many"]}, "context_lengths.0"),
        ({"document_depth_percents": [101]}, "document_depth_percents"),
        ({"document_depth_percent_interval_type": "cubic"}, "document_depth_percent_interval_type"),
        ({"context_lengths_min": 5000, "context_lengths_max": 1000}, "context_lengths_min"),
        ({"contxt_lengths": [1000]}, "contxt_lengths"),
        ({"scorer": "judge"}, "scorer"),
        ({"haystack_dir": "../../etc"}, "haystack_dir"),
        ({"prompt_template": "no placeholders"}, "prompt_template"),
        ({"prompt_template": "{context} {context} {question}"}, "prompt_template"),
        ({"prompt_template": "{context} {question} {question}"}, "prompt_template"),
        ({"prompt_template": "{context}{question}{answer_lead}{answer_lead}"}, "prompt_template"),
        ({"retrieval_question": "What is in {context}?"}, "retrieval_question"),
        ({"dynamic_needle": False, "needle": "x {question}", "expected_answer": "x"}, "needle"),
        (
            {"dynamic_needle": False, "needle": "x", "expected_answer": "{answer_lead}"},
            "expected_answer",
        ),
        ([1, 2], "body"),
    ],
)
def test_bad_requests_name_the_field(payload: object, field: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(payload)
    assert caught.value.field == field
    assert caught.value.message


def test_text_put_into_a_template_is_never_read_as_a_placeholder() -> None:
    from niah.core.prompts.texts import render

    filled = render(
        "<{context}>\n{question}{answer_lead}",
        context="a {question} in the haystack",
        question="Where is {context}?",
        answer_lead=" {answer_lead}",
    )
    assert filled == "<a {question} in the haystack>\nWhere is {context}? {answer_lead}"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (b'{"seed": 1, "seed": 2}', "seed", "given twice"),
        (b'{"document_depth_percent_min": NaN}', "body", "NaN is not a JSON number"),
        (b'{"context_lengths": [-Infinity]}', "body", "-Infinity is not a JSON number"),
        (b"{", "body", "not valid JSON"),
    ],
)
def test_the_body_is_read_strictly(body: bytes, field: str, words: str) -> None:
    """Before: a repeated key was silently last-wins, and NaN reached the validators."""
    from niah.service.runs.request_body import decode_body

    with pytest.raises(RequestError) as caught:
        decode_body(body)
    assert caught.value.field == field and words in caught.value.message


STATIC_REFUSAL = (
    "a static needle (dynamic_needle false) needs expected_answer, the text a right answer "
    "contains (scored exact), or evaluator_model_name, a judge"
)


def test_the_harness_s_default_needle_alone_is_scored_exact_by_its_known_answer() -> None:
    """The harness README's `--dynamic_needle=False` on its own: its needle, exact."""
    from niah.core.prompts.needles import needle_for
    from niah.core.request.request_options import HARNESS_DEFAULT_NEEDLE, HARNESS_DEFAULT_QUESTION
    from niah.core.results.scoring import exact_score

    spec = parse_request({"dynamic_needle": False, "context_lengths": [1000]})
    assert spec.scorer_name() == "exact"
    needle = needle_for(spec, Cell(1000, 50))
    assert (needle.text, needle.question, needle.expected_answer) == (
        HARNESS_DEFAULT_NEEDLE,
        HARNESS_DEFAULT_QUESTION,
        "Dolores Park",
    )
    right = "Eat a sandwich and sit in Dolores Park on a sunny day."
    assert exact_score(right, needle.expected_answer) == 10
    assert exact_score("Visit the Golden Gate Bridge.", needle.expected_answer) == 1


def test_the_default_needle_with_a_judge_is_judged_and_the_user_s_answer_wins() -> None:
    judged = parse_request({"dynamic_needle": False, "evaluator_model_name": "gemini-3.5-flash"})
    assert judged.scorer_name() == "judge"
    both = parse_request(
        {"dynamic_needle": False, "evaluator_model_name": "gemini-3.5-flash", "scorer": "both"}
    )
    assert (both.scorer_name(), both.static_expected_answer()) == ("both", "Dolores Park")
    own = parse_request({"dynamic_needle": False, "expected_answer": "sandwich"})
    assert (own.scorer_name(), own.static_expected_answer()) == ("exact", "sandwich")


@pytest.mark.parametrize(
    "changed",
    [
        {"needle": "The secret ingredient of the pizza is figs."},
        {"retrieval_question": "What should one eat in Dolores Park?"},
    ],
)
def test_any_other_static_needle_still_needs_an_answer_or_a_judge(
    changed: dict[str, str],
) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request({"dynamic_needle": False, **changed})
    assert (caught.value.field, caught.value.message) == ("expected_answer", STATIC_REFUSAL)
