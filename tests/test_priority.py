"""The heavy work's lower CPU priority (episodic.priority): the indexer's sweeps embed on a
thread niced by the increment it is given (recalls: tests/test_http_admission.py), writes
stay at normal priority, nothing is niced by default, and a bad setting names its
variable."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import pytest

from episodic.embed.base import Matrix
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.priority import HEAVY_NICE, MAX_NICE, env_nice, lower_priority
from episodic.store import SqliteStore
from episodic.store.base import Vector
from episodic.write.indexer import Indexer
from store_contract import event, remember

NICE = 10  # as EPISODIC_NICE=10 sets it


class PriorityEmbedder(FakeEmbedder):
    """The fake embedder, noting the nice of each thread that calls it."""

    def __init__(self) -> None:
        super().__init__(dim=8)
        self.nices: list[int] = []

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        self.nices.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return super().embed_batch(texts)


class PriorityStore(SqliteStore):
    """A real store, noting the nice of each thread that writes vectors."""

    nices: list[int]

    def put_vectors(self, model_id: str, dim: int, rows: Sequence[tuple[str, Vector]]) -> int:
        self.nices.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return super().put_vectors(model_id, dim, rows)


def test_the_indexer_embeds_at_the_heavy_works_lower_priority_and_writes_at_normal() -> None:
    store = PriorityStore(":memory:")
    store.nices = []
    remember(store, *(event(f"e{i}", summary=f"deploy step {i}") for i in range(3)))
    embedder = PriorityEmbedder()
    indexer = Indexer(store, embedder, interval_s=0.05, nice=NICE, link_similar=False)
    done = threading.Event()
    indexer.after_sweep = lambda: done.set() if not store.stats().pending_vectors else None
    own = os.getpriority(os.PRIO_PROCESS, 0)
    indexer.start()
    try:
        assert done.wait(10), "the indexer never finished"
    finally:
        indexer.stop()
    assert store.stats().vectors == 3
    assert embedder.nices and set(embedder.nices) == {min(MAX_NICE, own + NICE)}
    # The vectors are written at the process's priority: a niced writer holding the store's
    # write lock would keep writes waiting while it waits for CPU.
    assert store.nices and set(store.nices) == {own}
    # The caller's own thread keeps its priority: only the sweeper's thread was niced.
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own
    store.close()


def test_lowering_a_threads_priority_leaves_the_others_alone() -> None:
    seen: list[int] = []

    def work() -> None:
        lower_priority(3)
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    own = os.getpriority(os.PRIO_PROCESS, 0)
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [min(MAX_NICE, own + 3)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own


@pytest.mark.parametrize("raw", ["lots", "-1", "20", "2.5"])
def test_a_bad_nice_in_the_environment_is_named(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_NICE", raw)
    with pytest.raises(InvalidInput, match="EPISODIC_NICE"):
        env_nice("EPISODIC_NICE", 10)
    monkeypatch.setenv("EPISODIC_NICE", "0")
    assert env_nice("EPISODIC_NICE", 10) == 0


def test_by_default_nothing_is_niced() -> None:
    assert HEAVY_NICE == 0
