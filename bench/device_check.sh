#!/usr/bin/env bash
# The GPU checks in one call of at most 9 minutes on a fresh GPU machine, in order of value
# (ladder, below, runs first: up to T_LADDER=360 s):
#   bash bench/device_check.sh OUTDIR
# pack:     packed vs separate trials, members per second (bench_pack: cpu-xs, cpu-s and a ~20 M
#           shape, 1..64 members; one JSON per shape in OUTDIR, rewritten after every cell);
# families: each family's tokens/s and MFU at 170m in bf16, eager then compiled (bench_gpu families;
#           one JSON line per family and mode in families-*.log as each finishes);
# verify:   the committed reference search re-verified at verify's default trial length (the
#           deciding length, 20 tokens per parameter) with planned seeds; its trials.jsonl is copied
#           to OUTDIR every 10 s, so the finished trials come back even when the deadline cuts it.
# Optional steps (not in the default list): packing (fractional-GPU search, bench_gpu packing) and
# tests (pytest -m gpu). STEPS="families verify" runs a subset, in the order given.
# workers:  one run on every GPU of the machine (up to 8) as data-parallel workers against one GPU,
#           when it has more than one; else one line saying there was one.
# ladder:   first, the reference ladder's two largest points (runs/reference/ladder8: 8 layers,
#           240 K and 427 K non-embedding parameters, 20 tokens per parameter, cosine and uniform,
#           rate decided per point, planned seeds up to 12) as their own ladder on the GPU, 16 trials
#           at 1/16 GPU each (LGPU; LPACK=on packs them: no GPU figure says it pays yet); the ladder
#           folder comes back as ladder8-gpu.tgz every 20 s, and a later call resumes from
#           runs/reference/ladder8-gpu when that folder is in the working tree (unpack it there).
#           Its points and settings are the CPU ladder's; on the CPU they cost some 43 core-hours.
# The whole call keeps to TOTAL seconds (default 530): each step gets the smaller of its own cap
# (T_PACK, T_FAMILIES, T_VERIFY, ...) and what is left of TOTAL less a reserve for packing up; a step
# that fails or runs out of time does not stop the others, and summary.log says what each gave.
# Wheels in .whl/ (Ray, Optuna and friends, when the machine's image lacks them) are installed first.
# SMALL=1 runs the same steps at toy sizes on CPU, to check the script itself before spending GPU time.
set -u
OUT=${1:-${OUT:-/tmp/device-check}}
mkdir -p "$OUT"
T0=$(date +%s)
TOTAL=${TOTAL:-530}
log() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$OUT/summary.log"; }
# seconds a step may take: its cap ($1), or what is left of TOTAL less 15 s to pack up, if smaller
budget() { local left=$((TOTAL - ($(date +%s) - T0) - 15)); [ "$left" -lt "$1" ] && echo $((left > 5 ? left : 5)) || echo "$1"; }
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
  DEV=cpu BIG=tiny VOCAB=256 TSTEPS=20 GPUS1=0 GPUS4=0 TOK=(--corpus pydoc) PREP=(prepare pydoc) FRAC=(--max-concurrent 2)
  PACKS=("tiny:1 2") PACKARGS=(--steps 3 --threads 1 --corpus pydoc)
  FAM=(--device cpu --steps 2 --warmup 1)
  VARGS=(--steps 5 --top-k 1 --seeds 2 --rate-check off)
  TOTAL=${TOTAL_SMALL:-600}  # one locked command on a shared CPU (all steps: 461 s on 2026-12-05)
else
  DEV=cuda BIG=170m VOCAB=32000 TSTEPS=100 GPUS1=1 GPUS4=0.25 TOK=(--tokenizer bpe --bpe-vocab 32000)
  PREP=(prepare shakespeare --tokenizer bpe:32000) FRAC=()
  PACKS=("cpu-xs:1 4 16 64" "cpu-s:1 4 16 64" "gpu-20m:1 4 16 64") PACKARGS=(--steps 30 --threads 0 --separate-max 2)
  FAM=(--steps 10 --warmup 3)
  VARGS=()
fi

log "machine"
{ nvidia-smi || true; $PY -c "import torch, ray, optuna, sys; print(sys.version); print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else ''); print('ray', ray.__version__, 'optuna', optuna.__version__)"; } >"$OUT/machine.log" 2>&1
tail -3 "$OUT/machine.log" | tee -a "$OUT/summary.log"

step_pack() {
for spec in "${PACKS[@]}"; do
  shape=${spec%%:*} members=${spec#*:}
  log "packed vs separate: $shape, members $members"
  # shellcheck disable=SC2086  # members is a list of numbers
  timeout -k 10 "$(budget "${T_PACK:-60}")" $PY -m bench.bench_pack --device "$DEV" --presets "$shape" --members $members \
    --repeats 1 "${PACKARGS[@]}" --out "$OUT/pack-$shape.json" >"$OUT/pack-$shape.log" 2>&1
  log "   exit $?"
  grep -E "packed/separate|Error" "$OUT/pack-$shape.log" | tee -a "$OUT/summary.log"
done
}

step_families() {
# eager first (every family's figure), then compiled (each family eager again, then compiled)
log "families at $BIG, bf16, eager"
timeout -k 10 "$(budget "${T_FAMILIES:-70}")" $PY -m bench.bench_gpu families --preset "$BIG" --vocab "$VOCAB" --no-compile \
  "${FAM[@]}" >"$OUT/families-eager.log" 2>&1
log "   exit $?"
grep '^|' "$OUT/families-eager.log" | tee -a "$OUT/summary.log"
[ "${SMALL:-0}" = 1 ] && return  # torch.compile on CPU is minutes of compilation: GPU only
log "families at $BIG, bf16, compiled"
timeout -k 10 "$(budget "${T_COMPILE:-100}")" $PY -m bench.bench_gpu families --preset "$BIG" --vocab "$VOCAB" \
  "${FAM[@]}" >"$OUT/families-compiled.log" 2>&1
log "   exit $?"
grep '^|' "$OUT/families-compiled.log" | tee -a "$OUT/summary.log"
}

step_verify() {
log "reference search re-verified at the default trial length"
REF=$RUNS/reference
cp -r runs/reference/quickstart "$REF"
# trials ask for a sixteenth of the GPU each (Ray then makes the device visible to them); fresh
# seeds from 1000 so that no CPU record of the earlier verify is paired with GPU ones
[ "$DEV" = cuda ] && sed -i "s/^gpus_per_trial: .*/gpus_per_trial: 0.0625/" "$REF/search.yaml"
( while sleep 10; do cp "$REF/trials.jsonl" "$OUT/verify-trials.jsonl" 2>/dev/null; done ) &
COPIER=$!
timeout -k 10 "$(budget "${T_VERIFY:-400}")" $PY -m tlmsearch verify "$REF" --seed 1000 --no-report --json "${VARGS[@]}" \
  >"$OUT/verify.json" 2>"$OUT/verify.log"
log "   exit $?: $(tail -2 "$OUT/verify.log" | tr '\n' ' ')"
kill "$COPIER" 2>/dev/null
cp "$REF/trials.jsonl" "$OUT/verify-trials.jsonl" 2>/dev/null
log "   $(wc -l <"$OUT/verify-trials.jsonl" 2>/dev/null || echo 0) records in verify-trials.jsonl"
tar -czf "$OUT/reference-verified.tgz" --exclude=tune --exclude="*.pt" -C "$RUNS" reference 2>/dev/null
}

step_packing() {
log "fractional GPUs: 1 trial per GPU against 4 per GPU, $BIG, $TSTEPS steps"
timeout -k 10 "$(budget 60)" $PY -m tlmsearch data "${PREP[@]}" >"$OUT/data.log" 2>&1
log "   data: exit $?"
COMMON=(search --preset "$BIG" "${TOK[@]}" --steps "$TSTEPS" --eval-interval "$TSTEPS" --eval-windows 8
  --no-baselines --scheduler none --dtype bfloat16 --runs-dir "$RUNS" --quiet)
timeout -k 10 "$(budget 90)" $PY -m tlmsearch "${COMMON[@]}" --trials 2 --gpus-per-trial "$GPUS1" --name alone "${FRAC[@]}" >"$OUT/pack_alone.log" 2>&1
log "   alone: exit $?"
timeout -k 10 "$(budget 100)" $PY -m tlmsearch "${COMMON[@]}" --trials 4 --gpus-per-trial "$GPUS4" --name packed "${FRAC[@]}" >"$OUT/pack_packed.log" 2>&1
log "   packed: exit $?"
$PY -m bench.bench_gpu packing "$RUNS/alone" "$RUNS/packed" 2>&1 | tee -a "$OUT/summary.log"
tar -czf "$OUT/packing-runs.tgz" --exclude=tune --exclude="*.pt" -C "$RUNS" alone packed 2>/dev/null
}

step_workers() {
# one run on several data-parallel workers of one GPU each against the same run on one GPU (the
# numbers the same to bf16 rounding, the speed-up on this machine); with one GPU, says so. SMALL=1
# runs it on 2 CPU workers (gloo) to check the step itself.
local n w
n=$($PY -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)" 2>/dev/null || echo 0)
if [ "$DEV" = cuda ] && [ "$n" -le 1 ]; then
  log "multi-worker step skipped: $n GPU on this machine (it needs more than one)"
  return
fi
w=$([ "$DEV" = cuda ] && echo $((n < 8 ? n : 8)) || echo 2)
log "one run on $w data-parallel workers ($DEV) against 1, $BIG, $TSTEPS steps"
TARGS=(train --preset "$BIG" "${TOK[@]}" --device "$DEV" --steps "$TSTEPS" --eval-interval "$TSTEPS" --batch-size 8
  --runs-dir "$RUNS" --json)
timeout -k 10 "$(budget "${T_WORKERS:-120}")" $PY -m tlmsearch "${TARGS[@]}" --name workers1 >"$OUT/workers1.json" \
  2>"$OUT/workers1.log"
log "   1 worker: exit $?"
timeout -k 10 "$(budget "${T_WORKERS:-150}")" $PY -m tlmsearch "${TARGS[@]}" --name "workers$w" --workers-per-trial "$w" \
  >"$OUT/workers$w.json" 2>"$OUT/workers$w.log"
log "   $w workers: exit $?"
$PY - "$OUT/workers1.json" "$OUT/workers$w.json" <<'PYEOF' 2>&1 | tee -a "$OUT/summary.log"
import json, sys
try:
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
    ma, mb = a["metrics"], b["metrics"]
    print(f"   workers {a['workers']} vs {b['workers']}: val_loss {ma['val_loss']:.5f} vs {mb['val_loss']:.5f} "
          f"(diff {abs(ma['val_loss'] - mb['val_loss']):.2g}); training {ma['wall_s']:.1f} s vs {mb['wall_s']:.1f} s "
          f"({ma['wall_s'] / mb['wall_s']:.2f}x faster on {b['workers']})")
except Exception as exc:  # a step that failed: its logs say why
    print(f"   no comparison: {type(exc).__name__}: {exc}")
PYEOF
}

step_ladder() {
local L=$RUNS/ladder8-gpu
if [ -d runs/reference/ladder8-gpu ]; then
  cp -r runs/reference/ladder8-gpu "$L"
  log "ladder8's larger points on $DEV: resumed from runs/reference/ladder8-gpu"
  LCMD=(ladder resume "$L")
else
  # ladder8's settings as committed; its points 3 and 4 (SMALL=1: two tiny points on CPU, to check the step)
  $PY - "$RUNS/ladder8-gpu.yaml" "${SMALL:-0}" "${LGPU:-0.0625}" "${LPACK:-off}" <<'PYEOF' || { log "   no ladder config"; return; }
import sys
import yaml
out, small, gpus, pack = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3]), sys.argv[4]
cfg = yaml.safe_load(open("runs/reference/ladder8/ladder.yaml"))
cfg.update(name="ladder8-gpu", runs_dir="", points=cfg["points"][2:], gpus_per_trial=gpus, pack=pack)
cfg["train"]["device"] = "auto"
if small:  # the step itself on CPU: two tiny points, short, a rate grid of two
    cfg.update(points=["tiny:n_layers=4@0.2", "tiny:n_layers=4,d_model=48,n_heads=3@0.2"], gpus_per_trial=0.0, max_seeds=5)
    cfg["train"].update(final_eval_windows=8, eval_windows=4)
yaml.safe_dump(cfg, open(out, "w"), sort_keys=False)
PYEOF
  log "ladder8's larger points on $DEV: $(grep -A2 '^points:' "$RUNS/ladder8-gpu.yaml" | tail -2 | tr -d '\n')"
  LCMD=(ladder run --config "$RUNS/ladder8-gpu.yaml" --runs-dir "$RUNS" --yes)
fi
( while sleep 20; do tar -czf "$OUT/ladder8-gpu.tgz.part" --exclude=tune --exclude="*.pt" --exclude=.lock -C "$RUNS" \
    ladder8-gpu 2>/dev/null && mv "$OUT/ladder8-gpu.tgz.part" "$OUT/ladder8-gpu.tgz"; done ) &
local copier=$!
timeout -k 10 "$(budget "${T_LADDER:-360}")" $PY -m tlmsearch "${LCMD[@]}" >"$OUT/ladder.log" 2>&1
log "   exit $?: $(grep -v '^search\|^study\|^ladder .* [0-9]*m[0-9]*s |' "$OUT/ladder.log" | tail -2 | tr '\n' ' ')"
kill "$copier" 2>/dev/null
tar -czf "$OUT/ladder8-gpu.tgz" --exclude=tune --exclude="*.pt" --exclude=.lock -C "$RUNS" ladder8-gpu 2>/dev/null
$PY -m tlmsearch ladder status "$L" 2>&1 | tail -4 | tee -a "$OUT/summary.log"
}

step_tests() {
log "GPU tests"
timeout -k 10 "$(budget "${T_TESTS:-100}")" $PY -m pytest -q -p no:cacheprovider -m gpu tests/unit/test_trainer.py \
  tests/unit/models/test_models.py tests/integration/test_gpu_search.py >"$OUT/gpu_tests.log" 2>&1
log "   exit $?: $(tail -1 "$OUT/gpu_tests.log")"
}

for s in ${STEPS:-ladder pack families verify workers}; do
  if [ $(($(date +%s) - T0 + 20)) -ge "$TOTAL" ]; then log "no time left for $s"; continue; fi
  "step_$s"
done
log "done"
