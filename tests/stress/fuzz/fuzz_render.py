"""atheris: the render escaper (episodic.recall.render): recalled text of any kind, in
any number of hits and any budget, never breaks the block's wrapper
(tests/fuzz_checks.py ``check_render``)."""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["episodic"]):
    import fuzz_checks  # its episodic imports are instrumented
    from episodic.recall import render  # noqa: F401  (instrumented before fuzz_checks)


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    max_chars = fdp.ConsumeIntInRange(0, 2500)
    hits = []
    for n in range(fdp.ConsumeIntInRange(0, 6)):
        kind = fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 24)) or "note"
        age = fdp.ConsumeFloatInRange(-1e6, 1e10)
        score = fdp.ConsumeFloatInRange(-2.0, 2.0)
        content = fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 1200))
        hits.append(fuzz_checks.hit(content, kind, age, score, n))
    split = fdp.ConsumeIntInRange(0, len(hits))
    fuzz_checks.check_render(hits[split:], max_chars, standing=hits[:split])


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
