"""How words on the command line become values, in the NIAH harness's spellings too.

The harness (jsonargparse) takes ``--save_contexts True``, ``--save_contexts=true`` and
``--context_lengths '[1000, 2000]'``; these take them as well as ``--save_contexts`` /
``--no-save_contexts`` and ``--context_lengths 1000 2000``. Every mistake is one line
naming the option, with exit status 2 (a bad command line), and an unknown option gets
the options it may have meant.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import re
import typing
from collections.abc import Callable, Sequence
from typing import Any

# The words a boolean option takes after it, in any case (the harness writes True/False).
TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")
# Options other tools spell differently, and ours.
KNOWN_MISSPELLINGS = {"--model": "--model_name", "--provider_name": "--model_provider"}


def boolean_word(word: str) -> bool | None:
    """True or False for a word the harness's booleans take; None for any other word."""
    lowered = word.lower()
    if lowered in TRUE_WORDS:
        return True
    return False if lowered in FALSE_WORDS else None


class BooleanFlag(argparse.Action):
    """``--flag`` and ``--no-flag`` (both spellings of each), taking no value themselves.

    ``--flag True`` and ``--flag=false`` reach it rewritten by ``Parser`` as ``--flag``
    or ``--no-flag``, so a following word that is not a boolean stays a word.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        negated = [f"--no-{option[2:]}" for option in option_strings if option.startswith("--")]
        super().__init__([*option_strings, *negated], dest, nargs=0, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """True, or False for the ``--no-`` spelling."""
        setattr(namespace, self.dest, not (option_string or "").startswith("--no-"))

    def format_usage(self) -> str:
        """``--flag [True|False] | --no-flag`` in the usage line."""
        return f"{self.option_strings[0]} [True|False]"


class ListOption(argparse.Action):
    """A list option: ``1000 2000``, ``1000,2000`` or the harness's ``'[1000, 2000]'``.

    The words of one use of the option are read together, so an unquoted
    ``[1000, 2000]`` (two shell words) works, and a list left open (``'[1000,2000'``)
    is refused rather than read as if closed.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        self.kind: Callable[[str], Any] = kwargs.pop("type")
        super().__init__(option_strings, dest, nargs="+", **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """Add this use's items to the option's list (it may be given twice)."""
        text = " ".join(values).strip()
        option = self.option_strings[0]
        example = f"write {option} 1000 2000 or {option} '[1000, 2000]'"
        if ("[" in text or "]" in text) and not (
            text.startswith("[") and text.endswith("]") and text.count("[") == text.count("]") == 1
        ):
            raise argparse.ArgumentError(self, f"{text!r} is not a closed list; {example}")
        items = text.translate(str.maketrans("[],", "   ")).split()
        try:
            parsed = [self.kind(item) for item in items]
        except ValueError:
            raise argparse.ArgumentError(
                self, f"{text!r} is not a list of numbers; {example}"
            ) from None
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), *parsed])


class TextListOption(argparse.Action):
    """A list of sentences: the harness's ``'["first.", "second."]'``, or one per use.

    A word that starts with ``[`` is read as a JSON (or Python) list of strings; any
    other word is one item, so ``--needles "first." --needles "second."`` works too.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.pop("type", None)
        super().__init__(option_strings, dest, nargs=1, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """Add this use's sentences to the option's list."""
        word = str(values[0])
        items: Any = [word]
        if word.lstrip().startswith("["):
            try:
                items = json.loads(word)
            except ValueError:
                try:
                    items = ast.literal_eval(word)
                except (ValueError, SyntaxError):
                    items = None
        if not (isinstance(items, list) and items and all(isinstance(i, str) for i in items)):
            option = self.option_strings[0]
            raise argparse.ArgumentError(
                self,
                f"{word!r} is not a closed list of sentences; write {option} "
                f'\'["first.", "second."]\' (JSON), or {option} "first." {option} "second."',
            )
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), *items])


class Parser(argparse.ArgumentParser):
    """argparse in the harness's spellings, that suggests the option a typo meant.

    Mistakes exit with status 2 and one line; abbreviations are never guessed.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse, once ``--flag True`` and ``--flag=false`` are spelt as argparse's."""
        words = None if args is None else self._spell_booleans(list(args))
        return super().parse_known_args(words, namespace)

    def _spell_booleans(self, words: list[str]) -> list[str]:
        flags = {
            option: action
            for action in self._actions
            if isinstance(action, BooleanFlag)
            for option in action.option_strings
        }
        takes_words = any(not action.option_strings for action in self._actions)
        spelt: list[str] = []
        index = 0
        while index < len(words):
            word = words[index]
            index += 1
            name, equals, value = word.partition("=")
            if name not in flags or word == "--":
                spelt.append(word)
                continue
            # The next word is the flag's value when it is a boolean, or when the command
            # takes no words of its own (``niah run --wait maybe`` is a mistake, said so).
            following = words[index] if index < len(words) else "-"
            if (
                not equals
                and not following.startswith("-")
                and (boolean_word(following) is not None or not takes_words)
            ):
                value, equals = following, "="
                index += 1
            if not equals:
                spelt.append(name)
                continue
            meaning = boolean_word(value)
            if meaning is None:
                self.error(
                    f"argument {name}: takes True or False (also true/false, 1/0, yes/no), "
                    f"not {value!r}"
                )
            positive = flags[name].option_strings[0]
            negated = name.startswith("--no-")
            yes = meaning != negated
            spelt.append(positive if yes else f"--no-{positive[2:]}")
        return spelt

    def error(self, message: str) -> typing.NoReturn:
        """One line, with the options an unknown one may have meant."""
        unknown = re.findall(r"(--[\w-]+)", message) if "unrecognized" in message else []
        hints = [f"{word}: {suggest(word, self)}" for word in unknown]
        self.exit(2, f"{self.prog}: {message}{'; ' + '; '.join(hints) if hints else ''}\n")


def suggest(word: str, parser: argparse.ArgumentParser) -> str:
    """What an unknown option may have meant, or where the options are listed."""
    name = word.split("=", 1)[0]
    options = sorted({_canonical(o) for o in _options(parser)} - {"--help"})
    wanted = _canonical(name)
    if name in KNOWN_MISSPELLINGS:
        return f"did you mean {KNOWN_MISSPELLINGS[name]}?"
    close = difflib.get_close_matches(wanted, options, n=3, cutoff=0.7)
    close += [o for o in options if len(wanted) > 4 and o.startswith(wanted)]
    close = list(dict.fromkeys(close))[:3]
    if close:
        return f"did you mean {' or '.join(close)}?"
    return f"not an option of `{parser.prog}`; `{parser.prog} --help` lists them"


def _canonical(option: str) -> str:
    """``--save_contexts`` for ``--save-contexts``; ``--no-`` stays as argparse spells it."""
    negated = option.startswith("--no-")
    name = option[5:] if negated else option[2:]
    return ("--no-" if negated else "--") + name.replace("-", "_")


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Every long option a parser and its subcommands' parsers offer."""
    options = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue  # the harness's spellings: taken, never offered
        options += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                options += _options(sub)
    return options
