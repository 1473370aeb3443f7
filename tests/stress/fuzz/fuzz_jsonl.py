"""atheris: the JSON-lines ingester (episodic.write.events, ``Episodic.ingest_lines``).

Each input is a JSON-lines file. Every non-blank line must give an event or an error
naming its field, and the good lines must be stored whatever the bad ones hold
(tests/fuzz_checks.py ``check_jsonl``), into a real in-memory SQLite store.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["episodic"]):
    import fuzz_checks  # its episodic imports are instrumented
    from episodic import Episodic, Settings
    from episodic.store import open_store

# A fresh store now and then keeps memory flat over a million inputs.
RESET_EVERY = 20_000
state: dict[str, object] = {"runs": 0}


def memory() -> Episodic:
    runs = int(state["runs"])  # type: ignore[call-overload]
    state["runs"] = runs + 1
    mem = state.get("mem")
    if not isinstance(mem, Episodic) or runs % RESET_EVERY == 0:
        if isinstance(mem, Episodic):
            mem.close()
        mem = Episodic(store=open_store("sqlite:///:memory:"), embedder=None, settings=Settings())
        state["mem"] = mem
    return mem


def one_input(data: bytes) -> None:
    fuzz_checks.check_jsonl(data.split(b"\n"), memory())


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
