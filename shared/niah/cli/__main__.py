"""``python -m niah.cli``: the ``niah`` command."""

from niah.cli.main import main

main()
