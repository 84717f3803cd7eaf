"""A report in one file, to share: its result, eval set, metrics, environment, cassettes and HTML.

A bundle is a zip archive laid out as the reference framework lays out its files, so that it can
also be unpacked and read by any tool that reads them::

    manifest.json                                   what the bundle holds (format, ids, when)
    results/<app>/<result id>.evalset_result.json   the result, in the reference's format
    data/<app>/<eval set id>.evalset.json           the eval set as evaluated
    data/<app>/<eval set id>.metrics.json           the metrics
    environment.json                                Python, platform, git revision and installed packages
    report.html                                     the report, readable in a browser
    cassettes/<eval set id>/<case id>/run-<n>.yaml  the recorded HTTP traffic, when there was some

:func:`write_bundle` writes one from a :class:`BundleContents`; :func:`read_bundle` reads it back,
checking each document as the stores do; :func:`extract_cassettes` unpacks the cassettes for a replay.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import TypeAdapter

from agenteval._util.files import dump_models, ensure_inside, parse_json
from agenteval.errors import ConfigError, NotFoundError, StorageError
from agenteval.evalresult._prepare import filled_result, result_json
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalresult.provenance import current_environment, package_version
from agenteval.evalset.models import EvalSet
from agenteval.metric.models import EvalMetric

__all__ = ["BUNDLE_FORMAT", "BundleContents", "extract_cassettes", "is_bundle", "read_bundle", "write_bundle"]

BUNDLE_FORMAT = "agenteval-bundle"
"""The ``format`` of a bundle's manifest."""

_VERSION = 1
_MANIFEST = "manifest.json"
_ENVIRONMENT = "environment.json"
_HTML = "report.html"
_CASSETTES = "cassettes"
_METRICS = TypeAdapter(list[EvalMetric])
_DOCUMENT = TypeAdapter(dict[str, Any])


@dataclass(frozen=True, slots=True, kw_only=True)
class BundleContents:
    """What a bundle holds."""

    app_name: str
    """The app evaluated."""
    result: EvalSetResult
    """The result, in the reference's format."""
    eval_set: EvalSet | None
    """The eval set as evaluated (``None`` when the report did not hold it)."""
    metrics: list[EvalMetric]
    """The metrics."""
    html: str = ""
    """The report as one self-contained HTML page."""
    environment: Mapping[str, Any] = field(default_factory=dict)
    """Where the bundle was made: Python, platform, git revision and installed packages."""
    cassettes: Path | None = None
    """When writing: the cassette directory whose files of this eval set go in; when reading: ``None``."""
    has_cassettes: bool = False
    """When reading: whether the bundle holds cassettes (:func:`extract_cassettes` unpacks them)."""


def current_packages() -> dict[str, str]:
    """The installed distributions and their versions, by name, sorted."""
    from importlib.metadata import distributions

    found = {dist.metadata["Name"]: dist.version for dist in distributions() if dist.metadata["Name"]}
    return dict(sorted(found.items(), key=lambda item: item[0].lower()))


def bundle_environment() -> dict[str, Any]:
    """This process's environment, as a bundle records it: a result's (see ``Provenance``) and every package."""
    environment = current_environment()
    return {
        "agentevalVersion": environment["agenteval_version"],
        "pythonVersion": environment["python_version"],
        "platform": environment["platform"],
        "gitRevision": environment["git_revision"],
        "packages": current_packages(),
    }


def is_bundle(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file holding a zip archive (a bundle, if anything of agenteval's)."""
    return Path(path).is_file() and zipfile.is_zipfile(path)


def write_bundle(path: str | os.PathLike[str], contents: BundleContents) -> Path:
    """Write ``contents`` to ``path`` as one zip file, atomically (a crash leaves any previous file intact).

    Returns:
        The path written.

    Raises:
        ConfigError: The result cannot be written as JSON.
        StorageError: The file could not be written.
    """
    target = Path(path).expanduser()
    result = filled_result(contents.app_name, contents.result, set_timestamp=False)
    app, result_id, eval_set_id = contents.app_name, result.eval_set_result_id, result.eval_set_id
    members: dict[str, str] = {
        f"results/{app}/{result_id}.evalset_result.json": result_json(result, indent=2),
        f"data/{app}/{eval_set_id}.metrics.json": dump_models(contents.metrics),
        _ENVIRONMENT: json.dumps(dict(contents.environment), indent=2, ensure_ascii=False),
    }
    if contents.eval_set is not None:
        members[f"data/{app}/{eval_set_id}.evalset.json"] = contents.eval_set.to_json()
    if contents.html:
        members[_HTML] = contents.html
    cassette_files = _cassette_files(contents.cassettes, eval_set_id)
    manifest = {
        "format": BUNDLE_FORMAT,
        "version": _VERSION,
        "appName": app,
        "evalSetId": eval_set_id,
        "evalSetResultId": result_id,
        "createdAt": time.time(),
        "agentevalVersion": package_version(),
        "files": sorted([*members, *cassette_files]),
    }
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-", suffix=".tmp")
        os.close(handle)
        try:
            with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                archive.writestr(_MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False))
                for name, text in members.items():
                    archive.writestr(name, text)
                for name, source in cassette_files.items():
                    archive.write(source, name)
            os.chmod(temporary, 0o644)  # as the stores write results: a bundle is made to be shared
            os.replace(temporary, target)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    except OSError as exc:
        raise StorageError(f"write bundle {target}: {exc}") from exc
    return target


def _cassette_files(directory: Path | None, eval_set_id: str) -> dict[str, Path]:
    """The cassettes of ``eval_set_id`` under ``directory``, by their name in the bundle."""
    if directory is None or not (directory / eval_set_id).is_dir():
        return {}
    found: dict[str, Path] = {}
    for source in sorted((directory / eval_set_id).rglob("*.yaml")):
        relative = source.relative_to(directory)
        found[str(PurePosixPath(_CASSETTES, *relative.parts))] = source
    return found


def read_bundle(path: str | os.PathLike[str]) -> BundleContents:
    """Read a bundle back.

    Raises:
        NotFoundError: There is no such file.
        ConfigError: The file is not an agenteval bundle, or a document in it is malformed (the
            message names the bundle and the member).
    """
    source = Path(path).expanduser()
    if not source.exists():
        raise NotFoundError(f"bundle {source} does not exist")
    if not source.is_file():
        raise ConfigError(f"bundle {source} is not a regular file; give the .zip file report.bundle() wrote")
    try:
        with zipfile.ZipFile(source) as archive:
            names = set(archive.namelist())
            manifest = _manifest(source, archive, names)
            app = str(manifest.get("appName", ""))
            eval_set_id = str(manifest.get("evalSetId", ""))
            result_id = str(manifest.get("evalSetResultId", ""))

            def member(name: str) -> str | None:
                return archive.read(name).decode("utf-8") if name in names else None

            result_text = member(f"results/{app}/{result_id}.evalset_result.json")
            if result_text is None:
                raise ConfigError(f"bundle {source} holds no result (results/{app}/{result_id}.evalset_result.json)")
            result = parse_json(result_text, EvalSetResult, f"the result in bundle {source}")
            eval_set_text = member(f"data/{app}/{eval_set_id}.evalset.json")
            metrics_text = member(f"data/{app}/{eval_set_id}.metrics.json")
            environment_text = member(_ENVIRONMENT)
            environment: dict[str, Any] = {}
            if environment_text:
                environment = parse_json(environment_text, _DOCUMENT, f"the {_ENVIRONMENT} in bundle {source}")
            return BundleContents(
                app_name=app,
                result=result,
                eval_set=None
                if eval_set_text is None
                else parse_json(eval_set_text, EvalSet, f"the eval set in bundle {source}"),
                metrics=[]
                if metrics_text is None
                else parse_json(metrics_text, _METRICS, f"the metrics in bundle {source}"),
                html=member(_HTML) or "",
                environment=environment,
                has_cassettes=any(name.startswith(f"{_CASSETTES}/") for name in names),
            )
    except zipfile.BadZipFile as exc:
        raise ConfigError(f"{source} is not a bundle: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"bundle {source} is malformed: {exc}") from None


def _manifest(source: Path, archive: zipfile.ZipFile, names: set[str]) -> dict[str, Any]:
    if _MANIFEST not in names:
        raise ConfigError(f"{source} is a zip file but not an agenteval bundle: it has no {_MANIFEST}")
    manifest = parse_json(archive.read(_MANIFEST), _DOCUMENT, f"the {_MANIFEST} of bundle {source}")
    if manifest.get("format") != BUNDLE_FORMAT:
        raise ConfigError(f"{source} is a zip file but not an agenteval bundle: its {_MANIFEST} is not one")
    if not isinstance(manifest.get("version"), int) or manifest["version"] > _VERSION:
        raise ConfigError(
            f"bundle {source} has format version {manifest.get('version')!r}, newer than this agenteval reads"
            f" ({_VERSION}); upgrade agenteval"
        )
    return manifest


def extract_cassettes(path: str | os.PathLike[str], into: str | os.PathLike[str]) -> Path:
    """Unpack a bundle's cassettes into the directory ``into`` (as ``<eval set id>/<case id>/run-<n>.yaml``).

    Returns:
        ``into``, the cassette directory to replay from.

    Raises:
        ConfigError: The bundle holds no cassettes, or a member would land outside ``into``.
    """
    source, target = Path(path).expanduser(), Path(into)
    with zipfile.ZipFile(source) as archive:
        members = [info for info in archive.infolist() if info.filename.startswith(f"{_CASSETTES}/")]
        if not members:
            raise ConfigError(
                f"bundle {source} holds no cassettes: it was made from an evaluation without cassette=, so it cannot"
                " be replayed offline"
            )
        for info in members:
            if info.is_dir():
                continue
            relative = PurePosixPath(info.filename).relative_to(_CASSETTES)
            destination = ensure_inside(target, target.joinpath(*relative.parts))
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(archive.read(info))
    return target
