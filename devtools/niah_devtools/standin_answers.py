"""What the Vertex stand-in answers: every task's question, as a good model would.

The answer is read off the prompt's text alone: the task's question names what is
asked, and the needles of that form in the context hold the values. A judge prompt
gets a score, an MRCR transcript the asked reply with its prefix. The non-literal task
takes one hop of world knowledge; the stand-in "knows the world" through that task's
own templates (which landmark is in which place). Anything else is UNANSWERABLE, as
the harness's prompt offers.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

JUDGE = re.compile(r"Reference: (.*?)\nAnswer to grade: (.*?)\n", re.DOTALL)
MRCR_ASK = re.compile(
    r"Prepend (\S+) to the (\w+) (.+?) about (.+?) in an? (\w+) style\. Do not include"
)
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
# The single needle and the multi-needle task's needles: "special magic {city} number".
CITY_NEEDLE = re.compile(r"The special magic ([\w ]+?) number is: (\d+)\.")
CITY_ASKED = re.compile(r"What is the special magic ([\w ]+?) number\?")
CITIES_ASKED = re.compile(
    r"What are the special magic numbers for (.+?)\? Give each city with its number\."
)
# RULER's form (multi_key, multi_value, multi_query, absent): keys and values are
# numbers, adjective-noun words or UUIDs, none with a space or a full stop.
RULER_NEEDLE = re.compile(r"One of the special magic (\w+) for ([\w-]+) is: ([\w-]+)\.")
RULER_ASKED = re.compile(
    r"What (?:are all|is) the special magic (\w+) for (.+?) mentioned in the provided text\?"
)
DECLINE = "UNANSWERABLE: the text does not mention it."
# RULER's variable tracking, common and frequent words (niah.tasks): the question, and
# what the context holds.
VT_ASKED = re.compile(r"Find all variables that are assigned the value (\d+) in the text above")
VT_LINE = re.compile(r"VAR ([A-Z]+) = (?:VAR ([A-Z]+)|(\d+))")
CWE_ASKED = re.compile(r"What are the (\d+) most common words in the above list\?")
CWE_ENTRY = re.compile(r"(?:^|\s)\d+\. (\S+)")
FWE_ASKED = "What are the three most frequently appeared words in the above coded text?"
FWE_START = "Find the three most frequently appeared coded words. "
# GraphWalks (niah.tasks.graphwalks): the graph to operate on is the last edge list, the
# operation the line after the last "Operation:".
GRAPH_EDGES = "The graph has the following edges:\n"
GRAPH_OPERATION = "\n\nOperation:\n"
GRAPH_EDGE = re.compile(r"^(\w+) -> (\w+)$", re.MULTILINE)
GRAPH_BFS = re.compile(r"Perform a BFS from node (\w+) with depth (\d+)\.")
GRAPH_PARENTS = re.compile(r"Find the parents of node (\w+)\.")


def answer_text(prompt: str) -> str:
    """The right answer to whichever task's question ``prompt`` asks."""
    for answer in (
        _judge,
        _mrcr,
        _graphwalks,
        _variables,
        _common_words,
        _frequent_words,
        _nonliteral,
        _cities,
        _ruler,
        _single,
    ):
        found = answer(prompt)
        if found is not None:
            return found
    return "UNANSWERABLE"


def _judge(prompt: str) -> str | None:
    judged = JUDGE.search(prompt)
    if not judged:
        return None
    reference, answer = judged.groups()
    number = re.search(r"\d{5,}", reference)
    good = number.group(0) in answer if number else reference.strip() in answer
    if good:
        return "Score: 10\nThe answer states the reference fact."
    return "Score: 1\nThe answer does not contain the reference fact."


def _variables(prompt: str) -> str | None:
    """Every variable the asked value reaches through the chains (variable tracking)."""
    asked = VT_ASKED.search(prompt)
    if not asked:
        return None
    holders: set[str] = set()
    for name, source, value in VT_LINE.findall(prompt[: asked.start()]):
        if value == asked.group(1) or source in holders:
            holders.add(name)
    return " ".join(sorted(holders)) if holders else DECLINE


def _common_words(prompt: str) -> str | None:
    """The asked number of most often listed words (common words extraction)."""
    asked = CWE_ASKED.search(prompt)
    if not asked:
        return None
    counts = Counter(CWE_ENTRY.findall(prompt[: asked.start()]))
    top = [word for word, _ in counts.most_common(int(asked.group(1)))]
    return " ".join(f"{i}. {word}" for i, word in enumerate(top, 1))


def _frequent_words(prompt: str) -> str | None:
    """The three most frequent coded words, the noise "..." aside (frequent words)."""
    end = prompt.find(FWE_ASKED)
    start = prompt.find(FWE_START)
    if end < 0 or start < 0:
        return None
    text = prompt[start + len(FWE_START) : end].split("\nQuestion:")[0]
    counts = Counter(word for word in text.split() if word != "...")
    return " ".join(word for word, _ in counts.most_common(3))


def _graphwalks(prompt: str) -> str | None:
    """The operation's nodes on the last line, as the card asks: "Final Answer: [a, b]"."""
    operation = prompt.rfind(GRAPH_OPERATION)
    edges_at = prompt.rfind(GRAPH_EDGES, 0, operation)
    if operation < 0 or edges_at < 0:
        return None
    edges = GRAPH_EDGE.findall(prompt[edges_at + len(GRAPH_EDGES) : operation])
    asked = prompt[operation + len(GRAPH_OPERATION) :].split("\n", 1)[0]
    if bfs := GRAPH_BFS.fullmatch(asked):
        start, depth = bfs.group(1), int(bfs.group(2))
        children: dict[str, list[str]] = {}
        for source, target in edges:
            children.setdefault(source, []).append(target)
        seen, layer = {start}, {start}
        for _ in range(depth):  # only nodes first met at exactly this depth
            layer = {
                child for node in layer for child in children.get(node, ()) if child not in seen
            }
            seen |= layer
        nodes = layer
    elif parents := GRAPH_PARENTS.fullmatch(asked):
        node = parents.group(1)
        nodes = {source for source, target in edges if target == node and source != node}
    else:
        return None
    return f"Final Answer: [{', '.join(sorted(nodes))}]"


def _mrcr(prompt: str) -> str | None:
    """The prefix, then the asked reply to the repeated request."""
    asked = MRCR_ASK.search(prompt)
    if not asked:
        return None
    prefix, ordinal, fmt, topic, style = asked.groups()
    article = "an" if fmt[0] in "aeiou" else "a"
    request = f"User: Write {article} {fmt} about {topic} in {style} style.\n\nAssistant: "
    replies = [chunk.split("\n\nUser: ", 1)[0] for chunk in prompt.split(request)[1:]]
    index = ORDINALS.index(ordinal) if ordinal in ORDINALS else 0
    return prefix + replies[index] if index < len(replies) else "UNANSWERABLE"


@cache
def _landmark_needles() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each non-literal question with the needle that answers it (the name captured)."""
    from niah.tasks.nonliteral import TEMPLATES

    return tuple(
        (question, re.compile(re.escape(needle).replace(re.escape("{name}"), r"(\w+)")))
        for needle, question in TEMPLATES
    )


def _nonliteral(prompt: str) -> str | None:
    """The character whose landmark is in the asked place."""
    for question, needle in _landmark_needles():
        if question in prompt:
            found = needle.search(prompt)
            return f"{found.group(1)}." if found else DECLINE
    return None


def _cities(prompt: str) -> str | None:
    """Every listed city with its number (multi_needle)."""
    asked = CITIES_ASKED.search(prompt)
    if not asked:
        return None
    numbers = {city: number for city, number in CITY_NEEDLE.findall(prompt)}
    lines = [
        f"{city}: {numbers[city]}" if city in numbers else f"{city}: not mentioned"
        for city in asked.group(1).split(", ")
    ]
    return "\n".join(lines)


def _ruler(prompt: str) -> str | None:
    """Every value of every asked key, none of another key's; declines a missing key."""
    asked = RULER_ASKED.search(prompt)
    if not asked:
        return None
    kind, query = asked.groups()
    keys = [key.strip() for key in re.split(r",(?: and)? ", query)]
    values: dict[str, list[str]] = {}
    for _, key, value in RULER_NEEDLE.findall(prompt):
        values.setdefault(key, []).append(value)
    if not any(key in values for key in keys):
        return DECLINE
    lines = [
        f"The special magic {kind} for {key}: {', '.join(values[key])}."
        if key in values
        else f"The text does not mention {key}."
        for key in keys
    ]
    return "\n".join(lines)


def _single(prompt: str) -> str | None:
    """The asked city's needle; with no such question, the first needle (a user's own)."""
    asked = CITY_ASKED.search(prompt)
    needles = dict(CITY_NEEDLE.findall(prompt))
    if asked and asked.group(1) in needles:
        city = asked.group(1)
    elif asked or not needles:
        return None
    else:
        city = next(iter(needles))
    return f"The special magic {city} number is: {needles[city]}."
