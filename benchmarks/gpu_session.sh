#!/usr/bin/env bash
# Everything syncfix runs on a GPU, in one go (used through the device tool; see docs/benchmarks.md).
#   bash benchmarks/gpu_session.sh OUT_DIR [PARTS]
# PARTS: any of "tests verify effect logging loop" (default all):
#   tests    the CUDA-marked tests          verify   syncfix verify on the examples
#   effect   benchmarks/gpu_effect.py       logging  the logging rewrites on examples/train_logged.py
#   loop     trace --record -> apply --observed -> verify, and apply --verify (examples/train_from_config.py)
#   workloads  apply --verify (safe; then with --unsafe-fixes) on each gpu_effect workload run as a script
# Needs: torch with CUDA, and syncfix's dependencies (or wheels in .whl/, installed to /tmp/site).
set -u
OUT=${1:-${OUT:-/tmp/syncfix-gpu}}; mkdir -p "$OUT"
PARTS=${2:-tests verify effect logging loop workloads}
for part in $PARTS; do
  case $part in tests|verify|effect|logging|loop|workloads) ;; *) echo "unknown part '$part'" >&2; exit 2;; esac
done
want() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
export PYTHONUNBUFFERED=1 COLUMNS=200
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
fi
nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
if want tests; then
echo "== CUDA tests"
timeout 240 python3 -m pytest -p no:cacheprovider -p no:syncfix -q -rA -s -m cuda \
  tests/rules tests/test_imported_cuda.py tests/harness/test_harness_cuda.py tests/harness/test_observed_cuda.py > "$OUT/cuda_tests.log" 2>&1
echo "pytest rc=$?"; grep -E "passed|failed|error" "$OUT/cuda_tests.log" | tail -3
fi
if want verify; then
echo "== syncfix verify on the examples"
for f in train_classifier evaluate decode scalar_branch train_passed_on; do
  for mode in safe unsafe; do
    flag=""; [ $mode = unsafe ] && flag="--unsafe-fixes"
    timeout 90 python3 -m syncfix verify examples/$f.py $flag --repeats 5 >> "$OUT/verify.log" 2>&1
    echo "$f $mode rc=$?" | tee -a "$OUT/verify.log"
  done
done
fi
if want effect; then
echo "== GPU effect benchmark"
timeout 420 python3 benchmarks/gpu_effect.py --steps 50 --rounds 5 --json "$OUT/gpu_effect.json" \
  > "$OUT/gpu_effect.log" 2>&1; echo "gpu_effect rc=$?"
grep -v Warning "$OUT/gpu_effect.log" | tail -70
fi
if want logging; then
echo "== logging rewrites: original vs SFX301+SFX401 (safe) vs SFX402 (unsafe)"
for args in "--select SFX301,SFX401" "--unsafe-fixes --select SFX402"; do
  echo "== verify examples/train_logged.py $args"
  timeout 150 python3 -m syncfix verify examples/train_logged.py $args --repeats 7 2>&1 | tee -a "$OUT/logging.log" \
    | grep -E "Numbers|total|Time|OK|FAIL|rc"
done
fi
if want loop; then
echo "== the observed-fix loop and apply --verify on examples/train_from_config.py"
REPO=$PWD; D=$(mktemp -d); cp examples/train_from_config.py examples/train_passed_on.py "$D/"
(
  cd "$D" && export PYTHONPATH=${PYTHONPATH:-}:$REPO
  run() { echo "\$ syncfix $*"; timeout 240 python3 -m syncfix "$@"; echo "rc=$?"; }
  run check --isolated --no-cache -o concise train_from_config.py
  run verify train_from_config.py --repeats 5
  run trace train_from_config.py --record
  run check --isolated --no-cache -o concise --observed .syncfix/observed.json train_from_config.py
  run apply --isolated --no-cache --observed --diff train_from_config.py
  run verify train_from_config.py --observed .syncfix/observed.json --repeats 5
  run apply train_from_config.py --isolated --no-cache --verify train_from_config.py
  run verify train_from_config.py --repeats 5
  run apply train_passed_on.py --isolated --no-cache --verify train_passed_on.py
) > "$OUT/loop.log" 2>&1
grep -E "^\$|rc=|verified|dropped|Syncs|syncs|total|Numbers|Time" "$OUT/loop.log" | head -80
fi
if want workloads; then
echo "== apply --verify on the gpu_effect workloads, run as scripts"
REPO=$PWD; D=$(mktemp -d)
(
  cd "$D" && export PYTHONPATH=${PYTHONPATH:-}:$REPO
  for w in train_loop eval_loop decode_loop scalar_branch data_loading; do
    for flag in "" --unsafe-fixes; do
      cp "$REPO/benchmarks/workloads/$w.py" .
      echo "\$ syncfix apply $w.py $flag --verify $w.py"
      timeout 200 python3 -m syncfix apply $w.py --isolated --no-cache $flag --verify $w.py; echo "rc=$?"
    done
  done
) > "$OUT/workloads.log" 2>&1
grep -E "^\$|rc=|fix(es)? verified|dropped" "$OUT/workloads.log"
fi
