"""A Chinese word tokenizer for ROUGE, built on the optional ``jieba`` package.

ROUGE's default tokenizer keeps only ASCII letters and digits, so Chinese text scores 0; this one
segments it into words first::

    tokenizer = JiebaTokenizer()
    tokenizer.tokenize("我喜欢自然语言处理")  # ['我', '喜欢', '自然语言', '处理']

Install it with ``pip install 'agenteval[jieba]'``.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import string
import warnings
from types import ModuleType
from typing import Any

from agenteval.errors import MissingDependencyError

__all__ = ["JiebaTokenizer"]

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _import_jieba() -> ModuleType:
    try:
        with warnings.catch_warnings():
            # jieba imports pkg_resources when it is available, which warns on recent setuptools;
            # that is jieba's business, not a reason to fail under ``-W error``.
            warnings.simplefilter("ignore")
            return importlib.import_module("jieba")
    except ImportError as error:
        raise MissingDependencyError("the jieba tokenizer", "jieba", "jieba") from error


class JiebaTokenizer:
    """Segment text with jieba, keeping the words that contain a letter or a digit.

    Whitespace and punctuation come out of jieba as tokens of their own; they are dropped. ASCII
    letters are lower-cased, as the default ROUGE tokenizer does; other text is left as it is.
    """

    def __init__(
        self,
        *,
        dictionary: str | os.PathLike[str] | None = None,
        user_dict: str | os.PathLike[str] | None = None,
        hmm: bool = True,
    ) -> None:
        """Create a tokenizer.

        Args:
            dictionary: A jieba main dictionary file to use instead of jieba's default one.
            user_dict: A jieba user dictionary (one ``word [freq] [tag]`` per line) to add.
            hmm: Let jieba's HMM find words missing from the dictionary.

        Raises:
            MissingDependencyError: ``jieba`` is not installed.
        """
        jieba = _import_jieba()
        self._identity = {
            "dictionary": _file_identity(dictionary),
            "user dictionary": _file_identity(user_dict),
            "hmm": hmm,
            "jieba": getattr(jieba, "__version__", ""),
        }
        segmenter: Any
        if dictionary is None and user_dict is None:
            segmenter = jieba.dt  # the shared default: its dictionary loads once per process
        elif dictionary is None:
            segmenter = jieba.Tokenizer()
        else:
            segmenter = jieba.Tokenizer(os.fspath(dictionary))
        if user_dict is not None:
            # Given a path, jieba leaves the file open; given a file, it reads it.
            with open(user_dict, "rb") as words:
                segmenter.load_userdict(words)
        self._segmenter = segmenter
        self._hmm = hmm

    def cache_identity(self) -> object:
        """What decides the tokens, for the cache's score keys: the dictionaries by content, hmm, jieba's version."""
        return self._identity

    def tokenize(self, text: str) -> list[str]:
        """Return the words of ``text`` in order."""
        words = self._segmenter.cut(text, HMM=self._hmm)
        return [word.translate(_ASCII_LOWER) for word in words if any(char.isalnum() for char in word)]


def _file_identity(path: str | os.PathLike[str] | None) -> str | None:
    """A dictionary file by a hash of its content (not its path): editing it re-scores, moving it does not."""
    if path is None:
        return None
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()
