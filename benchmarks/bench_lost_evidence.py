"""Which evidence a stronger length prior loses, and where each leg ranked it among its
long memories. Over a database `episodic bench beam --bench-db` built (turn ingest),
every question of the named abilities is asked under `default` and under a variant of it
(twenty hits, the first ten scored, as the bench does); for each evidence message in
`default`'s top ten and not in the variant's: its length, whether the length gate lifted
the query, and its place among the dense and the keyword leg's long memories (over
1,000 characters).

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src python benchmarks/bench_lost_evidence.py \\
        /tmp/beam-turn.db --abilities summarization,information_extraction --set length_share=1

A lost answer a leg ranks among its first few long ones is one each leg's long keep
(`long_keep`) could give back; one ranked deeper is not.
"""

from __future__ import annotations

from collections import Counter

from beam_asking import DEPTH, SCORED, arguments, asking

LONG = 1000


def main() -> None:
    parser = arguments(__doc__.split("\n\n")[0], "summarization,information_extraction")
    args = parser.parse_args()
    tally: Counter[str] = Counter()
    with asking(args) as run:
        mem, changed = run.mem, run.changed
        for one in run.each():
            question, evidence, chars = one.question, one.evidence, one.chars
            ws = one.conversation.workspace
            before = mem.recall(question.text, workspace=ws, k=DEPTH, mark=False)
            after = mem.recall(
                question.text, workspace=ws, k=DEPTH, mark=False, policy=changed, explain=True
            )
            top = [h.id for h in before.hits[:SCORED]]
            now = [h.id for h in after.hits[:SCORED]]
            assert after.trace is not None
            stages = after.trace.stages
            gated = "keep:long" in stages or "length:plain" in stages
            legs = [
                [r.memory_id for r in stages.get(name, []) if chars.get(r.memory_id, 0) > LONG]
                for name in ("leg:dense", "leg:sparse")
            ]
            for i in (i for i in top if i in evidence and i not in now):
                places = [leg.index(i) + 1 if i in leg else None for leg in legs]
                known = [p for p in places if p is not None]
                best = min(known) if known else None
                tally["lost, long" if chars.get(i, 0) > LONG else "lost, short"] += 1
                tally[f"lost, a leg's long place {best if best and best <= 5 else '> 5'}"] += 1
                print(
                    f"{question.category} gated={gated} lost {i} ({chars.get(i)} chars), "
                    f"place among long: dense {places[0]}, keyword {places[1]}"
                )
            for i in (i for i in now if i in evidence and i not in top):
                tally["gained, long" if chars.get(i, 0) > LONG else "gained, short"] += 1
    for name, count in sorted(tally.items()):
        print(f"{name}: {count}")


if __name__ == "__main__":
    main()
