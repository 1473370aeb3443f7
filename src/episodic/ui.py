"""The operator's page (``/ui`` on ``episodic serve``): plain server-rendered HTML.

Same keys as the API: the page asks for one once and, signed in, keeps a random session
id (never the key) in an HttpOnly, SameSite=Strict cookie scoped to ``/ui`` (so neither
a script nor another site can use it) that expires with the session; the sessions are
rows in the database, so every process of ``serve --workers N`` knows them, and signing
out ends one for good. Every view calls the same service methods as the API, under the key's
workspace and role: browse, search and filter memories (with counts per type and
status), open one in full (scope, FSRS state, sources, relations, history), read a
conversation's episodes with what extraction kept and dropped, retire one or forget one
(after a confirmation page), run a recall and see
its trace stage by stage, and the health score's trend as an inline SVG chart.
Recalls made here do not count as references (an operator looking is not an agent using).
"""

from __future__ import annotations

import re
from dataclasses import replace
from html import escape
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import FastAPI, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from episodic.errors import EpisodicError, InvalidInput, NotFound, Unauthenticated
from episodic.recall.policies import POLICIES
from episodic.recall.render import relative_age
from episodic.service import Episodic
from episodic.service.operations import SESSION_LASTS
from episodic.tenancy import Principal
from episodic.ui_views import (
    HEALTH_METRICS,
    WEAK_BELOW,
    conversation_episodes,
    memory_detail,
    trace_view,
)

COOKIE = "episodic_session"
COOKIE_PATH = "/ui"
PAGE_SIZE = 50
# The form value the confirmation page's button sends; a forget without it only asks.
FORGET_CONFIRMED = "yes"
CHART_WIDTH, CHART_HEIGHT, CHART_PAD = 640, 200, 28

_env = Environment(
    loader=PackageLoader("episodic", "templates"),
    autoescape=select_autoescape(["html"]),
)
_CODE = re.compile(r"`([^`]+)`")


def code_spans(text: str) -> Markup:
    """Plain text with its `backquoted` commands set as code, the rest escaped."""
    return Markup(_CODE.sub(r"<code>\1</code>", escape(text)))


_env.filters["code"] = code_spans


def trend_svg(points: list[tuple[str, float]]) -> str:
    """Scores (0-100) by date, oldest first, as an inline SVG line chart with the band
    thresholds (50, 75) drawn in."""
    w, h, pad = CHART_WIDTH, CHART_HEIGHT, CHART_PAD

    def y(score: float) -> float:
        return round(pad + (100 - max(0.0, min(100.0, score))) / 100 * (h - 2 * pad), 1)

    def x(i: int) -> float:
        return round(pad + (i / max(1, len(points) - 1)) * (w - 2 * pad), 1)

    parts = [
        f'<svg id="trend" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="health score by day">',
        f'<rect x="0" y="0" width="{w}" height="{h}" fill="#fff" stroke="#e3e6eb"/>',
    ]
    for level, colour in ((75, "#0a6d2c"), (50, "#a40000")):
        parts.append(
            f'<line x1="{pad}" x2="{w - pad}" y1="{y(level)}" y2="{y(level)}" '
            f'stroke="{colour}" stroke-dasharray="4 4" stroke-width="1"/>'
            f'<text x="2" y="{y(level) + 4}" font-size="10" fill="{colour}">{level}</text>'
        )
    if points:
        line = " ".join(f"{x(i)},{y(score)}" for i, (_, score) in enumerate(points))
        parts.append(f'<polyline fill="none" stroke="#2a64c5" stroke-width="2" points="{line}"/>')
        for i, (day, score) in enumerate(points):
            parts.append(
                f'<circle cx="{x(i)}" cy="{y(score)}" r="3" fill="#2a64c5">'
                f"<title>{escape(day)}: {score:.1f}</title></circle>"
            )
        parts.append(
            f'<text x="{pad}" y="{h - 6}" font-size="10">{escape(points[0][0])}</text>'
            f'<text x="{w - pad}" y="{h - 6}" font-size="10" text-anchor="end">'
            f"{escape(points[-1][0])}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def facets(
    counts: dict[tuple[str, str], int], type_: str | None, status: str | None
) -> dict[str, list[tuple[str, int]]]:
    """Counts for the filter links: per type under the chosen status, per status under
    the chosen type (each facet counts as if only the other one were set), most first."""
    by_type: dict[str, int] = {}
    by_status: dict[str, int] = {}
    for (t, s), n in counts.items():
        if status is None or s == status:
            by_type[t] = by_type.get(t, 0) + n
        if type_ is None or t == type_:
            by_status[s] = by_status.get(s, 0) + n
    return {
        "type": sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0])),
        "status": sorted(by_status.items(), key=lambda kv: (-kv[1], kv[0])),
    }


def _blank(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


def mount_ui(app: FastAPI, mem: Episodic) -> None:
    def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = _env.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status)

    def caller_of(request: Request) -> Principal | None:
        try:
            return mem.signed_in_caller(request.cookies.get(COOKIE))
        except Unauthenticated:
            return None

    def to_login(message: str | None = None) -> Response:
        return render("login.html", status=401, caller=None, error=message)

    @app.get("/ui", include_in_schema=False)
    def ui_root(request: Request) -> Response:
        if caller_of(request) is None:
            return to_login()
        return RedirectResponse("/ui/memories", status_code=303)

    @app.post("/ui/login", include_in_schema=False)
    def ui_login(request: Request, key: Annotated[str, Form(max_length=400)] = "") -> Response:
        try:
            session = mem.sign_in(key.strip(), SESSION_LASTS)
        except Unauthenticated as exc:
            return to_login(str(exc))
        response = RedirectResponse("/ui/memories", status_code=303)
        response.set_cookie(
            COOKIE,
            session,
            max_age=int(SESSION_LASTS.total_seconds()),
            httponly=True,
            samesite="strict",
            path=COOKIE_PATH,
            # Over HTTPS the browser must never send it in clear; plain HTTP on loopback
            # (serve's default) could not sign in with a Secure cookie.
            secure=request.url.scheme == "https",
        )
        return response

    @app.post("/ui/logout", include_in_schema=False)
    def ui_logout(request: Request) -> Response:
        mem.sign_out(request.cookies.get(COOKIE))
        response = RedirectResponse("/ui", status_code=303)
        response.delete_cookie(COOKIE, path=COOKIE_PATH)
        return response

    @app.get("/ui/memories", include_in_schema=False)
    def ui_memories(
        request: Request,
        agent: Annotated[str | None, Query(max_length=256)] = None,
        crew: Annotated[str | None, Query(max_length=256)] = None,
        resource: Annotated[str | None, Query(max_length=256)] = None,
        type: Annotated[str | None, Query(max_length=256)] = None,
        status: Annotated[str | None, Query(max_length=20)] = None,
        q: Annotated[str | None, Query(max_length=4000)] = None,
        cursor: Annotated[str | None, Query(max_length=1000)] = None,
        flash: Annotated[str | None, Query(max_length=300)] = None,
    ) -> Response:
        caller = caller_of(request)
        if caller is None:
            return to_login()
        f = {
            "agent": _blank(agent),
            "crew": _blank(crew),
            "resource": _blank(resource),
            "type": _blank(type),
            "status": _blank(status) or "",
            "q": _blank(q),
        }
        context: dict[str, Any] = {"caller": caller, "page": "memories", "f": f, "flash": flash}
        try:
            flt = caller.reading(
                agent=f["agent"],
                crew=f["crew"],
                resource=f["resource"],
                types=(f["type"],) if f["type"] else None,
            )
            page = mem.list_memories(
                flt, status=f["status"] or None, limit=PAGE_SIZE, cursor=cursor, q=f["q"]
            )
            counts = mem.count_memories(replace(flt, types=None), q=f["q"])
        except EpisodicError as exc:
            return render(
                "memories.html", status=400, items=[], facets=None, error=str(exc), **context
            )
        query = {k: v for k, v in f.items() if v}

        def facet_url(name: str, value: str | None) -> str:
            """This listing with one filter set to ``value`` (None: cleared)."""
            return "/ui/memories?" + urlencode(
                {**query, name: value} if value else {k: v for k, v in query.items() if k != name}
            )

        next_url = None
        if page.next_cursor:
            next_url = "/ui/memories?" + urlencode({**query, "cursor": page.next_cursor})
        return render(
            "memories.html",
            items=page.items,
            next_cursor=page.next_cursor,
            next_url=next_url,
            facets=facets(counts, f["type"], f["status"] or None),
            facet_url=facet_url,
            **context,
        )

    @app.get("/ui/memories/{memory_id}", include_in_schema=False)
    def ui_memory(request: Request, memory_id: str) -> Response:
        caller = caller_of(request)
        if caller is None:
            return to_login()
        try:
            detail = memory_detail(mem, caller.reading(), memory_id)
        except NotFound:
            message = f"no memory {memory_id} here"
            return RedirectResponse("/ui/memories?" + urlencode({"flash": message}), 303)
        return render("memory.html", caller=caller, page="memories", d=detail, m=detail.memory)

    @app.get("/ui/conversations/{conversation_id}", include_in_schema=False)
    def ui_conversation(request: Request, conversation_id: str) -> Response:
        caller = caller_of(request)
        if caller is None:
            return to_login()
        flt = replace(caller.reading(), conversation_id=conversation_id)
        episodes, complete = conversation_episodes(mem, flt)
        return render(
            "conversation.html",
            caller=caller,
            page="memories",
            conversation=conversation_id,
            episodes=episodes,
            complete=complete,
        )

    @app.post("/ui/memories/{memory_id}/retire", include_in_schema=False)
    def ui_retire(request: Request, memory_id: str) -> Response:
        caller = caller_of(request)
        if caller is None:
            return to_login()
        try:
            mem.retire_as(caller, memory_id)
            message = f"retired {memory_id}"
        except NotFound:
            message = f"no memory {memory_id} here"
        except EpisodicError as exc:
            message = str(exc)
        return RedirectResponse("/ui/memories?" + urlencode({"flash": message}), 303)

    @app.post("/ui/memories/{memory_id}/restore", include_in_schema=False)
    def ui_restore(request: Request, memory_id: str) -> Response:
        caller = caller_of(request)
        if caller is None:
            return to_login()
        try:
            mem.restore_as(caller, memory_id)
            message = f"restored {memory_id}: active again"
        except NotFound:
            message = f"no memory {memory_id} here"
        except EpisodicError as exc:
            message = str(exc)
        return RedirectResponse("/ui/memories?" + urlencode({"flash": message}), 303)

    @app.get("/ui/memories/{memory_id}/forget", include_in_schema=False)
    def ui_forget_confirm(request: Request, memory_id: str) -> Response:
        """The question before forgetting: what goes, and a button that says so. A plain
        page and form, so the step holds without JavaScript."""
        caller = caller_of(request)
        if caller is None:
            return to_login()
        try:
            found = mem.memory(caller.reading(), memory_id)
        except EpisodicError:
            message = f"no memory {memory_id} here"
            return RedirectResponse("/ui/memories?" + urlencode({"flash": message}), 303)
        return render("forget.html", caller=caller, page="memories", m=found)

    @app.post("/ui/memories/{memory_id}/forget", include_in_schema=False)
    def ui_forget(
        request: Request,
        memory_id: str,
        confirm: Annotated[str, Form(max_length=10)] = "",
    ) -> Response:
        if confirm != FORGET_CONFIRMED:  # not asked yet: ask first
            return ui_forget_confirm(request, memory_id)
        caller = caller_of(request)
        if caller is None:
            return to_login()
        try:
            counts = mem.forget_memory_as(caller, memory_id)
            message = (
                f"forgot {memory_id}: {counts.memories} memories, {counts.events} events, "
                f"{counts.vectors} vectors removed"
            )
        except NotFound:
            message = f"no memory {memory_id} here"
        except EpisodicError as exc:
            message = str(exc)
        return RedirectResponse("/ui/memories?" + urlencode({"flash": message}), 303)

    @app.get("/ui/recall", include_in_schema=False)
    def ui_recall(
        request: Request,
        q: Annotated[str, Query(max_length=4000)] = "",
        policy: Annotated[str, Query(max_length=64)] = "default",
        k: Annotated[str, Query(max_length=4)] = "5",
        agent: Annotated[str | None, Query(max_length=256)] = None,
    ) -> Response:
        caller = caller_of(request)
        if caller is None:
            return to_login()
        context: dict[str, Any] = {
            "caller": caller,
            "page": "recall",
            "q": q,
            "policy": policy,
            "k": k,
            "agent": _blank(agent),
            "policies": list(POLICIES),
            "age": relative_age,
        }
        if not q.strip():
            return render("recall.html", result=None, **context)
        try:
            if not k.isdigit() or not 1 <= int(k) <= 50:
                raise InvalidInput("k", "use a number from 1 to 50")
            flt = caller.reading(agent=_blank(agent))
            result = mem.recall(
                q,
                workspace=flt.workspace_id,
                agent=flt.agent_id,
                crew=flt.crew_id,
                scope=flt.scope,
                k=int(k),
                policy=policy,
                explain=True,
                mark=False,
            )
        except EpisodicError as exc:
            return render("recall.html", status=400, result=None, error=str(exc), **context)
        trace = caller.trace_view(result.trace)
        assert trace is not None
        seen = {row.memory_id for ranked in trace.stages.values() for row in ranked}
        seen |= {d.memory_id for d in trace.dropped}
        labels = {m.id: m.content for m in mem.memories(flt, sorted(seen))}
        folded = trace_view(
            {
                stage: [(row.memory_id, row.rank, row.score) for row in ranked]
                for stage, ranked in trace.stages.items()
            },
            [(d.memory_id, d.stage, d.reason, d.detail) for d in trace.dropped],
            [h.id for h in result.hits],
            labels,
        )
        return render("recall.html", result=result, trace=trace, view=folded, **context)

    @app.get("/ui/health", include_in_schema=False)
    def ui_health(request: Request) -> Response:
        caller = caller_of(request)
        if caller is None:
            return to_login()
        health = mem.memory_health(caller.workspace_id, caller.key.crew_id, history=60)
        # Only HealthView.to_json()'s documented keys are used (the upkeep package owns
        # the type).
        view = None if health is None else health.to_json()
        chart = ""
        if view is not None:
            points = [(str(p["snapshot_date"]), float(p["score"])) for p in view["history"]]
            points.reverse()
            points.append((str(view["snapshot_date"]), float(view["score"])))
            chart = trend_svg(points)
        return render(
            "health.html",
            caller=caller,
            page="health",
            view=view,
            chart=chart,
            metrics=HEALTH_METRICS,
            weak_below=WEAK_BELOW,
        )
