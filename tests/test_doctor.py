"""`gpulint doctor`: a real run on this CPU machine (torch is a CPU build
here), the torch-missing and torch-broken paths through real subprocesses,
and every GPU case fed to the checks as facts (this machine has no GPU)."""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.frontends.cli import cli
from gpulint.harness import doctor as D
from gpulint.harness import doctor_facts as F
from gpulint.harness import doctor_versions as V

ROOT = Path(__file__).resolve().parent.parent
ENV = {"NO_COLOR": "1", "OMP_NUM_THREADS": "1"}


# ------------------------------------------------------------------ facts for machines we do not have
def pkg(name, version, required_by=(), location="/venv/lib/python3.11/site-packages", installer="pip"):
    return {"name": name, "version": version, "location": location, "installer": installer,
            "required_by": list(required_by)}


def h200():
    """A healthy one-GPU machine: torch 2.8 for CUDA 12.8 from the PyTorch
    index, driver 570.86.15 (CUDA 12.8), an H200."""
    site = "/venv/lib/python3.11/site-packages"
    return {
        "schema": F.SCHEMA,
        "python": {"version": "3.11.7", "executable": "/venv/bin/python", "prefix": "/venv", "platform": "linux",
                   "machine": "x86_64"},
        "torch_installed": True, "torch_error": None,
        "torch": {"version": "2.8.0+cu128", "file": site + "/torch", "cuda": "12.8", "hip": None, "debug": False,
                  "import_warnings": [], "cudnn": 91002, "cudnn_enabled": True, "mps": False},
        "settings": {"float32_matmul_precision": "highest", "matmul_allow_tf32": False, "cudnn_allow_tf32": True,
                     "anomaly": False, "deterministic": False, "cudnn_benchmark": False,
                     "cudnn_deterministic": False},
        "cuda": {"compiled": True, "available": True, "device_count": 1, "init_error": None, "init_warnings": [],
                 "arch_list": ["sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
                 "devices": [{"index": 0, "name": "NVIDIA H200", "capability": [9, 0],
                              "total_memory": 150_012_248_064, "sm_count": 132, "free_memory": 149_400_000_000,
                              "arch_supported": True}],
                 "sync_debug_mode": 0, "alloc_error": None, "alloc_warnings": [],
                 "pinned": {"ok": True, "error": None, "pinned_gbps": 53.1, "pageable_gbps": 11.9,
                            "bytes": 64 << 20}},
        "driver": {"version": "570.86.15", "version_source": "nvml", "cuda": 12080, "cuda_source": "torch",
                   "nvidia_smi": "/usr/bin/nvidia-smi", "proc_version": "570.86.15", "pci_gpus": 1},
        "packages": [
            pkg("nvidia-cublas-cu12", "12.8.4.1", ["torch"]),
            pkg("nvidia-cuda-runtime-cu12", "12.8.90", ["torch"]),
            pkg("nvidia-cudnn-cu12", "9.10.2.21", ["torch"]),
            pkg("torch", "2.8.0+cu128", ["torchvision"]),
            pkg("torchvision", "0.23.0+cu128"),
            pkg("triton", "3.4.0", ["torch"]),
        ],
        "torch_pins": [["nvidia-cublas-cu12", "==12.8.4.1"], ["nvidia-cuda-runtime-cu12", "==12.8.90"],
                       ["nvidia-cudnn-cu12", "==9.10.2.21"], ["triton", "==3.4.0"]],
        "conda": None,
        "loaded_libs": [
            {"path": site + "/nvidia/cuda_runtime/lib/libcudart.so.12", "soname": "libcudart.so.12"},
            {"path": site + "/nvidia/cudnn/lib/libcudnn.so.9", "soname": "libcudnn.so.9"},
        ],
        "cpu": {"count": 16, "affinity": 16, "quota": None},
        "shm": {"total": 64 * 2**30, "free": 64 * 2**30},
        "env": {}, "startup_modules": {}, "errors": [],
    }


def cpu_box():
    """This kind of machine: a CPU build of torch, no driver, no GPU."""
    f = h200()
    f["torch"].update(version="2.13.0+cpu", cuda=None, cudnn=None)
    f["cuda"] = {"compiled": False, "available": False, "device_count": 0, "init_error": None, "init_warnings": [],
                 "arch_list": [], "devices": [], "sync_debug_mode": None, "alloc_error": None,
                 "alloc_warnings": [], "pinned": None}
    f["driver"] = {"version": None, "version_source": None, "cuda": None, "cuda_source": None, "nvidia_smi": None,
                   "proc_version": None, "pci_gpus": 0}
    f["packages"] = [pkg("torch", "2.13.0+cpu")]
    f["torch_pins"], f["loaded_libs"] = [], []
    return f


def unavailable(f, error):
    f["cuda"].update(available=False, device_count=0, init_error=error, devices=[], pinned=None,
                     sync_debug_mode=None)
    return f


def by_name(checks, name):
    return [c for c in checks if c.name == name]


def one(checks, name):
    found = by_name(checks, name)
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def statuses(checks):
    return {c.status for c in checks}


# ------------------------------------------------------------------ the real run on this machine
def test_real_run_reports_the_cpu_only_build():
    facts = D.gather()
    assert facts["schema"] == F.SCHEMA and facts["errors"] == []
    import torch

    assert facts["torch"]["version"] == torch.__version__
    assert facts["torch"]["cuda"] == torch.version.cuda
    checks = D.run_checks(facts)
    build = one(checks, "build")
    if torch.version.cuda is None:  # this machine: torch 2.13.0+cpu
        assert "CPU-only build" in build.summary and "torch.version.cuda is None" in build.summary
        # no NVIDIA driver here: a warning (nothing to fix on this machine), not a failure
        assert build.status == (D.FAIL if D.driver_present(facts) or facts["driver"]["pci_gpus"] else D.WARN)
        assert one(checks, "pinned-memory").summary.startswith("not available without CUDA")
    assert one(checks, "anomaly").status == D.OK
    cpu = one(checks, "cpu")
    assert str(len(os.sched_getaffinity(0))) in cpu.summary


def test_cli_real_run_text_and_json():
    r = CliRunner().invoke(cli, ["doctor"], env=ENV)
    assert r.exit_code in (0, 1), r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("gpulint doctor · Python ")
    assert re.search(r"^(OK|WARN|FAIL)\s+build\s+CPU-only build of torch", r.output, re.M), r.output
    assert re.match(r"\d+ failures?, \d+ warnings?\.$", lines[-1])
    r = CliRunner().invoke(cli, ["doctor", "--json"], env=ENV)
    rep = json.loads(r.output)
    assert rep["schema"] == D.SCHEMA and rep["status"] in ("ok", "warn", "fail")
    assert {c["status"] for c in rep["checks"]} <= {"ok", "warn", "fail"}
    assert rep["facts"]["torch"]["cuda"] is None
    assert r.exit_code == (1 if rep["status"] == "fail" else 0)
    assert sum(rep["counts"].values()) == len(rep["checks"])


def test_doctor_is_lazy_and_listed():
    code = "import sys, gpulint.frontends.cli; sys.exit(1 if 'gpulint.harness.doctor' in sys.modules or 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0
    r = CliRunner().invoke(cli, ["--help"])
    assert "doctor" in r.output
    r = CliRunner().invoke(cli, ["doctor", "--help"])
    assert r.exit_code == 0 and "--json" in r.output


def test_facts_script_is_python39_stdlib_only():
    src = Path(F.__file__).read_text(encoding="utf-8")
    tree = ast.parse(src, feature_version=(3, 9))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "gpulint" not in imported
    stdlib = set(sys.stdlib_module_names)
    assert imported - stdlib <= {"torch", "pynvml", "packaging"}, imported - stdlib


# ------------------------------------------------------------------ torch missing, torch broken: real subprocesses
def _run_cli(args, pythonpath):
    env = {**os.environ, **ENV, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([sys.executable, "-m", "gpulint", "doctor", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_torch_missing_says_how_to_install_and_exits_2(tmp_path):
    # a sitecustomize that hides torch from every interpreter started with this PYTHONPATH
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = None\n")
    r = _run_cli([], tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "torch is not installed" in r.stderr and "pip install 'gpulint[harness]'" in r.stderr
    assert r.stdout == ""
    r = _run_cli(["--json"], tmp_path)
    assert r.returncode == 2
    rep = json.loads(r.stdout)
    assert rep["status"] == "error" and "gpulint[harness]" in rep["error"]


def test_torch_that_fails_to_import_is_a_failure(tmp_path):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise ImportError('libcudnn.so.9: cannot open shared object file: No such file or directory')\n")
    r = _run_cli([], tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"^FAIL\s+torch\s+`import torch` fails: ImportError: libcudnn\.so\.9", r.stdout, re.M), r.stdout
    # nothing is claimed about torch's start-up state, which could not be read
    names = {ln.split()[1] for ln in r.stdout.splitlines() if re.match(r"(OK|WARN|FAIL)\s", ln)}
    assert not names & {"anomaly", "sync-debug", "tf32", "pinned-memory", "cudnn", "build"}, names
    assert {"torch", "driver", "cuda-libs", "launch-blocking", "cpu"} <= names


def test_interpreter_killed_by_import_torch_is_reported(tmp_path):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    old = os.environ.copy()
    try:
        os.environ.update(env)
        facts = D.gather()
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert facts["torch"] is None
    assert "SIGSEGV" in facts["torch_error"] and "import torch" in facts["torch_error"]
    # the rest was still collected, without torch
    assert facts["cpu"]["count"] and facts["driver"] is not None
    assert one(D.run_checks(facts), "torch").status == D.FAIL


def test_unrunnable_python_exits_2():
    r = CliRunner().invoke(cli, ["doctor", "--python", "/nonexistent/python3"], env=ENV)
    assert r.exit_code == 2
    assert "cannot run /nonexistent/python3" in r.output


# ------------------------------------------------------------------ healthy machines
def test_healthy_h200_is_all_ok():
    checks = D.run_checks(h200())
    bad = [c for c in checks if c.status != D.OK]
    assert bad == []
    assert "NVIDIA H200 · sm_90 · 139.7 GiB · 132 SMs · bf16 + TF32 tensor cores" in one(checks, "gpu0").summary
    assert "driver 570.86.15, supports CUDA up to 12.8" in one(checks, "driver").summary
    assert one(checks, "cuda-libs").summary == "CUDA 12 only · 3 nvidia-* wheels · torch's pins met"
    assert one(checks, "cudnn").summary == "cuDNN 9.10.2"
    assert "53.1 GB/s pinned" in one(checks, "pinned-memory").summary
    # the TF32 defaults are reported with the tip, not as a warning
    tf32 = one(checks, "tf32")
    assert "'highest'" in tf32.summary and "set_float32_matmul_precision('high')" in tf32.fix


def test_cli_exit_codes_follow_the_worst_status(monkeypatch):
    facts = h200()
    monkeypatch.setattr(D, "gather", lambda python=None, timeout=180: facts)
    r = CliRunner().invoke(cli, ["doctor"], env=ENV)
    assert r.exit_code == 0 and r.output.splitlines()[-1] == "0 failures, 0 warnings."
    facts["env"]["CUDA_LAUNCH_BLOCKING"] = "1"  # a WARN: still 0
    r = CliRunner().invoke(cli, ["doctor"], env=ENV)
    assert r.exit_code == 0 and "0 failures, 1 warning." in r.output
    facts["cuda"]["devices"][0]["arch_supported"] = False  # a FAIL: 1
    r = CliRunner().invoke(cli, ["doctor", "--json"], env=ENV)
    assert r.exit_code == 1
    rep = json.loads(r.output)
    assert rep["status"] == "fail" and rep["counts"] == {"ok": len(rep["checks"]) - 2, "warn": 1, "fail": 1}


def test_text_output_is_aligned_with_the_fix_under_the_reason():
    f = h200()
    f["env"]["CUDA_LAUNCH_BLOCKING"] = "1"
    checks = D.run_checks(f)
    text = D.render_text(f, checks).splitlines()
    rows = [ln for ln in text if re.match(r"(OK|WARN|FAIL)\s", ln)]
    assert len(rows) == len(checks)
    cols = {re.match(r"(OK|WARN|FAIL)\s+\S+\s+", ln).end() for ln in rows}
    assert len(cols) == 1  # every reason starts in the same column
    i = next(i for i, ln in enumerate(text) if "launch-blocking" in ln)
    assert text[i].startswith("WARN  launch-blocking")
    assert text[i + 1].strip().startswith("fix: unset CUDA_LAUNCH_BLOCKING")
    assert len(text[i + 1]) - len(text[i + 1].lstrip()) == cols.pop()


# ------------------------------------------------------------------ the build
def test_cpu_only_build_on_a_machine_with_a_driver_fails_with_the_right_wheel():
    f = cpu_box()
    f["driver"].update(version="550.54.15", cuda=12040, cuda_source="libcuda", nvidia_smi="/usr/bin/nvidia-smi",
                       pci_gpus=2)
    c = one(D.run_checks(f), "build")
    assert c.status == D.FAIL
    assert "CPU-only build" in c.summary and "driver 550.54.15, supports CUDA up to 12.4" in c.summary
    assert "whl/cuXYZ, with cuXYZ at most cu124 (this driver supports CUDA up to 12.4)" in c.fix


def test_cpu_only_build_with_a_gpu_but_no_driver_fails():
    f = cpu_box()
    f["driver"]["pci_gpus"] = 1
    c = one(D.run_checks(f), "build")
    assert c.status == D.FAIL and "no driver loaded" in c.summary and c.fix.startswith("install the NVIDIA driver")


def test_cpu_only_build_with_only_proc_driver_fails():
    f = cpu_box()
    f["driver"].update(proc_version="535.104.05", version="535.104.05", version_source="/proc/driver/nvidia/version")
    c = one(D.run_checks(f), "build")
    assert c.status == D.FAIL and "supports at least CUDA 12.2 (from its version number)" in c.summary
    assert "for the CUDA your driver supports" in c.fix  # no exact CUDA version: no bound named


def test_cpu_only_build_without_any_gpu_is_a_warning():
    checks = D.run_checks(cpu_box())
    assert one(checks, "build").status == D.WARN
    assert D.overall(checks) == D.WARN


def test_cuda_build_without_gpu_or_driver_is_a_warning_but_with_a_gpu_on_the_bus_a_failure():
    f = unavailable(h200(), "RuntimeError: Found no NVIDIA driver on your system.")
    f["driver"] = {"version": None, "version_source": None, "cuda": None, "cuda_source": None, "nvidia_smi": None,
                   "proc_version": None, "pci_gpus": 0}
    assert one(D.run_checks(f), "build").status == D.WARN
    f["driver"]["pci_gpus"] = 4
    c = one(D.run_checks(f), "build")
    assert c.status == D.FAIL and "--gpus all" in c.fix


@pytest.mark.parametrize("value", ["", "-1", "NoDevFiles"])
def test_cuda_visible_devices_hiding_every_gpu(value):
    f = unavailable(h200(), "RuntimeError: No CUDA GPUs are available")
    f["env"]["CUDA_VISIBLE_DEVICES"] = value
    c = one(D.run_checks(f), "build")
    assert c.status == D.FAIL and "hides every GPU" in c.summary


def test_unexplained_unavailable_cuda_quotes_the_error():
    f = unavailable(h200(), "RuntimeError: CUDA unknown error")
    f["env"]["CUDA_VISIBLE_DEVICES"] = "3"
    c = one(D.run_checks(f), "build")
    assert c.status == D.FAIL and "CUDA unknown error" in c.summary and "CUDA_VISIBLE_DEVICES='3'" in c.summary


def test_rocm_build_skips_the_cuda_driver_comparison():
    f = h200()
    f["torch"].update(cuda=None, hip="6.2.41133")
    f["driver"] = {"version": None, "version_source": None, "cuda": None, "cuda_source": None, "nvidia_smi": None,
                   "proc_version": None, "pci_gpus": 0}
    checks = D.run_checks(f)
    assert one(checks, "build").summary.startswith("ROCm build")
    assert one(checks, "driver").status == D.OK


# ------------------------------------------------------------------ the driver
def test_driver_too_old_for_the_runtime_explains_is_available_false():
    f = unavailable(h200(), "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).")
    f["torch"]["cuda"] = "12.1"
    f["driver"].update(version="470.82.01", cuda=11040)
    checks = D.run_checks(f)
    drv = one(checks, "driver")
    assert drv.status == D.FAIL
    assert "supports CUDA up to 11.4" in drv.summary and "is_available() is False" in drv.summary
    assert "≥ 530.30.02 on Linux" in drv.fix and "at most cu114" in drv.fix
    build = one(checks, "build")
    assert build.status == D.FAIL and "found version 11040" in build.summary


def test_driver_of_the_same_major_runs_under_minor_version_compatibility():
    f = h200()
    f["driver"].update(version="550.54.15", cuda=12040)
    c = one(D.run_checks(f), "driver")
    assert c.status == D.WARN
    assert "minor version compatibility (any CUDA 12.x driver from 525.60.13" in c.summary
    assert "≥ 570.26 on Linux" in c.fix
    assert V.MINOR_COMPAT_URL in c.refs


def test_driver_of_the_same_major_but_cuda_unavailable_fails():
    f = unavailable(h200(), "RuntimeError: CUDA driver initialization failed")
    f["driver"].update(version="550.54.15", cuda=12040)
    assert one(D.run_checks(f), "driver").status == D.FAIL


def test_newer_driver_major_is_fine():
    f = h200()
    f["driver"].update(version="580.65.06", cuda=13000)
    c = one(D.run_checks(f), "driver")
    assert c.status == D.OK and "supports CUDA up to 13.0" in c.summary


def test_runtime_newer_than_the_table_names_no_made_up_driver():
    f = h200()
    f["torch"]["cuda"] = "13.2"
    f["driver"].update(version="580.65.06", cuda=13000)
    c = one(D.run_checks(f), "driver")
    assert c.status == D.WARN
    assert "the driver listed for CUDA 13.2 in https://docs.nvidia.com/cuda/" in c.fix


def test_driver_known_only_by_version_number():
    f = unavailable(h200(), "RuntimeError: The NVIDIA driver on your system is too old")
    f["torch"]["cuda"] = "12.1"
    f["driver"].update(version="470.82.01", cuda=None, version_source="/proc/driver/nvidia/version")
    c = one(D.run_checks(f), "driver")
    assert c.status == D.FAIL and "older than 525.60.13" in c.summary
    # a version that reaches the major's minimum but not the runtime's GA driver: no guess
    f = h200()
    f["driver"].update(version="550.54.15", cuda=None, version_source="nvidia-smi")
    c = one(D.run_checks(f), "driver")
    assert c.status == D.OK and "exact CUDA version is unknown" in c.summary


def test_windows_driver_versions_are_not_read_with_the_linux_table():
    f = h200()
    f["python"]["platform"] = "win32"
    f["driver"].update(version="551.61", cuda=None)
    c = one(D.run_checks(f), "driver")
    assert c.status == D.OK and "unknown" in c.summary


def test_driver_tables():
    assert V.cuda_from_linux_driver("570.86.15") == (12, 8)
    assert V.cuda_from_linux_driver("535.104.05") == (12, 2)
    assert V.cuda_from_linux_driver("450.80.02") == (11, 0)
    assert V.cuda_from_linux_driver("418.39") is None
    assert V.parse_cuda(12040) == (12, 4) and V.parse_cuda("12.8") == (12, 8) and V.parse_cuda(0) is None
    # every minor release's driver reaches its major's minor-version-compatibility minimum
    for (major, _), need in V.LINUX_MIN_DRIVER.items():
        floor = V.MINOR_COMPAT_MIN_DRIVER[major][0]
        assert V.vtuple(need) >= V.vtuple(floor) or (major, _) == (11, 0)
    # and the table only grows
    items = sorted(V.LINUX_MIN_DRIVER.items())
    assert all(V.vtuple(a[1]) < V.vtuple(b[1]) for a, b in zip(items, items[1:]))


def test_proc_version_both_forms():
    assert F.parse_proc_version(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n") == "550.54.15"
    assert F.parse_proc_version(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder)\n"
    ) == "570.86.15"
    assert F.parse_proc_version("garbage") is None


# ------------------------------------------------------------------ CUDA packages
def test_two_cuda_runtime_majors_among_the_wheels():
    f = h200()
    f["packages"].append(pkg("nvidia-cuda-runtime-cu11", "11.8.89", ["tensorflow"]))
    c = one(D.run_checks(f), "cuda-libs")
    assert c.status == D.WARN and "2 CUDA major versions" in c.summary
    assert "CUDA 11: nvidia-cuda-runtime-cu11 11.8.89 (required by tensorflow)" in c.summary
    assert "CUDA 12 (torch's)" in c.summary and "keep CUDA 12, torch's" in c.fix


def test_unsuffixed_cuda13_wheels_count_by_version():
    f = h200()
    f["packages"].append(pkg("nvidia-cuda-runtime", "13.0.96", ["cuda-toolkit"]))
    c = one(D.run_checks(f), "cuda-libs")
    assert c.status == D.WARN and "CUDA 13: nvidia-cuda-runtime 13.0.96" in c.summary


def test_library_versions_that_are_not_cuda_versions_are_not_read_as_one():
    # a CUDA 13 torch: cuFFT 12.x and cuRAND 10.x are CUDA 13's own libraries
    f = h200()
    f["torch"].update(version="2.10.0+cu130", cuda="13.0")
    f["driver"].update(version="580.65.06", cuda=13000)
    f["packages"] = [pkg("nvidia-cufft", "12.0.0.61", ["cuda-toolkit"]), pkg("nvidia-curand", "10.4.0.35"),
                     pkg("nvidia-cuda-runtime", "13.0.96"), pkg("nvidia-cudnn-cu13", "9.13.0.50", ["torch"]),
                     pkg("torch", "2.10.0+cu130")]
    f["torch_pins"] = [["nvidia-cudnn-cu13", "==9.13.0.50"], ["cuda-toolkit", "==13.0.3"]]
    f["loaded_libs"] = []
    c = one(D.run_checks(f), "cuda-libs")
    assert c.status == D.OK and c.summary.startswith("CUDA 13 only")


def test_other_frameworks_bundling_another_cuda():
    f = h200()
    f["packages"] += [pkg("cupy-cuda11x", "13.3.0"), pkg("jax-cuda12-plugin", "0.4.35"),
                      pkg("jaxlib", "0.4.23+cuda11.cudnn86")]
    c = one(D.run_checks(f), "cuda-libs")
    assert c.status == D.WARN
    assert "cupy-cuda11x 13.3.0" in c.summary and "jaxlib 0.4.23+cuda11.cudnn86" in c.summary
    assert "jax-cuda12-plugin" not in c.summary.split("| CUDA 12")[0]


def test_conda_cudatoolkit_of_another_major():
    f = h200()
    f["conda"] = {"prefix": "/opt/conda", "packages": [{"name": "cudatoolkit", "version": "11.8.0", "build": "h6a678d5_0"}]}
    c = one(D.run_checks(f), "cuda-libs")
    assert c.status == D.WARN and "conda:cudatoolkit 11.8.0" in c.summary


def test_package_cuda_major():
    cases = {
        ("nvidia-cudnn-cu12", "9.1.0.70"): 12, ("nvidia-cublas-cu11", "11.11.3.6"): 11,
        ("cupy-cuda12x", "13.0.0"): 12, ("cupy-cuda113", "10.6.0"): 11, ("jax-cuda12-pjrt", "0.4.35"): 12,
        ("tensorrt-cu12-libs", "10.3.0"): 12, ("mxnet-cu112", "1.9.1"): 11, ("cudf-cu12", "24.8.0"): 12,
        ("nvidia-cuda-runtime", "13.0.96"): 13, ("nvidia-cufft", "12.0.0.61"): None,
        ("nvidia-nccl-cu12", "2.21.5"): 12, ("torch", "2.5.1+cu121"): None, ("numpy", "2.0.0"): None,
        ("cucumber", "1.0"): None, ("jaxlib", "0.4.23+cuda12.cudnn89"): 12, ("cuda-toolkit", "13.0.3"): 13,
        ("cuda-python", "12.6.0"): None, ("nvidia-dali-cuda120", "1.40.0"): 12, ("triton", "3.4.0"): None,
    }
    for (name, version), want in cases.items():
        assert V.package_cuda_major(name, version) == want, (name, version)


def test_torch_pins_replaced_by_another_package():
    f = h200()
    for p in f["packages"]:
        if p["name"] == "nvidia-cudnn-cu12":
            p.update(version="8.9.7.29", required_by=["tensorflow", "torch"])
    c = one(D.run_checks(f), "cuda-libs")
    assert c.status == D.WARN
    assert "pins nvidia-cudnn-cu12==9.10.2.21, but 8.9.7.29 is installed (required by tensorflow)" in c.summary
    assert "pip install 'nvidia-cudnn-cu12==9.10.2.21'" in c.fix


def test_pin_spec_matching():
    assert V.spec_ok("==12.8.90", "12.8.90") is True
    assert V.spec_ok("==12.8.90", "12.8.57") is False
    assert V.spec_ok("==13.0.96.*", "13.0.96.1") is True and V.spec_ok("==13.0.96.*", "13.0.96") is True
    assert V.spec_ok("==13.0.96.*", "13.0.97") is False
    assert V.spec_ok(">=12.1", "12.4") is None  # not a pin: not judged


def test_loaded_runtime_outside_the_wheel_and_twice():
    f = h200()
    f["env"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-12.1/lib64"
    f["loaded_libs"][0]["path"] = "/usr/local/cuda-12.1/lib64/libcudart.so.12.1.105"
    c = one(D.run_checks(f), "cuda-libs")
    assert c.status == D.WARN and "not from the NVIDIA wheel" in c.summary and "LD_LIBRARY_PATH" in c.summary
    f = h200()
    f["loaded_libs"].append({"path": "/opt/other/lib/libcudart.so.11.0", "soname": "libcudart.so.11.0"})
    checks = by_name(D.run_checks(f), "cuda-libs")
    assert any("two copies of libcudart" in c.summary for c in checks)


def test_torchvision_built_for_another_cuda():
    f = h200()
    f["packages"][-2]["version"] = "0.23.0+cpu"
    c = one(D.run_checks(f), "cuda-libs")
    assert c.status == D.WARN and "torchvision 0.23.0+cpu is a cpu build but torch is a cu128 build" in c.summary
    f["packages"][-2]["version"] = "0.23.0+cu118"
    assert one(D.run_checks(f), "cuda-libs").status == D.WARN
    f["packages"][-2]["version"] = "0.23.0+cu126"  # same major: torchvision accepts it
    assert one(D.run_checks(f), "cuda-libs").status == D.OK
    f["packages"][-2]["version"] = "0.23.0"  # a PyPI build: its CUDA is not written down
    assert one(D.run_checks(f), "cuda-libs").status == D.OK


def test_two_torch_installs_and_conda_plus_pip():
    f = h200()
    f["packages"].append(pkg("torch", "2.1.0", location="/home/u/.local/lib/python3.11/site-packages"))
    c = [c for c in by_name(D.run_checks(f), "torch") if c.status == D.WARN]
    assert len(c) == 1 and "2 torch installations" in c[0].summary
    f = h200()
    f["conda"] = {"prefix": "/opt/conda", "packages": [{"name": "pytorch", "version": "2.3.0", "build": "py3.11_cuda12.1_0"}]}
    c = [c for c in by_name(D.run_checks(f), "torch") if c.status == D.WARN]
    assert len(c) == 1 and "both conda (pytorch 2.3.0) and pip" in c[0].summary


def test_two_cudnn_majors_pip_and_conda():
    f = h200()
    f["conda"] = {"prefix": "/opt/conda", "packages": [{"name": "cudnn", "version": "8.9.2.26", "build": "cuda12_0"}]}
    c = one(D.run_checks(f), "cudnn")
    assert c.status == D.WARN and "two cuDNN majors" in c.summary


# ------------------------------------------------------------------ GPUs
def test_gpu_without_kernels_in_this_build_fails():
    f = h200()
    f["cuda"]["devices"][0].update(name="NVIDIA GeForce RTX 5090", capability=[12, 0], arch_supported=False)
    f["cuda"]["arch_list"] = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    c = one(D.run_checks(f), "gpu0")
    assert c.status == D.FAIL and "no kernels for sm_120" in c.summary and "sm_90" in c.summary


def test_gpu_memory_already_in_use():
    f = h200()
    f["cuda"]["devices"][0]["free_memory"] = 40 * 2**30
    c = one(D.run_checks(f), "gpu0")
    assert c.status == D.WARN and "already in use" in c.summary
    f["cuda"]["devices"][0]["free_memory"] = f["cuda"]["devices"][0]["total_memory"] - 600 * 2**20  # our context
    assert one(D.run_checks(f), "gpu0").status == D.OK


def test_volta_has_no_tf32():
    f = h200()
    f["cuda"]["devices"][0].update(name="Tesla V100-SXM2-32GB", capability=[7, 0])
    checks = D.run_checks(f)
    assert "fp16 tensor cores, no bf16/TF32" in one(checks, "gpu0").summary
    f["env"]["NVIDIA_TF32_OVERRIDE"] = "0"
    assert one(D.run_checks(f), "tf32").status == D.OK


# ------------------------------------------------------------------ settings left on
def test_tf32_override_off_on_ampere_and_later():
    f = h200()
    f["env"]["NVIDIA_TF32_OVERRIDE"] = "0"
    c = one(D.run_checks(f), "tf32")
    assert c.status == D.WARN and "never use TF32" in c.summary
    f = h200()
    f["settings"]["cudnn_allow_tf32"] = False
    assert one(D.run_checks(f), "tf32").status == D.WARN
    f = h200()
    f["settings"].update(float32_matmul_precision="high", matmul_allow_tf32=True)
    c = one(D.run_checks(f), "tf32")
    assert c.status == D.OK and c.fix is None


def test_launch_blocking_sync_debug_anomaly_determinism():
    f = h200()
    f["env"]["CUDA_LAUNCH_BLOCKING"] = "1"
    f["cuda"]["sync_debug_mode"] = 1
    f["settings"].update(anomaly=True, deterministic=True)
    f["startup_modules"] = {"sitecustomize": "/venv/lib/python3.11/site-packages/sitecustomize.py"}
    checks = D.run_checks(f)
    assert one(checks, "launch-blocking").status == D.WARN
    sync = one(checks, "sync-debug")
    assert sync.status == D.WARN and "warn at start" in sync.summary and "sitecustomize.py" in sync.summary
    anomaly = one(checks, "anomaly")
    assert anomaly.status == D.WARN and "GPU502" in anomaly.fix
    assert one(checks, "determinism").status == D.WARN
    f["env"]["CUDA_LAUNCH_BLOCKING"] = "0"
    assert one(D.run_checks(f), "launch-blocking").status == D.OK


def test_allocator():
    f = h200()
    c = one(D.run_checks(f), "allocator")
    assert c.status == D.OK and "expandable_segments:True" in c.fix
    f["env"]["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    c = one(D.run_checks(f), "allocator")
    assert c.status == D.OK and c.summary == "PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True'" and c.fix is None
    f["env"]["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segment:True"
    f["cuda"]["alloc_error"] = "RuntimeError: Unrecognized key 'expandable_segment' in CUDA allocator config."
    c = one(D.run_checks(f), "allocator")
    assert c.status == D.FAIL and "Unrecognized key" in c.summary and "PYTORCH_CUDA_ALLOC_CONF" in c.fix
    f = h200()
    f["env"]["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    assert one(D.run_checks(f), "allocator").status == D.WARN


# ------------------------------------------------------------------ CPU, shared memory, pinned memory
def test_cpu_cores_per_gpu():
    f = h200()
    c = one(D.run_checks(f), "cpu")
    assert c.status == D.OK and "16 usable CPU cores" in c.summary and "num_workers 8-12" in c.fix
    for i in range(1, 8):
        f["cuda"]["devices"].append({**f["cuda"]["devices"][0], "index": i})
    c = one(D.run_checks(f), "cpu")
    assert c.status == D.WARN and "2 per GPU" in c.summary and "num_workers ≤ 1" in c.fix
    # a container limited to 4 CPUs on a 64-core host: the quota counts, not os.cpu_count()
    f = h200()
    f["cpu"] = {"count": 64, "affinity": 64, "quota": 4.0}
    c = one(D.run_checks(f), "cpu")
    assert c.status == D.OK and "4 usable CPU cores (cgroup quota 4 CPUs)" in c.summary
    f["cpu"]["quota"] = 3.0
    assert one(D.run_checks(f), "cpu").status == D.WARN


def test_small_dev_shm():
    f = h200()
    f["shm"] = {"total": 64 * 2**20, "free": 64 * 2**20}
    c = one(D.run_checks(f), "shm")
    assert c.status == D.WARN and "64 MiB" in c.summary and "--shm-size" in c.fix


def test_pinned_memory_failure():
    f = h200()
    f["cuda"]["pinned"] = {"ok": False, "error": "RuntimeError: CUDA error: out of memory", "pinned_gbps": None,
                           "pageable_gbps": 10.0, "bytes": 64 << 20}
    c = one(D.run_checks(f), "pinned-memory")
    assert c.status == D.WARN and "out of memory" in c.summary


# ------------------------------------------------------------------ JSON
def test_json_report_is_serialisable_and_complete():
    f = h200()
    f["env"]["CUDA_LAUNCH_BLOCKING"] = "1"
    rep = D.report_json(f, D.run_checks(f))
    text = json.dumps(rep)
    back = json.loads(text)
    assert back["schema"] == "gpulint-doctor/1" and back["status"] == "warn"
    for c in back["checks"]:
        assert set(c) == {"name", "status", "summary", "fix", "refs"}
    assert back["facts"] == f


def test_every_reference_is_a_public_page():
    # a user can open each one: no section numbers of the articles the project started from
    import inspect

    source = inspect.getsource(D)
    assert "seed 0" not in source
    urls = {v for k, v in vars(D).items() if k.endswith("_URL")}
    assert len(urls) >= 5 and all(u.startswith("https://") for u in urls)
    for facts in (h200(),):
        for c in D.run_checks(facts):
            assert all(r.startswith("https://") for r in c.refs), (c.name, c.refs)


def test_requirement_parsing():
    assert F._split_requirement('nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux"') == (
        "nvidia-cudnn-cu12", "==9.1.0.70", 'platform_system == "Linux"')
    assert F._split_requirement("cuda-toolkit[cublas,cudart]==13.0.3") == ("cuda-toolkit", "==13.0.3", "")
    assert F._split_requirement("Triton (==3.4.0)")[:2] == ("triton", "==3.4.0")
    assert F._marker_ok('extra == "opt-einsum"') is False
    assert F._marker_ok("") is True


def test_visible_devices_note_and_uncollected_facts():
    f = h200()
    f["env"]["CUDA_VISIBLE_DEVICES"] = "0"
    f["driver"]["pci_gpus"] = 8
    c = one(D.run_checks(f), "build")
    assert c.status == D.OK and "1 GPU visible (CUDA_VISIBLE_DEVICES='0'; 8 on the PCI bus)" in c.summary
    f["errors"] = ["mem_get_info(0): RuntimeError: busy"]
    assert "note: not collected: mem_get_info(0): RuntimeError: busy" in D.render_text(f, D.run_checks(f))


def test_arch_supported_uses_torchs_own_rule(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86",
                                                             "sm_90"])
    assert F._arch_supported(torch, (9, 0)) is True
    assert F._arch_supported(torch, (8, 9)) is True  # sm_86 cubins run on 8.9
    assert F._arch_supported(torch, (12, 0)) is False  # an RTX 5090 on a build without sm_120
    # the older rule (a cubin of the same major), for torch releases without the new one
    monkeypatch.delattr(torch.cuda, "_code_compatible_with_device")
    assert F._arch_supported(torch, (9, 0)) is True and F._arch_supported(torch, (12, 0)) is False
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: [])
    assert F._arch_supported(torch, (9, 0)) is None


def test_torch_warnings_at_cuda_start_are_shown_once():
    f = h200()
    msg = "Found GPU0 NVIDIA GeForce GTX 780 which is of cuda capability 3.5.\nPyTorch no longer supports this GPU."
    f["cuda"]["init_warnings"] = [msg, msg]
    f["cuda"]["devices"][0].update(name="NVIDIA GeForce GTX 780", capability=[3, 5], arch_supported=False)
    checks = D.run_checks(f)
    assert [c.status for c in by_name(checks, "build")] == [D.OK]  # the gpu line says it
    assert one(checks, "gpu0").status == D.FAIL
    f["cuda"]["devices"][0]["arch_supported"] = True
    warns = [c for c in by_name(D.run_checks(f), "build") if c.status == D.WARN]
    assert len(warns) == 1 and "cuda capability 3.5. PyTorch no longer supports" in warns[0].summary
