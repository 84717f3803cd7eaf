"""The optional jieba tokenizer: Chinese text gets ROUGE scores the default tokenizer cannot give."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agenteval.cache.keys import settings_hash
from agenteval.errors import MissingDependencyError
from agenteval.evaluators.matching.rouge import Tokenizer, match_rouge, score_rouge
from agenteval.metric.criterion import RougeCriterion
from agenteval.tokenizers import JiebaTokenizer

TARGET = "我喜欢自然语言处理和机器学习"
PREDICTION = "我爱自然语言处理"
TARGET_WORDS = ["我", "喜欢", "自然语言", "处理", "和", "机器", "学习"]
PREDICTION_WORDS = ["我", "爱", "自然语言", "处理"]


@pytest.fixture(scope="module")
def tokenizer() -> JiebaTokenizer:
    pytest.importorskip("jieba")
    return JiebaTokenizer()


def test_segmentation(tokenizer: JiebaTokenizer) -> None:
    assert isinstance(tokenizer, Tokenizer)
    assert tokenizer.tokenize(TARGET) == TARGET_WORDS
    assert tokenizer.tokenize(PREDICTION) == PREDICTION_WORDS


def test_drops_whitespace_and_punctuation_and_lowercases_ascii(tokenizer: JiebaTokenizer) -> None:
    assert tokenizer.tokenize("Hello World, 你好！  ——") == ["hello", "world", "你好"]
    assert tokenizer.tokenize("") == []


def test_scores_match_a_hand_count(tokenizer: JiebaTokenizer) -> None:
    # Shared words: 我, 自然语言, 处理 (3 of the prediction's 4 words, of the target's 7).
    shared = [word for word in PREDICTION_WORDS if word in TARGET_WORDS]
    assert len(shared) == 3
    precision, recall = 3 / 4, 3 / 7
    f1 = 2 * precision * recall / (precision + recall)
    rouge1 = score_rouge(TARGET, PREDICTION, "rouge1", tokenizer=tokenizer)
    assert (rouge1.precision, rouge1.recall, rouge1.fmeasure) == pytest.approx((precision, recall, f1))
    # The shared words appear in the same order in both texts, so the LCS is 3 as well.
    rouge_l = score_rouge(TARGET, PREDICTION, "rougeL", tokenizer=tokenizer)
    assert (rouge_l.precision, rouge_l.recall) == pytest.approx((precision, recall))
    # Bigrams: target has 6, prediction 3; only (自然语言, 处理) is shared.
    rouge2 = score_rouge(TARGET, PREDICTION, "rouge2", tokenizer=tokenizer)
    assert (rouge2.precision, rouge2.recall) == pytest.approx((1 / 3, 1 / 6))

    default = score_rouge(TARGET, PREDICTION, "rouge1")
    assert (default.precision, default.recall, default.fmeasure) == (0.0, 0.0, 0.0)


def test_through_the_criterion(tokenizer: JiebaTokenizer) -> None:
    criterion = RougeCriterion.model_validate(
        {"rougeType": "rouge1", "tokenizerName": "jieba", "threshold": {"precision": 0.75, "recall": 0.4}}
    )
    assert match_rouge(PREDICTION, TARGET, criterion, tokenizer=tokenizer) is None
    default = RougeCriterion.model_validate({"rougeType": "rouge1", "threshold": {"precision": 0.75}})
    assert match_rouge(PREDICTION, TARGET, default) is not None


def test_user_dictionary(tmp_path: Path) -> None:
    pytest.importorskip("jieba")
    words = tmp_path / "words.txt"
    words.write_text("机器学习 100000\n", encoding="utf-8")
    assert JiebaTokenizer(user_dict=words).tokenize(TARGET)[-1] == "机器学习"


def test_missing_jieba(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jieba", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'agenteval\[jieba\]'"):
        JiebaTokenizer()


def test_a_changed_user_dictionary_changes_the_cache_identity(tmp_path: Path) -> None:
    """Scores made with one dictionary are not served for another: the file counts by its content."""
    pytest.importorskip("jieba")
    words = tmp_path / "words.txt"
    words.write_text("机器学习 100000\n", encoding="utf-8")
    before = settings_hash(JiebaTokenizer(user_dict=words))
    assert settings_hash(JiebaTokenizer(user_dict=words)) == before
    words.write_text("自然语言 100000\n", encoding="utf-8")
    assert settings_hash(JiebaTokenizer(user_dict=words)) != before
    assert settings_hash(JiebaTokenizer(user_dict=words, hmm=False)) != settings_hash(JiebaTokenizer(user_dict=words))
