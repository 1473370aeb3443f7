"""An OpenAI Agents SDK agent with episodic memory, over two runs.

Run 1 tells the agent a fact, which it stores with its ``remember`` tool; run 2 asks about
it: the fact comes back in the ``<recalled-memory>`` block the instructions inject, and
through the ``recall_memory`` tool. Needs ``pip install 'episodic-agent-memory[agents]'``
and, for the agent itself, any OpenAI-compatible chat-completions endpoint:

    OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_API_KEY=unused \\
    EPISODIC_AGENT_MODEL=llama3.1 python examples/openai_agents.py

Without ``OPENAI_API_KEY`` it shows the memory side alone, with no model and no network:
the ``remember`` tool's answer and the instructions the agent's next run would get, then
says what the agent needs. ``EPISODIC_DB`` chooses the database (default: a new one in a
temporary folder, so the example leaves your memory alone).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from episodic import Episodic
from episodic.extras import MissingExtra, require

QUESTIONS = (
    "Please remember this for next time: Dana's staging deploys need the VPN switched on.",
    "What do Dana's staging deploys need?",
)
BASE = "You are a deployment helper. Store durable facts with remember; look facts up with "
BASE += "recall_memory."


def main() -> int:
    try:
        require("agents", "examples/openai_agents.py")
    except MissingExtra as exc:
        print(exc, file=sys.stderr)
        return 2
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    from episodic.integrations.openai_agents import AgentMemory

    folder = tempfile.TemporaryDirectory()
    url = os.environ.get("EPISODIC_DB") or f"sqlite:///{Path(folder.name) / 'memory.db'}"
    memory = AgentMemory(Episodic.open(url), workspace="demo", agent="helper", resource="user:dana")
    try:
        if not os.environ.get("OPENAI_API_KEY"):
            # No model to run: what the agent's tools and instructions do, shown directly.
            print("remember ->", memory.remember_json(QUESTIONS[0].split(": ", 1)[1]))
            print(f"instructions for {QUESTIONS[1]!r}:\n{BASE}\n{memory.block(QUESTIONS[1])}")
            print(
                "\nThe agent itself needs a chat model: set OPENAI_API_KEY (any value for a "
                "local server) and OPENAI_BASE_URL, e.g. http://localhost:11434/v1 for Ollama, "
                "and EPISODIC_AGENT_MODEL (default gpt-4o-mini).",
                file=sys.stderr,
            )
            return 0
        # Traces would go to OpenAI's platform: keep the example local.
        set_tracing_disabled(True)
        client = AsyncOpenAI(base_url=os.environ.get("OPENAI_BASE_URL"))
        model = OpenAIChatCompletionsModel(
            model=os.environ.get("EPISODIC_AGENT_MODEL", "gpt-4o-mini"), openai_client=client
        )
        agent = Agent(
            name="helper",
            instructions=memory.instructions(BASE),
            tools=memory.tools(),
            model=model,
        )
        for question in QUESTIONS:
            result = Runner.run_sync(agent, question)
            print(f"user: {question}\nagent: {result.final_output}")
    finally:
        memory.memory.close()
        folder.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
