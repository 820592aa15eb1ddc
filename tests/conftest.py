import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import os  # noqa: E402

# Most tests are about what each rule finds, and most rules are in preview
# (`gpulint rules`): the command line runs them all here, as `--preview` does.
# What a run without preview selects is tested in test_preview.py, which
# clears this variable.
os.environ["GPULINT_PREVIEW"] = "1"


# The fast subset (`python3 -m pytest -m "not slow and not fuzz"`, under two
# minutes on two cores): every test but those of these files, which start
# real processes by the dozen (the harness's runs, pre-commit, the language
# server, flake8, killed writers) or read very large inputs. `.ci/run` runs
# everything.
SLOW_FILES = frozenset({
    "test_verify.py", "test_bench_workloads.py", "test_new_syntax.py", "test_precommit.py", "test_fix_safety.py",
    "test_fuzz.py", "test_multigpu.py", "test_large_inputs.py", "test_server.py", "test_flake8_plugin.py",
})


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
