"""File helpers: strict loading of JSON files (regular files only), confinement to a base directory, atomic writes."""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import os
import re
import socket
import stat
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from agenteval._util.gc_tuning import no_collections
from agenteval._util.trpc_json import MAX_DEPTH, SHARED_VALUES, WireModel, reject_non_finite, unknown_fields
from agenteval.errors import ConfigError, NotFoundError, StorageError, UnknownFieldWarning

T = TypeVar("T")

__all__ = [
    "NESTING_LIMIT",
    "describe_validation_error",
    "dump_models",
    "ensure_inside",
    "huge_integer_problem",
    "load_foreign_json",
    "load_json_file",
    "nesting_problem",
    "parse_json",
    "read_data_file",
    "read_file_bytes",
    "read_text_file",
    "refuse_unknown_fields",
    "unknown_fields_refused",
    "warn_unknown_fields",
    "write_atomic",
]


def ensure_inside(base: Path, path: Path) -> Path:
    """Return ``path`` if it lies inside ``base`` (after resolving ``..`` and symlinks).

    Raises:
        ConfigError: The path escapes the base directory (e.g. through a custom locator).
    """
    if not path.resolve().is_relative_to(base.resolve()):
        raise ConfigError(f"refusing to use {path}: it is outside the base directory {base}")
    return path


def describe_validation_error(error: ValidationError) -> str:
    """Turn a pydantic error into ``field a.b[0].c: message`` lines."""
    lines = []
    for item in error.errors():
        location = ""
        for part in item["loc"]:
            location += f"[{part}]" if isinstance(part, int) else (f".{part}" if location else str(part))
        message = item["msg"]
        if item["type"] == "json_invalid":
            problem = message.removeprefix("Invalid JSON: ")
            if problem.startswith("recursion limit exceeded"):
                problem += f" ({nesting_problem()})"
            elif problem.startswith("number out of range"):
                problem += f" ({huge_integer_problem()})"
            lines.append(f"not valid JSON: {problem}")
        elif item["type"] == "value_error":
            # Our own validators already name the bad value.
            lines.append(f"field {location}: {message.removeprefix('Value error, ')}")
        else:
            where = f"field {location}" if location else "document"
            lines.append(f"{where}: {message} (got {_short(item.get('input'))})")
    return "; ".join(lines)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


NESTING_LIMIT = 200
"""Most levels a document read from a file may nest: pydantic-core's JSON parser stops at about as many,
and a YAML file is held to the same limit (:mod:`agenteval.importers._yaml`)."""


def nesting_problem() -> str:
    """What is wrong with a document nested past :data:`NESTING_LIMIT` levels, and what values may do."""
    return (
        f"it is nested too deeply: the parser takes about {NESTING_LIMIT} levels, and values may be nested at most"
        f" {MAX_DEPTH} levels"
    )


def huge_integer_problem() -> str:
    """What is wrong with an integer of more digits than Python converts from text, and what to do."""
    return (
        f"an integer of more than {sys.get_int_max_str_digits()} digits, more than Python reads: write it as a"
        " string (in quotes)"
    )


def load_json_file(path: Path, adapter: type[T] | TypeAdapter[T], what: str) -> T:
    """Read and strictly validate a JSON file.

    Args:
        path: The file.
        adapter: A model class or a :class:`TypeAdapter` describing the content.
        what: What the file holds, for messages (``"eval set"``).

    Returns:
        The validated content.

    Raises:
        NotFoundError: The file does not exist.
        ConfigError: The file is not valid JSON or does not fit the model; the message names the
            file and the field.
        StorageError: The file could not be read.
    """
    return parse_json(read_data_file(path, what), adapter, f"{what} file {path}")


def read_data_file(path: Path, what: str) -> bytes:
    """Read one of agenteval's own files (an eval set, metrics, a result), which must be a regular file.

    Args:
        path: The file.
        what: What the file holds, for messages (``"eval set"``).

    Raises:
        NotFoundError: The file does not exist.
        ConfigError: The path is a FIFO, a directory, a device or a socket (see :func:`read_file_bytes`).
        StorageError: The file could not be read.
    """
    try:
        return _regular_file_bytes(path, f"{what} file {path}")
    except FileNotFoundError as exc:
        raise NotFoundError(f"{what} file {path} does not exist") from exc
    except OSError as exc:
        raise StorageError(f"read {what} file {path}: {exc}") from exc


def read_file_bytes(path: Path) -> bytes:
    """Read a file another tool wrote (an imported eval set or dataset).

    Only a regular file is read: a FIFO would block the read forever, a device such as
    ``/dev/zero`` would never end, and a directory holds no document.

    Raises:
        ConfigError: The path is not a regular file, or the file cannot be read; the message names it.
    """
    try:
        return _regular_file_bytes(path, str(path))
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror or error}") from None


def read_text_file(path: Path) -> str:
    """Read a UTF-8 text file another tool wrote (see :func:`read_file_bytes`).

    Raises:
        ConfigError: The path is not a regular file, or the file cannot be read or is not UTF-8;
            the message names the file.
    """
    data = read_file_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not UTF-8 text: {error.reason} at byte {error.start}") from None


_JSON_VALUE: TypeAdapter[Any] = TypeAdapter(Any)


def load_foreign_json(path: Path) -> Any:
    """Read a JSON file another tool wrote (an imported eval set or dataset) as plain values.

    Parsed as :func:`parse_json` parses agenteval's own files, with the same limits and messages.

    Raises:
        ConfigError: The path is not a regular file, or the file cannot be read, is not UTF-8, is not
            JSON, nests too deeply, or holds an integer of more digits than Python reads, NaN or an
            infinity; the message names the file.
    """
    return parse_json(read_file_bytes(path), _JSON_VALUE, str(path))


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _refuse_irregular(mode: int, source: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for is_kind, name in _KINDS if is_kind(mode)), "an unknown kind of file")
    raise ConfigError(f"{source} is {kind}, not a regular file: give the path of a file")


# Opening a FIFO for reading waits for a writer, unless non-blocking; a regular file ignores the flag.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _regular_file_bytes(path: Path, source: str) -> bytes:
    """The content of ``path``, once it is known to be a regular file (``source`` names it in the error).

    The kind is checked before opening (opening a FIFO blocks where there is no non-blocking flag)
    and again on the opened file, which may have been replaced in between.

    Raises:
        ConfigError: The path is a FIFO, a directory, a device or a socket.
        OSError: The file does not exist or cannot be read.
    """
    _refuse_irregular(os.stat(path).st_mode, source)
    fd = os.open(path, _OPEN_FLAGS)
    with os.fdopen(fd, "rb") as handle:
        _refuse_irregular(os.fstat(fd).st_mode, source)
        return handle.read()


def parse_json(data: str | bytes, adapter: type[T] | TypeAdapter[T], source: str) -> T:
    """Strictly validate JSON text, naming ``source`` in the error.

    The non-standard constants ``NaN``, ``Infinity`` and ``-Infinity`` are refused wherever they
    appear, free-form values included: they could not be written back.

    Raises:
        ConfigError: The text is not valid JSON, does not fit the model, or holds ``NaN`` or an
            infinity.
    """
    # Validators that warn (e.g. about a dropped secret) name the source from the context.
    context: dict[str, Any] = {"source": source, SHARED_VALUES: []}
    try:
        # Parsing a large file allocates millions of objects and no cycle: the collector waits until it is done.
        with no_collections():
            if isinstance(adapter, TypeAdapter):
                result: T = adapter.validate_json(data, strict=True, context=context)
            elif isinstance(adapter, type) and issubclass(adapter, BaseModel):
                result = adapter.model_validate_json(data, strict=True, context=context)
            else:
                raise TypeError(f"cannot validate with {adapter!r}")
    except ValidationError as exc:
        # Only looked for once parsing failed: text in another encoding never parses as JSON.
        problem = _encoding_problem(data)
        if problem is not None:
            raise ConfigError(f"{source} {problem}") from None
        raise ConfigError(f"{source} is malformed: {describe_validation_error(exc)}") from None
    # Cheap pre-check: the exact search only runs when a constant may be in the text.
    raw = data.encode() if isinstance(data, str) else data
    if b"NaN" in raw or b"Infinity" in raw:
        reject_non_finite(result, f"{source} is malformed")
    return result


# UTF-32 first: its little-endian mark begins with UTF-16's.
_BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF8, "UTF-8"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)

_SAVE_AS_UTF8 = "save it as UTF-8 without a byte-order mark"


def _encoding_problem(data: str | bytes) -> str | None:
    """Why ``data`` is not UTF-8 JSON text, or ``None`` if its encoding is not the problem.

    A UTF-8 byte-order mark is refused too, with this hint: JSON must not begin with one, and the
    reference framework (Go's ``encoding/json``) refuses it.
    """
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            # What is left of a byte-order mark once the file was decoded.
            return f"starts with a byte-order mark (U+FEFF), which JSON does not allow: {_SAVE_AS_UTF8}"
        return None
    for mark, encoding in _BYTE_ORDER_MARKS:
        if data.startswith(mark):
            if encoding == "UTF-8":
                return f"starts with a UTF-8 byte-order mark, which JSON does not allow: {_SAVE_AS_UTF8}"
            return f"is not UTF-8 (it starts with a {encoding} byte-order mark): {_SAVE_AS_UTF8}"
    if b"\0" in data[:4]:
        # JSON begins with an ASCII character (a bracket, a quote or a space), which takes NUL bytes
        # in UTF-16 and UTF-32.
        return f"is not UTF-8 (it holds NUL bytes, as UTF-16 and UTF-32 text does): {_SAVE_AS_UTF8}"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return (
            f"is not UTF-8 (byte 0x{data[exc.start]:02x} at line {line}, byte offset {exc.start}, is not valid"
            f" UTF-8, as in Latin-1 or Windows-1252 text): {_SAVE_AS_UTF8}"
        )
    return None


_REFUSING_UNKNOWN_FIELDS: ContextVar[bool] = ContextVar("refusing_unknown_fields", default=False)


@contextlib.contextmanager
def unknown_fields_refused() -> Iterator[None]:
    """Within, :func:`warn_unknown_fields` raises instead of warning (``strict=True``).

    A context variable, so that it follows the reads into the threads the stores read in
    (``asyncio.to_thread`` copies it) and leaves other tasks alone.
    """
    token = _REFUSING_UNKNOWN_FIELDS.set(True)
    try:
        yield
    finally:
        _REFUSING_UNKNOWN_FIELDS.reset(token)


def warn_unknown_fields(value: object, source: str) -> None:
    """Warn (:class:`UnknownFieldWarning`) about keys in ``value`` that no model field took.

    Raises:
        ConfigError: There are such keys, within :func:`unknown_fields_refused`.
    """
    if _REFUSING_UNKNOWN_FIELDS.get():
        refuse_unknown_fields(value, source)
        return
    fields = unknown_fields(value)
    if fields:
        warnings.warn(
            f"{source}: unknown field(s) {_listed(fields)} have no effect; check their spelling "
            "(they are kept when the file is written back)",
            UnknownFieldWarning,
            stacklevel=2,
        )


def refuse_unknown_fields(value: object, source: str) -> None:
    """Refuse keys in ``value`` that no model field took (``strict=True``).

    Raises:
        ConfigError: ``<source>: unknown field(s) <paths> have no effect: ...``.
    """
    fields = unknown_fields(value)
    if fields:
        raise ConfigError(
            f"{source}: unknown field(s) {_listed(fields)} have no effect: correct their spelling or remove them"
            " (strict=True refuses them)"
        )


def _listed(fields: Sequence[str]) -> str:
    return ", ".join(fields[:10]) + (f" and {len(fields) - 10} more" if len(fields) > 10 else "")


_HOST = hashlib.sha256(socket.gethostname().encode("utf-8", "surrogatepass")).hexdigest()[:6]
"""This host, in the names of temporary files: a process id means something only on its own host."""

_TEMP_PREFIX = ".agenteval-"

_TEMP_NAME = re.compile(r"\.agenteval-(?P<host>[0-9a-f]{6})-(?P<pid>[0-9]+)-[a-z0-9_]{8}\.tmp")
"""The names of the temporary files :func:`write_atomic` makes (see :func:`_temp_file_prefix`)."""

_STALE_AFTER = 3600.0
"""Seconds after its last change when a temporary file whose writer cannot be asked is taken as left by a crash.

Writing one takes seconds at most; a writer on this host is asked directly (see :func:`_is_stale`)."""


def _temp_file_prefix(pid: int) -> str:
    """How the names of the temporary files of process ``pid`` of this host begin.

    Short, so that a temporary name never passes the file-name limit when the final one does not.
    """
    return f"{_TEMP_PREFIX}{_HOST}-{pid}-"


def _is_running(pid: int) -> bool:
    """Whether process ``pid`` of this host exists (when unsure, it does)."""
    if sys.platform == "win32":
        return True  # os.kill(pid, 0) would terminate it there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process
    return True


def _is_stale(directory: Path, name: str) -> bool:
    """Whether ``name`` in ``directory`` is a temporary file of :func:`write_atomic` that no writer will finish.

    It is when its writer, a process of this host, has died (killed in the middle of a write), or
    when it has not changed for :data:`_STALE_AFTER` seconds (its writer, on another host, cannot be
    asked; a process id may have been reused).
    """
    found = _TEMP_NAME.fullmatch(name)
    if found is None:
        return False
    if found["host"] == _HOST and not _is_running(int(found["pid"])):
        return True
    try:
        changed = (directory / name).stat().st_mtime
    except OSError:
        return False
    return time.time() - changed > _STALE_AFTER


def _remove_stale_temp_files(directory: Path) -> None:
    """Remove what crashed writes left in ``directory`` (best effort: what cannot be removed stays)."""
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        names = [entry.name for entry in entries if entry.name.startswith(_TEMP_PREFIX)]
    for name in names:
        if _is_stale(directory, name):
            with contextlib.suppress(OSError):
                os.unlink(directory / name)


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (plus a trailing newline) to ``path`` atomically; texts of an iterable are written in turn.

    The text goes to a temporary file in the same directory (``.agenteval-<host>-<pid>-<random>.tmp``),
    which then replaces ``path``. An error at any point leaves the previous file intact and no
    temporary file behind. A process killed in the middle of a write cannot remove its temporary
    file: the next write to that directory does, once the file is stale (its writer on this host
    is gone, or it has not changed for an hour), never another live writer's.

    Raises:
        StorageError: The directory could not be created or the file could not be written.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"create directory {path.parent}: {exc}") from exc
    _remove_stale_temp_files(path.parent)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_file_prefix(os.getpid()), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines([text] if isinstance(text, str) else text)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise StorageError(f"write {path}: {exc}") from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def dump_models(models: Sequence[WireModel]) -> str:
    """Serialize models as a 2-space-indented JSON array, as the reference writes metric files."""
    return json.dumps([model.to_dict() for model in models], indent=2, ensure_ascii=False)
