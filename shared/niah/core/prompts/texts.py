"""Every prompt the service sends, in one place: the cell templates and the judge's.

Templates use ``{context}`` (once), ``{question}`` and optionally ``{answer_lead}``;
``render`` fills them in one pass, so braces inside a haystack, a needle or a question
are never read as placeholders.
"""

from __future__ import annotations

import re
from typing import Literal

_PLACEHOLDER = re.compile(r"\{(context|question|answer_lead)\}")

# Stands in for the context while a template's own text is split around it; a private-
# use character, which run requests cannot contain.
CONTEXT_MARK = "\ue000"

# The NIAH harness's prompt for chat models (Gemini, OpenAI-compatible): context,
# question, "don't go outside the document", an UNANSWERABLE way out, its answer lead-in.
HARNESS_TEMPLATE = """You are a helpful AI bot that answers questions for a user. Keep your response short and direct.

<context>
{context}
</context>

{question} Don't give information outside the document or repeat your findings. If the answer is not in the context, reply UNANSWERABLE.

Here is the most relevant sentence in the context:"""  # noqa: E501

# The local model is a base model: it continues text. Ending the prompt with the start
# of the answer (the needle's own lead-in for dynamic needles) makes it state the fact.
LOCAL_TEMPLATE = "{context}\n\nQuestion: {question}\nAnswer:{answer_lead}"

# The NIAH harness's accuracy rubric for its LLM evaluator.
JUDGE_RUBRIC = """Score 1: The answer is completely unrelated to the reference.
Score 3: The answer has minor relevance but does not align with the reference.
Score 5: The answer has moderate relevance but contains inaccuracies.
Score 7: The answer aligns with the reference but has minor omissions.
Score 10: The answer is completely accurate and aligns perfectly with the reference."""

JUDGE_TEMPLATE = """You are grading how accurately an answer retrieves a fact.

Question: {question}
Reference: {reference}
Answer to grade: {answer}

Rubric:
{rubric}

Reply on the first line with "Score: N" where N is one of 1, 3, 5, 7, 10, then one sentence
explaining why."""

# Tokens the judge may answer with: a score line and one sentence.
JUDGE_MAX_OUTPUT_TOKENS = 256


def render(template: str, *, context: str, question: str, answer_lead: str = "") -> str:
    """Fill a prompt template in one pass: text put in is never scanned again."""
    values = {"context": context, "question": question, "answer_lead": answer_lead}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def judge_prompt(*, question: str, reference: str, answer: str) -> str:
    """The judge's prompt: the harness's rubric around one answer."""
    return JUDGE_TEMPLATE.format(
        question=question, reference=reference.strip(), answer=answer.strip(), rubric=JUDGE_RUBRIC
    )


# A conversation written out, as MRCR v2's transcripts are (google-deepmind/eval_hub
# mrcr_v2/mrcr_utils.py at 67b7fd2): "User: {request}\n\nAssistant: {reply}\n\n".
USER_MARK, MODEL_MARK = "User: ", "Assistant: "
_TURN = re.compile(r"(?:^|\n\n)(User|Assistant): ")


def split_transcript(text: str) -> tuple[tuple[Literal["user", "model"], str], ...]:
    """The turns of a written-out conversation; a last, empty "Assistant:" is dropped.

    The transcript must start with "User: "; text before it would be lost, so it is
    refused.
    """
    if not text.startswith(USER_MARK):
        raise ValueError("a transcript starts with 'User: '")
    pieces = _TURN.split(text.removesuffix("Assistant:"))
    turns: list[tuple[Literal["user", "model"], str]] = []
    for speaker, said in zip(pieces[1::2], pieces[2::2], strict=True):
        turns.append(("user" if speaker == "User" else "model", said.strip("\n")))
    return tuple(turns)
