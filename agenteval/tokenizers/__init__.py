"""Tokenizers for ROUGE beyond the default English one.

Register one under a name to use it from a metric file's ``tokenizerName``. Each tokenizer here
imports its third-party package only when it is created.
"""

from agenteval.tokenizers.jieba import JiebaTokenizer

__all__ = ["JiebaTokenizer"]
