"""``AsyncEpisodic``: the sync service's methods awaited, run off the event loop."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import anyio
import pytest

from episodic import AsyncEpisodic, Episodic, InvalidInput


def test_every_public_method_of_episodic_is_there_awaited() -> None:
    sync_names = {
        n for n in dir(Episodic) if not n.startswith("_") and callable(getattr(Episodic, n))
    }
    sync_names -= {"open", "close"}  # open returns an async opener; close is awaited
    missing = sorted(n for n in sync_names if not hasattr(AsyncEpisodic, n))
    assert missing == []


def test_remember_recall_update_forget_round_trip(db_url: str) -> None:
    async def main() -> None:
        async with AsyncEpisodic.open(db_url, embedder=None) as mem:
            m = await mem.remember("the user drinks green tea every morning", workspace="w")
            result = await mem.recall("green tea", workspace="w", explain=True)
            assert [h.id for h in result.hits] == [m.id]
            assert result.trace is not None
            edited = await mem.update(m.id, workspace="w", content="the user drinks coffee")
            assert edited.content == "the user drinks coffee"
            assert len(await mem.history(m.id, workspace="w")) == 2
            counts = await mem.forget(workspace="w", memory=m.id)
            assert counts.memories == 1
            assert (await mem.stats("w")).memories == 0

    anyio.run(main)


def test_bad_input_is_raised_from_the_awaited_call(db_url: str) -> None:
    async def main() -> None:
        async with AsyncEpisodic.open(db_url, embedder=None) as mem:
            with pytest.raises(InvalidInput) as err:
                await mem.remember("  ", workspace="w")
            assert err.value.field == "content"

    anyio.run(main)


def test_awaiting_open_gives_a_service_to_close(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"

    async def main() -> int:
        mem = await AsyncEpisodic.open(url, embedder=None)
        try:
            await mem.remember("kept across opens", workspace="w")
        finally:
            await mem.aclose()
        async with AsyncEpisodic(Episodic.open(url, embedder=None)) as again:
            return (await again.stats("w")).memories

    assert anyio.run(main) == 1


@pytest.mark.model
def test_the_loop_keeps_ticking_while_the_model_embeds(db_url: str) -> None:
    """A heartbeat coroutine ticks every 10 ms while ``index_once`` embeds 600 memories
    with the real model: the loop is never held for more than a fraction of the sweep."""

    async def main() -> tuple[float, float, int]:
        async with AsyncEpisodic.open(db_url) as mem:
            await mem.ingest(
                {
                    "workspace": "w",
                    "type": "note",
                    "summary": f"note {i} about topic {i % 17}",
                    "refs": {"episodic": True},  # admitted as a memory, embedded by the sweep
                }
                for i in range(600)
            )
            ticks: list[float] = []
            done = anyio.Event()

            async def heartbeat() -> None:
                while not done.is_set():
                    await anyio.sleep(0.01)
                    ticks.append(time.perf_counter())

            async with anyio.create_task_group() as tg:
                tg.start_soon(heartbeat)
                started = time.perf_counter()
                sweep = await mem.index_once()
                finished = time.perf_counter()
                done.set()
            # The longest the loop went without a tick while the sweep ran.
            marks = [started, *(t for t in ticks if t < finished), finished]
            worst = max(b - a for a, b in itertools.pairwise(marks))
            return finished - started, worst, sweep.embedded

    took, worst_gap, embedded = anyio.run(main)
    assert embedded >= 600
    # Relative, not absolute: a quiet machine embeds 600 notes in well under a second, a
    # loaded one in several. Run on the loop, the call would hold it for the whole sweep.
    assert worst_gap < min(0.5, took / 3), (
        f"the loop stalled {worst_gap:.2f}s during a {took:.2f}s sweep"
    )


def test_many_tasks_share_one_service(db_url: str) -> None:
    """Fifty concurrent writes and recalls from one loop, each in a worker thread, on
    the store's one connection (SQLite) or its pool (PostgreSQL): nothing is lost."""

    async def main() -> tuple[int, list[int]]:
        async with AsyncEpisodic.open(db_url, embedder=None) as mem:
            found: list[int] = []

            async def one(i: int) -> None:
                await mem.remember(f"fact {i} about parrots", workspace="w", agent=f"a{i % 3}")
                found.append(len((await mem.recall("parrots", workspace="w", k=50)).hits))

            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(one, i)
            final = await mem.recall("parrots", workspace="w", k=50)
            return len(final.hits), found

    stored, found = anyio.run(main)
    assert stored == 50
    assert len(found) == 50 and min(found) >= 1  # each saw at least its own
