"""scope_where: the one place workspace isolation and scopes become SQL."""

from __future__ import annotations

from typing import Any

import pytest

from episodic.errors import InvalidInput
from episodic.model import Scope, ScopeFilter
from episodic.store.base import CREW_SHARED_MIN_BASE_IMPORTANCE as MIN_BASE
from episodic.store.sql import scope_where


@pytest.mark.parametrize(
    ("flt", "sql", "params"),
    [
        (ScopeFilter("w"), "workspace_id = ?", ["w"]),
        (ScopeFilter("w", agent_id="a"), "workspace_id = ? AND agent_id = ?", ["w", "a"]),
        (ScopeFilter("w", crew_id="c"), "workspace_id = ? AND crew_id = ?", ["w", "c"]),
        (
            ScopeFilter("w", agent_id="a", crew_id="c", resource_id="r", conversation_id="k"),
            "workspace_id = ? AND agent_id = ? AND crew_id = ? AND resource_id = ? "
            "AND conversation_id = ?",
            ["w", "a", "c", "r", "k"],
        ),
        # own: the crew does not narrow, the agent decides
        (
            ScopeFilter("w", Scope.OWN, agent_id="a", crew_id="c"),
            "workspace_id = ? AND agent_id = ?",
            ["w", "a"],
        ),
        (
            ScopeFilter("w", Scope.OWN, agent_id="a", resource_id="r"),
            "workspace_id = ? AND agent_id = ? AND resource_id = ?",
            ["w", "a", "r"],
        ),
        (
            ScopeFilter("w", Scope.CREW_SHARED, agent_id="a", crew_id="c"),
            "workspace_id = ? AND (agent_id = ? OR (crew_id = ? AND base_importance >= ?))",
            ["w", "a", "c", MIN_BASE],
        ),
        (
            ScopeFilter("w", Scope.CREW_SHARED, crew_id="c", conversation_id="k"),
            "workspace_id = ? AND (crew_id = ? AND base_importance >= ?) AND conversation_id = ?",
            ["w", "c", MIN_BASE, "k"],
        ),
        # empty ids count as not given rather than matching nothing
        (ScopeFilter("w", agent_id="", resource_id=""), "workspace_id = ?", ["w"]),
    ],
)
def test_scope_where(flt: ScopeFilter, sql: str, params: list[Any]) -> None:
    assert scope_where(flt) == (sql, params)


def test_alias_qualifies_every_column() -> None:
    sql, _ = scope_where(ScopeFilter("w", Scope.CREW_SHARED, agent_id="a", crew_id="c"), alias="m")
    assert sql == (
        "m.workspace_id = ? AND (m.agent_id = ? OR (m.crew_id = ? AND m.base_importance >= ?))"
    )
    with pytest.raises(ValueError):
        scope_where(ScopeFilter("w"), alias="m; DROP TABLE memories")


def test_scope_given_as_plain_string_is_understood() -> None:
    flt = ScopeFilter("w", "own", agent_id="a")  # type: ignore[arg-type]
    assert scope_where(flt) == ("workspace_id = ? AND agent_id = ?", ["w", "a"])


@pytest.mark.parametrize(
    ("flt", "field"),
    [
        (ScopeFilter("w", Scope.OWN), "agent"),
        (ScopeFilter("w", Scope.OWN, crew_id="c"), "agent"),
        (ScopeFilter("w", Scope.CREW_SHARED), "crew"),
        (ScopeFilter("w", Scope.CREW_SHARED, agent_id="a"), "crew"),
        (ScopeFilter(""), "workspace"),
        (ScopeFilter("  "), "workspace"),
        (ScopeFilter("w", "everything"), "scope"),  # type: ignore[arg-type]
    ],
)
def test_refuses_filters_that_cannot_be_scoped(flt: ScopeFilter, field: str) -> None:
    with pytest.raises(InvalidInput) as info:
        scope_where(flt)
    assert info.value.field == field


def test_values_never_reach_the_sql_text() -> None:
    hostile = "x' OR '1'='1"
    sql, params = scope_where(ScopeFilter(hostile, agent_id=hostile, resource_id=hostile))
    assert hostile not in sql and "'" not in sql
    assert params == [hostile, hostile, hostile]
