"""``niah``: start runs, follow them, and fetch their results.

One module per command family (``run``, ``show``, ``compare``), the command line's
shape apart from them (``parser``, ``run_options``), and what they share: where the
data lives (``backend``), a run's results (``results``), how things are printed
(``output``). ``python -m niah.cli`` and the ``niah`` script both start at ``main``.
"""

from niah.cli.main import main

__all__ = ["main"]
