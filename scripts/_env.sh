# Shared set-up for scripts/demo and scripts/test: a project virtualenv with agenteval installed.
# Sourced, not run; leaves the working directory alone. Set AGENTEVAL_EXTRAS before sourcing to
# choose the extras (none by default). Re-installs only when pyproject.toml or the extras changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${AGENTEVAL_VENV:-$ROOT/.venv}"
PYTHON_BIN="${PYTHON:-python3}"
EXTRAS="${AGENTEVAL_EXTRAS:-}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtualenv $VENV"
  "$PYTHON_BIN" -m venv "$VENV"
fi
# One stamp per set of extras, holding the hash of the pyproject it was installed from: the demo
# and the tests can share a virtualenv, and a checkout that changes dependencies re-installs.
STAMP="$VENV/.agenteval-installed-${EXTRAS//,/-}"
WANTED="$("$VENV/bin/python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$ROOT/pyproject.toml")"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANTED" ]; then
  echo "[setup] installing agenteval${EXTRAS:+[$EXTRAS]} and its dependencies into $VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e "$ROOT${EXTRAS:+[$EXTRAS]}"
  echo "$WANTED" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
