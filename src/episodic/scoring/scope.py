"""Seed 001's scope hierarchy: memories closer to the asker weigh more.

Levels map onto episodic's ids: *team* is the asker's own crew (or the asker itself),
*project* is the rest of the workspace that belongs to some crew or agent, and *global*
is workspace-wide knowledge that belongs to no crew and no agent.
"""

from __future__ import annotations

from collections.abc import Mapping

TEAM = "team"
PROJECT = "project"
GLOBAL = "global"
SCOPE_MULTIPLIERS: Mapping[str, float] = {TEAM: 1.5, PROJECT: 1.2, GLOBAL: 1.0}


def scope_level(
    memory_agent: str | None,
    memory_crew: str | None,
    query_agent: str | None,
    query_crew: str | None,
) -> str:
    if (query_crew and memory_crew == query_crew) or (query_agent and memory_agent == query_agent):
        return TEAM
    if memory_crew or memory_agent:
        return PROJECT
    return GLOBAL


def scope_multiplier(level: str, multipliers: Mapping[str, float] = SCOPE_MULTIPLIERS) -> float:
    return multipliers.get(level, 1.0)


def possible_levels(query_agent: str | None, query_crew: str | None) -> tuple[str, ...]:
    """The levels ``scope_level`` can give any memory for this asker: a query naming no
    agent or crew has no team, so nothing is at the team level."""
    if query_agent or query_crew:
        return (TEAM, PROJECT, GLOBAL)
    return (PROJECT, GLOBAL)
