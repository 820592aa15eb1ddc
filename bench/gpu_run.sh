#!/usr/bin/env bash
# What the lent GPU machine runs to record docs/speedups.{json,md}: the device
# has torch with CUDA but not libcst, which travels as a wheel in .whl/.
# Usage there: bash bench/gpu_run.sh [bench|verify|trace|smoke|multigpu|doctor] [extra args...]
#   multigpu [COUNTS] [extra args]: GPU001's multi-GPU study, COUNTS default 2,4,8
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/gpulint-out}"
mkdir -p "$OUT"
# gpulint's own dependencies, as wheels in .whl/
source bench/gpu_deps.sh
what="${1:-bench}"; shift || true
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,temperature.gpu --format=csv | tee "$OUT/nvidia-smi.txt"
case "$what" in
  smoke)  python3 -m gpulint bench --small --reps 2 "$@" 2>&1 | tee "$OUT/smoke.txt" ;;
  bench)  python3 -m gpulint bench --json "$OUT/speedups.json" --plot "$OUT/speedups.png" "$@" 2>&1 | tee "$OUT/bench.txt" ;;
  verify)
    for s in fixtures/verify/*.py; do
      n=$(basename "$s" .py)
      python3 -m gpulint verify "$s" --json "$OUT/verify-$n.json" "$@" 2>&1 | tee "$OUT/verify-$n.txt"
    done ;;
  trace)
    # `verify --trace` on the multi-file fixture and on each verify fixture
    export GPULINT_PREVIEW=1
    python3 -m gpulint verify --trace fixtures/verify/trace/train.py --json "$OUT/trace-multifile.json" \
      --plot "$OUT/trace-multifile.png" "$@" 2>&1 | tee "$OUT/trace-multifile.txt"
    for s in fixtures/verify/*.py; do
      n=$(basename "$s" .py)
      python3 -m gpulint verify --trace "$s" --json "$OUT/trace-$n.json" "$@" 2>&1 | tee "$OUT/trace-$n.txt"
    done ;;
  multigpu)
    # GPU001's study: DataParallel against DDP under torchrun (NCCL; NVLink multicast stays off)
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    python3 -m gpulint bench --gpus "${1:-2,4,8}" --json "$OUT/multigpu.json" "${@:2}" 2>&1 | tee "$OUT/multigpu.txt" ;;
  doctor)
    python3 -m gpulint doctor "$@" 2>&1 | tee "$OUT/doctor.txt"
    python3 -m gpulint doctor --json "$@" > "$OUT/doctor.json" ;;
  *) echo "unknown: $what" >&2; exit 2 ;;
esac
