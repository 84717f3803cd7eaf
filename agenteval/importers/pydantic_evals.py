"""Read pydantic-evals dataset files (YAML or JSON) as an eval set and metrics.

``pip install 'agenteval[pydantic-evals]'``. The files are the ones ``Dataset.to_file`` writes (the
``$schema`` key or ``# yaml-language-server`` line included); pydantic-evals' own loader checks them.

Example::

    from agenteval.importers.pydantic_evals import read_dataset

    dataset = read_dataset("tests/capitals.yaml")
    report = ae.Evaluator("my-app", runner).evaluate(dataset.eval_set, metrics=dataset.metrics)

Each case becomes a one-turn :class:`~agenteval.EvalCase`: its ``name`` is the case id (an unnamed
case is ``Case <n>``, counted from 1, as pydantic-evals reports it), its ``inputs`` the user's
message and its ``expected_output`` the expected reply (a string as it is, any other value as JSON),
and its ``metadata`` is kept in :attr:`ImportedDataset.case_metadata` (an eval set has no place for
it). The dataset's name is the eval set id.

Evaluators become metrics where agenteval has one that judges the same thing for every case:

- ``EqualsExpected`` on the dataset: :meth:`EvalMetric.final_response` ``("exact")``, named after
  the evaluator, which compares the reply with the expected output as text. Unlike pydantic-evals,
  which skips a case without an ``expected_output``, it compares that case's reply with ``""``.

Every other evaluator is left out with a :class:`~agenteval.errors.DroppedDataWarning` naming it
and where it was: the evaluators that judge a reply against a value given in the evaluator
(``Equals``, ``Contains``), the Python type of the output (``IsInstance``), timing and spans
(``MaxDuration``, ``HasMatchingSpan``), LLM judges (``LLMJudge``, ``GEval``), pydantic-evals'
agentic evaluators, report evaluators, your own evaluators, and any evaluator given to a single case
(agenteval's metrics apply to the whole eval set).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from agenteval._util.files import load_foreign_json, read_text_file
from agenteval.errors import ConfigError, DroppedDataWarning, MissingDependencyError, warn_user
from agenteval.evalset.models import EvalCase, EvalSet, Invocation
from agenteval.metric.models import EvalMetric

try:
    import yaml  # type: ignore[import-untyped]  # pyyaml ships no types; it comes with pydantic-evals
    from pydantic_evals import Dataset
    from pydantic_evals.evaluators import EqualsExpected
    from pydantic_evals.evaluators.spec import EvaluatorSpec

    from agenteval.importers._yaml import load_yaml
except ImportError:
    raise MissingDependencyError("reading pydantic-evals datasets", "pydantic-evals", "pydantic-evals") from None

__all__ = ["ImportedDataset", "read_dataset"]

_FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}
_EQUALS_EXPECTED = EqualsExpected.get_serialization_name()


@dataclass(frozen=True, slots=True)
class ImportedDataset:
    """A pydantic-evals dataset as agenteval data (see :func:`read_dataset`)."""

    eval_set: EvalSet
    """One case per dataset case, in order."""
    metrics: list[EvalMetric] = field(default_factory=list)
    """The metrics the dataset's evaluators map to."""
    case_metadata: dict[str, Any] = field(default_factory=dict)
    """Each case's ``metadata``, by case id (cases without metadata are left out)."""


def read_dataset(path: str | Path) -> ImportedDataset:
    """Read a pydantic-evals dataset file.

    Args:
        path: A ``.yaml``, ``.yml`` or ``.json`` file, as ``Dataset.to_file`` writes it.

    Returns:
        The eval set, the metrics its evaluators map to and the cases' metadata.

    Raises:
        ConfigError: The file cannot be read or is not a regular file (a FIFO, a directory), is not
            YAML or JSON, nests too deeply, holds an integer of more digits than Python reads, has
            YAML aliases that make it hold itself or grow past 100 times its size, is not a
            pydantic-evals dataset, or gives two cases the same id; the message names the file and
            what is wrong.

    Warns:
        DroppedDataWarning: Evaluators with no agenteval metric, named with where they were.
    """
    path = Path(path)
    data = _parsed(path)
    dataset_specs = _specs(path, data.pop("evaluators", []), "evaluators")
    report_specs = _specs(path, data.pop("report_evaluators", []), "report_evaluators")
    case_specs = _pop_case_specs(path, data)
    try:
        dataset = Dataset[Any, Any, Any].from_dict(data, default_name=path.stem)
    except ValidationError as error:
        raise ConfigError(f"{path} is not a pydantic-evals dataset: {_problems(error)}") from None
    except ValueError as error:
        raise ConfigError(f"{path} is not a pydantic-evals dataset: {error}") from None
    case_ids = [case.name or f"Case {number}" for number, case in enumerate(dataset.cases, 1)]
    _refuse_repeated_ids(path, case_ids)
    eval_set = EvalSet.of(
        dataset.name,
        [
            EvalCase.of(case_id, Invocation.of(_text(case.inputs), _expected(case.expected_output)))
            for case_id, case in zip(case_ids, dataset.cases, strict=True)
        ],
    )
    metrics = [_metric(path, spec) for spec in dataset_specs if spec.name == _EQUALS_EXPECTED]
    dropped = [f"{spec.name} (dataset)" for spec in dataset_specs if spec.name != _EQUALS_EXPECTED]
    for case_id, specs in zip(case_ids, case_specs, strict=True):
        dropped += [f"{spec.name} (case {case_id!r})" for spec in specs]
    dropped += [f"{spec.name} (report evaluator)" for spec in report_specs]
    if dropped:
        warn_user(f"{path}: evaluators with no agenteval metric, left out: {', '.join(dropped)}", DroppedDataWarning)
    metadata = {
        case_id: case.metadata
        for case_id, case in zip(case_ids, dataset.cases, strict=True)
        if case.metadata is not None
    }
    return ImportedDataset(eval_set=eval_set, metrics=metrics, case_metadata=metadata)


def _parsed(path: Path) -> dict[str, Any]:
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ConfigError(f"{path}: a pydantic-evals dataset file ends in .yaml, .yml or .json")
    if fmt == "json":
        data = load_foreign_json(path)
    else:
        try:
            data = load_yaml(read_text_file(path), str(path))
        except yaml.YAMLError as error:
            raise ConfigError(f"{path} is not YAML: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a pydantic-evals dataset: it holds a {type(data).__name__}, not a mapping")
    return data


def _refuse_repeated_ids(path: Path, case_ids: list[str]) -> None:
    """Refuse an unnamed case whose id (``Case <n>``) is another case's name: pydantic-evals refuses other repeats."""
    repeated = [case_id for case_id, count in Counter(case_ids).items() if count > 1]
    if repeated:
        raise ConfigError(
            f"{path}: more than one case has the id {' or '.join(map(repr, repeated))} (an unnamed case is"
            " 'Case <n>', counted from 1): give each case its own name"
        )


def _specs(path: Path, specs: Any, where: str) -> list[EvaluatorSpec]:
    if not isinstance(specs, list):
        raise ConfigError(f"{path}: {where} must be a list of evaluators, got {type(specs).__name__}")
    parsed: list[EvaluatorSpec] = []
    for index, spec in enumerate(specs):
        try:
            parsed.append(EvaluatorSpec.model_validate(spec))
        except ValidationError as error:
            raise ConfigError(f"{path}: {where}[{index}] is not an evaluator: {_problems(error)}") from None
    return parsed


def _pop_case_specs(path: Path, data: dict[str, Any]) -> list[list[EvaluatorSpec]]:
    """Take each case's evaluators out of ``data`` (copying the cases), one list per case."""
    cases = data.get("cases")
    if not isinstance(cases, list):
        return []  # the dataset's loader says what is wrong
    data["cases"] = [dict(case) if isinstance(case, dict) else case for case in cases]
    return [
        _specs(path, case.pop("evaluators", []) if isinstance(case, dict) else [], f"cases[{index}].evaluators")
        for index, case in enumerate(data["cases"])
    ]


def _metric(path: Path, spec: EvaluatorSpec) -> EvalMetric:
    """The metric of an ``EqualsExpected`` evaluator, named as pydantic-evals names its results."""
    try:
        evaluator = EqualsExpected(*spec.args, **spec.kwargs)
    except TypeError as error:
        raise ConfigError(f"{path}: evaluator {spec.name}: {error}") from None
    return EvalMetric.final_response("exact", name=evaluator.get_default_evaluation_name())


def _problems(error: ValidationError) -> str:
    """What pydantic found wrong, one ``where: what`` per problem (``cases[0].inputs: Field required``)."""
    problems = []
    for problem in error.errors(include_url=False):
        where = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in problem["loc"]).lstrip(".")
        problems.append(f"{where}: {problem['msg']}" if where else problem["msg"])
    return "; ".join(problems)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else to_json(value).decode()


def _expected(value: Any) -> str | None:
    return None if value is None else _text(value)
