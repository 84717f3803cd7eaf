"""Speed of ``agenteval``'s ROUGE scorer against Google's ``rouge-score`` on the same pairs.

Run with ``python bench/rouge.py [--pairs N] [--repeat R] [--seed S]`` (needs ``rouge-score``).

Generates N seeded English target/prediction pairs shaped like agent answers (two to six
sentences, one per line, the prediction a paraphrase-like edit of the target or an unrelated
text), checks that both scorers agree on every pair, then times both in this process for each
ROUGE type with and without stemming and prints pairs per second, the speed-up and whether it meets
the target (at least 2x), then the smallest speed-up. Each timing is the best of R runs, and every run
starts with empty stem caches so that building them is counted.

Exit status: 1 when a score differs from ``rouge-score``, 2 when ``rouge-score`` is missing, else 0.
A missed speed target is reported but does not change the exit status, since timings are noisy.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script from a source tree: make ``agenteval`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agenteval.evaluators.matching import porter, rouge

ROUGE_TYPES = ("rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum")
TARGET_SPEED_UP = 2.0

_FUNCTION_WORDS_TEXT = (
    "the the the a a an of of to to and and in in is is was it for on with as by at from that this be are "
    "were has had have not but or which their they we you he she its our can will would should may also"
)
_FUNCTION_WORDS = _FUNCTION_WORDS_TEXT.split()
_ROOTS_TEXT = (
    "connect relate condition evaluate score agent model answer question result generate compute return "
    "happy hope fall control automate geology triplicate callous electric decide sense adjust depend adopt "
    "commune activate effect run walk talk travel plan measure compare summarize retrieve search rank order "
    "tool call request respond message document report analyze improve reduce increase predict train test "
    "user system server client network cache store memory process thread task queue event error value "
    "weather city price market policy report study research science history language number table figure"
)
_ROOTS = _ROOTS_TEXT.split()
_SUFFIXES = ("", "", "", "s", "ed", "ing", "er", "ers", "ly", "ness", "ation", "ations", "ive", "ment", "al", "ity")
_NUMBERS = ("1", "2", "3", "10", "42", "2024", "3.5", "100%", "v2")
_PUNCTUATION = (",", ",", ";", ":", " -", " (see above)", "'s")


def _word(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(_FUNCTION_WORDS)
    if roll < 0.5:
        return rng.choice(_NUMBERS)
    word = rng.choice(_ROOTS) + rng.choice(_SUFFIXES)
    return word.capitalize() if rng.random() < 0.05 else word


def _sentence(rng: random.Random) -> str:
    words = [_word(rng) for _ in range(rng.randint(6, 22))]
    for _ in range(rng.randint(0, 2)):
        position = rng.randrange(len(words))
        words[position] += rng.choice(_PUNCTUATION)
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice((".", ".", ".", "!", "?"))


def _edit(rng: random.Random, sentence: str) -> str:
    words = sentence.split()
    for _ in range(rng.randint(1, 6)):
        action = rng.random()
        position = rng.randrange(len(words))
        if action < 0.3:
            words[position] = _word(rng)
        elif action < 0.5 and len(words) > 2:
            del words[position]
        elif action < 0.7:
            words.insert(position, _word(rng))
        else:
            other = rng.randrange(len(words))
            words[position], words[other] = words[other], words[position]
    return " ".join(words)


def make_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """Return ``count`` (target, prediction) pairs, the same for the same seed."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        target = [_sentence(rng) for _ in range(rng.randint(2, 6))]
        if rng.random() < 0.8:
            prediction = [_edit(rng, sentence) for sentence in target if rng.random() < 0.9]
            if rng.random() < 0.5:
                prediction.insert(rng.randint(0, len(prediction)), _sentence(rng))
        else:
            prediction = [_sentence(rng) for _ in range(rng.randint(1, 6))]
        pairs.append(("\n".join(target), "\n".join(prediction)))
    return pairs


def _clear_caches() -> None:
    rouge._STEMS.clear()
    porter.stem.cache_clear()


def _best_time(run: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        _clear_caches()
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _verdict(speed_up: float) -> str:
    return "met" if speed_up >= TARGET_SPEED_UP else "MISSED"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; return a process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=1000, help="number of generated pairs (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per cell, best kept (default 3)")
    parser.add_argument("--seed", type=int, default=20250101, help="random seed")
    args = parser.parse_args(argv)
    try:
        rouge_scorer: Any = importlib.import_module("rouge_score.rouge_scorer")
    except ImportError:
        print("rouge-score is not installed: pip install rouge-score", file=sys.stderr)
        return 2

    pairs = make_pairs(args.pairs, args.seed)
    tokens = sum(len(rouge.DefaultTokenizer().tokenize(target + " " + prediction)) for target, prediction in pairs)
    print(f"{len(pairs)} pairs, {tokens / len(pairs):.0f} tokens per pair on average, best of {args.repeat} runs")
    goal = f"target >= {TARGET_SPEED_UP:g}x"
    print(f"{'type':<10} {'stem':<5} {'rouge-score /s':>15} {'agenteval /s':>13} {'speed-up':>9}  {goal}")
    slowest = float("inf")
    for rouge_type in ROUGE_TYPES:
        for use_stemmer in (False, True):
            reference = rouge_scorer.RougeScorer([rouge_type], use_stemmer=use_stemmer)
            expected = [reference.score(target, prediction)[rouge_type] for target, prediction in pairs]
            for (target, prediction), want in zip(pairs, expected, strict=True):
                got = rouge.score_rouge(target, prediction, rouge_type, use_stemmer=use_stemmer)
                if (got.precision, got.recall, got.fmeasure) != tuple(want):
                    print(f"MISMATCH {rouge_type} stem={use_stemmer}: {got} != {want}", file=sys.stderr)
                    return 1

            def run_reference(scorer: Any = reference, kind: str = rouge_type) -> None:
                for target, prediction in pairs:
                    scorer.score(target, prediction)[kind]

            def run_ours(kind: str = rouge_type, stemming: bool = use_stemmer) -> None:
                for target, prediction in pairs:
                    rouge.score_rouge(target, prediction, kind, use_stemmer=stemming)

            theirs = len(pairs) / _best_time(run_reference, args.repeat)
            ours = len(pairs) / _best_time(run_ours, args.repeat)
            speed_up = ours / theirs
            slowest = min(slowest, speed_up)
            stemming = "yes" if use_stemmer else "no"
            timings = f"{theirs:>15,.0f} {ours:>13,.0f} {speed_up:>8.2f}x"
            print(f"{rouge_type:<10} {stemming:<5} {timings}  {_verdict(speed_up)}")
    print(f"smallest speed-up: {slowest:.2f}x, {goal} {_verdict(slowest)}; every score identical to rouge-score")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
