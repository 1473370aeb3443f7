"""atheris: the markdown/frontmatter importer (episodic.portable ``parse_file``, then the
store's ``restore`` as ``import_markdown`` calls it).

Each input is a file's bytes. Bad UTF-8 is the importer's "not UTF-8 text" (checked before
parsing); otherwise the file gives a memory that survives export and re-import unchanged,
or ``InvalidInput`` naming the field (tests/fuzz_checks.py ``check_markdown``).
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["episodic", "yaml"]):
    import fuzz_checks  # its episodic imports are instrumented
    from episodic import Episodic, Settings
    from episodic.store import open_store

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
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # import_markdown reports the file as "not UTF-8 text"
    fuzz_checks.check_markdown(text, memory())


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
