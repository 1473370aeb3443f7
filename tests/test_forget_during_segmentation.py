"""Forgetting a conversation while the sweeper segments it (found by tests/test_load.py).

The episode writer reads a conversation's messages, describes and extracts them (seconds
with an LLM or a busy embedder), then closes the episode. A forget in between removes the
messages, and the store refuses to close an episode over messages that are gone. That
refusal used to escape the writer: the background sweeper logged it as an ERROR with a
traceback and dropped the rest of its run, so the other pending conversations waited for
the next sweep. The forgotten conversation must simply be skipped, the others segmented.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from conftest import raw_rows, sql_text
from episodic import Episodic, Settings
from episodic.model import Memory
from episodic.store.base import Store
from episodic.write.episodes import EPISODE_TYPE, EpisodeWriter

NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)


class ForgetsWhileClosing:
    """The real store; the first episode it is asked to close has just had its
    conversation forgotten by another request."""

    def __init__(self, mem: Episodic, conversation: str) -> None:
        self._mem = mem
        self._conversation = conversation
        self._store: Store = mem.store
        self.forgot = False

    def close_episode(
        self,
        episode: Memory,
        message_ids: Sequence[str],
        derived: Sequence[Memory],
        keys: Any,
    ) -> bool:
        if not self.forgot and episode.conversation == self._conversation:
            self._mem.forget(workspace=episode.workspace, conversation=self._conversation)
            self.forgot = True
        return self._store.close_episode(episode, message_ids, derived, keys)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_conversation_forgotten_mid_segmentation_is_skipped_and_the_rest_segmented(
    db_url: str,
) -> None:
    with Episodic.open(db_url, settings=Settings(embedder="none"), clock=lambda: NOW) as mem:
        start = NOW - timedelta(hours=6)
        for conversation in ("gone", "kept"):
            for i, text in enumerate(
                ("the checkout pods crash", "roll back the cache change", "done, it is stable")
            ):
                mem.add_message(
                    text,
                    workspace="acme",
                    conversation=conversation,
                    role="user" if i % 2 == 0 else "assistant",
                    ts=start + timedelta(minutes=i),
                )
        store = ForgetsWhileClosing(mem, "gone")
        writer = EpisodeWriter(
            store,  # type: ignore[arg-type]
            embedder=None,
            llm=None,
            clock=lambda: NOW,
        )
        report = writer.run()  # idle past the hard gap: both conversations close
        assert store.forgot
        assert report.episodes == 1
        rows = raw_rows(
            db_url,
            f"SELECT conversation_id FROM memories WHERE type = {sql_text(EPISODE_TYPE)}",
        )
        assert rows == [("kept",)]
        gone = raw_rows(db_url, "SELECT count(*) FROM events WHERE conversation_id = 'gone'")
        assert gone == [(0,)]
