"""Episodic memory for the OpenAI Agents SDK (``pip install 'episodic-agent-memory[agents]'``).

``AgentMemory`` binds one in-process ``Episodic`` to a workspace and, optionally, an agent,
crew and resource (the user or case the conversation is about), and gives an SDK agent:

- ``tools()``: the ``recall_memory`` and ``remember`` function tools, built with the SDK's
  ``function_tool`` so their JSON schemas are the ones the SDK generates from the
  signatures. Like the MCP tools, recall answers JSON whose memories are labelled untrusted
  hints and escaped, and the model cannot widen the binding: no tool takes a workspace,
  agent or resource argument;
- ``instructions(base)``: a dynamic-instructions callable (the SDK's ``instructions`` may
  be a function of the run context and the agent) that appends the ``<recalled-memory>``
  block for the run's latest user message to ``base``: recalled once when the run starts,
  then the same block for each of the run's model calls.

Instructions rather than ``RunHooks.on_agent_start``: a hook only observes, so injecting
from it would mean mutating the shared ``Agent`` (unsafe when runs overlap), while the
instructions callable is the SDK's own place to compute the system prompt per run, and its
run context carries the turn's input to recall for.

Usage::

    memory = AgentMemory(Episodic(), workspace="acme", agent="support", resource="user:dana")
    agent = Agent(
        name="support",
        instructions=memory.instructions("You help Acme's customers."),
        tools=memory.tools(),
    )
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from episodic.extras import require

require("agents", "the OpenAI Agents SDK integration")

from agents import (  # noqa: E402
    Agent,
    FunctionTool,
    ModelBehaviorError,
    RunContextWrapper,
    default_tool_error_function,
    function_tool,
)
from pydantic import Field  # noqa: E402

from episodic.errors import EpisodicError, InvalidInput  # noqa: E402
from episodic.layer import RECALL_MEMORY_TOOL  # noqa: E402
from episodic.recall.answer import REMEMBER_DESCRIPTION, recall_answer  # noqa: E402
from episodic.service import SOURCES, Episodic  # noqa: E402

# The arguments carry no schema bounds: pydantic would reject an argument out of them
# before the tool runs, and the SDK then hides which one from the model. The service checks
# them instead (lengths, importance, source; k outside 1-50 becomes 5) and names the field.
DEFAULT_K = 5
K_DESCRIPTION = "How many memories, 1-50; outside that range: 5."

Instructions = Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class AgentMemory:
    """One agent's memory, as SDK tools and instructions. With an ``agent`` it recalls
    only what that agent wrote (scope own) and writes as it; a ``resource`` narrows both
    to that user or case; ``max_chars`` bounds the injected block (default: the
    ``render_max_chars`` setting)."""

    memory: Episodic
    workspace: str
    agent: str | None = None
    resource: str | None = None
    crew: str | None = None
    max_chars: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.workspace, str) or not self.workspace.strip():
            raise InvalidInput("workspace", "required: the memory works inside one workspace")
        if self.max_chars is not None and self.max_chars <= 0:
            raise InvalidInput("max_chars", "must be a positive number of characters")

    def _reading(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "agent": self.agent,
            "crew": self.crew,
            "resource": self.resource,
            "scope": "own" if self.agent else None,
        }

    # -- what the tools and the instructions do, callable without the SDK ----------------
    def recall_json(self, query: str, k: int = DEFAULT_K) -> str:
        """The ``recall_memory`` tool's answer for ``query``: JSON text."""
        result = self.memory.recall(query, k=k, **self._reading())
        return json.dumps(recall_answer(result), ensure_ascii=False)

    def remember_json(
        self,
        content: str,
        importance: float | None = None,
        source: str | None = None,
        evidence: str | None = None,
    ) -> str:
        """The ``remember`` tool's answer: the stored memory's id, as JSON text."""
        stored = self.memory.remember(
            content,
            workspace=self.workspace,
            agent=self.agent,
            crew=self.crew,
            resource=self.resource,
            importance=importance,
            source=source,
            evidence=evidence,
        )
        return json.dumps({"id": stored.id, "stored": True})

    def block(self, query: str) -> str:
        """The ``<recalled-memory>`` block for ``query`` ("" when nothing is recalled)."""
        if not query.strip():
            return ""
        return self.memory.render(query, max_chars=self.max_chars, **self._reading())

    # -- the SDK objects -------------------------------------------------------------------
    def tools(self) -> list[FunctionTool]:
        """``recall_memory`` and ``remember``, ready for ``Agent(tools=...)``."""
        return [self.recall_memory_tool(), self.remember_tool()]

    def recall_memory_tool(self) -> FunctionTool:
        def recall_memory(
            query: Annotated[str, Field(description="What to look for.")],
            k: Annotated[int, Field(description=K_DESCRIPTION)] = DEFAULT_K,
        ) -> str:
            return self.recall_json(query, k)

        description: str = RECALL_MEMORY_TOOL["function"]["description"]
        return function_tool(
            recall_memory,
            description_override=description,
            use_docstring_info=False,
            failure_error_function=tool_error,
        )

    def remember_tool(self) -> FunctionTool:
        def remember(
            content: Annotated[str, Field(description="What to remember.")],
            importance: Annotated[
                float | None, Field(description="0-1; default from the type.")
            ] = None,
            source: Annotated[
                str | None, Field(description=f"Provenance: one of {', '.join(SOURCES)}.")
            ] = None,
            evidence: Annotated[
                str | None, Field(description="Exact words from the conversation it rests on.")
            ] = None,
        ) -> str:
            return self.remember_json(content, importance, source, evidence)

        return function_tool(
            remember,
            description_override=REMEMBER_DESCRIPTION,
            use_docstring_info=False,
            failure_error_function=tool_error,
        )

    def instructions(self, base: str = "") -> Instructions:
        """An ``instructions`` callable: ``base``, then the memory block recalled for the
        run's latest user message (just ``base`` when there is none or nothing matches)."""

        # The SDK asks for the instructions before every model call of a run, and each
        # recall counts a use of every memory it returns (reference counts feed ranking and
        # decay): recall once per run, keyed by the run's context, held weakly.
        runs: dict[int, tuple[weakref.ref[RunContextWrapper[Any]], str]] = {}

        async def with_memory(context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            held = runs.get(id(context))
            if held is not None and held[0]() is context:
                block = held[1]
            else:
                query = latest_user_text(context.turn_input)
                # Recall is blocking database work: off the event loop, like the SDK's own
                # sync tools.
                block = await asyncio.to_thread(self.block, query)
                for ended in [key for key, (ref, _) in runs.items() if ref() is None]:
                    del runs[ended]
                runs[id(context)] = (weakref.ref(context), block)
            return "\n\n".join(part for part in (base, block) if part)

        return with_memory


def tool_error(context: RunContextWrapper[Any], error: Exception) -> str:
    """What the model reads when a memory tool fails: bad arguments and refused input
    name the field, so the model can correct its call; anything else gets the SDK's
    generic message, which leaks no internals."""
    if isinstance(error, ModelBehaviorError):
        # Arguments that are not JSON or not of the schema's types. The SDK keeps the
        # details out of the message unless OPENAI_AGENTS_DONT_LOG_TOOL_DATA=0.
        return f"{error}: call it again with arguments that match its schema"
    if isinstance(error, EpisodicError):
        return f"Refused: {error}"
    return default_tool_error_function(context, error)


def latest_user_text(items: Sequence[Any]) -> str:
    """The text of the last user message among a run's input items ("" when none). A
    message's content is text, or a list of parts of which the text ones count."""
    for item in reversed(items):
        if not isinstance(item, Mapping) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(
                str(part["text"])
                for part in content
                if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            )
    return ""
