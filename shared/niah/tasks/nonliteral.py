"""``nonliteral``: needles the question shares no content word with (NoLiMa's idea).

The needle says a character did something at a landmark; the question asks which
character has been to the landmark's city or country. Finding it takes one hop of
world knowledge, not string matching. The templates and names are our own (NoLiMa's
data is under a non-commercial licence); a test checks that no question shares a
content word with its needle. Correct is an answer that names the character.
"""

from __future__ import annotations

from niah.core.prompts.prompt_builder import Insertion
from niah.core.prompts.vocabulary import CHARACTER_NAMES
from niah.core.request.grid import Cell
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import TaskOptions
from niah.core.results.scoring import mentions
from niah.tasks.base import NEEDLE_LINE, Sample, Task, Verdict, sample_rng

NAME_BYTES = max(len(name.encode()) for name in CHARACTER_NAMES)

# (needle, question): the needle names a landmark, the question its place.
TEMPLATES: tuple[tuple[str, str], ...] = (
    ("{name} lives next to the Eiffel Tower.", "Which character has been to Paris?"),
    ("{name} took a photo beside the Colosseum.", "Which character has visited Rome?"),
    ("{name} once watched the sunrise over the Taj Mahal.", "Which character has been to India?"),
    ("{name} spent a summer working at the Sydney Opera House.",
     "Which character has been to Australia?"),
    ("{name} bought a postcard at the Golden Gate Bridge.",
     "Which character has been to San Francisco?"),
    ("{name} proposed on top of the Empire State Building.",
     "Which character has visited New York?"),
    ("{name} fed pigeons in front of Big Ben.", "Which character has travelled to London?"),
    ("{name} hiked to Machu Picchu last spring.", "Which character has been to Peru?"),
    ("{name} sketched the Sagrada Familia during a holiday.",
     "Which character has been to Barcelona?"),
    ("{name} rang in the new year below the Brandenburg Gate.",
     "Which character has been to Berlin?"),
    ("{name} got lost inside the Forbidden City.", "Which character has been to Beijing?"),
    ("{name} hiked up Corcovado to stand beneath Christ the Redeemer.",
     "Which character has been to Brazil?"),
    ("{name} rode a camel past the Great Pyramid of Giza.", "Which character has been to Egypt?"),
    ("{name} queued for hours outside the Louvre.", "Which character has visited France?"),
    ("{name} watched the changing of the guard at Buckingham Palace.",
     "Which character has visited England?"),
    ("{name} climbed the Leaning Tower of Pisa.", "Which character has been to Italy?"),
    ("{name} took a gondola under the Rialto Bridge.", "Which character has been to Venice?"),
    ("{name} ate breakfast facing the Petronas Towers.",
     "Which character has been to Malaysia?"),
    ("{name} watched fireworks from the foot of the Burj Khalifa.",
     "Which character has been to Dubai?"),
    ("{name} photographed the Parthenon at dawn.", "Which character has visited Athens?"),
    ("{name} walked the length of the Charles Bridge twice.",
     "Which character has been to Prague?"),
    ("{name} waited in line to see the Little Mermaid statue.",
     "Which character has been to Copenhagen?"),
    ("{name} wandered through the Alhambra gardens.", "Which character has been to Spain?"),
    ("{name} stood under the Gateway Arch for an hour.",
     "Which character has been to Missouri?"),
    ("{name} studied the mosaics inside Hagia Sophia.", "Which character has been to Istanbul?"),
    ("{name} rode the elevator up the CN Tower.", "Which character has visited Toronto?"),
    ("{name} lit a candle in Saint Basil's Cathedral.", "Which character has been to Moscow?"),
    ("{name} painted a watercolor of Mount Fuji.", "Which character has been to Japan?"),
    ("{name} sat on the steps of the Lincoln Memorial.",
     "Which character has visited Washington?"),
    ("{name} ate a custard tart beside Belem Tower.", "Which character has been to Lisbon?"),
    ("{name} strolled along the Bund at night.", "Which character has been to Shanghai?"),
    ("{name} watched a ballet at the Mariinsky Theatre.",
     "Which character has been to Saint Petersburg?"),
    ("{name} crossed the Tower Bridge on foot.", "Which character has visited Britain?"),
    ("{name} swam below Iguazu Falls.", "Which character has been to Argentina?"),
    ("{name} jogged around Angkor Wat at sunrise.", "Which character has been to Cambodia?"),
    ("{name} rested in the shade of the Acropolis.", "Which character has been to Greece?"),
)  # fmt: skip


class NonLiteralOptions(TaskOptions):
    """No options of its own; distractors are other characters at other landmarks."""

    takes_distractors = True

    def answer_bytes(self, request: RunOptions) -> int:
        """The character's name, and the needle's line restated."""
        return NAME_BYTES + NEEDLE_LINE


class NonLiteral(Task[NonLiteralOptions]):
    """A landmark needle at the cell's depth; the question names only the place."""

    name = "nonliteral"
    options = NonLiteralOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """A seeded template and character."""
        rng = sample_rng(spec.seed, cell, self.name)
        needle, question = rng.choice(TEMPLATES)
        character = rng.choice(CHARACTER_NAMES)
        return Sample(
            insertions=(Insertion(" " + needle.format(name=character), cell.depth_percent),),
            question=question + " Answer with the character's name.",
            expected=(character,),
            details={"character": character},
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """Correct when the answer names the character."""
        found = mentions(answer, sample.expected[0])
        return Verdict("correct" if found else "wrong", 1.0 if found else 0.0)
