"""The facts `gpulint doctor` judges: what torch, the driver, the installed
packages, the environment and the machine say, as one JSON-able dict.

This file runs as a script in the interpreter being diagnosed (`python
doctor_facts.py`), so it uses the standard library only, runs on Python 3.9,
and never imports gpulint. It imports torch (that is the point) and nothing
of the user's. `collect()` never raises: a step that fails leaves its fact
at None and records why under `errors`.

Run it by hand to see the raw facts:  python gpulint/harness/doctor_facts.py
"""

import ctypes
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import warnings

SCHEMA = "gpulint-doctor-facts/1"
MARKER = "GPULINT_DOCTOR_FACTS "

# Environment variables that change how fast (or whether) training runs.
ENV_VARS = (
    "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "TORCH_USE_CUDA_DSA",
    "PYTORCH_NVML_BASED_CUDA_CHECK", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX",
    "OMP_NUM_THREADS",
)

# Package names (normalized) that carry or target a CUDA build.
_RELEVANT_RE = re.compile(
    r"^(nvidia-.*|cuda-.*|torch|torchvision|torchaudio|triton|pytorch-triton.*|cupy.*|jax|jaxlib|jax-cuda.*"
    r"|tensorflow.*|tf-nightly.*|paddlepaddle.*|onnxruntime.*|mxnet.*|tensorrt.*|.*[-_]cu\d{2,3}(?:[-_].*)?"
    r"|nvidia-ml-py|pynvml)$"
)
_CONDA_RELEVANT = {
    "pytorch", "pytorch-cuda", "pytorch-gpu", "cudatoolkit", "cuda-toolkit", "cuda-cudart", "cuda-runtime",
    "cuda-version", "cudnn", "nccl", "libcublas", "cuda-nvrtc", "cupy", "tensorflow", "tensorflow-gpu",
}
_LIB_RE = re.compile(r"/(lib(?:cudart|cudnn|cublas|cublasLt|nccl|nvrtc)\.so(?:\.[0-9.]+)?)$")


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _err(facts, step, exc):
    facts["errors"].append("%s: %s: %s" % (step, type(exc).__name__, str(exc).strip()[:300]))


# ------------------------------------------------------------------ packages
def _split_requirement(text):
    """'nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux"' ->
    (name, spec, marker); spec is the text after the name (may be '')."""
    req, _, marker = text.partition(";")
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$", req)
    if not m:
        return None, "", marker.strip()
    return _norm(m.group(1)), m.group(3).strip().strip("()").strip(), marker.strip()


def _marker_ok(marker):
    """Whether a requirement's marker applies here; an `extra` marker never
    does (we only follow a package's unconditional requirements)."""
    if not marker:
        return True
    if "extra" in marker:
        return False
    try:
        from packaging.markers import Marker  # noqa: PLC0415

        return bool(Marker(marker).evaluate())
    except Exception:  # noqa: BLE001  (no packaging, or a marker it cannot read: keep the requirement)
        return True


def collect_packages(facts):
    """Every installed distribution that carries or targets CUDA, with who
    requires it, where it is and who installed it; torch's own pins."""
    from importlib import metadata  # noqa: PLC0415

    rows = {}
    required_by = {}
    torch_pins = []
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"]
        except Exception:  # noqa: BLE001
            continue
        if not name:
            continue
        key = _norm(name)
        reqs = []
        try:
            reqs = dist.requires or []
        except Exception:  # noqa: BLE001
            pass
        for r in reqs:
            rname, spec, marker = _split_requirement(r)
            if rname and _RELEVANT_RE.match(rname) and _marker_ok(marker):
                required_by.setdefault(rname, set()).add(key)
                if key == "torch" and spec:
                    torch_pins.append([rname, spec])
        if not _RELEVANT_RE.match(key):
            continue
        try:  # resolved, as the paths of the loaded libraries are (a venv's lib64 -> lib)
            location = os.path.realpath(str(dist.locate_file("")))
        except Exception:  # noqa: BLE001
            location = None
        try:
            installer = (dist.read_text("INSTALLER") or "").strip() or None
        except Exception:  # noqa: BLE001
            installer = None
        rows.setdefault(key, []).append({
            "name": key, "version": dist.version, "location": location, "installer": installer,
        })
    packages = []
    for key in sorted(rows):
        for row in rows[key]:
            row["required_by"] = sorted(required_by.get(key, ()))
            packages.append(row)
    facts["packages"] = packages
    facts["torch_pins"] = sorted(torch_pins)


def collect_conda(facts):
    prefix = sys.prefix
    meta = os.path.join(prefix, "conda-meta")
    if not os.path.isdir(meta):
        facts["conda"] = None
        return
    pkgs = []
    for fn in sorted(os.listdir(meta)):
        if not fn.endswith(".json"):
            continue
        parts = fn[:-5].rsplit("-", 2)
        if len(parts) == 3 and parts[0] in _CONDA_RELEVANT:
            pkgs.append({"name": parts[0], "version": parts[1], "build": parts[2]})
    facts["conda"] = {"prefix": prefix, "packages": pkgs}


# ------------------------------------------------------------------ driver
def _run(cmd, timeout=15):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def _driver_cuda_ctypes():
    """cuDriverGetVersion from the installed driver library (no CUDA
    context is created): e.g. 12040 for a driver that supports CUDA 12.4."""
    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so", "libcuda.dylib")
    for n in names:
        try:
            lib = ctypes.CDLL(n)
        except OSError:
            continue
        v = ctypes.c_int(0)
        try:
            if lib.cuDriverGetVersion(ctypes.byref(v)) == 0 and v.value > 0:
                return v.value
        except (AttributeError, OSError):
            continue
    return None


def _driver_version_nvml():
    try:
        import pynvml  # noqa: PLC0415

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:  # noqa: BLE001
        pass
    names = ("nvml.dll",) if sys.platform == "win32" else ("libnvidia-ml.so.1",)
    for n in names:
        try:
            lib = ctypes.CDLL(n)
        except OSError:
            continue
        try:
            init = getattr(lib, "nvmlInit_v2", None) or lib.nvmlInit
            if init() != 0:
                continue
            buf = ctypes.create_string_buffer(96)
            ok = lib.nvmlSystemGetDriverVersion(buf, ctypes.c_uint(96)) == 0
            lib.nvmlShutdown()
            if ok and buf.value:
                return buf.value.decode()
        except (AttributeError, OSError):
            continue
    return None


def _pci_nvidia_gpus():
    """NVIDIA display / 3D controllers on the PCI bus (Linux sysfs): what is
    plugged in, whether or not a driver is loaded."""
    base = "/sys/bus/pci/devices"
    if not os.path.isdir(base):
        return None
    n = 0
    for dev in os.listdir(base):
        try:
            with open(os.path.join(base, dev, "vendor")) as f:
                vendor = f.read().strip()
            with open(os.path.join(base, dev, "class")) as f:
                cls = f.read().strip()
        except OSError:
            continue
        if vendor == "0x10de" and cls.startswith("0x03"):
            n += 1
    return n


def parse_proc_version(text):
    """The driver version in /proc/driver/nvidia/version, either form:
    'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ...'
    'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build ...'"""
    m = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else None


def collect_driver(facts, torch=None):
    d = {"version": None, "version_source": None, "cuda": None, "cuda_source": None,
         "nvidia_smi": shutil.which("nvidia-smi"), "proc_version": None, "pci_gpus": None}
    # the CUDA version the driver supports (cudaDriverGetVersion / cuDriverGetVersion)
    if torch is not None and hasattr(torch._C, "_cuda_getDriverVersion"):
        try:
            v = int(torch._C._cuda_getDriverVersion())
            if v > 0:
                d["cuda"], d["cuda_source"] = v, "torch"
        except Exception:  # noqa: BLE001
            pass
    if d["cuda"] is None:
        v = _driver_cuda_ctypes()
        if v:
            d["cuda"], d["cuda_source"] = v, "libcuda"
    # the driver's own version (550.54.15)
    v = _driver_version_nvml()
    if v:
        d["version"], d["version_source"] = v, "nvml"
    smi_out = None
    if d["nvidia_smi"] and (d["version"] is None or d["cuda"] is None):
        smi_out = _run([d["nvidia_smi"], "--query-gpu=driver_version", "--format=csv,noheader"])
        if smi_out and smi_out.strip():
            d["version"], d["version_source"] = smi_out.strip().splitlines()[0].strip(), "nvidia-smi"
        if d["cuda"] is None:
            head = _run([d["nvidia_smi"]]) or ""
            m = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", head)
            if m:
                d["cuda"], d["cuda_source"] = int(m.group(1)) * 1000 + int(m.group(2)) * 10, "nvidia-smi"
    try:
        with open("/proc/driver/nvidia/version") as f:
            text = f.read()
        v = parse_proc_version(text)
        d["proc_version"] = v or (text.strip().splitlines() or ["?"])[0][:200]
        if d["version"] is None and v:
            d["version"], d["version_source"] = v, "/proc/driver/nvidia/version"
    except OSError:
        pass
    d["pci_gpus"] = _pci_nvidia_gpus()
    facts["driver"] = d


# ------------------------------------------------------------------ machine
def _cgroup_cpu_quota():
    """CPUs the cgroup allows (docker --cpus): a float, or None for no limit."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    for base in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"):
        try:
            with open(os.path.join(base, "cpu.cfs_quota_us")) as f:
                quota = int(f.read())
            with open(os.path.join(base, "cpu.cfs_period_us")) as f:
                period = int(f.read())
            if quota > 0 and period > 0:
                return quota / period
            return None
        except (OSError, ValueError):
            continue
    return None


def collect_machine(facts):
    cpu = {"count": os.cpu_count(), "affinity": None, "quota": _cgroup_cpu_quota()}
    if hasattr(os, "sched_getaffinity"):
        try:
            cpu["affinity"] = len(os.sched_getaffinity(0))
        except OSError:
            pass
    facts["cpu"] = cpu
    shm = None
    if sys.platform.startswith("linux") and os.path.isdir("/dev/shm"):
        try:
            st = os.statvfs("/dev/shm")
            shm = {"total": st.f_frsize * st.f_blocks, "free": st.f_frsize * st.f_bavail}
        except OSError:
            pass
    facts["shm"] = shm
    facts["env"] = {k: os.environ[k] for k in ENV_VARS if k in os.environ}
    startup = {}
    for mod in ("sitecustomize", "usercustomize"):
        m = sys.modules.get(mod)
        if m is not None and getattr(m, "__file__", None):
            startup[mod] = m.__file__
    facts["startup_modules"] = startup


def collect_loaded_libs(facts):
    """The CUDA libraries mapped into this process (Linux): which files
    torch actually loaded, wherever they came from."""
    libs = {}
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                m = _LIB_RE.search(line.strip())
                if m:
                    path = line.split(None, 5)[-1].strip()
                    libs[os.path.realpath(path)] = m.group(1)
    except OSError:
        facts["loaded_libs"] = None
        return
    facts["loaded_libs"] = [{"path": p, "soname": s} for p, s in sorted(libs.items())]


# ------------------------------------------------------------------ torch
def _arch_supported(torch, cc):
    """Whether this torch build has kernels for compute capability `cc`
    ((major, minor)): torch's own rule where it has one (the same check that
    warns at CUDA init), else the older one (a cubin of the same major)."""
    try:
        arch_list = torch.cuda.get_arch_list()
    except Exception:  # noqa: BLE001
        return None
    if not arch_list:
        return None
    tc = torch.cuda
    device_cc = 10 * cc[0] + cc[1]
    if hasattr(tc, "_extract_arch_version") and hasattr(tc, "_code_compatible_with_device"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                codes = [tc._extract_arch_version(a) for a in arch_list]
                return any(tc._code_compatible_with_device(device_cc, c) for c in codes)
        except Exception:  # noqa: BLE001
            pass
    sms = []
    for a in arch_list:
        m = re.match(r"sm_(\d+)", a)
        if m:
            sms.append(int(m.group(1)))
    return any(sm // 10 == cc[0] for sm in sms)


def _bandwidth(torch, src, dst):
    best = float("inf")
    dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    for _ in range(5):
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return src.numel() * src.element_size() / best / 1e9


def collect_torch(facts, measure=True):
    import importlib.util  # noqa: PLC0415

    facts["torch_installed"] = importlib.util.find_spec("torch") is not None
    if not facts["torch_installed"]:
        return None
    sys.stderr.write("gpulint-doctor: import torch\n")
    sys.stderr.flush()
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            import torch  # noqa: PLC0415
    except BaseException as e:  # noqa: BLE001  (an ImportError, an OSError from a missing .so, ...)
        facts["torch_error"] = "%s: %s" % (type(e).__name__, str(e).strip()[:500])
        return None
    t = {
        "version": torch.__version__, "file": os.path.dirname(os.path.realpath(torch.__file__)), "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None), "debug": bool(getattr(torch.version, "debug", False)),
        "import_warnings": [str(x.message)[:300] for x in w],
        "cudnn": None, "cudnn_enabled": None, "mps": False,
    }
    facts["torch"] = t
    try:
        t["cudnn"] = torch.backends.cudnn.version()
        t["cudnn_enabled"] = bool(torch.backends.cudnn.enabled)
    except Exception as e:  # noqa: BLE001
        _err(facts, "cudnn", e)
    try:
        t["mps"] = bool(torch.backends.mps.is_available())
    except Exception:  # noqa: BLE001
        pass
    s = {}
    for key, get in (
        ("float32_matmul_precision", lambda: torch.get_float32_matmul_precision()),
        ("matmul_allow_tf32", lambda: bool(torch.backends.cuda.matmul.allow_tf32)),
        ("cudnn_allow_tf32", lambda: bool(torch.backends.cudnn.allow_tf32)),
        ("anomaly", lambda: bool(torch.is_anomaly_enabled())),
        ("deterministic", lambda: bool(torch.are_deterministic_algorithms_enabled())),
        ("cudnn_benchmark", lambda: bool(torch.backends.cudnn.benchmark)),
        ("cudnn_deterministic", lambda: bool(torch.backends.cudnn.deterministic)),
    ):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s[key] = get()
        except Exception:  # noqa: BLE001
            s[key] = None
    facts["settings"] = s
    collect_cuda(facts, torch, measure)
    return torch


def collect_cuda(facts, torch, measure):
    c = {"compiled": bool(torch.version.cuda) or bool(getattr(torch.version, "hip", None)),
         "available": False, "device_count": 0, "init_error": None, "init_warnings": [], "arch_list": [],
         "devices": [], "sync_debug_mode": None, "alloc_error": None, "alloc_warnings": [], "pinned": None}
    facts["cuda"] = c
    if not c["compiled"]:
        return
    sys.stderr.write("gpulint-doctor: CUDA init\n")
    sys.stderr.flush()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            c["available"] = bool(torch.cuda.is_available())
            c["device_count"] = int(torch.cuda.device_count())
            torch.cuda.init()  # the error that explains is_available() == False, or the arch warnings
        except Exception as e:  # noqa: BLE001
            c["init_error"] = "%s: %s" % (type(e).__name__, str(e).strip()[:500])
    c["init_warnings"] = [str(x.message).strip()[:600] for x in w]
    try:
        c["arch_list"] = list(torch.cuda.get_arch_list())
    except Exception:  # noqa: BLE001
        pass
    if not c["available"] or c["init_error"]:
        return
    for i in range(c["device_count"]):
        try:
            p = torch.cuda.get_device_properties(i)
            dev = {"index": i, "name": p.name, "capability": [p.major, p.minor], "total_memory": int(p.total_memory),
                   "sm_count": int(getattr(p, "multi_processor_count", 0)) or None, "free_memory": None,
                   "arch_supported": _arch_supported(torch, (p.major, p.minor))}
            try:
                free, total = torch.cuda.mem_get_info(i)
                dev["free_memory"], dev["total_memory"] = int(free), int(total)
            except Exception as e:  # noqa: BLE001
                _err(facts, "mem_get_info(%d)" % i, e)
            c["devices"].append(dev)
        except Exception as e:  # noqa: BLE001
            _err(facts, "device %d" % i, e)
    try:
        c["sync_debug_mode"] = int(torch.cuda.get_sync_debug_mode())
    except Exception as e:  # noqa: BLE001
        _err(facts, "sync_debug_mode", e)
    # the first allocation parses PYTORCH_CUDA_ALLOC_CONF: a bad one fails here
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            torch.empty(1024, device="cuda").fill_(1.0)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            c["alloc_error"] = "%s: %s" % (type(e).__name__, str(e).strip()[:500])
    c["alloc_warnings"] = [str(x.message).strip()[:300] for x in w]
    if not measure or c["alloc_error"]:
        return
    pinned = {"ok": False, "error": None, "pinned_gbps": None, "pageable_gbps": None, "bytes": 64 << 20}
    c["pinned"] = pinned
    try:
        n = pinned["bytes"]
        dst = torch.empty(n, dtype=torch.uint8, device="cuda")
        pageable = torch.ones(n, dtype=torch.uint8)
        pinned["pageable_gbps"] = round(_bandwidth(torch, pageable, dst), 2)
        host = torch.ones(n, dtype=torch.uint8).pin_memory()
        pinned["ok"] = bool(host.is_pinned())
        pinned["pinned_gbps"] = round(_bandwidth(torch, host, dst), 2)
        del dst, host, pageable
    except Exception as e:  # noqa: BLE001
        pinned["error"] = "%s: %s" % (type(e).__name__, str(e).strip()[:300])


# ------------------------------------------------------------------ all
def collect(with_torch=True, measure=True):
    """Every fact, as a JSON-able dict. `with_torch=False` skips torch (used
    again after `import torch` crashed the interpreter)."""
    facts = {
        "schema": SCHEMA,
        "python": {"version": platform.python_version(), "executable": sys.executable, "prefix": sys.prefix,
                   "platform": sys.platform, "machine": platform.machine()},
        "torch_installed": None, "torch_error": None, "torch": None, "settings": None, "cuda": None,
        "driver": None, "packages": [], "torch_pins": [], "conda": None, "loaded_libs": None,
        "cpu": None, "shm": None, "env": {}, "startup_modules": {}, "errors": [],
    }
    torch = None
    if with_torch:
        try:
            torch = collect_torch(facts, measure)
        except Exception as e:  # noqa: BLE001
            _err(facts, "torch", e)
    else:
        import importlib.util  # noqa: PLC0415

        facts["torch_installed"] = importlib.util.find_spec("torch") is not None
    for step, fn in (("driver", lambda: collect_driver(facts, torch)), ("packages", lambda: collect_packages(facts)),
                     ("conda", lambda: collect_conda(facts)), ("machine", lambda: collect_machine(facts)),
                     ("loaded_libs", lambda: collect_loaded_libs(facts))):
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            _err(facts, step, e)
    return facts


def main(argv):
    facts = collect(with_torch="--no-torch" not in argv, measure="--no-measure" not in argv)
    sys.stdout.write("\n" + MARKER + json.dumps(facts) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
