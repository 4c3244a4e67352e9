"""``python -m listlib``: the same as the ``listlib`` command."""

from .cli import run

run()
