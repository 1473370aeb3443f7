"""API keys and what a key may see. Pure: no I/O.

A key binds its holder to one workspace and a role. Seed 000's role mapping decides the
recall scope: an ``agent`` key recalls with scope ``own`` (its agent's memories), a
``lead`` key with ``crew_shared`` (its own plus the crew's high-value memories), an
``admin`` key sees the whole workspace. A key created with an agent (or crew) is bound to
it: asking for another one is refused, never answered with less.

Secrets look like ``ep_<key id>_<random>``; only their sha256 is stored, and the secret is
shown once, when the key is created.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from episodic.errors import Forbidden, InvalidInput
from episodic.model import Role, Scope, ScopeFilter, scope_for_role
from episodic.recall.trace import DROP_SCOPE, Trace

KEY_PREFIX = "ep_"
_SECRET_BYTES = 24
_KEY_ID_BYTES = 6
# The same answer whether or not the other workspace exists: no existence hints.
WRONG_WORKSPACE = "this key is not valid for that workspace"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored key, without its secret."""

    id: str
    workspace_id: str
    role: Role
    agent_id: str | None = None
    crew_id: str | None = None
    label: str = ""
    created_at: datetime | None = None
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workspace": self.workspace_id,
            "role": self.role.value,
            "agent": self.agent_id,
            "crew": self.crew_id,
            "label": self.label,
            "created_at": None if self.created_at is None else self.created_at.isoformat(),
            "revoked_at": None if self.revoked_at is None else self.revoked_at.isoformat(),
        }


def new_secret() -> tuple[str, str]:
    """(key id, secret) for a new key."""
    key_id = "k_" + secrets.token_hex(_KEY_ID_BYTES)
    return key_id, f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(_SECRET_BYTES)}"


def hash_secret(secret: str) -> str:
    """sha256 hex of the secret. Secrets are 192 random bits, so a fast hash is enough:
    there is nothing to guess that a slow hash would protect."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def parse_role(value: Role | str) -> Role:
    try:
        return Role(value)
    except ValueError:
        raise InvalidInput("role", f"unknown role {value!r}; use agent, lead or admin") from None


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: an active key."""

    key: ApiKey

    @property
    def workspace_id(self) -> str:
        return self.key.workspace_id

    @property
    def role(self) -> Role:
        return self.key.role

    @property
    def is_admin(self) -> bool:
        return self.key.role is Role.ADMIN

    def workspace(self, asked: str | None) -> str:
        """The workspace a request runs in: the key's. Naming another one is refused."""
        if asked is not None and asked != self.key.workspace_id:
            raise Forbidden(WRONG_WORKSPACE)
        return self.key.workspace_id

    def agent(self, asked: str | None) -> str | None:
        """The agent a request acts as: the bound one, or the one asked for."""
        bound = self.key.agent_id
        if bound is not None and not self.is_admin:
            if asked is not None and asked != bound:
                raise Forbidden(f"this key is bound to agent {bound!r}")
            return bound
        return asked

    def crew(self, asked: str | None) -> str | None:
        bound = self.key.crew_id
        if bound is not None and not self.is_admin:
            if asked is not None and asked != bound:
                raise Forbidden(f"this key is bound to crew {bound!r}")
            return bound
        return asked

    def reading(
        self,
        *,
        workspace: str | None = None,
        agent: str | None = None,
        crew: str | None = None,
        scope: Scope | str | None = None,
        resource: str | None = None,
        conversation: str | None = None,
        types: tuple[str, ...] | None = None,
    ) -> ScopeFilter:
        """What a read may see: the role's scope (seed 000), never wider. An admin may
        narrow by any scope; an agent key reads ``own``, a lead key ``crew_shared``."""
        ws = self.workspace(workspace)
        forced = scope_for_role(self.key.role)
        if scope is not None:
            try:
                scope = Scope(scope)
            except ValueError:
                raise InvalidInput(
                    "scope", f"unknown scope {scope!r}; use own or crew_shared"
                ) from None
        if forced is None:
            chosen = scope
        else:
            if scope is not None and scope is not forced:
                raise Forbidden(f"a {self.key.role.value} key reads with scope {forced.value}")
            chosen = forced
        who, team = self.agent(agent), self.crew(crew)
        # A key made before agent and lead keys had to name theirs may reach here bound
        # to none: the message says how to go on with it, and how to replace it.
        if chosen is Scope.OWN and not who:
            raise InvalidInput(
                "agent",
                "scope 'own' needs an agent and this key has none bound: name one in the "
                "request, or use a key created with --agent",
            )
        if chosen is Scope.CREW_SHARED and not team:
            raise InvalidInput(
                "crew",
                "scope 'crew_shared' needs a crew and this key has none bound: name one in "
                "the request, or use a key created with --crew",
            )
        return ScopeFilter(
            workspace_id=ws,
            scope=chosen,
            agent_id=who,
            crew_id=team,
            resource_id=resource,
            conversation_id=conversation,
            types=types,
        )

    def trace_view(self, trace: Trace | None) -> Trace | None:
        """The trace as this caller may see it: the recall engine also lists what the
        whole workspace held but the scope hid, which only an admin key may see."""
        if trace is None or self.is_admin:
            return trace
        trace.dropped = [d for d in trace.dropped if d.reason != DROP_SCOPE]
        return trace

    def require_admin(self, what: str) -> None:
        if not self.is_admin:
            raise Forbidden(f"{what} needs an admin key")
