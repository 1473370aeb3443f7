"""The house rules a reader relies on, checked on the source itself: no import cycles
between modules, scoring free of I/O, modules small enough to read, both storage
backends split into the same areas, and comments that speak of the code."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "episodic"
ROOT = SRC.parent

# Modules allowed past MAX_MODULE_LINES, each because one idea needs the room.
MAX_MODULE_LINES = 650
ONE_IDEA = {
    # The time-expression parser: one grammar of dates, spans and anchors, one table of
    # words; split, its rules would be read in two places.
    "episodic.recall.timeparse",
    # The schema's history: each numbered migration's DDL as it shipped, in SQLite's
    # dialect, and its rendering for PostgreSQL. One source of truth for both backends'
    # tables; the statements are long, the logic short.
    "episodic.store.migrations",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Every module of ours ``path`` imports, wherever the import stands: at the top,
    inside a function, or under ``if TYPE_CHECKING``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in known:
                    found.add(sub)
                elif node.module in known:
                    found.add(node.module)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_back() -> None:
    mods = modules()
    graph = {name: imports_of(path, set(mods)) - {name} for name, path in mods.items()}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_scoring_imports_no_io() -> None:
    mods = modules()
    outside = {
        (name, dep)
        for name, path in mods.items()
        if name.startswith("episodic.scoring")
        for dep in imports_of(path, set(mods))
        if not dep.startswith(("episodic.scoring", "episodic.model"))
    }
    assert outside == set()


def test_modules_fit_a_reading() -> None:
    long = {
        name: n
        for name, path in modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert set(long) <= ONE_IDEA, long


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_both_backends_are_split_into_the_same_areas(backend: str) -> None:
    areas = {
        "__init__",
        "connection",
        "writes",
        "search",
        "sparse",
        "vectors",
        "claims",
        "upkeep",
        "consolidation",
        "reviews",
        "service",
        "integrity",
        "journal",
        "supersession",
        "sessions",
    }
    # PostgreSQL only: what the installed pgvector supports, and the index it has.
    extra = {"pgvector"} if backend == "postgres" else set()
    assert {p.stem for p in (PACKAGE / "store" / backend).glob("*.py")} == areas | extra


def source_comments() -> Iterator[tuple[Path, int, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            yield path, n, line


def test_comments_speak_of_the_code_not_the_tracker() -> None:
    tracker = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path, n, line in source_comments()
        if tracker.search(line)
    ]
    assert found == []
