"""Drop-in shells with other memory libraries' names over ``episodic.Episodic``.

Imported on their own (``from episodic.compat.mem0 import Memory``); ``import episodic``
does not load them.
"""
