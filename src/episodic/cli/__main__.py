"""``python -m episodic.cli``: the same as the ``episodic`` command."""

from episodic.cli import main

main()
