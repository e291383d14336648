#!/usr/bin/env bash
# The GPU checks, as one script with a deadline per step, for a GPU machine lent for minutes:
#   bash bench/device_check.sh OUTDIR
# verify: the committed reference search re-verified on the GPU with planned seeds (float32, as searched);
# families: each family's tokens/s and MFU at the 170m shape in bf16, compile off and on (bench_gpu families);
# packing: a fractional-GPU search at 170m: one trial per GPU against four per GPU (bench_gpu packing);
# tests: the GPU tests (pytest -m gpu: bf16 autocast and torch.compile per family, a fractional-GPU search).
# STEPS="packing tests" runs a subset (default: all four, in that order). All four take about
# 12 minutes on an H200, more than one 10-minute call: run STEPS=verify (about 6 minutes: the
# planned 20 seeds of 6 profiles at cpu-s) and then STEPS="families packing tests" in a second call.
# Each step's log lands in OUTDIR; a step that fails or runs out of time does not stop the others.
# Wheels in .whl/ (Ray, Optuna and friends, when the machine's image lacks them) are installed first.
# SMALL=1 runs the same steps at toy sizes on CPU, to check the script itself before spending GPU time.
set -u
OUT=${1:-${OUT:-/tmp/device-check}}
mkdir -p "$OUT"
T0=$(date +%s)
log() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$OUT/summary.log"; }
export PYTHONUNBUFFERED=1 TLMSEARCH_CACHE=/tmp/tlmsearch-cache RAY_AUTH_MODE=disabled
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >"$OUT/pip.log" 2>&1 || log "wheel install failed (see pip.log)"
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
PY=${PY:-python3}
RUNS=/tmp/device-runs
rm -rf "$RUNS" && mkdir -p "$RUNS"
if [ "${SMALL:-0}" = 1 ]; then
  BIG=tiny DEV=cpu TSTEPS=20 GPUS1=0 GPUS4=0 VOCAB=256 TOK=(--corpus pydoc) PREP=(prepare pydoc) PACK=(--max-concurrent 2)
  FAM=(--device cpu --no-compile --steps 2 --warmup 1)
else
  BIG=170m DEV=cuda TSTEPS=100 GPUS1=1 GPUS4=0.25 VOCAB=32000 TOK=(--tokenizer bpe --bpe-vocab 32000)
  PREP=(prepare shakespeare --tokenizer bpe:32000) PACK=()
  FAM=(--steps 10 --warmup 3 --compile-archs transformer gated_attention)
fi

log "machine"
{ nvidia-smi || true; $PY -c "import torch, ray, optuna, sys; print(sys.version); print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else ''); print('ray', ray.__version__, 'optuna', optuna.__version__)"; } >"$OUT/machine.log" 2>&1
tail -3 "$OUT/machine.log" | tee -a "$OUT/summary.log"

step_tests() {
log "GPU tests"
timeout -k 15 "${T_TESTS:-100}" $PY -m pytest -q -p no:cacheprovider -m gpu tests/unit/test_trainer.py tests/unit/models/test_models.py \
  tests/integration/test_gpu_search.py >"$OUT/gpu_tests.log" 2>&1
log "   exit $?: $(tail -1 "$OUT/gpu_tests.log")"
}

step_verify() {
log "reference search re-verified with planned seeds"
REF=$RUNS/reference
cp -r runs/reference/quickstart "$REF"
# trials ask for a sixteenth of the GPU each (Ray then makes the device visible to them); fresh
# seeds from 1000 so that no CPU record of the earlier 2-seed verify is paired with GPU ones
[ "$DEV" = cuda ] && sed -i "s/^gpus_per_trial: .*/gpus_per_trial: 0.0625/" "$REF/search.yaml"
VARGS=(--seed 1000 --no-report --json)
[ "${SMALL:-0}" = 1 ] && VARGS+=(--steps 20 --top-k 1 --max-seeds 5)
timeout -k 15 "${T_VERIFY:-400}" $PY -m tlmsearch verify "$REF" "${VARGS[@]}" >"$OUT/verify.json" 2>"$OUT/verify.log"
log "   exit $?: $(tail -2 "$OUT/verify.log" | tr '\n' ' ')"
tar -czf "$OUT/reference-verified.tgz" --exclude=tune --exclude="*.pt" -C "$RUNS" reference 2>/dev/null
}

step_families() {
log "families at $BIG, bf16, compile off/on"
timeout -k 15 "${T_FAMILIES:-110}" $PY -m bench.bench_gpu families --preset "$BIG" --vocab "$VOCAB" "${FAM[@]}" >"$OUT/families.log" 2>&1
log "   exit $?"
grep '^|' "$OUT/families.log" | tee -a "$OUT/summary.log"
}

step_packing() {
log "fractional GPUs: 1 trial per GPU against 4 per GPU, $BIG, $TSTEPS steps"
timeout -k 15 60 $PY -m tlmsearch data "${PREP[@]}" >"$OUT/data.log" 2>&1
log "   data: exit $?"
COMMON=(search --preset "$BIG" "${TOK[@]}" --steps "$TSTEPS" --eval-interval "$TSTEPS" --eval-windows 8
  --no-baselines --scheduler none --dtype bfloat16 --runs-dir "$RUNS" --quiet)
timeout -k 15 90 $PY -m tlmsearch "${COMMON[@]}" --trials 2 --gpus-per-trial "$GPUS1" --name alone "${PACK[@]}" >"$OUT/pack_alone.log" 2>&1
log "   alone: exit $?"
timeout -k 15 100 $PY -m tlmsearch "${COMMON[@]}" --trials 4 --gpus-per-trial "$GPUS4" --name packed "${PACK[@]}" >"$OUT/pack_packed.log" 2>&1
log "   packed: exit $?"
$PY -m bench.bench_gpu packing "$RUNS/alone" "$RUNS/packed" 2>&1 | tee -a "$OUT/summary.log"
tar -czf "$OUT/packing-runs.tgz" --exclude=tune --exclude="*.pt" -C "$RUNS" alone packed 2>/dev/null
}

for s in ${STEPS:-verify families packing tests}; do "step_$s"; done
log "done"
