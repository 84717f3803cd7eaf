"""The criterion tree: how each metric decides what counts as a match."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator
from enum import StrEnum
from typing import Any, Self

from pydantic import (
    Field,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from agenteval._util.redaction import (
    is_credential_name,
    is_env_reference,
    literal_secrets,
    looks_like_api_key,
    strip_userinfo,
    without_secrets,
)
from agenteval._util.trpc_json import CamelModel, GoFloat, GoInt, WireModel
from agenteval.errors import UnknownFieldWarning
from agenteval.evalset.models import RubricContent

__all__ = [
    "CategoryScore",
    "Criterion",
    "FinalResponseCriterion",
    "GenerationConfig",
    "JSONCriterion",
    "JSONMatchStrategy",
    "JudgeModelOptions",
    "JudgeTemplateOptions",
    "LLMCriterion",
    "LengthCriterion",
    "ResponseScorerOptions",
    "RougeCriterion",
    "RougeMeasure",
    "RougeThreshold",
    "Rubric",
    "TemplateVariableBinding",
    "TemplateVariableField",
    "TemplateVariableScope",
    "TemplateVariableSelector",
    "TemplateVariableSource",
    "TextCriterion",
    "TextMatchStrategy",
    "ToolTrajectoryCriterion",
    "ToolTrajectoryStrategy",
    "XMLCriterion",
    "XMLMatchStrategy",
    "expand_env",
]


class LengthCriterion(CamelModel):
    """Bounds on a text's length in Unicode code points (inclusive)."""

    ignore: bool = False
    """Skip the length check."""
    min: GoInt | None = None
    """Shortest allowed length."""
    max: GoInt | None = None
    """Longest allowed length."""


class TextMatchStrategy(StrEnum):
    """How two texts are compared."""

    DEFAULT = ""
    """Same as ``exact``."""
    EXACT = "exact"
    CONTAINS = "contains"
    REGEX = "regex"
    SKIP = "skip"
    """Pass after the length check."""


class TextCriterion(CamelModel):
    """Compare two texts."""

    ignore: bool = False
    """Always pass."""
    case_insensitive: bool = False
    """Lower-case both sides first (a regex pattern too)."""
    match_strategy: TextMatchStrategy = TextMatchStrategy.DEFAULT
    """``exact`` (default), ``contains``, ``regex`` or ``skip``."""
    length: LengthCriterion | None = None
    """Length bounds on the actual text."""
    compare_name: str = ""
    """Name of a registered custom text compare."""


class JSONMatchStrategy(StrEnum):
    """How two JSON values are compared."""

    DEFAULT = ""
    """Same as ``exact``."""
    EXACT = "exact"
    SKIP = "skip"


class JSONCriterion(CamelModel):
    """Compare two JSON values (tool arguments, tool results, JSON final responses)."""

    ignore: bool = False
    """Always pass."""
    ignore_tree: dict[str, Any] = Field(default_factory=dict)
    """Keys to ignore (``true``), recursively for nested objects."""
    only_tree: dict[str, Any] = Field(default_factory=dict)
    """Compare only these keys (``true``), recursively for nested objects."""
    match_strategy: JSONMatchStrategy = JSONMatchStrategy.DEFAULT
    """``exact`` (default) or ``skip``."""
    number_tolerance: GoFloat | None = None
    """Absolute tolerance for numbers (default ``1e-6``)."""
    valid: bool = False
    """The actual value must be valid JSON."""
    json_schema: Any = Field(None, alias="schema")
    """A JSON Schema (Draft 2020-12) the actual value must satisfy."""
    compare_name: str = ""
    """Name of a registered custom JSON compare."""


class RougeMeasure(StrEnum):
    """Which ROUGE value a mismatch reason reports."""

    DEFAULT = ""
    F1 = "f1"
    PRECISION = "precision"
    RECALL = "recall"


class RougeThreshold(CamelModel):
    """Minimum ROUGE precision, recall and F1; all must be met."""

    precision: GoFloat = 0.0
    recall: GoFloat = 0.0
    f1: GoFloat = 0.0


_ROUGE_TYPE = re.compile(r"rouge([1-9][0-9]*|L|Lsum)")


class RougeCriterion(CamelModel):
    """Score a final response against the expected one with ROUGE."""

    ignore: bool = False
    """Always pass."""
    rouge_type: str = ""
    """``rouge1``, ``rouge2``, … ``rougeL`` or ``rougeLsum``."""
    measure: RougeMeasure = RougeMeasure.DEFAULT
    """Value shown in a mismatch reason (``f1`` by default); does not change pass or fail."""
    threshold: RougeThreshold | None = None
    """Minimum precision, recall and F1."""
    use_stemmer: bool = False
    """Porter-stem tokens longer than three characters."""
    split_summaries: bool = False
    """For ``rougeLsum``: split texts into sentences."""
    tokenizer_name: str = ""
    """Name of a registered tokenizer (e.g. for Chinese text)."""

    @field_validator("rouge_type")
    @classmethod
    def _known_rouge_type(cls, value: str) -> str:
        if value and not _ROUGE_TYPE.fullmatch(value):
            raise ValueError(f"unknown rougeType {value!r}: use rouge1, rouge2, …, rougeL or rougeLsum")
        return value


class XMLMatchStrategy(StrEnum):
    """How XML is compared; only ``skip`` exists."""

    DEFAULT = ""
    SKIP = "skip"


class XMLCriterion(CamelModel):
    """Check an XML final response."""

    ignore: bool = False
    """Always pass."""
    valid: bool = False
    """The actual text must be well-formed XML with a single root."""
    match_strategy: XMLMatchStrategy = XMLMatchStrategy.DEFAULT
    """Must be ``skip``."""
    compare_name: str = ""
    """Name of a registered custom XML compare, which then decides instead of the rules above.

    An agenteval extension: the reference takes an XML compare only in Go code, and ignores this key.
    """


class FinalResponseCriterion(CamelModel):
    """Compare final responses; every configured sub-criterion must pass."""

    text: TextCriterion | None = None
    json_: JSONCriterion | None = Field(None, alias="json")
    rouge: RougeCriterion | None = None
    xml: XMLCriterion | None = None
    compare_name: str = ""
    """Name of a registered custom final-response compare."""


class ToolTrajectoryStrategy(CamelModel):
    """How one pair of tool calls is compared; an unset part is not compared."""

    name: TextCriterion | None = None
    arguments: JSONCriterion | None = None
    result: JSONCriterion | None = None


class ToolTrajectoryCriterion(CamelModel):
    """Compare the tool calls of a turn."""

    default_strategy: ToolTrajectoryStrategy | None = None
    """Strategy for tools without their own."""
    tool_strategy: dict[str, ToolTrajectoryStrategy] = Field(default_factory=dict)
    """Per-tool strategies, by tool name."""
    order_sensitive: bool = False
    """Calls must appear in the expected order."""
    subset_matching: bool = False
    """Extra actual calls are allowed."""
    compare_name: str = ""
    """Name of a registered custom trajectory compare."""


_ENV_REFERENCE = re.compile(r"\$(?:\{([^}]*)\}|(\{)|([A-Za-z_][A-Za-z0-9_]*)|([*#$@!?\-0-9]))")


def expand_env(text: str) -> str:
    """Replace ``${VAR}`` and ``$VAR`` with environment values, as Go's ``os.ExpandEnv`` does.

    Unset variables become ``""`` (unlike :func:`os.path.expandvars`, which leaves them), and a
    ``$`` not followed by a name stays as it is.

    Args:
        text: Text with references.

    Returns:
        The expanded text.
    """

    def substitute(match: re.Match[str]) -> str:
        braced, unclosed, bare, special = match.groups()
        if unclosed is not None:
            return ""
        return os.environ.get(braced or bare or special or "", "")

    return _ENV_REFERENCE.sub(substitute, text)


class GenerationConfig(WireModel):
    """Sampling options for a judge model (snake_case keys, as the reference writes them)."""

    max_tokens: GoInt | None = None
    temperature: GoFloat | None = None
    top_p: GoFloat | None = None
    stream: bool = False
    """Always ``false`` for judges."""
    stop: list[str] = Field(default_factory=list)
    presence_penalty: GoFloat | None = None
    frequency_penalty: GoFloat | None = None
    logprobs: bool | None = None
    top_logprobs: GoInt | None = None
    reasoning_effort: str | None = None
    thinking_enabled: bool | None = None
    thinking_tokens: GoInt | None = None
    thinking_level: str | None = None

    @model_serializer(mode="wrap")
    def _always_write_stream(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Go writes "stream" even when false; keep files byte-close to the reference's.
        data = handler(self)
        if isinstance(data, dict):
            data.setdefault("stream", False)
        return data


class JudgeModelOptions(CamelModel):
    """Which model judges, and how it is reached.

    ``providerName``, ``modelName``, ``variant``, ``baseURL`` and ``apiKey`` expand ``${VAR}`` and
    ``$VAR`` from the environment when loaded; a field still holding its expanded value is written
    back as the reference, so editing a metrics file keeps its ``${VAR}`` (``apiKey`` included: a
    reference names where the secret is, it is not one).

    Nothing written (metrics files, results, reports) holds a secret. A literal ``apiKey`` (or the
    Python name ``api_key``) is kept in memory and never written. So is every other credential
    (a key whose name ends in key, token, secret, password, authorization, credential…:
    ``extraFields.api_key``, ``headers.Authorization``) at any depth, unless it is an environment
    reference (``"Bearer ${TOKEN}"``), which is written as it is; the ``user:password@`` of a URL
    (``baseURL``) is left out. Such a literal read from a file gets an
    :class:`~agenteval.errors.UnknownFieldWarning`, since rewriting the file loses it. An unknown
    top-level key that holds a literal credential (``token``, or a misspelt ``apiKey`` such as
    ``API-KEY``, whatever it holds) is dropped with an :class:`~agenteval.errors.UnknownFieldWarning`:
    unknown keys are neither used nor written as secrets.
    """

    provider_name: str = ""
    """Provider (e.g. ``openai``)."""
    model_name: str = ""
    """Model name."""
    variant: str = ""
    """Provider variant (e.g. ``deepseek`` for an OpenAI-compatible endpoint)."""
    base_url: str = Field("", alias="baseURL")
    """Endpoint base URL."""
    api_key: str = Field("", alias="apiKey", exclude=True, repr=False)
    """API key; kept in memory, written only as the ``${VAR}`` reference it was loaded from."""
    extra_fields: dict[str, Any] = Field(default_factory=dict)
    """Extra request fields sent to the provider."""
    num_samples: GoInt | None = None
    """Judge samples per turn (default 1)."""
    generation_config: GenerationConfig | None = None
    """Sampling options."""
    timeout_seconds: GoFloat | None = None
    """Seconds one request to the judge may take in total, retries included (default 120).

    An agenteval extension: the reference ignores this key. The Evaluator's ``judge_timeout`` overrides it."""
    max_retries: GoInt | None = None
    """Retries after a failed attempt (a connection error, a timeout, HTTP 408, 409, 429 or 5xx), within
    :attr:`timeout_seconds` (default 2).

    An agenteval extension: the reference ignores this key. The Evaluator's ``judge_max_retries`` overrides it."""

    @field_validator("timeout_seconds")
    @classmethod
    def _positive_timeout(cls, value: float | None) -> float | None:
        if value is not None and not value > 0:
            raise ValueError(f"timeoutSeconds must be a positive number of seconds, got {value}")
        return value

    @field_validator("max_retries")
    @classmethod
    def _retry_budget(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"maxRetries must be 0 or more, got {value}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _match_keys_like_go(cls, data: Any, info: ValidationInfo) -> Any:
        # Go matches JSON keys case-insensitively; an "APIKey" must still be treated as the secret.
        if not isinstance(data, dict):
            return data
        known = set(cls.model_fields) | {field.alias for field in cls.model_fields.values() if field.alias}
        canonical = {(field.alias or name).lower(): field.alias or name for name, field in cls.model_fields.items()}
        matched: dict[str, Any] = {}
        for key, value in data.items():
            target = canonical.get(key.lower(), key) if isinstance(key, str) else key
            if target != key and target in data:
                continue
            if isinstance(target, str) and target not in known and _unknown_secret(target, value, info):
                continue
            matched[target] = value
        if info.mode == "json":
            _warn_unwritten_secrets(matched, known, info)
        return matched

    _env_references: dict[str, tuple[str, str]] = PrivateAttr(default_factory=dict)
    """Fields loaded from environment references: field name -> (the reference, what it expanded to)."""

    @model_validator(mode="after")
    def _expand_env(self) -> Self:
        for name in _ENV_FIELDS:
            reference = getattr(self, name)
            value = expand_env(reference)
            if value != reference:
                self.__dict__[name] = value
                self._env_references[name] = (reference, value)
        return self

    def __eq__(self, other: object) -> bool:
        # Where a value came from (a reference or a literal) does not make two options differ.
        if not isinstance(other, JudgeModelOptions):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and (self.__pydantic_extra__ or {}) == (other.__pydantic_extra__ or {})
        )

    __hash__ = None  # type: ignore[assignment]

    def request_extra_fields(self) -> dict[str, Any]:
        """:attr:`extra_fields` as sent to the provider: its credentials' ``${VAR}`` references expanded.

        Only credentials (``"api_key": "${EXTRA_KEY}"``, ``"Authorization": "Bearer ${TOKEN}"``) are
        expanded, as they are written that way to stay out of files; other values are sent as they are.
        """
        expanded: dict[str, Any] = _with_credentials_expanded(self.extra_fields)
        return expanded

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # What a notebook shows is what a file would hold: no secret.
        for name, value in super().__repr_args__():
            if name is not None and is_credential_name(name) and not is_env_reference(value):
                continue
            yield name, without_secrets(value)

    @model_serializer(mode="wrap")
    def _write_without_secrets(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        # A field still holding what its ${VAR} expanded to is written as the reference, so saving
        # never replaces a reference by the environment's value; then every secret is left out.
        data = handler(self)
        if not isinstance(data, dict):
            return data
        for name, (reference, value) in self._env_references.items():
            if getattr(self, name) != value or not _selected(name, info):
                continue
            field = type(self).model_fields[name]
            key = field.alias or name if info.by_alias is not False else name
            if name == "api_key":
                data = _with_api_key(data, key, reference)
            else:
                data[key] = reference
        return without_secrets(data)


_ENV_FIELDS = ("provider_name", "model_name", "variant", "base_url", "api_key")


def _with_credentials_expanded(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: expand_env(item)
            if isinstance(key, str) and is_credential_name(key) and is_env_reference(item)
            else _with_credentials_expanded(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_with_credentials_expanded(item) for item in value]
    return value


_BEFORE_API_KEY = frozenset(
    {"provider_name", "providerName", "model_name", "modelName", "variant", "base_url", "baseURL"}
)
"""The keys written before ``apiKey`` (the reference's field order)."""


def _with_api_key(data: dict[str, Any], key: str, reference: str) -> dict[str, Any]:
    """``data`` with ``key: reference`` in the reference's place, after the connection fields."""
    placed: dict[str, Any] = {}
    for name, value in data.items():
        if key not in placed and name not in _BEFORE_API_KEY:
            placed[key] = reference
        placed[name] = value
    placed.setdefault(key, reference)
    return placed


def _selected(name: str, info: SerializationInfo) -> bool:
    """Whether a dump's ``include`` / ``exclude`` let field ``name`` through."""
    include, exclude = info.include, info.exclude
    return (include is None or name in include) and not (exclude is not None and name in exclude)


def _source(info: ValidationInfo) -> str:
    source = info.context.get("source") if isinstance(info.context, dict) else None
    return f"{source}: " if source else ""


def _unknown_secret(key: str, value: Any, info: ValidationInfo) -> bool:
    """Whether unknown key ``key`` holds a secret, and so is dropped (with a warning saying so)."""
    if looks_like_api_key(key):
        message = (
            f"judgeModel key {key!r} was dropped because it looks like a secret (a misspelt apiKey): unknown keys "
            'are written back to files, so it is neither used nor kept; spell it "apiKey", which is never written '
            '(better, "apiKey": "${YOUR_API_KEY_VARIABLE}")'
        )
    elif is_credential_name(key) and not is_env_reference(value):
        message = (
            f"judgeModel key {key!r} was dropped because it looks like a secret: unknown keys are written back to "
            "files, so it is neither used nor kept; to keep it, put it in an environment variable and write "
            f'"{key}": "${{YOUR_VARIABLE}}"'
        )
    else:
        return False
    warnings.warn(_source(info) + message, UnknownFieldWarning, stacklevel=2)
    return True


def _warn_unwritten_secrets(data: dict[str, Any], known: set[str], info: ValidationInfo) -> None:
    """Warn about the literal secrets of a document that will not be written back (see JudgeModelOptions)."""
    nested = {key: value for key, value in data.items() if key not in known}
    nested["extraFields"] = data.get("extraFields", data.get("extra_fields"))
    paths = [path for path, _ in literal_secrets(nested)]
    base_url = data.get("baseURL", data.get("base_url"))
    if isinstance(base_url, str) and strip_userinfo(base_url) != base_url:
        paths.append("baseURL (the user:password@ of the URL)")
    if paths:
        warnings.warn(
            f"{_source(info)}judgeModel holds literal secrets at {', '.join(paths)}: they are used, but never written "
            "to metrics files, results or reports, so rewriting this file loses them; put each in an environment "
            'variable and write a reference instead, e.g. "${YOUR_VARIABLE}"',
            UnknownFieldWarning,
            stacklevel=2,
        )


class Rubric(CamelModel):
    """One thing an LLM judge checks."""

    id: str = ""
    """Rubric id, unique within the metric."""
    content: RubricContent | None = None
    """What the judge checks."""
    description: str = ""
    """Human-facing note, not judged."""
    type: str = ""
    """Free-form classification."""


class CategoryScore(CamelModel):
    """A category label a categorical judge may answer, with its score."""

    label: str = ""
    score: GoFloat = 0.0

    @model_serializer(mode="wrap")
    def _always_write_score(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Go writes a category's score even when it is 0.
        data = handler(self)
        if isinstance(data, dict):
            data.setdefault("score", 0)
        return data


class ResponseScorerOptions(CamelModel):
    """Options for template response scorers."""

    categories: list[CategoryScore] = Field(default_factory=list)
    """Labels and scores for the ``categorical`` scorer."""


class TemplateVariableScope(StrEnum):
    """Where a template variable's value comes from."""

    ACTUAL = "actual"
    EXPECTED = "expected"
    METRIC = "metric"


class TemplateVariableField(StrEnum):
    """Which field a template variable reads."""

    USER_CONTENT = "userContent"
    FINAL_RESPONSE = "finalResponse"
    TRACE_STEP_INPUT = "traceStepInput"
    TRACE_STEP_OUTPUT = "traceStepOutput"
    TRACE_STEP_TOOLS = "traceStepTools"
    TRACE_STEP_SKILLS = "traceStepSkills"
    RUBRICS = "rubrics"


class TemplateVariableSelector(CamelModel):
    """Selects a trace step."""

    node_id: str = Field("", alias="nodeID")
    """Graph node id of the step (the last matching step is used)."""


class TemplateVariableSource(CamelModel):
    """Where a template variable's value is read from."""

    scope: TemplateVariableScope | None = None
    field: TemplateVariableField | None = None
    selector: TemplateVariableSelector | None = None
    path: str = ""
    """Restricted JSON path applied to the value (``$``, ``.key``, ``[index]``)."""


class TemplateVariableBinding(CamelModel):
    """Binds a ``{{name}}`` placeholder to a value source."""

    template_variable: str = ""
    source: TemplateVariableSource | None = None


class JudgeTemplateOptions(CamelModel):
    """A user-written judge prompt and how its reply is scored."""

    prompt: str = ""
    """Prompt with ``{{placeholder}}`` variables."""
    response_scorer_name: str = ""
    """``single_score``, ``rubric_scores``, ``boolean``, ``categorical`` or a registered name."""
    structured_output_name: str = ""
    """Registered structured-output schema; defaults to the scorer's own."""
    response_scorer_options: ResponseScorerOptions | None = None
    variable_bindings: list[TemplateVariableBinding] = Field(default_factory=list)
    sample_aggregator_name: str = ""
    """Default ``majority_vote``."""
    invocation_aggregator_name: str = ""
    """Default ``average``."""


class LLMCriterion(CamelModel):
    """Configuration of an LLM judge."""

    rubrics: list[Rubric] = Field(default_factory=list)
    """Rubrics the judge scores."""
    judge_model: JudgeModelOptions | None = None
    """The judge model."""
    sample_parallelism_enabled: bool = False
    """Request samples concurrently."""
    sample_parallelism: GoInt = 0
    """Most concurrent sample requests (default: CPU count)."""
    template: JudgeTemplateOptions | None = None
    """Template judge configuration (``llm_judge_template``)."""


class Criterion(CamelModel):
    """Evaluator-specific configuration of a metric."""

    tool_trajectory: ToolTrajectoryCriterion | None = None
    final_response: FinalResponseCriterion | None = None
    llm_judge: LLMCriterion | None = None
