"""``episodic bench locomo``: recall quality on the LoCoMo benchmark, and its table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from episodic.bench.locomo import (
    CATEGORY_NAMES,
    GRANULARITIES,
    category_counts,
    load_locomo,
    resolve_policies,
    run_locomo,
)
from episodic.bench.metrics import METRIC_KEYS
from episodic.cli.common import JsonOpt, err, errors, out, print_json
from episodic.config import Settings
from episodic.errors import InvalidInput

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
    policy: Annotated[
        str,
        typer.Option("--policy", help="Policy name, comma-separated names, or all."),
    ] = "all",
    granularity: Annotated[
        str, typer.Option("--granularity", help="Score turns or their sessions: turn|session.")
    ] = "turn",
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder", help="local | ollama | openai | none (default: EPISODIC_EMBEDDER)."
        ),
    ] = None,
    ingest: Annotated[
        str,
        typer.Option(
            "--ingest",
            help="turn: each turn a journal event; conversation: chat messages segmented "
            "into episodes, entries and keys (recall ranks turns and entries).",
        ),
    ] = "turn",
    keys: Annotated[
        str | None,
        typer.Option("--keys", help="Key expansion on|off (default: EPISODIC_KEY_EXPANSION)."),
    ] = None,
    bench_db: Annotated[
        str | None,
        typer.Option(
            "--bench-db",
            help="An EMPTY database to run in, e.g. postgresql://... to measure that "
            "backend (default: a throwaway SQLite file).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Evidence recall of each recall policy on LoCoMo (one workspace per conversation).

    Every turn becomes a memory; every question with evidence is asked at the end of its
    conversation. Reports recall@1/5/10/20, all-evidence@10 and NDCG@10, overall and per
    category, and recall latency (query embedding excluded). Builds a throwaway database;
    turn embeddings are cached in the cache dir, so a second run skips the model.

    Example: episodic bench locomo --data ../shared/data/locomo10.json --granularity session
    Example: episodic bench locomo --data ../shared/data/locomo10.json --ingest conversation
    """
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
        counts = category_counts(load_locomo(data))
        report = run_locomo(
            data,
            names,
            granularity,
            settings,
            progress=lambda line: err.print(f"[dim]{line}[/dim]", markup=True),
            ingest=ingest,
            db_url=bench_db,
        )
    if as_json:
        print_json(report)
        return
    _print_bench(report, counts)


def _print_bench(report: dict[str, Any], counts: dict[str, int]) -> None:
    policies: dict[str, Any] = report["policies"]
    out.print(
        f"LoCoMo evidence recall, {report['granularity']} level: {report['questions']} "
        f"questions, embedder {report['embedder']}"
    )
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

    section(
        f"overall (n={report['questions']})",
        {name: p["overall"] for name, p in policies.items()},
    )
    for category, n in counts.items():
        label = CATEGORY_NAMES.get(int(category), "other")
        section(
            f"{category} {label} (n={n})",
            {name: p["by_category"][category] for name, p in policies.items()},
        )
    table.add_row("[bold]recall latency (ms)[/bold]", *("" for _ in policies))
    for key in ("p50", "p95"):
        table.add_row(f"  {key}", *(f"{p['latency_ms'][key]:.2f}" for p in policies.values()))
    if out.is_terminal:
        out.print(table)
    else:
        # Piped output has no terminal width to respect; squeezing seven policies into 80
        # columns would cut the labels and numbers instead.
        Console(highlight=False, width=_natural_width(table)).print(table)


def _natural_width(table: Table) -> int:
    """The width ``table`` takes when nothing limits it."""
    return Measurement.get(out, out.options.update_width(10_000), table).maximum
