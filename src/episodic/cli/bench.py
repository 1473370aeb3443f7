"""``episodic bench``: recall quality on LoCoMo, on the journal-shaped set and on facts
that change (``updates``), and their tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from episodic.cli.common import JsonOpt, err, errors, out, print_json
from episodic.config import Settings
from episodic.errors import InvalidInput

# The runners load the whole service: each command imports what it runs when it runs, so
# the other commands (and `episodic --help`) do not pay for them.
if TYPE_CHECKING:
    from rich.table import Table

    from episodic.bench.locomo import Conversation, Loader

EmbedderOpt = Annotated[
    str | None,
    typer.Option("--embedder", help="local | ollama | openai | none (default: EPISODIC_EMBEDDER)."),
]

PolicyOpt = Annotated[
    str, typer.Option("--policy", help="Policy name, comma-separated names, or all.")
]
GranularityOpt = Annotated[
    str, typer.Option("--granularity", help="Score turns or their sessions: turn|session.")
]
IngestOpt = Annotated[
    str,
    typer.Option(
        "--ingest",
        help="turn: each turn a journal event; conversation: chat messages segmented "
        "into episodes, entries and keys (recall ranks turns and entries).",
    ),
]
KeysOpt = Annotated[
    str | None,
    typer.Option("--keys", help="Key expansion on|off (default: EPISODIC_KEY_EXPANSION)."),
]
BenchDbOpt = Annotated[
    str | None,
    typer.Option(
        "--bench-db",
        help="An EMPTY database to run in, e.g. postgresql://... to measure that "
        "backend (default: a throwaway SQLite file).",
    ),
]
FoldsOpt = Annotated[
    int | None,
    typer.Option(
        "--folds",
        help="Split the conversations into K folds (sorted ids, round-robin) and report "
        "each fold and their mean.",
    ),
]
TuneOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--tune",
        help="With --folds: sweep a constant of the default policy, NAME=v1,v2,... "
        "(repeatable; e.g. blend=0.2,0.3,0.4); each fold uses the best on the others.",
    ),
]

bench_app = typer.Typer(
    help=(
        "Measure recall quality on public benchmarks.\n\n"
        "Example: episodic bench locomo --data ../shared/data/locomo10.json"
    ),
    no_args_is_help=True,
)


@bench_app.command("locomo")
def bench_locomo(
    data: Annotated[Path, typer.Option("--data", help="LoCoMo JSON file (e.g. locomo10.json).")],
    policy: PolicyOpt = "all",
    granularity: GranularityOpt = "turn",
    embedder: EmbedderOpt = None,
    ingest: IngestOpt = "turn",
    keys: KeysOpt = None,
    bench_db: BenchDbOpt = None,
    folds: FoldsOpt = None,
    tune: TuneOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Evidence recall of each recall policy on LoCoMo (one workspace per conversation).

    Every turn becomes a memory; every question with evidence is asked at the end of its
    conversation. Reports recall@1/5/10/20, all-evidence@10 and NDCG@10, overall and per
    category, and recall latency (query embedding excluded). Builds a throwaway database;
    turn embeddings are cached in the cache dir, so a second run skips the model.

    Example: episodic bench locomo --data ../shared/data/locomo10.json --granularity session
    Example: episodic bench locomo --data ../shared/data/locomo10.json --ingest conversation
    Example: episodic bench locomo --data ../shared/data/locomo10.json --folds 5 --tune blend=.2,.3
    """
    from episodic.bench.locomo import load_locomo

    _run_conversations(
        "LoCoMo",
        load_locomo,
        data,
        policy=policy,
        granularity=granularity,
        embedder=embedder,
        ingest=ingest,
        keys=keys,
        bench_db=bench_db,
        folds=folds,
        tune=tune,
        as_json=as_json,
    )


@bench_app.command("beam")
def bench_beam(
    data: Annotated[
        Path,
        typer.Option("--data", help="BEAM folder, one sub-folder per conversation."),
    ],
    policy: PolicyOpt = "all",
    granularity: GranularityOpt = "turn",
    embedder: EmbedderOpt = None,
    ingest: IngestOpt = "turn",
    keys: KeysOpt = None,
    bench_db: BenchDbOpt = None,
    folds: FoldsOpt = None,
    tune: TuneOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Evidence recall of each recall policy on BEAM: a user and an assistant, long answers.

    Each conversation (a folder with chat.json and probing_questions.json) gets its own
    workspace; every message becomes a memory, the index markers ("->-> 1,1") stripped
    from user messages. Every question that names evidence messages is asked at the end of
    its conversation; abstention questions (no evidence) are left out and counted. The same
    metrics, options and tables as `bench locomo`, per ability.

    Example: episodic bench beam --data ../shared/data/beam --folds 5
    """
    from episodic.bench.beam import load_beam

    _run_conversations(
        "BEAM",
        load_beam,
        data,
        policy=policy,
        granularity=granularity,
        embedder=embedder,
        ingest=ingest,
        keys=keys,
        bench_db=bench_db,
        folds=folds,
        tune=tune,
        as_json=as_json,
    )


def _run_conversations(
    label: str,
    load: Loader,
    data: Path,
    *,
    policy: str,
    granularity: str,
    embedder: str | None,
    ingest: str,
    keys: str | None,
    bench_db: str | None,
    folds: int | None,
    tune: list[str] | None,
    as_json: bool,
) -> None:
    """`bench locomo` and `bench beam`: the same run over conversations ``load`` reads."""
    from episodic.bench.folds import parse_tune, run_folds, split_folds
    from episodic.bench.locomo import (
        GRANULARITIES,
        category_counts,
        resolve_policies,
        run_locomo,
    )

    with errors():
        if granularity not in GRANULARITIES:
            raise InvalidInput("granularity", f"use one of {'|'.join(GRANULARITIES)}")
        overrides: dict[str, Any] = {} if embedder is None else {"embedder": embedder}
        if keys is not None:
            if keys not in ("on", "off"):
                raise InvalidInput("keys", "use on or off")
            overrides["key_expansion"] = keys == "on"
        settings = Settings.from_env(**overrides)
        names = resolve_policies(policy)
        conversations = load(data)
        if tune and folds is None:
            raise InvalidInput("tune", "tuning needs held-out folds: add --folds K")
        if folds is not None:
            sweep = parse_tune(tune or [])
            split_folds([c.sample_id for c in conversations], folds)  # fail before ingesting
            cv = run_folds(
                data,
                names,
                granularity,
                settings,
                folds,
                sweep=sweep,
                progress=_say,
                ingest=ingest,
                db_url=bench_db,
                load=load,
            )
            if as_json:
                print_json(cv)
            else:
                _print_folds(cv, conversations)
            return
        counts = category_counts(conversations)
        report = run_locomo(
            data,
            names,
            granularity,
            settings,
            progress=_say,
            ingest=ingest,
            db_url=bench_db,
            load=load,
        )
    if as_json:
        print_json(report)
        return
    _print_bench(label, report, counts)


def _say(line: str) -> None:
    err.print(f"[dim]{line}[/dim]", markup=True)


def _print_folds(cv: dict[str, Any], conversations: list[Conversation]) -> None:
    from rich.table import Table

    from episodic.bench.folds import label
    from episodic.bench.locomo import category_counts

    for number, fold in enumerate(cv["folds"], start=1):
        test = set(fold["test"])
        counts = category_counts(c for c in conversations if c.sample_id in test)
        out.print(f"\nFold {number} of {len(cv['folds'])}, held out: {', '.join(fold['test'])}")
        tuned = fold.get("tuned")
        if tuned:
            chosen = label(tuned["chosen"])
            out.print(f"{tuned['policy']} uses {chosen} (best train recall@10 on the other folds)")
        _print_table(_policy_table(fold["policies"], counts, sum(counts.values())))
    if cv["folds"][0].get("tuned"):
        out.print("\nSweep: mean recall@10 on each fold's training folds (* chosen)")
        sweep = Table()
        sweep.add_column("values", no_wrap=True)
        for number in range(1, len(cv["folds"]) + 1):
            sweep.add_column(f"fold {number}", justify="right")
        rows = cv["folds"][0]["tuned"]["train"]
        for i, row in enumerate(rows):
            name = label(row["values"])
            cells = []
            for fold in cv["folds"]:
                train = fold["tuned"]["train"][i]
                mark = "*" if train["values"] == fold["tuned"]["chosen"] else ""
                cells.append(f"{train['train_recall@10']:.4f}{mark}")
            sweep.add_row(name, *cells)
        _print_table(sweep)
    out.print(f"\nMean over {len(cv['folds'])} folds (each fold counts once)")
    mean: dict[str, dict[str, float]] = cv["folds_mean"]
    table = Table()
    table.add_column("metric", no_wrap=True)
    for name in mean:
        table.add_column(name, justify="right")
    for key in next(iter(mean.values())):
        table.add_row(key, *(f"{scores[key]:.3f}" for scores in mean.values()))
    _print_table(table)


def _print_bench(label: str, report: dict[str, Any], counts: dict[str, int]) -> None:
    out.print(
        f"{label} evidence recall, {report['granularity']} level: {report['questions']} "
        f"questions, embedder {report['embedder']}"
    )
    if report["unscored"]:
        left = ", ".join(f"{name} {n}" for name, n in report["unscored"].items())
        out.print(f"Left out, no evidence to score against: {left}")
    _print_table(_policy_table(report["policies"], counts, report["questions"]))
    for name, result in report["policies"].items():
        for category, row in result.get("updates", {}).items():
            out.print(
                f"{name}, {category} ({row['questions']} questions): the updated message "
                f"above the original {row['updated_above']:.2f}, recall@10 updated "
                f"{row['recall@10_updated']:.2f}, original {row['recall@10_original']:.2f}"
            )
    by = ", ".join(f"{n} {who}" for who, n in report["superseded_by"].items())
    # Two friends chatting state no change to replace: there, every one is false. A task
    # chat (BEAM) holds real corrections.
    false = (
        "; LoCoMo states no change, so each is a false supersession" if label == "LoCoMo" else ""
    )
    out.print(
        f"{sum(report['superseded_by'].values())} memories superseded on ingest"
        + (f" ({by}){false}" if by else "")
    )


def _policy_table(policies: dict[str, Any], counts: dict[str, int], questions: int) -> Table:
    from rich.table import Table

    from episodic.bench.locomo import CATEGORY_NAMES
    from episodic.bench.metrics import METRIC_KEYS

    table = Table()
    table.add_column("metric", no_wrap=True)
    for name in policies:
        table.add_column(name, justify="right")

    def section(label: str, rows: dict[str, dict[str, float]]) -> None:
        table.add_row(f"[bold]{label}[/bold]", *("" for _ in policies))
        for key in METRIC_KEYS:
            values = [rows[name][key] for name in policies]
            best = max(values)
            table.add_row(
                f"  {key}",
                *(f"[bold]{v:.3f}[/bold]" if v == best else f"{v:.3f}" for v in values),
            )
        table.add_section()

    section(f"overall (n={questions})", {name: p["overall"] for name, p in policies.items()})
    for category, n in counts.items():
        title = (
            f"{category} {CATEGORY_NAMES.get(int(category), 'other')}"
            if category.isdigit()
            else category
        )
        section(
            f"{title} (n={n})",
            {name: p["by_category"][category] for name, p in policies.items()},
        )
    table.add_row("[bold]recall latency (ms)[/bold]", *("" for _ in policies))
    for key in ("p50", "p95"):
        table.add_row(f"  {key}", *(f"{p['latency_ms'][key]:.2f}" for p in policies.values()))
    return table


def _print_table(table: Table) -> None:
    from rich.console import Console

    if out.is_terminal:
        out.print(table)
    else:
        # Piped output has no terminal width to respect; squeezing seven policies into 80
        # columns would cut the labels and numbers instead.
        Console(highlight=False, width=_natural_width(table)).print(table)


def _natural_width(table: Table) -> int:
    """The width ``table`` takes when nothing limits it."""
    from rich.measure import Measurement

    return Measurement.get(out, out.options.update_width(10_000), table).maximum


@bench_app.command("journal")
def bench_journal(
    data: Annotated[
        Path,
        typer.Option(
            "--data", help="The journal set's folder (default: benchmarks/journal_recall)."
        ),
    ] = Path("benchmarks/journal_recall"),
    policy: Annotated[
        str,
        typer.Option(
            "--policy", help="Policy name, comma-separated names, or all (incl. default-no-prior)."
        ),
    ] = "all",
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall quality on a journal-shaped set: a seeded multi-agent journal of 90 days.

    The journal is lived through day by day (ingest, index, the agents' recalls, the
    nightly upkeep), then every query is asked under each policy (k=10). Reports
    recall@5, recall@10 and NDCG@10, per kind of query, how often a superseded answer
    ranks above the current one, and recall latency (query embedding excluded).

    Example: episodic bench journal --policy default,default-no-prior,crewship
    """
    from episodic.bench.journal import resolve as resolve_journal
    from episodic.bench.journal import run_journal

    with errors():
        overrides: dict[str, Any] = {} if embedder is None else {"embedder": embedder}
        settings = Settings.from_env(**overrides)
        names = resolve_journal(policy)
        report = run_journal(data, names, settings, progress=_say)
    if as_json:
        print_json(report)
        return
    out.print(
        f"Journal recall: {report['events']} events ({report['memories']} memories) over "
        f"{report['days']} days, {report['queries']} queries, embedder {report['embedder']}"
    )
    _print_table(_journal_table(report["policies"]))


def _journal_table(policies: dict[str, Any]) -> Table:
    from rich.table import Table

    from episodic.bench.journal import REPORTED

    table = Table()
    table.add_column("metric", no_wrap=True)
    for name in policies:
        table.add_column(name, justify="right")
    rows: list[tuple[str, list[float]]] = [
        (key, [p[key] for p in policies.values()]) for key in REPORTED
    ]
    for kind in next(iter(policies.values()))["by_kind"]:
        values = [p["by_kind"][kind]["ndcg@10"] for p in policies.values()]
        rows.append((f"{kind} ndcg@10", values))
    rows.append(("stale first (lower is better)", [p["stale_first"] for p in policies.values()]))
    for label, values in rows:
        best = min(values) if label.startswith("stale") else max(values)
        table.add_row(
            label, *(f"[bold]{v:.3f}[/bold]" if v == best else f"{v:.3f}" for v in values)
        )
    for key in ("p50", "p95"):
        table.add_row(
            f"latency {key} ms", *(f"{p['latency_ms'][key]:.2f}" for p in policies.values())
        )
    return table


@bench_app.command("updates")
def bench_updates(
    scenarios: Annotated[
        Path,
        typer.Option(
            "--scenarios",
            help="The scenarios file (default: benchmarks/updates/scenarios.jsonl).",
        ),
    ] = Path("benchmarks/updates/scenarios.jsonl"),
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="An EMPTY database to run in, e.g. postgresql://... (default: a throwaway "
            "SQLite file per mode).",
        ),
    ] = None,
    policies: Annotated[
        str,
        typer.Option("--policies", help="Policy name, comma-separated names, or all."),
    ] = "all",
    modes: Annotated[
        str | None,
        typer.Option(
            "--modes", help="Supersession modes, comma-separated: off, offline, llm (default: all)."
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", help="Run only the first N update and N control scenarios."),
    ] = None,
    embedder: EmbedderOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """How recall handles facts that change: the current value, or a stale one?

    Each scenario (its own workspace) is written in time order, indexed and asked its
    question under each policy (k=5). Reports, per mode and policy, how often the current
    value is in the first hit and the top 5, how often a stale value ranks above it
    (lower is better), the same recall on control scenarios where nothing changed, and
    how many memories that should stay valid were marked superseded. Modes: off (no
    detection), offline (the rule without a model), llm (the model step answered from the
    ground truth).

    Example: episodic bench updates --modes off --policies default,bm25
    """
    from episodic.bench.updates import MODES, run_updates

    with errors():
        overrides: dict[str, Any] = {} if embedder is None else {"embedder": embedder}
        settings = Settings.from_env(**overrides)
        report = run_updates(
            scenarios,
            settings,
            policies=policies,
            modes=modes or ",".join(MODES),
            limit=limit,
            db_url=db,
            progress=_say,
        )
    if as_json:
        print_json(report)
        return
    counts = report["scenarios"]
    out.print(
        f"Updates: {counts['update']} update and {counts['control']} control scenarios, "
        f"k={report['k']}, embedder {report['embedder']}"
    )
    _print_table(_updates_table(report["modes"]))
    for mode, run in report["modes"].items():
        if "skipped" in run:
            out.print(f"mode {mode} skipped: {run['skipped']}")


def _updates_table(modes: dict[str, Any]) -> Table:
    from rich.table import Table

    from episodic.bench.updates import CONTROL_KEYS, UPDATE_KEYS

    table = Table()
    for name in ("mode", "policy"):
        table.add_column(name, no_wrap=True)
    for key in (*UPDATE_KEYS, *CONTROL_KEYS, "false supersession", "stale superseded"):
        table.add_column(key, justify="right")
    for mode, run in modes.items():
        if "skipped" in run:
            continue
        # per mode, not per policy: what detection marked when the scenarios were written
        marked = [f"{run[key]['rate']:.3f}" for key in ("false_supersession", "stale_superseded")]
        for name, scores in run["policies"].items():
            cells = [f"{scores[key]:.3f}" for key in (*UPDATE_KEYS, *CONTROL_KEYS)]
            table.add_row(mode, name, *cells, *marked)
        table.add_section()
    return table
