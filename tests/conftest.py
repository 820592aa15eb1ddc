import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import os  # noqa: E402

# Most tests are about what each rule finds, and most rules are in preview
# (`gpulint rules`): the command line runs them all here, as `--preview` does.
# What a run without preview selects is tested in test_preview.py, which
# clears this variable.
os.environ["GPULINT_PREVIEW"] = "1"
