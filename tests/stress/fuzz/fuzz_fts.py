"""atheris: the FTS query escaper (episodic.scoring.fts) against a real FTS5 table.

Each input is a query as a user might type it; its MATCH expressions must be valid FTS5
and find the text they came from (tests/fuzz_checks.py ``check_fts``). Some inputs also
drive ``plan_terms`` with document counts. One in-memory connection serves every input.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["episodic"]):
    import fuzz_checks  # its episodic imports are instrumented

CONN = fuzz_checks.fts_connection()


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    if fdp.ConsumeIntInRange(0, 7) == 0:
        counts = fdp.ConsumeIntListInRange(fdp.ConsumeIntInRange(0, 12), 0, 200_000)
        total = max(sum(counts), fdp.ConsumeIntInRange(0, 400_000))
        budget = fdp.ConsumeIntInRange(0, 5000)
        share = fdp.ConsumeFloatInRange(0.0, 1.0)
        fuzz_checks.check_plan(counts, total, budget, share)
        return
    fuzz_checks.check_fts(fdp.ConsumeUnicode(fdp.remaining_bytes()), CONN)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
