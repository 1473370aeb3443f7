"""LLM-backed steps behind one small protocol, with an OpenAI-compatible client and a fake.

``OpenAICompatLLM`` and ``make_llm`` load the ``openai`` SDK (about 0.4 s), so they are
imported on first use: code that only needs the protocol, ``ScriptedLLM`` or the offline
fallbacks does not pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from episodic.llm.base import LLM, ScriptedCall, ScriptedLLM, ScriptExhausted
from episodic.llm.prompts import DEFAULT_PROMPTS, Prompts
from episodic.llm.steps import QueryTerms, key_terms

if TYPE_CHECKING:
    from episodic.llm.openai_compat import OpenAICompatLLM, make_llm

__all__ = [
    "DEFAULT_PROMPTS",
    "LLM",
    "OpenAICompatLLM",
    "Prompts",
    "QueryTerms",
    "ScriptExhausted",
    "ScriptedCall",
    "ScriptedLLM",
    "key_terms",
    "make_llm",
]

_LAZY = {"OpenAICompatLLM", "make_llm"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from episodic.llm import openai_compat

        return getattr(openai_compat, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
