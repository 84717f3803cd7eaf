"""ROUGE scoring: equal to Google's rouge-score, plus the criterion built on it."""

from __future__ import annotations

import importlib
import math
import random
from collections.abc import Iterator
from typing import Any

import pytest

from agenteval.errors import ConfigError
from agenteval.evaluators.matching.rouge import DefaultTokenizer, RougeScore, Tokenizer, match_rouge, score_rouge
from agenteval.evaluators.matching.sentences import split_sentences
from agenteval.metric.criterion import RougeCriterion, RougeMeasure, RougeThreshold

ROUGE_TYPES = ("rouge1", "rouge2", "rouge3", "rouge4", "rougeL", "rougeLsum")

_WORDS_TEXT = (
    "the the the a a an of to and in is was it for on with as by at from that this be are were has had "
    "not but or cat dog cats dogs run runs running ran runner happy happily happiness hope hoping hopeful "
    "hopefulness hopping connect connected connecting connection connections relational conditional rational "
    "generalization generalizations falling controlling automatically geology triplicate callousness "
    "electricity electrical dying lying tying skies sky news innings agreed feed plastered motoring sing "
    "caresses ponies ties digitizer operator feudalism decisiveness sensitivity adjustable dependent adoption "
    "communism activate effective bowdlerize probate rate cease roll agent agents model models evaluate "
    "evaluation evaluations score scores scoring scored answer answers question questions tool tools call calls "
    "weather city cities price prices report reports study studies flies spied died dies enjoy enjoyment"
)
_WORDS = _WORDS_TEXT.split()
_ODD_WORDS_TEXT = (
    "Hello WORLD 42 3.14 1,000 2024 v2 gpt-4o e-mail U.S. don't it's 1st 100% #tag @user a/b x_y "
    "café naïve Straße İstanbul \u212aelvin 中文 日本語 ü Ωmega yyyy sky's"
)
_ODD_WORDS = _ODD_WORDS_TEXT.split()
_PUNCTUATION = (",", ".", "!", "?", ";", ":", " -", " —", "...", ")", "'s", '"')
_LINE_BREAKS = ("\n", "\n", "\n", "\n\n", " \n", "\n ", "\r\n")


def _word(rng: random.Random) -> str:
    word = rng.choice(_ODD_WORDS) if rng.random() < 0.1 else rng.choice(_WORDS)
    if rng.random() < 0.08:
        word = word.capitalize()
    if rng.random() < 0.12:
        word += rng.choice(_PUNCTUATION)
    return word


def _line(rng: random.Random, low: int = 1, high: int = 14) -> str:
    return " ".join(_word(rng) for _ in range(rng.randint(low, high)))


def _text(rng: random.Random) -> str:
    lines = [_line(rng) for _ in range(rng.randint(1, 5))]
    text = "".join(line + rng.choice(_LINE_BREAKS) for line in lines[:-1]) + lines[-1]
    return text + "\n" if rng.random() < 0.1 else text


def _edit(rng: random.Random, text: str) -> str:
    words = text.split(" ")
    for _ in range(rng.randint(0, 5)):
        position = rng.randrange(len(words))
        action = rng.random()
        if action < 0.35:
            words[position] = _word(rng)
        elif action < 0.6 and len(words) > 1:
            del words[position]
        elif action < 0.8:
            words.insert(position, _word(rng))
        else:
            other = rng.randrange(len(words))
            words[position], words[other] = words[other], words[position]
    return " ".join(words)


_SHORT = ("", " ", "\n", "\n\n", "!!!", "a", "the", "cat", "Cat.", "42", "中文", "a\nb", "the the", "run running")


def english_pairs(count: int = 600, seed: int = 1234) -> list[tuple[str, str]]:
    """Seeded target/prediction pairs covering the cases rouge-score has to get right."""
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.08:
            pairs.append((rng.choice(_SHORT), rng.choice(_SHORT + (_text(rng),))))
        elif kind < 0.14:
            pairs.append((_text(rng), rng.choice(_SHORT)))
        elif kind < 0.2:
            word = rng.choice(_WORDS)
            pairs.append(((word + " ") * rng.randint(1, 6), (word + " ") * rng.randint(1, 6) + _line(rng, 0, 3)))
        elif kind < 0.75:
            target = _text(rng)
            pairs.append((target, _edit(rng, target)))
        else:
            pairs.append((_text(rng), _text(rng)))
    return pairs


def corpus_words() -> set[str]:
    """Every token of the generated corpus, for the Porter stemmer's equality test."""
    tokenizer = DefaultTokenizer()
    return {token for pair in english_pairs() for text in pair for token in tokenizer.tokenize(text)}


def _close(ours: RougeScore, theirs: Any) -> bool:
    return all(
        math.isclose(a, b, rel_tol=0, abs_tol=1e-9)
        for a, b in zip((ours.precision, ours.recall, ours.fmeasure), theirs, strict=True)
    )


class _Whitespace:
    def tokenize(self, text: str) -> list[str]:
        return text.split()


@pytest.mark.parametrize("use_stemmer", [False, True], ids=["plain", "stemmed"])
def test_equal_to_rouge_score(use_stemmer: bool) -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer)
    pairs = english_pairs()
    assert len(pairs) >= 500
    mismatches = []
    for target, prediction in pairs:
        expected = scorer.score(target, prediction)
        for rouge_type in ROUGE_TYPES:
            got = score_rouge(target, prediction, rouge_type, use_stemmer=use_stemmer)
            if not _close(got, expected[rouge_type]):
                mismatches.append((rouge_type, target, prediction, got, expected[rouge_type]))
    assert mismatches == []


def test_corpus_exercises_the_edge_cases() -> None:
    pairs = english_pairs()
    assert any(not target.strip() for target, _ in pairs)
    assert any(not prediction.strip() for _, prediction in pairs)
    assert sum("\n" in target for target, _ in pairs) > 200
    scores = [score_rouge(t, p, "rougeLsum").fmeasure for t, p in pairs]
    assert 0 < sum(0 < s < 1 for s in scores) < len(pairs)


def test_tokenizer_equal_to_rouge_score() -> None:
    rouge_tokenize = pytest.importorskip("rouge_score.tokenize")
    porter = pytest.importorskip("nltk.stem.porter")
    stemmer = porter.PorterStemmer()
    texts = [text for pair in english_pairs(200) for text in pair]
    texts += ["İstanbul \u212a ǅ ß Ω", "ﬁne ｆｕｌｌ", "tab\tand\x0bvertical"]
    for text in texts:
        assert DefaultTokenizer().tokenize(text) == rouge_tokenize.tokenize(text, None)
        assert DefaultTokenizer(use_stemmer=True).tokenize(text) == rouge_tokenize.tokenize(text, stemmer)


def test_custom_tokenizer_equal_to_rouge_score_and_ignores_stemming() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), tokenizer=_Whitespace())
    for target, prediction in english_pairs(150, seed=99):
        expected = scorer.score(target, prediction)
        for rouge_type in ROUGE_TYPES:
            got = score_rouge(target, prediction, rouge_type, use_stemmer=True, tokenizer=_Whitespace())
            assert _close(got, expected[rouge_type]), (rouge_type, target, prediction)


def test_split_summaries_equal_to_rouge_score_with_the_same_splitter(monkeypatch: pytest.MonkeyPatch) -> None:
    # rouge-score calls nltk.sent_tokenize, whose model cannot be downloaded here; swapping in our
    # splitter checks everything around it.
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    monkeypatch.setattr(rouge_scorer.nltk, "sent_tokenize", split_sentences)
    scorer = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True, split_summaries=True)
    for target, prediction in english_pairs(150, seed=7):
        target, prediction = target.replace("\n", ". "), prediction.replace("\n", "! ")
        got = score_rouge(target, prediction, "rougeLsum", use_stemmer=True, split_summaries=True)
        assert _close(got, scorer.score(target, prediction)["rougeLsum"]), (target, prediction)


@pytest.mark.parametrize(
    ("rouge_type", "target", "prediction", "expected"),
    [
        ("rouge1", "testing one two", "testing", (1.0, 1 / 3, 0.5)),
        ("rouge2", "testing one two", "testing one", (1.0, 0.5, 2 / 3)),
        ("rougeL", "testing one two", "testing two", (1.0, 2 / 3, 0.8)),
        ("rouge10", "a b c d e f g h i j", "a b c d e f g h i j", (1.0, 1.0, 1.0)),
        ("rouge3", "a b", "a b", (0.0, 0.0, 0.0)),
        ("rougeLsum", "w1 w2 w3 w4 w5", "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", (0.4, 0.8, 0.4 * 0.8 * 2 / 1.2)),
        ("rougeLsum", "w1 w2 w3 w4 w5", "", (0.0, 0.0, 0.0)),
        ("rougeLsum", "", "w1", (0.0, 0.0, 0.0)),
        ("rougeLsum", "w1 w2 w3 w4 w5", "/", (0.0, 0.0, 0.0)),
        ("rouge1", "中文文本", "中文文本", (0.0, 0.0, 0.0)),
        ("rougeL", "", "", (0.0, 0.0, 0.0)),
    ],
)
def test_known_scores(rouge_type: str, target: str, prediction: str, expected: tuple[float, float, float]) -> None:
    score = score_rouge(target, prediction, rouge_type)
    assert (score.precision, score.recall, score.fmeasure) == pytest.approx(expected, abs=1e-12)


def test_rouge_lsum_sentence_splitting() -> None:
    target, prediction = "First sentence.\nSecond Sentence.", "Second sentence.\nFirst Sentence."
    assert score_rouge(target, prediction, "rougeLsum", use_stemmer=True).fmeasure == 1.0
    target, prediction = target.replace("\n", " "), prediction.replace("\n", " ")
    assert score_rouge(target, prediction, "rougeLsum", use_stemmer=True).fmeasure == pytest.approx(0.5)
    split = score_rouge(target, prediction, "rougeLsum", use_stemmer=True, split_summaries=True)
    assert split.fmeasure == 1.0


def test_custom_tokenizer_overrides_the_default() -> None:
    assert score_rouge("a-b", "a", "rouge1").fmeasure > 0
    assert score_rouge("a-b", "a", "rouge1", tokenizer=_Whitespace()).fmeasure == 0
    assert isinstance(_Whitespace(), Tokenizer)
    assert isinstance(DefaultTokenizer(), Tokenizer)


def test_default_tokenizer() -> None:
    assert DefaultTokenizer().tokenize("Hello, WORLD! it's 42-ish") == ["hello", "world", "it", "s", "42", "ish"]
    assert DefaultTokenizer(use_stemmer=True).tokenize("the friends had a meeting") == [
        "the",
        "friend",
        "had",
        "a",
        "meet",
    ]
    # Three characters or fewer are never stemmed: "ies" would otherwise become "i".
    assert DefaultTokenizer(use_stemmer=True).tokenize("ies dies skies") == ["ies", "die", "sky"]
    assert DefaultTokenizer().tokenize("你好，世界") == []


@pytest.mark.parametrize("rouge_type", ["", "rouge", "rougen", "rouge0", "rouge01", "rouge-1", "rougel", "ROUGE1"])
def test_invalid_rouge_types(rouge_type: str) -> None:
    with pytest.raises(ConfigError, match="rougeType" if not rouge_type else "invalid rouge type"):
        score_rouge("a", "b", rouge_type)


def _criterion(**fields: Any) -> RougeCriterion:
    return RougeCriterion.model_validate(fields)


def test_match_rouge_passes_when_every_threshold_is_met() -> None:
    # precision 2/2, recall 2/3, f1 0.8 for expected "testing one two" and actual "testing two".
    criterion = _criterion(rougeType="rouge1", threshold={"precision": 1.0, "recall": 0.6, "f1": 0.8})
    assert match_rouge("testing two", "testing one two", criterion) is None
    assert match_rouge("testing two", "testing one two", _criterion(rougeType="rougeL")) is None


def test_match_rouge_reports_the_missed_thresholds() -> None:
    criterion = _criterion(rougeType="rouge1", threshold={"recall": 0.7, "f1": 0.9})
    assert match_rouge("testing two", "testing one two", criterion) == (
        "rouge1 f1=0.800000 precision=1.000000 recall=0.666667; "
        "below threshold: recall 0.666667 < 0.7, f1 0.800000 < 0.9"
    )


@pytest.mark.parametrize(
    ("measure", "shown", "keys"),
    [
        (RougeMeasure.DEFAULT, "f1=0.800000 precision=1.000000 recall=0.666667", ["f1", "precision", "recall"]),
        (RougeMeasure.PRECISION, "precision=1.000000 recall=0.666667 f1=0.800000", ["precision", "recall", "f1"]),
        ("recall", "recall=0.666667 precision=1.000000 f1=0.800000", ["recall", "precision", "f1"]),
    ],
)
def test_measure_only_picks_the_value_named_first(measure: str, shown: str, keys: list[str]) -> None:
    criterion = _criterion(rougeType="rouge1", measure=measure, threshold={"precision": 1.0, "recall": 0.9})
    measures: dict[str, float] = {}
    reason = match_rouge("testing two", "testing one two", criterion, measures=measures)
    assert reason == f"rouge1 {shown}; below threshold: recall 0.666667 < 0.9"
    assert list(measures) == [f"rouge1_{key}" for key in keys]
    passing = _criterion(rougeType="rouge1", measure=measure, threshold={"precision": 1.0})
    passing_measures: dict[str, float] = {}
    assert match_rouge("testing two", "testing one two", passing, measures=passing_measures) is None
    assert passing_measures == measures


def test_match_rouge_measures_precision_recall_and_f1_whether_or_not_it_passes() -> None:
    measures: dict[str, float] = {}
    assert match_rouge("testing two", "testing one two", _criterion(rougeType="rougeL"), measures=measures) is None
    assert measures == {"rougeL_f1": pytest.approx(0.8), "rougeL_precision": 1.0, "rougeL_recall": pytest.approx(2 / 3)}
    ignored: dict[str, float] = {}
    assert match_rouge("x", "y", _criterion(ignore=True, rougeType="rougeL"), measures=ignored) is None
    assert ignored == {}


def test_match_rouge_target_is_expected_and_prediction_is_actual() -> None:
    criterion = _criterion(rougeType="rouge1", threshold={"precision": 1.0})
    assert match_rouge("testing", "testing one two", criterion) is None
    assert match_rouge("testing one two", "testing", criterion) is not None


def test_match_rouge_ignore_and_errors() -> None:
    assert match_rouge("x", "y", _criterion(ignore=True, threshold={"f1": 1.0})) is None
    with pytest.raises(ConfigError, match="requires rougeType"):
        match_rouge("x", "y", _criterion())
    invalid = RougeCriterion.model_construct(rouge_type="rougeX", threshold=RougeThreshold())
    with pytest.raises(ConfigError, match="invalid rouge type 'rougeX'"):
        match_rouge("x", "y", invalid)
    with pytest.raises(ConfigError, match="tokenizerName 'jieba' was not resolved"):
        match_rouge("x", "y", _criterion(rougeType="rouge1", tokenizerName="jieba"))


def test_match_rouge_uses_the_given_tokenizer_and_options() -> None:
    criterion = _criterion(rougeType="rouge1", tokenizerName="ws", threshold={"f1": 1.0})
    assert match_rouge("a-b", "a-b", criterion, tokenizer=_Whitespace()) is None
    assert match_rouge("a b", "a-b", criterion, tokenizer=_Whitespace()) is not None
    stemmed = _criterion(rougeType="rouge1", useStemmer=True, threshold={"f1": 1.0})
    assert match_rouge("connected", "connection", stemmed) is None
    assert match_rouge("connected", "connection", _criterion(rougeType="rouge1", threshold={"f1": 1.0})) is not None
    split = _criterion(rougeType="rougeLsum", splitSummaries=True, threshold={"f1": 1.0})
    assert match_rouge("Second one. First one.", "First one. Second one.", split) is None


class _Generating:
    def tokenize(self, text: str) -> Iterator[str]:
        yield from text.split()


class _Returning:
    def __init__(self, result: Any) -> None:
        self.result = result

    def tokenize(self, text: str) -> Any:
        return self.result


@pytest.mark.parametrize("rouge_type", ROUGE_TYPES)
def test_a_tokenizer_may_return_any_iterable_of_strings(rouge_type: str) -> None:
    target, prediction = "a b c d\ne f", "a c d\nb e f g"
    expected = score_rouge(target, prediction, rouge_type, tokenizer=_Whitespace())
    assert score_rouge(target, prediction, rouge_type, tokenizer=_Generating()) == expected
    criterion = _criterion(rougeType=rouge_type, tokenizerName="gen", threshold={"f1": 1.0})
    assert match_rouge("a b c d e", "a b c d e", criterion, tokenizer=_Generating()) is None


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (None, "returned NoneType, not an iterable of strings"),
        (3, "returned int, not an iterable of strings"),
        ("a b", "returned str, not an iterable of strings"),
        (b"a b", "returned bytes, not an iterable of strings"),
        (["a", 1], "returned a token that is not a string: int 1"),
        (("a", None), "returned a token that is not a string: NoneType null"),
    ],
)
def test_a_tokenizer_returning_something_else_is_a_clear_error(result: Any, message: str) -> None:
    criterion = _criterion(rougeType="rouge1", tokenizerName="mine")
    with pytest.raises(ConfigError) as named:
        match_rouge("a b", "a b", criterion, tokenizer=_Returning(result))
    assert str(named.value) == f'rouge tokenizer "mine" {message}'
    with pytest.raises(ConfigError) as unnamed:
        score_rouge("a b", "a b", "rouge1", tokenizer=_Returning(result))
    assert str(unnamed.value) == f"rouge tokenizer _Returning {message}"


def _bench_module() -> Any:
    # Imported by name: bench/ is a folder of scripts, which mypy also checks as top-level modules.
    return importlib.import_module("bench.rouge")


def test_bench_reports_the_speed_target_per_row_without_failing_on_timing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("rouge_score")
    bench_rouge = _bench_module()

    # Alternate rouge-score's time and ours: 4x everywhere except rouge2 without stemming (1.5x).
    times = iter([1.0, 0.25, 1.0, 0.25, 1.5, 1.0] + [1.0, 0.25] * 7)
    monkeypatch.setattr(bench_rouge, "_best_time", lambda run, repeat: next(times))
    assert bench_rouge.main(["--pairs", "5", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {tuple(line.split()[:2]): line for line in lines if line.startswith("rouge")}
    assert len(rows) == 10
    assert rows[("rouge2", "no")].endswith("1.50x  MISSED")
    assert all(line.endswith("4.00x  met") for key, line in rows.items() if key != ("rouge2", "no"))
    assert lines[-1].startswith("smallest speed-up: 1.50x, target >= 2x MISSED")


def test_bench_exits_1_on_a_score_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("rouge_score")
    bench_rouge = _bench_module()

    monkeypatch.setattr(bench_rouge.rouge, "score_rouge", lambda *args, **kwargs: RougeScore(2.0, 2.0, 2.0))
    assert bench_rouge.main(["--pairs", "2", "--repeat", "1"]) == 1
