"""Which step of `default`'s ranking pushes out the evidence its own dense leg finds.
Over a database `episodic bench beam --bench-db` built (turn ingest), every question of
the named abilities is asked under `dense` and under `default` (explained; twenty hits,
the first ten scored, as the bench does). For each evidence message in `dense`'s top ten
and not in `default`'s, its place after every step of `default`'s ranking, and the step
that last took it out of the first ten (the cause counted). For each such step, what
took the places: how many of the ten above it are long memories (over 1,000
characters), and how many short ones a long memory's neighbour spread lifted (a short
memory whose neighbour step gain came from a long one).

    EPISODIC_CACHE_DIR=~/.cache/episodic PYTHONPATH=src python benchmarks/bench_dense_lost.py \\
        /tmp/beam-turn.db --abilities information_extraction,preference_following

What it counts is in-sample: the questions it reads are the ones a fix is then measured on.
"""

from __future__ import annotations

from collections import Counter

from beam_asking import DEPTH, SCORED, arguments, asking
from episodic.recall.trace import TraceRow

LONG = 1000
ABILITIES = "information_extraction,instruction_following,preference_following"


def place(rows: list[TraceRow], memory_id: str) -> int | None:
    return next((r.rank for r in rows if r.memory_id == memory_id), None)


def main() -> None:
    parser = arguments(__doc__.split("\n\n")[0], ABILITIES)
    parser.add_argument("--quiet", action="store_true", help="the counts only")
    args = parser.parse_args()
    causes: Counter[str] = Counter()
    tally: Counter[str] = Counter()
    with asking(args) as run:
        mem, changed = run.mem, run.changed
        for one in run.each():
            question, evidence, chars = one.question, one.evidence, one.chars
            ws = one.conversation.workspace
            dense = mem.recall(question.text, workspace=ws, k=DEPTH, mark=False, policy="dense")
            ours = mem.recall(
                question.text, workspace=ws, k=DEPTH, mark=False, policy=changed, explain=True
            )
            assert ours.trace is not None
            stages = ours.trace.stages
            top_dense = [h.id for h in dense.hits[:SCORED]]
            top = [h.id for h in ours.hits[:SCORED]]
            tally["evidence in dense top 10"] += sum(1 for i in top_dense if i in evidence)
            tally["evidence in default top 10"] += sum(1 for i in top if i in evidence)
            steps = [name for name in stages if not name.startswith("leg:")]
            fused = stages.get("fusion:blend", [])
            spread = stages.get("context:neighbours", [])
            for i in (i for i in top_dense if i in evidence and i not in top):
                places = {name: place(stages[name], i) for name in steps}
                trail = [(name, places[name]) for name in steps] + [("hits", None)]
                cause = "never in the first ten after fusion"
                inside = False
                for name, p in trail:
                    now_in = p is not None and p <= SCORED
                    if inside and not now_in:
                        cause = name
                    inside = now_in
                causes[f"{question.category}: {cause}"] += 1
                causes[f"all: {cause}"] += 1
                # What holds the first ten at the end.
                final = [h.id for h in ours.hits[:SCORED]]
                long_above = sum(1 for j in final if chars.get(j, 0) > LONG)
                lifted = 0
                for j in final:
                    if chars.get(j, 0) > LONG:
                        continue
                    before, after = place(fused, j), place(spread, j)
                    if after is not None and (before is None or before > after + 5):
                        lifted += 1
                tally["lost"] += 1
                tally["lost, long" if chars.get(i, 0) > LONG else "lost, short"] += 1
                tally["long memories in the final ten (sum)"] += long_above
                tally["short memories the neighbour step lifted 5+ places (sum)"] += lifted
                if not args.quiet:
                    shown = ", ".join(f"{n} {p}" for n, p in trail[:-1])
                    print(
                        f"{question.category} {i} ({chars.get(i)} chars) dense place "
                        f"{top_dense.index(i) + 1}; {shown}; final ten: {long_above} long, "
                        f"{lifted} lifted by neighbours -> {cause}"
                    )
    for name, count in sorted(tally.items()):
        print(f"{name}: {count}")
    for name, count in sorted(causes.items()):
        print(f"cause {name}: {count}")


if __name__ == "__main__":
    main()
