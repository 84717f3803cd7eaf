"""How far one ``Evaluator.evaluate()`` of the bundled example travels through agenteval.

Traces every Python call (``sys.setprofile`` and ``threading.setprofile``) while the bundled math example (5 cases, 2
metrics, local stores in a temporary directory) is evaluated, and counts the distinct agenteval functions entered,
the modules they live in and the calls made. Comprehensions, lambdas and generator expressions are counted apart,
as the architecture review did. The first call pays for lazy imports and first-use set-up, so the call measured is the
second one, with a first call run before it (``--cold`` measures the first instead).

    python bench/call_path.py            # the steady-state call
    python bench/call_path.py --cold     # the first call in a fresh process
    python bench/call_path.py --list     # also list every function, grouped by module
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import agenteval as ae
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
from agenteval.metric.local import LocalMetricManager

PACKAGE = str(Path(ae.__file__).parent)
ANONYMOUS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")


def traced_call(output: Path, *, cold: bool) -> Counter[CodeType]:
    """Calls per agenteval code object during one evaluate() of the bundled example."""
    evaluator = ae.Evaluator(
        APP_NAME,
        calculator_agent,
        eval_set_manager=LocalEvalSetManager(DATA_DIR),
        metric_manager=LocalMetricManager(DATA_DIR),
        result_manager=LocalEvalResultManager(output),
    )
    if not cold:
        evaluator.evaluate(EVAL_SET_ID)
    calls: Counter[CodeType] = Counter()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(PACKAGE):
            calls[frame.f_code] += 1

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        evaluator.evaluate(EVAL_SET_ID)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type,unused-ignore]
    evaluator.close()
    return calls


def module_of(code: CodeType) -> str:
    relative = Path(code.co_filename).relative_to(Path(PACKAGE).parent).with_suffix("")
    return ".".join(relative.parts).removesuffix(".__init__")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", action="store_true", help="measure the first call in this process")
    parser.add_argument("--list", action="store_true", help="list the functions entered, by module")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as output:
        calls = traced_call(Path(output), cold=args.cold)
    named = {code for code in calls if code.co_name not in ANONYMOUS and code.co_name != "<module>"}
    modules = Counter(module_of(code) for code in named)
    print(f"one evaluate() of the bundled example ({'first' if args.cold else 'second'} call in the process)")
    print(f"  named functions entered: {len(named)}")
    print(f"  with comprehensions and lambdas: {len(calls)}")
    print(f"  modules: {len(modules)}")
    print(f"  calls: {sum(calls.values())}")
    if args.list:
        for module, count in sorted(modules.items()):
            names = sorted(code.co_qualname for code in named if module_of(code) == module)
            print(f"\n{module} ({count})\n  " + "\n  ".join(names))


if __name__ == "__main__":
    main()
