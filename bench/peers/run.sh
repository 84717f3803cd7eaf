#!/usr/bin/env bash
# agenteval beside pydantic-evals on the same workload, interleaved so both see the same machine.
#
# usage: bench/peers/run.sh overhead|scale|scale100k|kill [REPS]      (from anywhere; REPS defaults to 3)
#   overhead   one evaluate() of N cases per process: 2000 instant, 1000 x 20 ms, 1000 x 500 ms, P=100
#   scale      N instant cases x R runs per process, with peak RSS and the notebook operations:
#              1000, 5000, 20000 cases x 1 run and 5000 x 3 runs
#   scale100k  the same for 1000, 100000 and again 1000 cases x 1 run (the 1000s are the per-case
#              base of the 100k row: one short run varies too much on a shared machine)
#   kill       agenteval only (pydantic-evals has no cache or resume): 400 cases x 50 ms, P=10, with
#              cache=, SIGKILLed once 25%, 50% or 75% of the cases finished, then re-run to the end
# Every repetition runs each configuration in both frameworks back to back (which goes first
# alternates between repetitions), then bench/peers/summarize.py prints the tables and the rows of
# issue 28's table they cover. Raw JSON lines, the scripts' stderr and the tables are kept in
# bench/.peer-results/ (git-ignored).
#
# pydantic-evals lives only in bench/.peer-venv/ (git-ignored), made on first use from the
# project's interpreter, with pandas at the project's version: it is never a dependency of agenteval.
# Environment: AE_PY (default .venv/bin/python of the project) runs the agenteval side; CONFIGS
# replaces the configurations (';'-separated script arguments for overhead and kill, "N RUNS" pairs
# for scale and scale100k).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mode=${1:-}; reps=${2:-3}
case $mode in
  overhead) default="--n 2000 --latency 0 --concurrency 100;--n 1000 --latency 0.02 --concurrency 100;--n 1000 --latency 0.5 --concurrency 100" ;;
  scale) default="1000 1;5000 1;20000 1;5000 3" ;;
  scale100k) default="1000 1;100000 1;1000 1" ;;
  kill) default="--kill-at 0.25;--kill-at 0.5;--kill-at 0.75" ;;
  *) echo "usage: bench/peers/run.sh overhead|scale|scale100k|kill [REPS]" >&2; exit 2 ;;
esac
script_mode=${mode%100k}  # scale100k runs the scale scripts
IFS=';' read -ra configs <<< "${CONFIGS:-$default}"

AE_PY=${AE_PY:-$root/.venv/bin/python}
venv=$root/bench/.peer-venv
PEER_PY=$venv/bin/python
if [ "$mode" != kill ] && ! "$PEER_PY" -c 'import importlib.metadata as m, sys, pandas; sys.exit(m.version("pydantic-evals") != "2.62.0")' 2>/dev/null; then
  echo "making $venv with pydantic-evals 2.62.0" >&2
  pandas_version=$("$AE_PY" -c 'import pandas; print(pandas.__version__)')
  "$AE_PY" -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-cache-dir "pydantic-evals==2.62.0" "pandas==$pandas_version"
fi

out=$root/bench/.peer-results; mkdir -p "$out"
stamp=$(date +%Y%m%d-%H%M%S)
results=$out/$mode-$stamp.jsonl; log=$out/$mode-$stamp.stderr.log; tables=$out/$mode-$stamp.md
status=0

run() {  # run FRAMEWORK ARGS...: one measurement, its JSON line appended to the results
  local framework=$1; shift
  local python=$AE_PY script=agenteval
  if [ "$framework" = pydantic-evals ]; then python=$PEER_PY; script=pydantic_evals; fi
  if ! "$python" "$here/${script}_$script_mode.py" "$@" 2>>"$log" | tee -a "$results"; then
    echo "FAILED: $framework $script_mode $* (see $log)" >&2; status=1
  fi
}

for rep in $(seq 1 "$reps"); do
  for config in "${configs[@]}"; do
    if [ "$script_mode" = scale ]; then read -r n runs <<< "$config"; args=(--n "$n" --runs "$runs")
    else read -ra args <<< "$config"; fi
    if [ "$mode" = kill ]; then order=(agenteval)
    elif (( rep % 2 )); then order=(pydantic-evals agenteval); else order=(agenteval pydantic-evals); fi
    for framework in "${order[@]}"; do run "$framework" "${args[@]}"; done
  done
done

# -P: not the current directory first, so this finds the agenteval the scripts imported (PYTHONPATH wins).
src=$("$AE_PY" -P -c 'import agenteval, pathlib; print(pathlib.Path(agenteval.__file__).parents[1])')
where="agenteval from $src"
if sha=$(git -C "$src" rev-parse --short HEAD 2>/dev/null); then
  where="$where at commit $sha"
  if [ -n "$(git --no-optional-locks -C "$src" status --porcelain -- agenteval 2>/dev/null)" ]; then where="$where with uncommitted changes"; fi
fi
{
  echo "$where; $(nproc) CPUs; load average before the summary: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  "$AE_PY" "$here/summarize.py" "$script_mode" "$results"
} | tee "$tables"
echo "raw results: $results; tables: $tables" >&2
exit $status
