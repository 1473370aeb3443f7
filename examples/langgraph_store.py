"""A LangGraph graph with episodic as its long-term memory store. No LLM needed.

    pip install 'episodic-agent-memory[langgraph]'
    python examples/langgraph_store.py [path/to/memory.db]

The first run of the graph stores what the user said; a later run (a new thread: no
state carries over) recalls it through ``store.search(namespace, query=...)``, which is
episodic's hybrid recall with the local MiniLM model.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from episodic.integrations.langgraph import EpisodicStore


class State(TypedDict):
    user: str
    said: str
    recalled: list[str]


def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    if state["said"]:
        key = f"fact-{len(store.search(('demo', state['user']), limit=100))}"
        store.put(("demo", state["user"]), key, {"content": state["said"]})
    return {}


def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
    hits = store.search(("demo", state["user"]), query="what does the user like to drink?", limit=1)
    return {"recalled": [h.value["content"] for h in hits]}


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "memory.db"
    store = EpisodicStore.open(f"sqlite:///{path.absolute()}")
    try:
        builder = StateGraph(State)
        builder.add_node("remember", remember)
        builder.add_node("recall", recall)
        builder.add_edge(START, "remember")
        builder.add_edge("remember", "recall")
        builder.add_edge("recall", END)
        graph = builder.compile(store=store)

        graph.invoke({"user": "ana", "said": "Ana drinks oolong tea, never coffee", "recalled": []})
        graph.invoke({"user": "ana", "said": "Ana's laptop is a ThinkPad", "recalled": []})
        later = graph.invoke({"user": "ana", "said": "", "recalled": []})
        print(f"recalled: {later['recalled'][0]}")
        print(f"memories in {path}: {len(store.search(('demo',), limit=100))}")
    finally:
        store.close()


if __name__ == "__main__":
    main()
