"""The ``aeval view`` web application (Starlette): its routes and its guard.

Every page is built on the server from the store; a run's rows are filtered, searched and cut
into pages there. Every response carries a Content-Security-Policy (a page's inline style and
script admitted by their hashes, no other source, no framing), ``nosniff`` and no referrer.
The guard answers only requests whose ``Host`` names the server by an address it is bound to,
or as ``localhost`` when it listens on loopback: a page of another site reaching it through DNS
rebinding names its own host, never an IP literal. Bound to every interface (``0.0.0.0``,
``::``), any IP literal of one of the machine's own addresses is the server's. A label is
written only when its request carries the process's token (in the pages the server serves),
comes from the origin the page was served from (``http://`` and the request's accepted
``Host``) and holds JSON.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ._extra import view_extra_missing

try:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - the extra is installed in development
    raise view_extra_missing("Starlette and uvicorn, which are not installed") from exc

import anyio
import orjson

from .._compare import Comparison, LoadedSide, compare_loaded, load_side
from .._exceptions import AevalError, ComparisonError, RunNotFoundError, StoreError
from .._store import RunStore
from ..formatters._history import History
from ..formatters._html_rows import ROW_FILTERS
from ..formatters._registry import render
from ._data import FILTER_KEYS, PAGE_ROWS, LoadedRun, RunCache, select
from ._grid import GRID_FILTERS, GRID_RUNS, Grid, grid_of, grid_page_body
from ._pages import (
    RunView,
    error_page,
    framed_page,
    grid_page,
    linked_runs,
    page_policy,
    run_href,
    run_page,
    runs_page,
)
from ._review import LabelRequest, label_summary, labels_by_row, labels_csv, labels_jsonl

__all__ = ["ViewSettings", "create_app"]

_BODY_LIMIT = 64 * 1024
_GRIDS_KEPT = 4
_SORTS = ("", "score", "-score")
_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_ASGI = Callable[[_Scope, _Receive, _Send], Awaitable[None]]
_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_DEFAULT_POLICY = b"default-src 'none'; frame-ancestors 'none'; base-uri 'none'"


@dataclass(frozen=True, slots=True)
class ViewSettings:
    """What an ``aeval view`` server serves and to whom.

    Attributes:
        store: The run store's path.
        host: The address the server is bound to.
        port: The port it listens on.
        token: The process's token: a label's request must carry it.
        pick: The review queue's rows (``all``, ``failures``, ``disagreements``,
            ``uncertain``).
        sample: How many picked rows the queue shows (a reproducible random sample).
        seed: The sample's seed.
    """

    store: Path
    host: str
    port: int
    token: str
    pick: str = "all"
    sample: int | None = None
    seed: int = 0

    @property
    def authority(self) -> str:
        """``127.0.0.1:8765``: the ``Host`` every request must name."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:8765``: the ``Origin`` of the pages the server serves."""
        return f"http://{self.authority}"

    @property
    def addressed_to(self) -> str:
        """What a refused request is told the server answers to."""
        bound = ipaddress.ip_address(self.host)
        if bound.is_unspecified:
            return f"an IP address of this machine or localhost, port {self.port},"
        if bound.is_loopback:
            return f"{self.authority} or localhost:{self.port}"
        return self.authority

    def accepts(self, host: str) -> bool:
        """Whether a request's ``Host`` names this server: its port, and the bound address,
        ``localhost`` when it listens on loopback, or, bound to every interface, an IP
        literal of one of this machine's addresses. Any other name is refused: it may be a
        site's own name rebound to this machine."""
        name, colon, port = host.rpartition(":")
        if not colon or port != str(self.port):
            return False
        if name.startswith("[") and name.endswith("]"):
            name = name[1:-1]
        elif ":" in name:
            return False
        bound = ipaddress.ip_address(self.host)
        if name.lower() == "localhost":
            return bound.is_loopback or bound.is_unspecified
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False
        if address == bound:
            return True
        return bound.is_unspecified and _is_own_address(address)


_OWN_ADDRESSES: dict[ipaddress.IPv4Address | ipaddress.IPv6Address, bool] = {}
_OWN_ADDRESSES_KEPT = 256


def _is_own_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``address`` is one of this machine's: a socket can be bound to it (an address
    of no interface cannot). The answers are kept, for a bounded number of addresses."""
    known = _OWN_ADDRESSES.get(address)
    if known is not None:
        return known
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((str(address), 0))
    except OSError:
        own = False
    else:
        own = True
    if len(_OWN_ADDRESSES) < _OWN_ADDRESSES_KEPT:
        _OWN_ADDRESSES[address] = own
    return own


class _Guard:
    """Refuses requests to another host; adds the safety headers to every response."""

    def __init__(self, app: _ASGI, settings: ViewSettings) -> None:
        self._app = app
        self._settings = settings

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1")
        if not self._settings.accepts(host):
            response = Response(
                f"aeval view answers requests addressed to {self._settings.addressed_to} "
                f"only (this one names Host: {host[:100]!r})\n",
                status_code=403,
                media_type="text/plain",
            )
            await response(scope, receive, self._secured(send))
            return
        await self._app(scope, receive, self._secured(send))

    @staticmethod
    def _secured(send: _Send) -> _Send:
        async def secured(message: _Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers += [(n, v) for n, v in _HEADERS if n not in names]
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", _DEFAULT_POLICY))
                message["headers"] = headers
            await send(message)

        return secured


def _html(page: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(
        page, status_code=status, headers={"Content-Security-Policy": page_policy(page)}
    )


def _error(status: int, message: str) -> HTMLResponse:
    return _html(error_page(status, message), status)


def _refused(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _page_number(text: str | None) -> int:
    """The 0-based page of ``?page=`` (1-based; a page past the last shows the last one).

    Raises:
        ValueError: Not a whole number from 1 (the message names the parameter).
    """
    if text is None or text == "":
        return 0
    if len(text) > 9 or not text.isdigit() or int(text) < 1:
        raise ValueError(f"?page= is a page number from 1, got {text[:20]!r}")
    return int(text) - 1


def _filter_key(text: str | None) -> str:
    """The filter ``?filter=`` names (``all`` when absent).

    Raises:
        ValueError: An unknown filter (the message lists the known ones).
    """
    if text is None or text == "":
        return "all"
    if text not in FILTER_KEYS:
        known = ", ".join(key for key, _ in ROW_FILTERS)
        raise ValueError(f"?filter= is one of {known}; got {text[:40]!r}")
    return text


def _number(text: str | None, name: str, default: int | None) -> int | None:
    if text is None or text == "":
        return default
    if len(text) > 12 or not text.lstrip("-").isdigit():
        raise ValueError(f"?{name}= is a whole number, got {text[:20]!r}")
    return int(text)


def _grid_filter(text: str | None) -> str:
    if text is None or text == "":
        return "all"
    keys = [key for key, _ in GRID_FILTERS]
    if text not in keys:
        raise ValueError(f"?filter= is one of {', '.join(keys)}; got {text[:40]!r}")
    return text


def create_app(settings: ViewSettings) -> Any:
    """The ASGI application of ``aeval view`` over the store in ``settings`` (it opens the
    store when the server starts and closes it when the server stops)."""
    state: dict[str, Any] = {}
    grids: OrderedDict[tuple[str, ...], Grid] = OrderedDict()

    def store() -> RunStore:
        held: RunStore = state["store"]
        return held

    def cache() -> RunCache:
        held: RunCache = state["cache"]
        return held

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with RunStore(settings.store) as opened:
            state["store"] = opened
            state["cache"] = RunCache(opened)
            yield

    async def runs(request: Request) -> Response:
        listed = await store().runs()
        made = await cache().pages.labels_made()
        return _html(runs_page(listed, store=str(settings.store), labels=made))

    async def previous_run(run_id: str, name: str) -> str | None:
        ids = [run.id for run in await store().runs(name)]
        at = ids.index(run_id) if run_id in ids else 0
        return ids[at - 1] if at > 0 else None

    async def review_queue(
        loaded: LoadedRun, query: Mapping[str, str]
    ) -> tuple[frozenset[int], str, dict[str, str]]:
        pick = query.get("pick", settings.pick)
        sample = _number(query.get("sample"), "sample", settings.sample)
        seed = _number(query.get("seed"), "seed", settings.seed)
        picked = await cache().pages.pick(
            loaded.index,
            pick=pick,  # type: ignore[arg-type]  # pick_ids checks it
            sample=sample,
            seed=seed or 0,
            labels=await store().labels(loaded.id),
        )
        only = frozenset(loaded.index.where[row_id] for row_id in picked)
        drawn = "" if sample is None else f", a random sample of {sample} (seed {seed or 0})"
        keep = {k: v for k, v in query.items() if k in ("pick", "sample", "seed")}
        return only, f"{pick}{drawn}: {len(only)} rows", keep

    async def run(request: Request, *, queue: bool = False) -> Response:
        try:
            return await run_rows(request, queue)
        except RunNotFoundError as exc:
            return _error(404, str(exc))
        except StoreError as exc:
            return _error(500, str(exc))

    async def run_rows(request: Request, queue: bool) -> Response:
        try:
            loaded = await cache().get(request.path_params["run_id"])
        except ValueError as exc:
            return _error(404, str(exc))
        query = request.query_params
        try:
            wanted = _filter_key(query.get("filter"))
            number = _page_number(query.get("page"))
        except ValueError as exc:
            return _error(400, str(exc))
        search = query.get("q", "")[:500]
        only: frozenset[int] | None = None
        described: str | None = None
        keep: dict[str, str] = {}
        if queue:
            try:
                only, described, keep = await review_queue(loaded, query)
            except ValueError as exc:
                return _error(400, str(exc))
        strategy = query.get("strategy") or None
        sort = query.get("sort", "")
        if strategy is not None and strategy not in set(loaded.index.strategies) - {None}:
            known = ", ".join(sorted({s for s in loaded.index.strategies if s is not None}))
            return _error(
                400, f"?strategy= names a strategy of this run ({known}); got {strategy[:60]!r}"
            )
        if sort not in _SORTS:
            return _error(400, f"?sort= is score (lowest first) or -score; got {sort[:20]!r}")
        if strategy is not None:
            strategies = loaded.index.strategies
            chosen = frozenset(p for p, s in enumerate(strategies) if s == strategy)
            only = chosen if only is None else only & chosen
            keep["strategy"] = strategy
        if sort:
            keep["sort"] = sort
            if loaded.scores is None:
                loaded.scores = await cache().pages.scores(loaded.index)
        labels = await store().labels(loaded.id)
        if loaded.breakdown is None:
            loaded.breakdown = await cache().pages.breakdown(loaded.index)
        page = await select(
            cache().pages,
            loaded,
            filter=wanted,
            query=search,
            page=number,
            size=PAGE_ROWS,
            only=only,
            scores=loaded.scores if sort else None,
            descending=sort == "-score",
        )
        view = RunView(
            run=loaded,
            page=page,
            filter=wanted,
            query=search,
            token=settings.token,
            labels=labels_by_row(loaded, labels),
            summary=label_summary(loaded, labels),
            breakdown=loaded.breakdown,
            previous=await previous_run(loaded.id, loaded.name),
            queue=described,
            only=only,
            keep=keep,
        )
        return _html(run_page(view))

    async def history(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            points = await store().history(name)
        except (ValueError, RunNotFoundError) as exc:
            return _error(404, str(exc))
        page = render("history", "html", History(name, points))
        return _html(framed_page(linked_runs(page, [point.run_id for point in points])))

    async def compare(request: Request) -> Response:
        sides = []
        ids = []
        for role, key in (("baseline", "old"), ("candidate", "new")):
            ref = request.query_params.get(key)
            if not ref:
                return _error(400, f"the comparison needs ?old=RUN&new=RUN ({key} is missing)")
            try:
                loaded = await cache().get(ref)
                ids.append(loaded.id)
                report = await cache().report(loaded)
                sides.append(await load_side(report, role=role, label=f"run {loaded.id}"))
            except RunNotFoundError as exc:
                return _error(404, f"the {role}: {exc}")
            except ComparisonError as exc:
                return _error(400, str(exc))
        try:
            comparison = compare_loaded(sides[0], sides[1])
        except ComparisonError as exc:
            return _error(400, str(exc))
        page = render("comparison", "html", comparison)
        links = [
            (run_href(ids[0]), f"Baseline {ids[0]}"),
            (run_href(ids[1]), f"Candidate {ids[1]}"),
        ]
        return _html(framed_page(page, links))

    async def grid(request: Request) -> Response:
        refs = request.query_params.getlist("run")
        fewest, most = GRID_RUNS
        if not fewest <= len(refs) <= most:
            return _error(
                400,
                f"the grid shows {fewest} to {most} runs: /grid?run=RUN&run=RUN… (got {len(refs)})",
            )
        try:
            wanted = _grid_filter(request.query_params.get("filter"))
            number = _page_number(request.query_params.get("page"))
        except ValueError as exc:
            return _error(400, str(exc))
        try:
            shown = await grid_for(refs)
        except LookupError as exc:
            return _error(404, str(exc))
        except (StoreError, ValueError) as exc:
            return _error(500, str(exc))
        ids = [run_id for run_id, _, _ in shown.runs]

        def address(key: str, page: int) -> str:
            query = [("run", run_id) for run_id in ids]
            query += [("filter", key)] if key != "all" else []
            query += [("page", str(page + 1))] if page else []
            return "/grid?" + urlencode(query)

        body = grid_page_body(shown, filter=wanted, page=number, size=PAGE_ROWS, address=address)
        return _html(grid_page(body))

    async def grid_for(refs: list[str]) -> Grid:
        """The grid of the runs ``refs`` (kept for the last few sets of runs that ended)."""
        loaded_runs = []
        for at, ref in enumerate(refs):
            try:
                loaded_runs.append(await cache().get(ref))
            except RunNotFoundError as exc:
                raise LookupError(f"run {at + 1} of the grid: {exc}") from exc
        key = tuple(loaded.id for loaded in loaded_runs)
        held = grids.get(key)
        if held is not None:
            grids.move_to_end(key)
            return held
        runs = []
        sides: list[LoadedSide | str] = []
        for at, loaded in enumerate(loaded_runs):
            report = await cache().report(loaded)
            runs.append((loaded.id, loaded.name, report))
            role = "baseline" if at == 0 else "candidate"
            try:
                sides.append(await load_side(report, role=role, label=f"run {loaded.id}"))
            except ComparisonError as exc:
                sides.append(str(exc))
        comparisons: list[Comparison | str] = []
        for side in sides[1:]:
            first = sides[0]
            if isinstance(first, str) or isinstance(side, str):
                comparisons.append(first if isinstance(first, str) else str(side))
                continue
            try:
                comparisons.append(await anyio.to_thread.run_sync(compare_loaded, first, side))
            except ComparisonError as exc:
                comparisons.append(str(exc))
        made = grid_of(runs, comparisons)
        if all(loaded.index.finished for loaded in loaded_runs):
            grids[key] = made
            while len(grids) > _GRIDS_KEPT:
                grids.popitem(last=False)
        return made

    async def label(request: Request) -> Response:
        given = request.headers.get("x-aeval-token", "")
        if not hmac.compare_digest(given.encode(), settings.token.encode()):
            return _refused(403, "missing or wrong token: label from a page aeval view served")
        origin = f"http://{request.headers.get('host', '')}"
        if request.headers.get("origin") != origin:
            return _refused(403, f"labels are taken from pages of {origin} only")
        if request.headers.get("sec-fetch-site", "same-origin") != "same-origin":
            return _refused(403, "labels are taken from the viewer's own pages only")
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _refused(415, "a label is posted as application/json")
        body = await _body_within(request, _BODY_LIMIT)
        if body is None:
            return _refused(413, f"a label's request is at most {_BODY_LIMIT} bytes")
        try:
            wanted = LabelRequest.parse(orjson.loads(body))
            stored = await store().add_label(
                wanted.run,
                sample=wanted.sample,
                strategy=wanted.strategy,
                repeat=wanted.repeat,
                reviewer=wanted.reviewer,
                verdict="pass" if wanted.verdict == "pass" else "fail",
                note=wanted.note,
            )
        except orjson.JSONDecodeError as exc:
            return _refused(400, f"the body is not JSON: {exc}")
        except RunNotFoundError as exc:
            return _refused(404, str(exc))
        except (ValueError, AevalError) as exc:
            return _refused(400, str(exc))
        try:
            loaded = await cache().get(stored.run_id)
        except (RunNotFoundError, ValueError, StoreError):
            summary = None
        else:
            summary = label_summary(loaded, await store().labels(loaded.id))
        return JSONResponse(
            {
                "labelled": None if summary is None else summary.counter,
                "agreement": None if summary is None else summary.agreement,
                "label": {
                    "sample": stored.sample,
                    "strategy": stored.strategy,
                    "reviewer": stored.reviewer,
                    "verdict": stored.verdict,
                    "note": stored.note,
                },
            }
        )

    async def export(request: Request) -> Response:
        kind = request.path_params["kind"]
        if kind not in ("jsonl", "csv"):
            return _error(404, f"labels export as labels.jsonl or labels.csv, not labels.{kind}")
        try:
            loaded = await cache().get(request.path_params["run_id"])
            labels = await store().labels(loaded.id)
        except RunNotFoundError as exc:
            return _error(404, str(exc))
        except (StoreError, ValueError) as exc:
            return _error(500, str(exc))
        disposition = {"Content-Disposition": f'attachment; filename="labels-{loaded.id}.{kind}"'}
        if kind == "jsonl":
            return Response(
                labels_jsonl(loaded, labels), media_type="application/jsonl", headers=disposition
            )
        return Response(
            labels_csv(loaded, labels), media_type="text/csv; charset=utf-8", headers=disposition
        )

    async def review(request: Request) -> Response:
        return await run(request, queue=True)

    app = Starlette(
        routes=[
            Route("/", runs),
            Route("/runs/{run_id}", run),
            Route("/runs/{run_id}/review", review),
            Route("/runs/{run_id}/labels.{kind}", export),
            Route("/history/{name:path}", history),
            Route("/compare", compare),
            Route("/grid", grid),
            Route("/api/labels", label, methods=["POST"]),
        ],
        lifespan=lifespan,
    )
    return _Guard(app, settings)


async def _body_within(request: Request, limit: int) -> bytes | None:
    """The request's body, or ``None`` once it is known to pass ``limit`` bytes: by its
    ``Content-Length`` before anything is read, else as soon as the chunks read pass it (so
    a large body is never held whole)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)
