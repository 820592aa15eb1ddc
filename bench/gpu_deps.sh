# Sourced (not run) by bench/gpu_run.sh and bench/trace_public.sh, from the
# repository's root, on the lent GPU machine: its python3 has torch with CUDA
# but not gpulint's own dependencies, which travel as wheels in .whl/
# (`pip download` them for the device's Python) and are installed once into
# /tmp/site. Leaves gpulint importable from the checkout (PYTHONPATH) and
# Python unbuffered.
if ! python3 -c "import libcst, click, pathspec" 2>/dev/null; then
  if ! PYTHONPATH=/tmp/site python3 -c "import libcst, click, pathspec" 2>/dev/null; then
    python3 -m pip install -q --no-index --find-links .whl --no-compile --no-cache-dir --target /tmp/site \
      libcst click pathspec || exit 1
  fi
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
