"""Word pools the tasks draw keys, values and names from (written here, not downloaded).

Keys of the ``words`` kind are adjective-noun pairs ("quiet-lantern"), as RULER's are
word keys: about 10,000 pairs, so distractors never run out.
"""

from __future__ import annotations

from niah.core.prompts.needles import CITIES as NEEDLE_CITIES

ADJECTIVES = (
    "amber", "ancient", "arctic", "bitter", "bold", "brave", "brisk", "calm", "clever", "cobalt",
    "coral", "crimson", "curious", "daring", "dusty", "eager", "early", "electric", "elegant",
    "faint", "fierce", "fluffy", "fragile", "frosty", "gentle", "giant", "gilded", "glassy",
    "golden", "graceful", "gray", "hidden", "hollow", "humble", "icy", "idle", "ivory", "jolly",
    "keen", "lavish", "lazy", "little", "lively", "lonely", "loyal", "lucky", "marble", "mellow",
    "misty", "modest", "muddy", "narrow", "nimble", "noble", "olive", "orange", "pale", "patient",
    "plain", "polite", "proud", "purple", "quiet", "rapid", "rare", "restless", "rocky", "rosy",
    "rough", "royal", "rusty", "sandy", "scarlet", "secret", "shiny", "silent", "silver", "simple",
    "sleepy", "slender", "smooth", "snowy", "solar", "spare", "steady", "stormy", "sturdy",
    "sunny", "swift", "tall", "tender", "tidy", "tiny", "velvet", "violet", "vivid", "wandering",
    "warm", "wild", "wise", "witty", "wooden", "yellow", "young",
)  # fmt: skip

NOUNS = (
    "anchor", "apple", "arrow", "badger", "balloon", "banner", "basket", "beacon", "bell",
    "bicycle", "blanket", "bridge", "bucket", "button", "cabin", "camera", "candle", "canyon",
    "castle", "cedar", "chimney", "clock", "cloud", "comet", "compass", "cottage", "crane",
    "crystal", "desert", "dolphin", "dragon", "drum", "eagle", "ember", "engine", "falcon",
    "feather", "fern", "fiddle", "forest", "fountain", "fox", "garden", "glacier", "harbor",
    "hammer", "helmet", "heron", "island", "jacket", "kettle", "kite", "ladder", "lagoon",
    "lantern", "lemon", "lighthouse", "lizard", "locket", "magnet", "maple", "meadow", "mirror",
    "mountain", "needle", "oasis", "orchard", "otter", "owl", "paddle", "panther", "parrot",
    "pebble", "pepper", "piano", "pillow", "pine", "planet", "pocket", "pond", "puzzle", "quill",
    "rabbit", "raven", "ribbon", "river", "rocket", "saddle", "sail", "scarf", "shell", "spoon",
    "squirrel", "statue", "storm", "teapot", "thimble", "thunder", "tiger", "tower", "trumpet",
    "tulip", "valley", "violin", "wagon", "walrus", "whistle", "willow", "window", "wolf", "zebra",
)  # fmt: skip

# Places for the multi-needle task's "special magic {city} number" needles: the single
# needle's 64 first (so a run's first needle reads as the harness's), then enough more
# that the Gemini report's 100-needle test never repeats a key.
CITIES = (
    *NEEDLE_CITIES,
    "Boston", "Toronto", "Vancouver", "Cartagena",
    "Montevideo", "Asuncion", "La Paz", "Brasilia", "Recife", "Porto", "Bamako", "Niamey",
    "Lusaka", "Harare", "Maputo", "Windhoek", "Gaborone", "Luanda", "Kinshasa", "Douala",
    "Abuja", "Freetown", "Monrovia", "Tbilisi", "Yerevan", "Baku", "Bishkek", "Dushanbe",
    "Minsk", "Vilnius", "Riga", "Tallinn", "Bratislava", "Ljubljana", "Zagreb", "Sarajevo",
    "Skopje", "Tirana", "Valletta", "Nicosia", "Hobart", "Darwin", "Cebu", "Busan",
)  # fmt: skip

# First names for the non-literal task's characters: short, from many languages, none a
# common English word.
CHARACTER_NAMES = (
    "Yuki", "Stuart", "Mandla", "Katie", "Diego", "Leila", "Olga", "Rajesh", "Ingrid", "Kwame",
    "Sofia", "Mateo", "Aiko", "Bjorn", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hamid",
    "Imani", "Jonas", "Kenji", "Lucia", "Marek", "Nadia", "Oren", "Priya", "Quentin", "Rosa",
    "Sven", "Tariq", "Ulla", "Vikram", "Wanjiru", "Xiomara", "Yusuf", "Zofia", "Anouk", "Bruno",
    "Camila", "Dariusz", "Elif", "Fiona", "Goran", "Hana", "Ismael", "Jana", "Kofi", "Lars",
    "Mei", "Nikos", "Odile", "Pavel", "Ravi", "Selin", "Tomas", "Uma", "Vera", "Wim",
)  # fmt: skip
