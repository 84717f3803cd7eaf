"""Record the HTTP traffic of each case-run in a vcrpy cassette, and replay it on later runs.

vcrpy's ``use_cassette`` patches the HTTP libraries for one cassette at a time, and its contexts nest
like a stack, so case-runs running at once on one event loop (or in threads) cannot each have their
own. Here the libraries are patched once, by vcrpy, with a router in place of the cassette: every
request goes to the vcrpy ``Cassette`` of the case-run active in the current context (a
:class:`~contextvars.ContextVar`, which asyncio tasks, ``contextvars.copy_context().run`` and
``asyncio.to_thread`` threads inherit). A request made where no case-run is active goes to the
network, unrecorded.

Cassettes are vcrpy's YAML files, one per case-run: ``<path>/<eval_set_id>/<eval_case_id>/run-<n>.yaml``.
Requests match on method, URL (scheme, host, port, path, query) and body (JSON compared as JSON);
credentials (authorization, cookie and API-key headers, query parameters and JSON body entries named
like credentials, the ``user:password@`` of URLs, ``Set-Cookie``) never enter a cassette, so a
replay needs no key.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agenteval._files import ensure_inside, write_atomic
from agenteval._secrets import is_credential_name, strip_userinfo, without_secrets
from agenteval._validate import check_file_names, check_file_path
from agenteval.errors import CassetteMissError, ConfigError, MissingDependencyError

__all__ = ["CassetteMode", "Cassettes"]

CassetteMode = Literal["record", "replay", "auto"]
"""``record``: always use the network and record the case-run anew; ``replay``: never use the network;
``auto``: replay what is recorded, record what is not."""

_MODES: tuple[str, ...] = get_args(CassetteMode)

_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})
"""Request headers never recorded, besides those :func:`is_credential_name` names."""


class Cassettes:
    """Per-(eval set, case, run) cassettes of HTTP traffic, recorded and replayed with vcrpy.

    Wrap an evaluation in :meth:`active` and each case-run's inference and scoring in :meth:`case`:
    the HTTP requests made in that context (and in the tasks and ``copy_context()`` threads it
    starts) through any library vcrpy patches (httpx, requests and urllib3, aiohttp,
    ``http.client``, whichever are installed; the OpenAI SDK uses httpx) go to the case-run's
    cassette. A replayed request returns the recorded response without touching the network.
    Requests are matched on method, URL and body; each recorded response is replayed once, in
    order, so a request sent three times gets its three recorded responses.

    Args:
        path: Directory of the cassettes, created when first written.
        mode: ``"record"`` always sends requests and rewrites each case-run's cassette from
            scratch; ``"replay"`` answers only from cassettes and raises
            :class:`~agenteval.errors.CassetteMissError` for a request a cassette lacks;
            ``"auto"`` replays what a cassette holds and records (and adds) the rest.

    Raises:
        ConfigError: ``mode`` is not one of the modes, or ``path`` is a file.
        MissingDependencyError: vcrpy is not installed (``pip install 'agenteval[cassette]'``).
    """

    def __init__(self, path: str | os.PathLike[str], mode: CassetteMode = "auto") -> None:
        if mode not in _MODES:
            raise ConfigError(f"cassette mode {mode!r} is not one of {', '.join(map(repr, _MODES))}")
        try:
            import vcr  # noqa: F401
        except ImportError as exc:
            raise MissingDependencyError("recording HTTP traffic in cassettes", "cassette", "vcrpy") from exc
        self._path = Path(path)
        if self._path.exists() and not self._path.is_dir():
            raise ConfigError(f"cassette path {self._path} is a file; give a directory (it is created if missing)")
        self._mode: CassetteMode = mode
        self._lock = threading.Lock()
        self._spans = 0
        self._runs: dict[tuple[str, str, int], _CaseRun] = {}

    @property
    def path(self) -> Path:
        """The directory of the cassettes."""
        return self._path

    @property
    def mode(self) -> CassetteMode:
        """``"record"``, ``"replay"`` or ``"auto"``."""
        return self._mode

    def file_for(self, eval_set_id: str, eval_case_id: str, run_id: int) -> Path:
        """The cassette file of a case-run: ``<path>/<eval_set_id>/<eval_case_id>/run-<run_id>.yaml``.

        Raises:
            ConfigError: An id cannot be a file name (empty, ``.`` or ``..``, holds a slash, a
                backslash or NUL, or is too long); the message names it.
        """
        check_file_names(eval_set_id=eval_set_id, eval_case_id=eval_case_id)
        file = self._path / eval_set_id / eval_case_id / f"run-{run_id}.yaml"
        check_file_path(self._path, file, eval_set_id=eval_set_id, eval_case_id=eval_case_id)
        return ensure_inside(self._path, file)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Patch httpx/requests/aiohttp (those installed) for the duration of one evaluation.

        Spans may nest and overlap, of this and of other :class:`Cassettes`: the libraries stay
        patched while any is open. Each case-run starts afresh in each outermost span of this
        object (in ``"record"`` mode, from an empty cassette).
        """
        _PATCHES.acquire()
        with self._lock:
            self._spans += 1
        try:
            yield
        finally:
            with self._lock:
                self._spans -= 1
                if not self._spans:
                    self._runs.clear()
            _PATCHES.release()

    @contextlib.contextmanager
    def case(self, eval_set_id: str, eval_case_id: str, run_id: int) -> Iterator[None]:
        """Route the HTTP traffic of the current context to this case-run's cassette.

        May be entered several times for one case-run (once for its inference, once for its
        scoring, maybe in different tasks, possibly overlapping): all entries share one cassette,
        so a response is replayed once per span. Recorded interactions are written to the file
        when a context exits (atomically: temp file + os.replace; a killed process never leaves a
        half-written cassette).

        Raises:
            ConfigError: Not inside :meth:`active`, an id cannot be a file name, or the cassette
                file cannot be read.
            StorageError: The cassette could not be written.
        """
        run = self._run(eval_set_id, eval_case_id, run_id)
        token = _CURRENT.set(run)
        try:
            yield
        finally:
            _CURRENT.reset(token)
            run.save()

    def _run(self, eval_set_id: str, eval_case_id: str, run_id: int) -> _CaseRun:
        file = self.file_for(eval_set_id, eval_case_id, run_id)
        key = (eval_set_id, eval_case_id, run_id)
        with self._lock:
            if not self._spans:
                raise ConfigError(
                    "Cassettes.case() was entered outside Cassettes.active(): the HTTP libraries are not patched,"
                    " so nothing would be recorded or replayed; enter active() around the evaluation"
                )
            run = self._runs.get(key)
            if run is None:
                run = self._runs[key] = _CaseRun(eval_set_id, eval_case_id, run_id, file, self._mode)
            return run

    def __repr__(self) -> str:
        return f"Cassettes({str(self._path)!r}, mode={self._mode!r})"


@dataclass(eq=False)
class _CaseRun:
    """One case-run's vcrpy cassette within one span of :meth:`Cassettes.active`."""

    eval_set_id: str
    eval_case_id: str
    run_id: int
    file: Path
    mode: CassetteMode
    cassette: Any = field(init=False)
    """The vcrpy ``Cassette``."""
    lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    """Guards ``cassette``: entries of one case-run may run in several threads."""

    def __post_init__(self) -> None:
        from vcr.cassette import Cassette
        from vcr.matchers import host, method, path, port, query, scheme
        from vcr.record_mode import RecordMode

        options: dict[str, Any] = {
            "path": str(self.file),
            "persister": _Persister,
            # In replay mode the router never lets vcrpy record; its miss raises CassetteMissError.
            "record_mode": RecordMode.ALL if self.mode == "record" else RecordMode.NEW_EPISODES,
            "match_on": (method, scheme, host, port, path, query, _body),
            "before_record_request": _scrubbed_request,
            "before_record_response": _scrubbed_response,
        }
        self.cassette = Cassette(**options) if self.mode == "record" else Cassette.load(**options)

    def can_play(self, request: Any) -> bool:
        if self.mode == "replay":
            return True  # play_response answers or raises CassetteMissError
        with self.lock:
            return bool(self.cassette.can_play_response_for(request))

    def play(self, request: Any) -> Any:
        from vcr.errors import UnhandledHTTPRequestError

        with self.lock:
            try:
                return self.cassette.play_response(request)
            except UnhandledHTTPRequestError:
                raise CassetteMissError(self._miss(request)) from None

    def record(self, request: Any, response: Any) -> None:
        with self.lock:
            recorded = len(self.cassette.data)
            self.cassette.append(request, response)
            if len(self.cassette.data) > recorded:
                # Spent by this request: vcrpy would replay it to the next identical one (a judge's
                # second sample) when the cassette was loaded from a file.
                self.cassette.play_counts[recorded] += 1

    def save(self) -> None:
        """Write the cassette if anything was recorded (in ``"record"`` mode, always)."""
        if self.mode == "replay":
            return
        from vcr.serialize import serialize
        from vcr.serializers import yamlserializer

        with self.lock:
            if self.mode == "record" or self.cassette.dirty:
                interactions = {"requests": self.cassette.requests, "responses": self.cassette.responses}
                write_atomic(self.file, serialize(interactions, yamlserializer))
                self.cassette.dirty = False

    def _miss(self, request: Any) -> str:
        shown = self.cassette.filter_request(request)
        where = (
            f"no recorded response for {shown.method} {shown.uri} in eval case {self.eval_case_id!r} run"
            f" {self.run_id} of eval set {self.eval_set_id!r}"
        )
        fix = (
            'cassette mode "replay" never uses the network: record it with cassette mode "auto" (records'
            ' what is missing) or "record" (records the case-run anew)'
        )
        return f"{where}: {self._why(request)}; {fix}"

    def _why(self, request: Any) -> str:
        if not self.file.exists():
            return f"the cassette file {self.file} does not exist"
        similar = self.cassette.find_requests_with_most_matches(request)
        if similar and not similar[0][2]:
            count = len(self.cassette.responses_of(request))
            return (
                f"the cassette file {self.file} holds {count} response(s) for this request, all used already: the"
                " case-run now sends it more often than when it was recorded"
            )
        if similar:
            recorded, _, failed = similar[0]
            differs = ", ".join(name for name, _ in failed)
            return (
                f"the cassette file {self.file} has no such request; the closest one recorded,"
                f" {recorded.method} {recorded.uri}, differs in {differs}"
            )
        return f"the cassette file {self.file} holds no request like it"


_CURRENT: ContextVar[_CaseRun | None] = ContextVar("agenteval_cassette_case_run", default=None)


class _Router:
    """What vcrpy's stubs take for their cassette: it hands each call to the current case-run's.

    The stubs call ``can_play_response_for``, ``play_response``, ``write_protected``,
    ``filter_request``, ``append`` and (following aiohttp redirects) ``find_requests_with_most_matches``;
    the patcher builder reads ``_path``, ``custom_patches`` and ``skip_patchers``. With no case-run
    in the context, nothing plays and nothing is recorded: the request goes to the network.
    """

    _path = "agenteval-cassettes"
    custom_patches = ()
    skip_patchers = ()
    write_protected = False
    """A replay miss raises :class:`CassetteMissError` from ``play_response``, never vcrpy's own error."""

    def can_play_response_for(self, request: Any) -> bool:
        run = _CURRENT.get()
        return run is not None and run.can_play(request)

    def play_response(self, request: Any) -> Any:
        run = _CURRENT.get()
        if run is None:
            raise RuntimeError("vcrpy asked to play a response with no case-run in the context")
        return run.play(request)

    def filter_request(self, request: Any) -> Any:
        run = _CURRENT.get()
        return None if run is None else _scrubbed_request(request)

    def append(self, request: Any, response: Any) -> None:
        run = _CURRENT.get()
        if run is not None:
            run.record(request, response)

    def find_requests_with_most_matches(self, request: Any) -> list[Any]:
        run = _CURRENT.get()
        if run is None:
            return []
        with run.lock:
            return list(run.cassette.find_requests_with_most_matches(request))


class _SharedPatches:
    """vcrpy's patches of the HTTP libraries, in place while any :meth:`Cassettes.active` span is open."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._stack: contextlib.ExitStack | None = None

    def acquire(self) -> None:
        with self._lock:
            if not self._users:
                self._stack = _patched()
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if not self._users and self._stack is not None:
                stack, self._stack = self._stack, None
                stack.close()


def _patched() -> contextlib.ExitStack:
    import vcr.patch
    from vcr.patch import CassettePatcherBuilder

    stack = contextlib.ExitStack()
    try:
        for patcher in CassettePatcherBuilder(_Router()).build():
            stack.enter_context(patcher)
        # vcrpy's force_reset puts the real connection classes back, process-wide, while a stub
        # opens a real connection: a request in another thread meanwhile would bypass its cassette
        # (and replay would use the network). The stubs hold the real classes already.
        stack.enter_context(_replaced(vcr.patch, "force_reset", contextlib.nullcontext))
    except BaseException:
        stack.close()
        raise
    return stack


@contextlib.contextmanager
def _replaced(target: object, name: str, value: object) -> Iterator[None]:
    original = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, original)


_PATCHES = _SharedPatches()


class _Persister:
    """vcrpy's file persister, with a cassette that cannot be read reported as such, not taken as empty."""

    @staticmethod
    def load_cassette(cassette_path: str, serializer: Any) -> Any:
        from vcr.persisters.filesystem import CassetteNotFoundError, FilesystemPersister

        try:
            return FilesystemPersister.load_cassette(cassette_path, serializer)
        except CassetteNotFoundError:
            raise
        except Exception as exc:
            raise ConfigError(
                f"cassette file {cassette_path} cannot be read ({type(exc).__name__}: {' '.join(str(exc).split())});"
                ' delete it or record it anew with cassette mode "record"'
            ) from exc


def _scrubbed_request(request: Any) -> Any:
    """A copy of a vcrpy request without credentials: what is matched and recorded."""
    request = copy.deepcopy(request)
    for name in [name for name in request.headers if _is_secret(name)]:
        del request.headers[name]
    parts = urlsplit(strip_userinfo(request.uri))
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(name, value) for name, value in pairs if not is_credential_name(name)]
    if len(kept) < len(pairs):
        parts = parts._replace(query=urlencode(kept))
    request.uri = urlunsplit(parts)
    request.body = _scrubbed_body(request.body)
    return request


def _scrubbed_body(body: Any) -> Any:
    """A JSON body without the entries named like credentials (a search tool's ``api_key``), else as it is."""
    parsed = _json(body)
    if parsed is _NOT_JSON:
        return body
    kept = without_secrets(parsed)
    if kept == parsed:
        return body
    return kept if isinstance(body, dict | list) else json.dumps(kept).encode()


def _is_secret(header: str) -> bool:
    return header.lower() in _SECRET_HEADERS or is_credential_name(header)


def _scrubbed_response(response: dict[str, Any]) -> dict[str, Any]:
    """A recorded response (vcrpy passes a copy) without ``Set-Cookie``."""
    response["headers"] = {
        name: value for name, value in response.get("headers", {}).items() if name.lower() != "set-cookie"
    }
    return response


_NOT_JSON = object()


def _body(r1: Any, r2: Any) -> None:
    """Vcrpy's body matcher, except that bodies which both parse as JSON are compared as JSON.

    Named ``body`` as vcrpy's is: the name shows in a miss's message.
    """
    from vcr.matchers import body
    from vcr.util import read_body

    first, second = _json(read_body(r1)), _json(read_body(r2))
    if first is _NOT_JSON or second is _NOT_JSON:
        body(r1, r2)
    elif first != second:
        raise AssertionError("the JSON bodies differ")


_body.__name__ = "body"


def _json(content: object) -> object:
    if isinstance(content, dict | list):
        return content  # aiohttp's json= argument, recorded as it was given
    if not isinstance(content, bytes | str) or not content:
        return _NOT_JSON
    try:
        return json.loads(content)
    except ValueError:
        return _NOT_JSON
