"""An OpenAI Agents SDK agent with episodic memory, over two runs.

Run 1 tells the agent a fact, which it stores with its ``remember`` tool; run 2 asks about
it: the fact comes back in the ``<recalled-memory>`` block the instructions inject, and
through the ``recall_memory`` tool. Needs ``pip install 'episodic-agent-memory[agents]'`` and
any OpenAI-compatible chat-completions endpoint:

    OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_API_KEY=unused \\
    EPISODIC_AGENT_MODEL=llama3.1 python examples/openai_agents.py

``EPISODIC_DB`` chooses the database; without it, the one every ``episodic`` command uses
here: ``memory.db`` in the nearest ``.episodic/`` folder up from the working directory, else
in the user's data folder (``episodic doctor`` says which).
"""

from __future__ import annotations

import os

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from episodic import Episodic
from episodic.integrations.openai_agents import AgentMemory

QUESTIONS = (
    "Please remember this for next time: Dana's staging deploys need the VPN switched on.",
    "What do Dana's staging deploys need?",
)


def main() -> None:
    # Traces would go to OpenAI's platform: keep the example local.
    set_tracing_disabled(True)
    client = AsyncOpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL"), api_key=os.environ.get("OPENAI_API_KEY")
    )
    model = OpenAIChatCompletionsModel(
        model=os.environ.get("EPISODIC_AGENT_MODEL", "gpt-4o-mini"), openai_client=client
    )
    memory = AgentMemory(Episodic.open(), workspace="demo", agent="helper", resource="user:dana")
    agent = Agent(
        name="helper",
        instructions=memory.instructions(
            "You are a deployment helper. Store durable facts with remember; look facts up "
            "with recall_memory."
        ),
        tools=memory.tools(),
        model=model,
    )
    try:
        for question in QUESTIONS:
            result = Runner.run_sync(agent, question)
            print(f"user: {question}\nagent: {result.final_output}")
    finally:
        memory.memory.close()


if __name__ == "__main__":
    main()
