"""``python -m tracker.cli``: the ``tracker`` command."""

from tracker.cli import entry

entry()
