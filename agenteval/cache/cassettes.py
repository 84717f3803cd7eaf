"""Record the HTTP traffic of each case-run in a vcrpy cassette, and replay it on later runs.

vcrpy's ``use_cassette`` patches the HTTP libraries for one cassette at a time, and its contexts nest
like a stack, so case-runs running at once on one event loop (or in threads) cannot each have their
own. Here the libraries are patched once, by vcrpy, with a router in place of the cassette: every
request goes to the vcrpy ``Cassette`` of the case-run active in the current context (a
:class:`~contextvars.ContextVar`, which asyncio tasks, ``contextvars.copy_context().run`` and
``asyncio.to_thread`` threads inherit). A request made where no case-run is active goes to the
network, unrecorded.

Cassettes are vcrpy's YAML files, one per case-run: ``<path>/<eval_set_id>/<eval_case_id>/run-<n>.yaml``.
``async with cassettes.case(...)`` reads and writes the file in a worker thread, off the event loop.
A file that cannot be a cassette (empty, cut short, not YAML, not vcrpy's layout) is reported as
damaged, never taken as empty and recorded over.

Requests match on method, URL (scheme, host, port, path, query) and body (JSON compared as JSON).
No credential enters a cassette, so a replay needs no key (:class:`_Scrubber` does it):

- requests lose their credential headers (``Authorization``, ``Cookie``, ``X-Api-Key`` and any
  named like a credential: :func:`~agenteval._util.redaction.is_credential_name`), the ``user:password@``
  of their URL, the query and form parameters named like credentials or URL signatures (``sig``,
  ``signature``, ``X-Amz-Signature``, ``X-Goog-Signature``, ``assertion``, ``client_assertion``),
  and the JSON body entries named like credentials (``api_key``, ``client_secret``, ``jwt``);
- responses lose ``Set-Cookie``; their headers and JSON or form body entries named like
  credentials (``access_token``, ``refresh_token``, ``X-Api-Key``) keep their name with
  :data:`PLACEHOLDER` as value, so the code that reads them still finds one;
- under a name whose last word is ``key`` or ``token`` alone (``key``, ``eos_token``,
  ``next_page_token``: :func:`~agenteval._util.redaction.is_ambiguous_credential_name`), a parameter or
  JSON entry counts as a credential only if its value looks like one (a logprob's ``token`` and an
  issue's ``key`` are data); JSON documents inside JSON strings and XML elements holding text
  (``<SessionToken>``) are scrubbed by the same names;
- every value removed so (unless it is shorter than eight characters, holds a space, or is a number
  or a single word) is replaced by :data:`PLACEHOLDER` wherever else it appears in the cassette, as
  it is and percent-encoded (a
  server echoing the request, a later request using a token from a response), as are token-shaped
  strings anywhere (:data:`~agenteval._util.redaction.TOKEN_SHAPES`: ``sk-…``, ``ghp_…``, ``AKIA…``, JWTs,
  a Telegram ``/bot<token>/``) and what the user declares (``scrub_names``, ``scrub_patterns``).
  Other path segments (ids, model names) are kept.

A request is matched in its scrubbed form, and a placeholder in a recorded request matches any text
in the live one (and the other way round), so a scrubbed cassette replays.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlencode, urlsplit, urlunsplit

from agenteval._util.files import ensure_inside, write_atomic
from agenteval._util.name_checks import check_file_names, check_file_path
from agenteval._util.redaction import (
    TOKEN_SHAPES,
    is_ambiguous_credential_name,
    is_credential_name,
    is_env_reference,
    looks_like_secret,
    strip_userinfo,
)
from agenteval.errors import CassetteMissError, ConfigError, MissingDependencyError

__all__ = ["PLACEHOLDER", "CassetteMode", "Cassettes"]

CassetteMode = Literal["record", "replay", "auto"]
"""``record``: always use the network and record the case-run anew; ``replay``: never use the network;
``auto``: replay what is recorded, record what is not."""

_MODES: tuple[str, ...] = get_args(CassetteMode)

PLACEHOLDER = "REDACTED"
"""What a credential is replaced with in a cassette: plain letters, so it fits a URL, a header and JSON."""

_SECRET_NAMES = frozenset({"cookie", "set-cookie"})
"""Names of credentials, besides those :func:`is_credential_name` names."""

_SECRET_PARAMETERS = frozenset(
    {"sig", "signature", "x-amz-signature", "x-goog-signature", "assertion", "client_assertion"}
)
"""Query and form parameters that hold credentials: URL signatures, OAuth's signed assertions.

Not JSON entries: a model's ``signature`` (of its reasoning) must go back to it unchanged.
"""

_XML_ELEMENT = re.compile(r"<(?P<open>(?P<tag>[A-Za-z_][\w.-]*)(?:\s[^<>]*)?)>(?P<value>[^<>]{1,4096})</(?P=tag)\s*>")
"""An XML element holding text only (``<SessionToken>…</SessionToken>``, as AWS STS answers)."""

_MIN_SPREAD = 8
"""A credential shorter than this is removed where it is named but not searched for elsewhere."""

_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+")
"""A value that is one word (``password``, ``Bearer``): too common to replace wherever it appears."""


class Cassettes:
    """Per-(eval set, case, run) cassettes of HTTP traffic, recorded and replayed with vcrpy.

    Wrap an evaluation in :meth:`active` and each case-run's inference and scoring in :meth:`case`:
    the HTTP requests made in that context (and in the tasks and ``copy_context()`` threads it
    starts) through any library vcrpy patches (httpx, requests and urllib3, aiohttp,
    ``http.client``, whichever are installed; the OpenAI SDK uses httpx) go to the case-run's
    cassette. A replayed request returns the recorded response without touching the network.
    Requests are matched on method, URL and body; each recorded response is replayed once, in
    order, so a request sent three times gets its three recorded responses.

    No credential is written (see the module's documentation for what is left out and replaced by
    :data:`PLACEHOLDER`). A response's credential is replayed as the placeholder: in ``"auto"``
    mode, a request sent after a replayed token exchange carries the placeholder to the server, so
    record such a case-run anew (``"record"``) when it changes.

    Args:
        path: Directory of the cassettes, created when first written.
        mode: ``"record"`` always sends requests and rewrites each case-run's cassette from
            scratch; ``"replay"`` answers only from cassettes and raises
            :class:`~agenteval.errors.CassetteMissError` for a request a cassette lacks;
            ``"auto"`` replays what a cassette holds and records (and adds) the rest.
        scrub_names: More names of credentials (case-insensitive): headers, query and form
            parameters and JSON entries of these names are scrubbed like ``Authorization`` or
            ``api_key``.
        scrub_patterns: Regular expressions (strings or compiled) whose matches are replaced by
            :data:`PLACEHOLDER` wherever they appear: URLs, header values and bodies, of requests
            and responses. Match only the secret (``(?<=session=)[0-9a-f]+``).

    Raises:
        ConfigError: ``mode`` is not one of the modes, ``path`` is a file, a scrub name is not a
            non-empty string or a scrub pattern is not a valid regular expression.
        MissingDependencyError: vcrpy is not installed (``pip install 'agenteval[cassette]'``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: CassetteMode = "auto",
        *,
        scrub_names: Iterable[str] = (),
        scrub_patterns: Iterable[str | re.Pattern[str]] = (),
    ) -> None:
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
        self._scrub_names = _names(scrub_names)
        self._scrub_patterns = _patterns(scrub_patterns)
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

    def case(self, eval_set_id: str, eval_case_id: str, run_id: int) -> _CaseSpan:
        """Route the HTTP traffic of the current context to this case-run's cassette.

        Use ``async with`` on an event loop: the cassette file is then read (on entry) and written
        (on exit) in a worker thread, so a large one does not stall the loop's other cases. Plain
        ``with`` does both in the calling thread.

        May be entered several times for one case-run (once for its inference, once for its
        scoring, maybe in different tasks, possibly overlapping): all entries share one cassette,
        so a response is replayed once per span. Recorded interactions are written to the file
        when a context exits (atomically: temp file + os.replace; a killed process never leaves a
        half-written cassette).

        Raises:
            ConfigError: Not inside :meth:`active`, an id cannot be a file name, or the cassette
                file cannot be read or is damaged (the message names the file, what is wrong and
                how to fix it; the file is left as it is).
            StorageError: The cassette could not be written.
        """
        return _CaseSpan(self, eval_set_id, eval_case_id, run_id)

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
                scrubber = _Scrubber(self._scrub_names, self._scrub_patterns)
                run = self._runs[key] = _CaseRun(eval_set_id, eval_case_id, run_id, file, self._mode, scrubber)
            return run

    def __repr__(self) -> str:
        return f"Cassettes({str(self._path)!r}, mode={self._mode!r})"


def _names(names: Iterable[str]) -> frozenset[str]:
    if isinstance(names, str):
        raise ConfigError(f"scrub_names must be a list of names, not the string {names!r}: write [{names!r}]")
    listed = list(names)
    for name in listed:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(
                f"scrub_names holds {name!r}: each must be a non-empty string (a header, parameter or key)"
            )
    return frozenset(name.strip().lower() for name in listed)


def _patterns(patterns: Iterable[str | re.Pattern[str]]) -> tuple[re.Pattern[str], ...]:
    if isinstance(patterns, str | re.Pattern):
        raise ConfigError(f"scrub_patterns must be a list of patterns, not the one pattern {patterns!r}: write [...]")
    compiled: list[re.Pattern[str]] = []
    for pattern in patterns:
        if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str):
            compiled.append(pattern)
        elif isinstance(pattern, str):
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ConfigError(f"scrub_patterns holds {pattern!r}, not a valid regular expression: {exc}") from exc
        else:
            raise ConfigError(f"scrub_patterns holds {pattern!r}: each must be a regular expression of text (a str)")
    return tuple(compiled)


class _CaseSpan:
    """One entry of a case-run's cassette: a context manager for ``with`` and ``async with``."""

    def __init__(self, cassettes: Cassettes, eval_set_id: str, eval_case_id: str, run_id: int) -> None:
        self._cassettes = cassettes
        self._key = (eval_set_id, eval_case_id, run_id)
        self._entered: tuple[_CaseRun, Token[_CaseRun | None]] | None = None

    def __enter__(self) -> None:
        run = self._cassettes._run(*self._key)
        run.open()
        self._entered = (run, _CURRENT.set(run))

    def __exit__(self, *exc_info: object) -> None:
        self._leave().save()

    async def __aenter__(self) -> None:
        run = self._cassettes._run(*self._key)
        await asyncio.to_thread(run.open)
        self._entered = (run, _CURRENT.set(run))

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self._leave().save)

    def _leave(self) -> _CaseRun:
        if self._entered is None:
            raise RuntimeError("a cassette span was left without being entered")
        run, token = self._entered
        self._entered = None
        _CURRENT.reset(token)
        return run


@dataclass(eq=False)
class _CaseRun:
    """One case-run's vcrpy cassette within one span of :meth:`Cassettes.active`."""

    eval_set_id: str
    eval_case_id: str
    run_id: int
    file: Path
    mode: CassetteMode
    scrubber: _Scrubber
    cassette: Any = field(init=False, default=None)
    """The vcrpy ``Cassette``, once :meth:`open` has read it."""
    lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    """Guards ``cassette``: entries of one case-run may run in several threads."""
    _opening: threading.Lock = field(init=False, default_factory=threading.Lock)
    _loading: bool = field(init=False, default=False)
    """Whether vcrpy is adding the interactions read from the file (its hooks see them too)."""
    _saving: threading.Lock = field(init=False, default_factory=threading.Lock)
    """Writes one at a time, each of what the cassette held when it began: the last written is the newest."""

    def open(self) -> None:
        """Read the cassette file, once per case-run (in ``"record"`` mode, start an empty cassette).

        Raises:
            ConfigError: The file cannot be read or is damaged.
        """
        with self._opening:
            if self.cassette is not None:
                return
            from vcr.cassette import Cassette
            from vcr.matchers import host, method, port, scheme
            from vcr.record_mode import RecordMode

            options: dict[str, Any] = {
                "path": str(self.file),
                "persister": _Persister,
                # In replay mode the router never lets vcrpy record; its miss raises CassetteMissError.
                "record_mode": RecordMode.ALL if self.mode == "record" else RecordMode.NEW_EPISODES,
                "match_on": (method, scheme, host, port, _path, _query, _body),
                "before_record_request": self._scrubbed_request,
                "before_record_response": self._scrubbed_response,
            }
            if self.mode == "record":
                cassette = Cassette(**options)
            else:
                self._loading = True
                try:
                    cassette = Cassette.load(**options)
                finally:
                    self._loading = False
            with self.lock:
                self.cassette = cassette

    def _scrubbed_request(self, request: Any) -> Any:
        return self.scrubber.loaded_request(request) if self._loading else self.scrubber.request(request)

    def _scrubbed_response(self, response: dict[str, Any]) -> dict[str, Any]:
        # What the file holds is replayed as it is: it was scrubbed when it was recorded.
        return response if self._loading else self.scrubber.response(response)

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
        with self._saving:
            with self.lock:
                cassette = self.cassette
                if cassette is None or not (self.mode == "record" or cassette.dirty):
                    return
                requests, responses = cassette.requests, cassette.responses
                cassette.dirty = False
            try:
                write_atomic(self.file, _serialized(requests, responses, self.scrubber))
            except BaseException:
                with self.lock:
                    cassette.dirty = True
                raise

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
        return None if run is None else run.scrubber.request(request)

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


# ------------------------------------------------------------------------------------ reading and writing


class _Persister:
    """vcrpy's persister, with a damaged cassette reported as such rather than taken as empty."""

    @staticmethod
    def load_cassette(cassette_path: str, serializer: Any) -> tuple[list[Any], list[Any]]:
        return _read(Path(cassette_path))


def _read(file: Path) -> tuple[list[Any], list[Any]]:
    """The requests and responses of a cassette file.

    Raises:
        CassetteNotFoundError: There is no file (vcrpy starts an empty cassette).
        ConfigError: The file cannot be read, or is damaged: the message says how.
    """
    import yaml  # type: ignore[import-untyped]  # pyyaml ships no types; vcrpy needs it
    from vcr.persisters.filesystem import CassetteNotFoundError
    from vcr.serializers import yamlserializer

    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise CassetteNotFoundError() from None
    except OSError as exc:
        raise ConfigError(
            f"cassette file {file} cannot be read ({exc.strerror or exc}); fix its permissions, or delete it and"
            ' record it anew with cassette mode "record"'
        ) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _damaged(file, f"it is not UTF-8 text (byte {exc.start} cannot be decoded)") from exc
    if not text.strip():
        raise _damaged(file, "it is empty")
    try:
        parsed = yamlserializer.deserialize(text)
    except yaml.YAMLError as exc:
        raise _damaged(file, f"it is not valid YAML ({_yaml_problem(exc)}); it may have been cut short") from exc
    return _interactions(file, parsed)


def _interactions(file: Path, parsed: object) -> tuple[list[Any], list[Any]]:
    from vcr.request import Request
    from vcr.serialize import CASSETTE_FORMAT_VERSION
    from vcr.serializers import compat

    if not isinstance(parsed, dict) or not isinstance(parsed.get("interactions"), list):
        raise _damaged(file, "it is not a cassette: it has no list of interactions")
    if "version" not in parsed:
        # Written last (the keys are sorted): a file without it was cut short.
        raise _damaged(file, f"it ends without its closing 'version: {CASSETTE_FORMAT_VERSION}' line: it was cut short")
    if parsed["version"] != CASSETTE_FORMAT_VERSION:
        raise _damaged(file, f"its version is {parsed['version']!r}, not {CASSETTE_FORMAT_VERSION}")
    requests: list[Any] = []
    responses: list[Any] = []
    for number, interaction in enumerate(parsed["interactions"], 1):
        problem = _interaction_problem(interaction)
        if problem:
            raise _damaged(file, f"its interaction {number} {problem}")
        try:
            requests.append(Request._from_dict(interaction["request"]))
        except (TypeError, ValueError) as exc:
            raise _damaged(file, f"its interaction {number} has a request vcrpy cannot read ({exc})") from exc
        responses.append(compat.convert_to_bytes(interaction["response"]))
    return requests, responses


def _interaction_problem(interaction: object) -> str:
    if not isinstance(interaction, dict):
        return "is not a mapping of a request and a response"
    request, response = interaction.get("request"), interaction.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        return "lacks its request or its response"
    missing = [f"request {key}" for key in ("method", "uri", "headers") if key not in request]
    missing += [f"response {key}" for key in ("status", "headers", "body") if key not in response]
    if missing:
        return f"lacks its {', '.join(missing)}"
    if not isinstance(response["status"], dict) or not isinstance(response["status"].get("code"), int):
        return "has no response status code"
    return ""


def _yaml_problem(error: Exception) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or " ".join(str(error).split())
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(problem)


def _damaged(file: Path, what: str) -> ConfigError:
    return ConfigError(
        f'cassette file {file} is damaged: {what}; delete it, or record it anew with cassette mode "record"'
        " (it is left as it is until then)"
    )


def _serialized(requests: list[Any], responses: list[Any], scrubber: _Scrubber) -> str:
    """A cassette file's text, in vcrpy's layout, with every secret the case-run learnt replaced."""
    from vcr.serialize import CASSETTE_FORMAT_VERSION
    from vcr.serializers import compat, yamlserializer

    interactions = [
        {
            "request": compat.convert_to_unicode(request._to_dict()),
            "response": compat.convert_to_unicode(_with_own_body(response)),
        }
        for request, response in zip(requests, responses, strict=True)
    ]
    # Replaced now too: a secret learnt from a later interaction may appear in an earlier one.
    data = {"version": CASSETTE_FORMAT_VERSION, "interactions": scrubber.known_replaced(interactions)}
    return str(yamlserializer.serialize(data))


def _with_own_body(response: dict[str, Any]) -> dict[str, Any]:
    """A copy of a response that vcrpy's body conversion can change without changing the one replayed."""
    body = response.get("body")
    return {**response, "body": dict(body)} if isinstance(body, dict) else dict(response)


# ------------------------------------------------------------------------------------ scrubbing


class _Scrubber:
    """What one case-run's cassette leaves out, and the secrets it has learnt (the module's documentation lists them).

    A credential found by its name, a pattern or its shape is learnt, and from then on replaced by
    :data:`PLACEHOLDER` wherever it appears in the case-run's traffic; :meth:`known_replaced` replaces
    them all once more as the cassette is written. vcrpy scrubs each live request too before matching
    it, so a replayed request matches its scrubbed recording. Safe to use from several threads.
    """

    def __init__(self, names: frozenset[str], patterns: tuple[re.Pattern[str], ...]) -> None:
        self._names = names
        self._patterns = (TOKEN_SHAPES, *patterns)
        self._known: tuple[str, ...] = ()
        """The secrets learnt, longest first: one that holds another is replaced whole."""
        self._lock = threading.Lock()
        self._last: tuple[Any, Any] | None = None
        """The last request scrubbed, and its scrubbed copy: vcrpy asks for one request's several times."""

    def request(self, request: Any) -> Any:
        """A copy of a vcrpy request without credentials: what is matched and recorded."""
        last = self._last
        if last is not None and last[0] is request:
            return last[1]
        scrubbed = self._scrubbed(request, replace=True)
        self._last = (request, scrubbed)
        return scrubbed

    def loaded_request(self, request: Any) -> Any:
        """A request read from a cassette, without the credentials an older agenteval named fewer of.

        Only those found by name are removed: a token an older version left in a URL path or a body
        matches the placeholder of the live request anyway, and searching every text of a large
        cassette for secrets would double the time it takes to read.
        """
        return self._scrubbed(request, replace=False)

    def _scrubbed(self, request: Any, *, replace: bool) -> Any:
        from vcr.request import Request

        # Everything is learnt first, so a secret is replaced wherever it appears in the request.
        headers = {name: value for name, value in request.headers.items() if not self._secret_header(name, value)}
        uri = self._uri_without_secrets(request.uri)
        body = self._body_without_secrets(request.body_bytes, _is_form(request.headers.get("content-type")))
        if replace:
            headers = {name: self.text(value) if isinstance(value, str) else value for name, value in headers.items()}
            uri, body = self._uri_replaced(uri), self._body_replaced(body)
        return Request(request.method, uri, body, headers)

    def response(self, response: dict[str, Any]) -> dict[str, Any]:
        """A recorded response (vcrpy passes a copy) without ``Set-Cookie``, its credentials replaced."""
        response = _decompressed(response)
        headers: dict[str, Any] = {}
        for name, values in response.get("headers", {}).items():
            if not self._named(name):
                headers[name] = values
                continue
            for value in [values] if isinstance(values, str) else values:
                self._learn_header(name, str(value))
            if name.lower() != "set-cookie":
                headers[name] = PLACEHOLDER if isinstance(values, str) else [PLACEHOLDER for _ in values]
        body = response.get("body")
        if isinstance(body, dict) and isinstance(body.get("string"), bytes | str) and body["string"]:
            content_type = next((value for name, value in headers.items() if name.lower() == "content-type"), None)
            content = self._body_replaced(self._body_with_placeholders(body["string"], _is_form(content_type)))
            if content != body["string"]:
                body = {**body, "string": content}
                _set_content_length(headers, content)
        headers = {name: self._header_replaced(values) for name, values in headers.items()}
        return {**response, "headers": headers, "body": body}

    def text(self, text: str) -> str:
        """``text`` with the secrets learnt, token shapes and scrub patterns replaced (those matched are learnt)."""
        for secret in self._known:
            if secret in text:
                text = text.replace(secret, PLACEHOLDER)
        for pattern in self._patterns:
            text = pattern.sub(self._replaced_match, text)
        return text

    def known_replaced(self, value: Any) -> Any:
        """A copy of a JSON-like value (strings, bytes, lists and dicts) with the secrets learnt replaced."""
        known = self._known
        return _known_replaced(value, known) if known else value

    def learn(self, value: str) -> None:
        """Replace ``value`` from now on wherever it appears, unless it is too short or common to search for."""
        value = value.strip()
        if not _spreads(value) or value in self._known:
            return
        # As a form or a URL carries it too, for a server that echoes the raw request.
        forms = {value, quote_plus(value), quote(value, safe="")}
        with self._lock:
            self._known = tuple(sorted({*self._known, *forms}, key=len, reverse=True))

    def _named(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        lowered = name.lower()
        return lowered in self._names or lowered in _SECRET_NAMES or is_credential_name(name)

    def _secret_entry(self, name: object, value: object) -> bool:
        """Whether a query or form parameter or a JSON entry holds a credential.

        By its name, but under a name that data often has too (``key``, ``token``, ``eos_token``,
        ``next_page_token``) only a value that looks like a secret: a logprob's ``token``, an issue's
        ``key`` (``PROJ-1234``) and a tokenizer's ``eos_token`` are data, kept as they are.
        """
        if not isinstance(name, str):
            return False
        lowered = name.lower()
        if lowered in self._names or lowered in _SECRET_PARAMETERS:
            return True
        if not self._named(name):
            return False
        return not is_ambiguous_credential_name(name) or looks_like_secret(value)

    def _secret_header(self, name: str, value: object) -> bool:
        if not self._named(name):
            return False
        self._learn_header(name, str(value))
        return True

    def _learn_header(self, name: str, value: str) -> None:
        """Learn a credential header's value: a cookie's values, the token of ``Bearer <token>``."""
        lowered = name.lower()
        if lowered in ("cookie", "set-cookie"):
            pairs = value.split(";") if lowered == "cookie" else value.split(";")[:1]  # then Path=/, HttpOnly
            for pair in pairs:
                self.learn(pair.partition("=")[2].strip().strip('"'))
            return
        self.learn(value)
        self.learn(value.rsplit(maxsplit=1)[-1] if value.strip() else "")

    def _learn_named(self, value: object) -> None:
        """Learn a credential entry's value: a string, the strings of a list, a mapping's credential entries.

        Not every string inside: under ``api_key`` in a tool's JSON schema are its type and description.
        """
        if isinstance(value, str):
            self.learn(value)
        elif isinstance(value, list):
            for item in value:
                self._learn_named(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if self._secret_entry(key, item):
                    self._learn_named(item)

    def _replaced_match(self, match: re.Match[str]) -> str:
        found = match[0]
        if not found or found == PLACEHOLDER:
            return found
        self.learn(found)
        return PLACEHOLDER

    def _uri_without_secrets(self, uri: str) -> str:
        parts = urlsplit(uri)
        userinfo = parts.password if parts.password is not None else parts.username
        if userinfo:
            self.learn(unquote(userinfo))
        parts = urlsplit(strip_userinfo(uri))
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        kept = self._parameters_without_secrets(pairs)
        return urlunsplit(parts._replace(query=urlencode(kept))) if len(kept) < len(pairs) else urlunsplit(parts)

    def _parameters_without_secrets(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        kept = []
        for name, value in pairs:
            if self._secret_entry(name, value):
                self.learn(value)
            else:
                kept.append((name, value))
        return kept

    def _uri_replaced(self, uri: str) -> str:
        parts = urlsplit(uri)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        replaced = [(name, self.text(value)) for name, value in pairs]
        query = urlencode(replaced) if replaced != pairs else parts.query
        return urlunsplit(parts._replace(path=self.text(parts.path), query=query))

    def _body_without_secrets(self, body: Any, form: bool) -> Any:
        """A request body without the JSON entries and (of a form) parameters named like credentials."""
        parsed = _json(body)
        if parsed is not _NOT_JSON:
            kept = self._json_without_secrets(parsed)
            if kept == parsed:
                return body
            return kept if isinstance(body, dict | list) else json.dumps(kept).encode()
        if form and isinstance(body, bytes | str):
            pairs = parse_qsl(_as_text(body), keep_blank_values=True)
            remaining = self._parameters_without_secrets(pairs)
            if len(remaining) < len(pairs):
                return urlencode(remaining).encode()
            return body
        return self._xml_with_placeholders(body) if isinstance(body, bytes | str) else body

    def _json_without_secrets(self, value: Any) -> Any:
        if isinstance(value, dict):
            kept = {}
            for key, item in value.items():
                if self._secret_entry(key, item) and not is_env_reference(item):
                    self._learn_named(item)
                else:
                    kept[key] = self._json_without_secrets(item)
            return kept
        if isinstance(value, list):
            return [self._json_without_secrets(item) for item in value]
        if isinstance(value, str):
            return self._embedded_json_with_placeholders(strip_userinfo(value))
        return value

    def _body_with_placeholders(self, body: bytes | str, form: bool) -> bytes | str:
        """A response body whose JSON entries and (of a form) parameters named like credentials hold the placeholder."""
        parsed = _json(body)
        if isinstance(parsed, dict | list):
            replaced = self._json_with_placeholders(parsed)
            return body if replaced == parsed else _encoded_like(body, json.dumps(replaced))
        if form:
            pairs = parse_qsl(_as_text(body), keep_blank_values=True)
            replaced_pairs = [
                (name, self._placeholder(value) if self._secret_entry(name, value) else value) for name, value in pairs
            ]
            if replaced_pairs != pairs:
                return _encoded_like(body, urlencode(replaced_pairs))
            return body
        return self._xml_with_placeholders(body)

    def _xml_with_placeholders(self, body: bytes | str) -> bytes | str:
        """A text body whose XML elements named like credentials (``<SessionToken>``) hold the placeholder."""
        if not body:
            return body
        text = _as_text(body)
        if "</" not in text:
            return body
        replaced = _XML_ELEMENT.sub(self._xml_element_replaced, text)
        return body if replaced == text else _encoded_like(body, replaced)

    def _xml_element_replaced(self, match: re.Match[str]) -> str:
        value = match["value"]
        if value.strip() == PLACEHOLDER or not self._secret_entry(match["tag"], value.strip()):
            return match[0]
        self.learn(value)
        return f"<{match['open']}>{PLACEHOLDER}</{match['tag']}>"

    def _embedded_json_with_placeholders(self, value: str) -> str:
        """A string that holds a JSON document (an API gateway's ``body``) with its credentials replaced."""
        if value[:1] not in ("{", "[") or not value.rstrip().endswith(("}", "]")):
            return value
        parsed = _json(value)
        if not isinstance(parsed, dict | list):
            return value
        replaced = self._json_with_placeholders(parsed)
        return value if replaced == parsed else json.dumps(replaced)

    def _json_with_placeholders(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: self._placeholder(item) if self._secret_entry(key, item) else self._json_with_placeholders(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self._json_with_placeholders(item) for item in value]
        if isinstance(value, str):
            return self._embedded_json_with_placeholders(value)
        return value

    def _placeholder(self, value: Any) -> Any:
        """A credential entry's value, learnt, its strings (those of a list too) replaced by the placeholder.

        A mapping keeps all but its own credential entries (``"token": {"expires_in": 3600}``).
        """
        if isinstance(value, str) and value:
            self.learn(value)
            return PLACEHOLDER
        if isinstance(value, list):
            return [self._placeholder(item) for item in value]
        return self._json_with_placeholders(value) if isinstance(value, dict) else value

    def _body_replaced(self, body: Any) -> Any:
        parsed = _json(body)
        if parsed is not _NOT_JSON:
            replaced = self._json_replaced(parsed)
            if replaced == parsed:
                return body
            return replaced if isinstance(body, dict | list) else _encoded_like(body, json.dumps(replaced))
        if isinstance(body, bytes | str) and body:
            text = _as_text(body)
            replaced_text = self.text(text)
            return body if replaced_text == text else _encoded_like(body, replaced_text)
        return body

    def _json_replaced(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self._json_replaced(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._json_replaced(item) for item in value]
        return value

    def _header_replaced(self, values: Any) -> Any:
        if isinstance(values, str):
            return self.text(values)
        if isinstance(values, list):
            return [self.text(value) if isinstance(value, str) else value for value in values]
        return values


def _known_replaced(value: Any, known: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        for secret in known:
            if secret in value:
                value = value.replace(secret, PLACEHOLDER)
        return value
    if isinstance(value, bytes):
        text = value.decode("utf-8", "surrogateescape")
        replaced = _known_replaced(text, known)
        return value if replaced == text else replaced.encode("utf-8", "surrogateescape")
    if isinstance(value, dict):
        return {name: _known_replaced(item, known) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_known_replaced(item, known) for item in value)
    return value


def _spreads(value: str) -> bool:
    """Whether a credential is distinctive enough to be replaced wherever it appears (``hunter22``, a token).

    One of eight characters or more, with no space, that is not a number nor a single word
    (``password``, ``Bearer``) unless it is sixteen characters or more.
    """
    if PLACEHOLDER in value or value.isdigit() or len(value) < _MIN_SPREAD or any(char.isspace() for char in value):
        return False  # a word, a number or prose: searching for it would replace what is no secret
    return len(value) >= 2 * _MIN_SPREAD or not _WORD.fullmatch(value)


def _is_form(content_type: object) -> bool:
    if isinstance(content_type, list):
        content_type = content_type[0] if content_type else None
    return isinstance(content_type, str) and "application/x-www-form-urlencoded" in content_type.lower()


def _decompressed(response: dict[str, Any]) -> dict[str, Any]:
    """The response with its body decompressed (so its secrets can be found), if it is compressed."""
    from vcr.filters import decode_response

    headers = response.get("headers", {})
    if not any(name.lower() == "content-encoding" for name in headers):
        return response
    try:
        return dict(decode_response(response))
    except Exception:  # a body the client decompressed already (aiohttp's) is kept as it is
        return response


def _set_content_length(headers: dict[str, Any], content: bytes | str) -> None:
    """Make a ``Content-Length`` header tell the length of a body that scrubbing changed."""
    size = str(len(content.encode() if isinstance(content, str) else content))
    for name, values in headers.items():
        if name.lower() == "content-length":
            headers[name] = size if isinstance(values, str) else [size]


def _encoded_like(original: object, text: str) -> bytes | str:
    return text if isinstance(original, str) else text.encode("utf-8", "surrogateescape")


def _as_text(content: object) -> str:
    if isinstance(content, bytes):
        return content.decode("utf-8", "surrogateescape")
    return content if isinstance(content, str) else ""


# ------------------------------------------------------------------------------------ matching


def _same(first: str, second: str) -> bool:
    """Whether two texts are the same, a placeholder in either standing for any text in the other."""
    return first == second or _fits(first, second) or _fits(second, first)


def _fits(pattern: str, text: str) -> bool:
    """Whether ``text`` is ``pattern`` with each placeholder replaced by some (non-empty) text."""
    if PLACEHOLDER not in pattern:
        return False
    head, *middle, tail = pattern.split(PLACEHOLDER)
    start, end = len(head), len(text) - len(tail)
    if end <= start or not text.startswith(head) or not text.endswith(tail):
        return False
    for piece in middle:
        # The leftmost fit of each piece leaves the most room for the rest.
        found = text.find(piece, start + 1, end - 1)
        if found < 0:
            return False
        start = found + len(piece)
    return end > start


def _same_json(first: object, second: object) -> bool:
    if isinstance(first, str) and isinstance(second, str):
        return _same(first, second)
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(_same_json(first[key], second[key]) for key in first)
    if isinstance(first, list) and isinstance(second, list):
        return len(first) == len(second) and all(map(_same_json, first, second))
    return first == second


def _path(r1: Any, r2: Any) -> None:
    """Vcrpy's path matcher, a placeholder standing for any text (a token in the path)."""
    if not _same(r1.path, r2.path):
        raise AssertionError(f"{r1.path} != {r2.path}")


def _query(r1: Any, r2: Any) -> None:
    """Vcrpy's query matcher, a placeholder standing for any text."""
    first, second = _parameters(r1.parsed_uri.query), _parameters(r2.parsed_uri.query)
    if len(first) != len(second) or not all(
        name == other and _same(value, other_value)
        for (name, value), (other, other_value) in zip(first, second, strict=True)
    ):
        raise AssertionError(f"{first} != {second}")


def _parameters(query: str) -> list[tuple[str, str]]:
    return sorted(parse_qsl(query), key=lambda pair: pair[0])


def _body(r1: Any, r2: Any) -> None:
    """Vcrpy's body matcher, but bodies that both parse as JSON compare as JSON, and a placeholder is any text."""
    from vcr.matchers import body
    from vcr.util import read_body

    first, second = read_body(r1), read_body(r2)
    parsed_first, parsed_second = _json(first), _json(second)
    placeholders = _holds_placeholder(first) or _holds_placeholder(second)
    if parsed_first is not _NOT_JSON and parsed_second is not _NOT_JSON:
        if parsed_first != parsed_second and not (placeholders and _same_json(parsed_first, parsed_second)):
            raise AssertionError("the JSON bodies differ")
    elif placeholders:
        if not _same(_as_text(first), _as_text(second)):
            raise AssertionError("the bodies differ")
    else:
        body(r1, r2)


def _holds_placeholder(content: object) -> bool:
    if isinstance(content, bytes):
        return PLACEHOLDER.encode() in content
    if isinstance(content, str):
        return PLACEHOLDER in content
    return isinstance(content, dict | list) and PLACEHOLDER in json.dumps(content)


for _matcher, _name in ((_path, "path"), (_query, "query"), (_body, "body")):
    _matcher.__name__ = _name  # as vcrpy's: the name shows in a miss's message


_NOT_JSON = object()


def _json(content: object) -> object:
    if isinstance(content, dict | list):
        return content  # aiohttp's json= argument, recorded as it was given
    if not isinstance(content, bytes | str) or not content:
        return _NOT_JSON
    try:
        return json.loads(content)
    except ValueError:
        return _NOT_JSON
