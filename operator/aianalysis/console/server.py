"""The console's web side: one aiohttp application on 127.0.0.1, server-rendered pages, no script.

Who may use it: whoever opens the URL printed at start, which carries a random login token (the
machine's other users reach 127.0.0.1 too). The login sets a session cookie (HttpOnly, SameSite=Lax:
a link from a notification opens with it, a POST from another site carries none); each session has
its own CSRF token, which every form carries and every POST must return; a POST must also come from
this origin (``Origin``), and every request must name this server as its ``Host`` (a DNS-rebinding
page cannot). Responses forbid framing, scripts and caching. What the pages show is escaped by the
templates (jinja2 autoescape); the kubeconfig's credentials never reach a page.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import ipaddress
import logging
import re
import secrets
import signal
from collections.abc import Awaitable, Callable
from typing import Any

import jinja2
from aiohttp import web

from aianalysis import errors, kube
from aianalysis.console import views
from aianalysis.executor import approval, submit

COOKIE = "aianalysis_console"
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
"""A DNS-1123 name: what a namespace or an AIAnalysis may be called (anything else is a 404)."""
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make the forms' Origin "null"
    "Cache-Control": "no-store",
}

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclasses.dataclass
class Session:
    csrf: str
    flash: tuple[str, str] | None = None
    """What the last action did, shown once: (kind ``ok``/``refused``, text)."""


@dataclasses.dataclass
class Console:
    api: kube.ApiClient
    namespaces: list[str]
    login_token: str = dataclasses.field(default_factory=lambda: secrets.token_urlsafe(32))
    sessions: dict[str, Session] = dataclasses.field(default_factory=dict)
    origins: set[str] = dataclasses.field(default_factory=set)
    """``http://host:port`` this server is reached by (set once it listens)."""
    templates: jinja2.Environment = dataclasses.field(
        default_factory=lambda: jinja2.Environment(
            loader=jinja2.PackageLoader("aianalysis.console", "templates"),
            autoescape=True,
            undefined=jinja2.ChainableUndefined,  # a field an object does not have shows empty
        )
    )

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024)
        app.add_routes(
            [
                web.get("/login", self.login),
                web.get("/", self.home),
                web.get("/ns/{namespace}", self.index),
                web.get("/ns/{namespace}/aia/{name}", self.detail),
                web.post("/ns/{namespace}/aia/{name}/approve", self.approve),
                web.post("/ns/{namespace}/aia/{name}/reject", self.reject),
            ]
        )
        return app

    # ---- the guard: host, session, origin, CSRF, headers --------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        if f"http://{request.host}" not in self.origins:
            return self._headers(
                web.Response(status=421, text="this console answers only to its own address")
            )
        if request.path != "/login" and self._session(request) is None:
            return self._headers(
                web.Response(status=401, text="not signed in: open the URL `aianalysis console` printed")
            )
        if request.method == "POST":
            refused = await self._forged(request)
            if refused is not None:
                return self._headers(web.Response(status=403, text=refused))
        try:
            return self._headers(await handler(request))
        except web.HTTPException as exc:  # a 404 from a handler: the same headers
            exc.headers.update(HEADERS)
            raise
        except (errors.ClusterError, errors.ClusterRejectedError) as exc:  # RBAC, or the cluster is away
            text = f"the API server did not answer this as you: {exc}"
            return self._headers(
                web.Response(status=502 if isinstance(exc, errors.ClusterError) else 403, text=text)
            )

    async def _forged(self, request: web.Request) -> str | None:
        """Why this POST is not the person's own form submission (None: it is)."""
        if request.headers.get("Origin") not in self.origins:
            return "refused: the request does not come from this console (Origin)"
        session = self._session(request)
        form = await request.post()
        token = form.get("csrf")
        if session is None or not isinstance(token, str) or not hmac.compare_digest(token, session.csrf):
            return "refused: the form's token is not this session's (reload the page)"
        return None

    def _session(self, request: web.Request) -> Session | None:
        return self.sessions.get(request.cookies.get(COOKIE, ""))

    @staticmethod
    def _headers(response: web.StreamResponse) -> web.StreamResponse:
        response.headers.update(HEADERS)
        return response

    # ---- pages ------------------------------------------------------------------------------------

    async def login(self, request: web.Request) -> web.StreamResponse:
        token = request.query.get("token", "")
        if not hmac.compare_digest(token.encode(), self.login_token.encode()):
            return web.Response(
                status=401, text="wrong or missing token: open the URL `aianalysis console` printed"
            )
        sid = secrets.token_urlsafe(32)
        self.sessions[sid] = Session(csrf=secrets.token_urlsafe(32))
        response = _see(f"/ns/{self.namespaces[0]}")
        response.set_cookie(COOKIE, sid, httponly=True, samesite="Lax", path="/")
        return response

    async def home(self, request: web.Request) -> web.StreamResponse:
        return _see(f"/ns/{self.namespaces[0]}")

    async def index(self, request: web.Request) -> web.StreamResponse:
        namespace = _name(request, "namespace")
        found = await views.incidents(self.api, namespace=namespace)
        return self._page("index.html", namespace=namespace, incidents=found, namespaces=self.namespaces)

    async def detail(self, request: web.Request) -> web.StreamResponse:
        namespace, name = _name(request, "namespace"), _name(request, "name")
        found = await views.incident(self.api, namespace=namespace, name=name)
        if found is None:
            raise web.HTTPNotFound(text=f"aianalysis/{name} not found in namespace {namespace}")
        session = self._session(request)
        assert session is not None  # the guard let only a session through
        flash, session.flash = session.flash, None
        return self._page(
            "analysis.html",
            namespace=namespace,
            namespaces=self.namespaces,
            incident=found,
            proposal=found.proposal if isinstance(found.proposal, approval.Proposal) else None,
            csrf=session.csrf,
            flash=flash,
        )

    # ---- actions: the CLI's code, bound to what the page showed -------------------------------------

    async def approve(self, request: web.Request) -> web.StreamResponse:
        namespace, name = _name(request, "namespace"), _name(request, "name")
        form = await request.post()
        override = str(form.get("override_review") or "") or None
        if override is not None and form.get("confirm_override") != "yes":
            return self._done(request, None, "tick the box to run it although it needs review")
        try:
            result = await submit.approve(
                self.api,
                namespace=namespace,
                name=name,
                bound=_binding(form),
                override_review=override,
                again=False,
            )
        except errors.ClusterRejectedError as exc:  # RBAC: e.g. may not list what approving checks
            return self._done(request, None, str(exc))
        return self._done(request, result.created, result.message)

    async def reject(self, request: web.Request) -> web.StreamResponse:
        namespace, name = _name(request, "namespace"), _name(request, "name")
        form = await request.post()
        reason = str(form.get("reason") or "")
        try:
            result = await submit.reject(
                self.api, namespace=namespace, name=name, bound=_binding(form), reason=reason
            )
        except errors.ClusterRejectedError as exc:
            return self._done(request, None, str(exc))
        return self._done(request, result.created, result.message)

    def _done(self, request: web.Request, created: str | None, message: str) -> web.StreamResponse:
        session = self._session(request)
        assert session is not None
        session.flash = ("ok", message) if created else ("refused", f"refused: {message}")
        return _see(request.path.rsplit("/", 1)[0])

    def _page(self, template: str, **values: Any) -> web.Response:
        text = self.templates.get_template(template).render(**values)
        return web.Response(text=text, content_type="text/html", charset="utf-8")


def _see(location: str) -> web.Response:
    """303: after a form, the page is loaded again with GET (a reload does not post twice)."""
    return web.Response(status=303, headers={"Location": location})


def _name(request: web.Request, key: str) -> str:
    value = request.match_info[key]
    if not NAME.match(value):
        raise web.HTTPNotFound(text=f"not a name: {key}")
    return value


def _binding(form: Any) -> approval.Binding:
    return approval.Binding(uid=str(form.get("uid") or ""), digest=str(form.get("digest") or ""))


async def listen(console: Console, *, address: str, port: int, ready: Callable[[str], None]) -> None:
    """Serve until SIGINT or SIGTERM; ``ready`` gets the login URL once it listens."""
    runner = web.AppRunner(console.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, address, port)
    await site.start()
    try:
        bound_port = runner.addresses[0][1]
        hosts = {address, "localhost"} if _loopback(address) else {address}
        console.origins = {f"http://{h}:{bound_port}" for h in hosts}
        ready(f"http://{address}:{bound_port}/login?token={console.login_token}")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


def run_console(api: kube.ApiClient, *, namespaces: list[str], address: str, port: int) -> None:
    """``aianalysis console``: serve until interrupted, printing the URL to open."""

    def ready(url: str) -> None:
        where = (
            ""
            if _loopback(address)
            else " (not loopback: anyone who can reach it and has the URL acts as you)"
        )
        print(f"aianalysis console{where}: open {url}", flush=True)

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(listen(Console(api=api, namespaces=namespaces), address=address, port=port, ready=ready))
