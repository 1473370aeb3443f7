"""``Episodic`` is a facade over area objects: every public method reaches the area that
implements it, with that method's signature and documentation, and what the areas share
(the clock, the store, the settings) is one thing for all of them."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.service.facade import Forward
from episodic.store import open_store

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


@pytest.fixture
def mem() -> Iterator[Episodic]:
    with Episodic(
        store=open_store("sqlite:///:memory:"),
        embedder=FakeEmbedder(dim=16),
        settings=Settings(),
        clock=lambda: NOW,
        llm=None,
    ) as mem:
        yield mem


def forwarded() -> dict[str, Forward[object, ..., object]]:
    return {name: f for name, f in vars(Episodic).items() if isinstance(f, Forward)}


def test_every_forwarded_method_is_its_areas_documented_method(mem: Episodic) -> None:
    names = forwarded()
    assert len(names) > 40
    for name, forward in names.items():
        bound = getattr(mem, name)
        area = getattr(mem, forward.area)
        assert bound.__self__ is area, name
        assert inspect.signature(bound) == inspect.signature(getattr(area, name)), name
        assert (bound.__doc__ or "").strip(), f"{name} has no docstring"
        assert Episodic.__dict__[name].__doc__ == bound.__doc__
        assert forward.method.__name__ == name  # the method typed is the one called


def test_concurrent_first_calls_build_one_area_each() -> None:
    """Areas are built on first use: threads racing to the first call share one."""
    import threading

    with Episodic(store=open_store("sqlite:///:memory:"), embedder=None, llm=None) as mem:
        assert "_upkeep" not in vars(mem) and "_operations" not in vars(mem)
        seen: list[object] = []
        start = threading.Barrier(8)

        def first_call() -> None:
            start.wait()
            seen.append(mem._editing)
            seen.append(mem._operations)

        threads = [threading.Thread(target=first_call) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({id(a) for a in seen[::2]}) == 1 and len({id(a) for a in seen[1::2]}) == 1
        assert mem._editing.operations is mem._operations  # the editing area shares it
        assert "_upkeep" not in vars(mem)  # never called: never built


def test_a_clock_given_later_is_every_areas_clock(mem: Episodic) -> None:
    later = NOW + timedelta(days=3)
    mem.clock = lambda: later
    event = mem.add_event({"workspace": "acme", "type": "note", "summary": "later"})
    assert event.ts == later  # written with the new clock
    assert mem.memory_nudge("acme", "a1", "s1") is None
    assert mem.scheduler().clock() == later


def test_an_instance_attribute_replaces_a_forwarded_method(mem: Episodic) -> None:
    mem.ingest = lambda items: "replaced"  # type: ignore[method-assign,assignment,misc]
    assert mem.ingest([]) == "replaced"
    with Episodic(store=open_store("sqlite:///:memory:"), embedder=None, llm=None) as other:
        assert other.ingest([]).received == 0  # the class is untouched
