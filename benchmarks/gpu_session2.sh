#!/usr/bin/env bash
# Logging rewrites on a GPU-resident training loop: original vs SFX301+SFX401 (safe) vs SFX402.
set -u
OUT=${1:-${OUT:-/tmp/syncfix-gpu}}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 COLUMNS=200
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
fi
for args in "--select SFX301,SFX401" "--unsafe-fixes --select SFX402"; do
  echo "== verify examples/train_logged.py $args"
  timeout 150 python3 -m syncfix verify examples/train_logged.py $args --repeats 7 2>&1 | tee -a "$OUT/logging.log" \
    | grep -E "Numbers|total|Time|OK|FAIL|rc"
done
