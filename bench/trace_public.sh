#!/usr/bin/env bash
# `gpulint verify --trace --preview` on three public training scripts, fed
# synthetic data (nothing is downloaded, no source is changed):
#
#   imagenet  pytorch/examples                  77f55b912142e11fcfdf5b530231fb9c52f181e8
#             imagenet/main.py -a resnet50 -b 128 --dummy (torchvision's FakeData)
#   nanogpt   karpathy/nanoGPT                  3adf61e154c3fe3fca428ad6bc3818b27a3b8291
#             train.py (model.py, configurator.py beside it), GPT-2 124M, float16 with its
#             GradScaler, no torch.compile, on random uint16 tokens written as
#             data/gpulint_synth/{train,val}.bin the way its prepare scripts write them
#   timm      huggingface/pytorch-image-models  aa4b5850c1543fa488abf260f18390eda46cf85d
#             train.py (the timm/ package beside it), resnet50 with --amp --amp-dtype float16
#             (timm.utils.NativeScaler), on a folder of random JPEGs (train/ and validation/,
#             one folder per class)
#
# Get the three checkouts into one folder:
#
#   mkdir public && cd public
#   git clone https://github.com/pytorch/examples.git
#   git -C examples checkout 77f55b912142e11fcfdf5b530231fb9c52f181e8
#   git clone https://github.com/karpathy/nanoGPT.git
#   git -C nanoGPT checkout 3adf61e154c3fe3fca428ad6bc3818b27a3b8291
#   git clone https://github.com/huggingface/pytorch-image-models.git
#   git -C pytorch-image-models checkout aa4b5850c1543fa488abf260f18390eda46cf85d
#
# (Only examples/imagenet/main.py, nanoGPT/{train,model,configurator}.py and
# pytorch-image-models/{train.py,timm/} are used.)
#
# Usage: bash bench/trace_public.sh [FOLDER] [imagenet|nanogpt|timm ...]
#   FOLDER defaults to $GPULINT_PUBLIC; with no names, all three run.
#   Writes $OUT/trace-NAME.txt (the console report), trace-NAME.json (and
#   trace-NAME.png where matplotlib is installed); OUT defaults to
#   /tmp/gpulint-out. The synthetic data: FOLDER/nanoGPT/data/gpulint_synth/
#   (the script reads data/<dataset>/ under its own folder) and
#   $GPULINT_PUBLIC_DATA/timm-images/ (default /tmp/gpulint-public-data).
#   Each traced run: 5 warm-up + 50 traced optimizer steps, at most
#   $TRACE_TIMEOUT seconds (default 300).
#
# Needs a CUDA GPU and python3 with torch, torchvision, numpy and pillow; timm's
# train.py also imports pyyaml, huggingface_hub and safetensors. gpulint's own
# dependencies come from .whl/ as in bench/gpu_run.sh (bench/gpu_deps.sh).
set -uo pipefail
folder="${1:-${GPULINT_PUBLIC:-}}"
[ $# -gt 0 ] && shift
if [ -z "$folder" ] || [ ! -d "$folder" ]; then
  echo "usage: bash bench/trace_public.sh FOLDER [imagenet|nanogpt|timm ...] (or set GPULINT_PUBLIC)" >&2
  exit 2
fi
folder="$(cd "$folder" && pwd)"
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(imagenet nanogpt timm)
cd "$(dirname "$0")/.." || exit 1
OUT="${OUT:-/tmp/gpulint-out}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
data="${GPULINT_PUBLIC_DATA:-/tmp/gpulint-public-data}"
timeout="${TRACE_TIMEOUT:-300}"
# shellcheck source=bench/gpu_deps.sh
source bench/gpu_deps.sh
export GPULINT_PREVIEW=1
plot=0
python3 -c "import matplotlib" 2>/dev/null && plot=1

# trace NAME SCRIPT [SCRIPT ARGS...]: one traced run, its report to $OUT/trace-NAME.*
trace() {
  local name="$1" script="$2"; shift 2
  local extra=()
  [ "$plot" = 1 ] && extra=(--plot "$OUT/trace-$name.png")
  if [ ! -f "$script" ]; then
    echo "trace_public: $name: no $script (see this script's header for the checkouts)" | tee "$OUT/trace-$name.txt" >&2
    return 1
  fi
  echo "== $name: $script $*" >&2
  python3 -m gpulint verify --trace --preview "$script" --json "$OUT/trace-$name.json" "${extra[@]}" \
    --timeout "$timeout" -- "$@" 2>&1 | tee "$OUT/trace-$name.txt"
}

rc=0
for name in "${names[@]}"; do
  case "$name" in
    imagenet)
      # --dummy: torchvision's FakeData (random 3x224x224 images made by the loader's workers)
      trace imagenet "$folder/examples/imagenet/main.py" -a resnet50 -b 128 --workers 12 --dummy || rc=1 ;;
    nanogpt)
      # random GPT-2 tokens, as uint16 like data/openwebtext/prepare.py writes them (no meta.pkl:
      # the model keeps GPT-2's vocabulary); eval_interval past the traced steps, so the only
      # evaluation (iteration 0, 2 batches a split) falls before the first optimizer step
      python3 - "$folder/nanoGPT/data/gpulint_synth" <<'PY' || { rc=1; continue; }
import os, sys
import numpy as np
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(0)
for split, n in (("train", 1_000_000), ("val", 100_000)):
    rng.integers(0, 50257, size=n, dtype=np.uint16).tofile(os.path.join(d, f"{split}.bin"))
PY
      trace nanogpt "$folder/nanoGPT/train.py" --dataset=gpulint_synth --compile=False --dtype=float16 \
        --gradient_accumulation_steps=4 --eval_interval=100000 --eval_iters=2 --wandb_log=False || rc=1 ;;
    timm)
      # random 96x96 JPEGs, 10 classes; enough training images that the traced steps stay
      # in the first epoch (no validation pass), with room for steps the GradScaler skips
      python3 - "$data/timm-images" <<'PY' || { rc=1; continue; }
import os, sys
import numpy as np
from PIL import Image
root = sys.argv[1]
rng = np.random.default_rng(0)
for split, per_class in (("train", 600), ("validation", 10)):
    for c in range(10):
        d = os.path.join(root, split, f"class{c}")
        os.makedirs(d, exist_ok=True)
        have = len(os.listdir(d))
        for i in range(have, per_class):
            img = rng.integers(0, 256, size=(96, 96, 3), dtype=np.uint8)
            Image.fromarray(img).save(os.path.join(d, f"{i:05d}.jpg"), quality=90)
PY
      trace timm "$folder/pytorch-image-models/train.py" --data-dir "$data/timm-images" --model resnet50 \
        -b 64 -j 12 --amp --amp-dtype float16 || rc=1 ;;
    *) echo "trace_public: unknown name: $name (imagenet, nanogpt, timm)" >&2; rc=2 ;;
  esac
done
exit "$rc"
