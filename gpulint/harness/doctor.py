"""`gpulint doctor`: is this machine ready to train fast?

Two halves:

- `doctor_facts.py` runs in a fresh interpreter (the one running gpulint, or
  `--python PATH`), imports torch, and prints every fact as JSON: torch's
  build, the driver, the installed CUDA packages, the start-up settings, the
  environment, the CPU. It never imports the user's code.
- The checks here are small pure functions over that dict: each returns one
  or more `Check` lines (OK / WARN / FAIL, what was found, and the fix). The
  tests feed them facts for machines they do not have.

A WARN or FAIL that is wrong is worse than none: each check only speaks when
the facts are unambiguous, and says what it could not tell.

Exit status: 0 no FAIL (WARNs allowed), 1 at least one FAIL, 2 torch is not
installed (or the interpreter could not be run).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import click

from gpulint import __version__
from gpulint.harness.doctor_versions import (
    MINOR_COMPAT_MIN_DRIVER,
    MINOR_COMPAT_URL,
    RELEASE_NOTES_URL,
    GET_STARTED_URL,
    major_of_digits,
    vtuple,
    parse_cuda,
    cuda_str,
    cuda_from_linux_driver,
    full_support_driver,
    pick_wheel,
    package_cuda_major,
    spec_ok,
    CONDA_RUNTIMES,
)

SCHEMA = "gpulint-doctor/1"
FACTS_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "doctor_facts.py")
MARKER = "GPULINT_DOCTOR_FACTS "
OK, WARN, FAIL = "OK", "WARN", "FAIL"
EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2
INSTALL_HINT = "pip install 'gpulint[harness]'"
# public pages behind each check's advice (a check's `refs`; docs/doctor.md quotes more)
CUDA_COMPAT_URL = "https://docs.nvidia.com/deploy/cuda-compatibility/"
TF32_URL = "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices"
ALLOC_CONF_URL = "https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf"
LOADER_WORKERS_URL = "https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading"
PIN_MEMORY_URL = "https://pytorch.org/docs/stable/data.html#memory-pinning"
GIB = 1 << 30




# ------------------------------------------------------------------ checks
@dataclass
class Check:
    name: str
    status: str
    summary: str
    fix: Optional[str] = None
    refs: List[str] = field(default_factory=list)


def _gib(n) -> str:
    return f"{n / GIB:.1f} GiB"


def _env(f, key) -> Optional[str]:
    return (f.get("env") or {}).get(key)


def _torch(f) -> Dict:
    return f.get("torch") or {}


def _cuda(f) -> Dict:
    return f.get("cuda") or {}


def _drv(f) -> Dict:
    return f.get("driver") or {}


def _runtime(f) -> Optional[Tuple[int, int]]:
    return parse_cuda(_torch(f).get("cuda"))


def _windows(f) -> bool:
    return (f.get("python") or {}).get("platform") == "win32"


def driver_cuda(f) -> Tuple[Optional[Tuple[int, int]], bool]:
    """The newest CUDA the driver supports, and whether that is exact (from
    the driver itself) or a lower bound (from its version number)."""
    d = _drv(f)
    v = parse_cuda(d.get("cuda"))
    if v:
        return v, True
    if d.get("version") and not _windows(f):
        return cuda_from_linux_driver(d["version"]), False
    return None, False


def driver_present(f) -> bool:
    d = _drv(f)
    return bool(d.get("cuda") or d.get("version") or d.get("proc_version"))


def _driver_words(f) -> str:
    d = _drv(f)
    dc, exact = driver_cuda(f)
    parts = []
    if d.get("version"):
        parts.append(f"driver {d['version']}")
    if dc:
        parts.append(f"supports CUDA up to {cuda_str(dc)}" if exact
                     else f"supports at least CUDA {cuda_str(dc)} (from its version number)")
    return ", ".join(parts) or "an NVIDIA driver"


def check_torch(f) -> List[Check]:
    t = _torch(f)
    dists = [p for p in f.get("packages") or [] if p["name"] == "torch"]
    where = t.get("file") or "?"
    if f.get("torch_error"):
        return [Check("torch", FAIL, f"`import torch` fails: {f['torch_error']}",
                      "reinstall torch in this environment (pip install --force-reinstall torch, with the index URL "
                      f"you installed it from: {GET_STARTED_URL}); the cuda-libs lines below may say what conflicts",
                      [CUDA_COMPAT_URL])]
    installer = next((p.get("installer") for p in dists if where.startswith(p.get("location") or "\0")), None)
    conda = f.get("conda") or {}
    conda_torch = [p for p in conda.get("packages", []) if p["name"] == "pytorch"]
    summary = f"{t.get('version')}" + (f" ({installer})" if installer else "") + f" · {where}"
    out = [Check("torch", OK, summary)]
    if len(dists) > 1:
        listing = "; ".join(f"{p['version']} in {p['location']}" for p in dists)
        out.append(Check("torch", WARN, f"{len(dists)} torch installations on sys.path: {listing}; "
                         f"this Python imports the one in {where}",
                         "uninstall the extra ones (pip uninstall torch, once per copy; look in ~/.local for "
                         "`pip install --user` leftovers) and reinstall one build"))
    pip_torch = [p for p in dists if (p.get("installer") or "").lower() not in ("", "conda")]
    if conda_torch and pip_torch:
        out.append(Check("torch", WARN,
                         f"torch is installed by both conda (pytorch {conda_torch[0]['version']}) and pip "
                         f"({pip_torch[0]['version']}): they overwrite each other's files and libraries",
                         "keep one: `conda remove pytorch` (keep pip's) or `pip uninstall torch` (keep conda's), "
                         "then reinstall the one you keep"))
    return out


def check_build(f) -> List[Check]:
    """Which build torch is, and whether it can use the GPU."""
    t, c, d = _torch(f), _cuda(f), _drv(f)
    if not t:
        return []
    rt = _runtime(f)
    pci = d.get("pci_gpus") or 0
    has_driver = driver_present(f)
    dc, exact = driver_cuda(f)
    if t.get("hip"):
        if c.get("available"):
            return [Check("build", OK, f"ROCm build (HIP {t['hip']}) · {c.get('device_count')} GPU(s) visible")]
        return [Check("build", WARN, f"ROCm build (HIP {t['hip']}) and no GPU visible",
                      "check the ROCm driver (rocm-smi); the CUDA checks below do not apply")]
    if rt is None:  # a CPU-only build
        if has_driver or pci:
            gpu = f"an NVIDIA GPU ({_driver_words(f)})" if has_driver else "an NVIDIA GPU on the PCI bus (no driver loaded)"
            fix = (f"pip uninstall torch && pip install torch --index-url https://download.pytorch.org/whl/cuXYZ, "
                   f"with cuXYZ {pick_wheel(dc if exact else None)}")
            if not has_driver:
                fix = "install the NVIDIA driver, then a CUDA build of torch: " + fix
            return [Check("build", FAIL,
                          f"CPU-only build of torch (torch.version.cuda is None) on a machine with {gpu}: "
                          "training runs on the CPU, without an error, many times slower", fix, [CUDA_COMPAT_URL])]
        if t.get("mps"):
            return [Check("build", OK, "no CUDA in this build; Apple MPS is available (device='mps')")]
        return [Check("build", WARN,
                      "CPU-only build of torch (torch.version.cuda is None) and no NVIDIA GPU found: "
                      "training runs on the CPU",
                      "run training on a machine with an NVIDIA GPU and install a CUDA build there "
                      f"({GET_STARTED_URL}); run `gpulint doctor` on it", [CUDA_COMPAT_URL])]
    # a CUDA build
    n = c.get("device_count") or 0
    cvd = _env(f, "CUDA_VISIBLE_DEVICES")
    if c.get("available") and n > 0 and not c.get("init_error"):
        note = ""
        if cvd is not None:
            note = f" (CUDA_VISIBLE_DEVICES={cvd!r}" + (f"; {pci} on the PCI bus)" if pci > n else ")")
        out = [Check("build", OK, f"CUDA {cuda_str(rt)} build · CUDA available · {n} GPU{'s' if n != 1 else ''} "
                     f"visible{note}")]
        arch_fail = any(dev.get("arch_supported") is False for dev in c.get("devices") or [])
        for w in dict.fromkeys(c.get("init_warnings") or []):  # torch's own words at CUDA start
            if arch_fail and re.search(r"capabilit|sm_\d", w):
                continue  # the gpu line says it
            out.append(Check("build", WARN, "torch warns when CUDA starts: " + " ".join(w.split())[:400],
                             "read the warning: it names what torch cannot use on this machine"))
        return out
    why = c.get("init_error") or "torch.cuda.is_available() is False"
    if cvd is not None and (cvd.strip() in ("", "-1") or not re.match(r"\s*(\d|GPU-|MIG-)", cvd)):
        return [Check("build", FAIL, f"CUDA {cuda_str(rt)} build, but CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU",
                      "unset CUDA_VISIBLE_DEVICES, or set it to GPU indices or UUIDs (nvidia-smi -L)")]
    if not has_driver:
        if pci:
            return [Check("build", FAIL,
                          f"CUDA {cuda_str(rt)} build and {pci} NVIDIA GPU{'s' if pci != 1 else ''} on the PCI bus, "
                          "but no NVIDIA driver is loaded here (in a container: started without GPU access?)",
                          "install the NVIDIA driver (nvidia-smi must work); in Docker, run with `--gpus all` and "
                          "the NVIDIA Container Toolkit")]
        return [Check("build", WARN,
                      f"CUDA {cuda_str(rt)} build, but no NVIDIA GPU or driver found: training runs on the CPU",
                      "run training on a machine with an NVIDIA GPU")]
    if dc and rt and exact and dc < rt:
        return [Check("build", FAIL, f"CUDA {cuda_str(rt)} build, but CUDA is not available and the driver only "
                      f"supports CUDA up to {cuda_str(dc)} (see the driver line): {why}", None, [CUDA_COMPAT_URL])]
    cvd_note = f" (CUDA_VISIBLE_DEVICES={cvd!r})" if cvd is not None else ""
    return [Check("build", FAIL, f"CUDA {cuda_str(rt)} build and {_driver_words(f)}, but CUDA is not available"
                  f"{cvd_note}: {why}",
                  "run nvidia-smi: if it fails, the driver is broken (reboot, or reinstall the driver); "
                  "otherwise see the error above")]


def check_gpus(f) -> List[Check]:
    out = []
    for dev in _cuda(f).get("devices") or []:
        cc = dev.get("capability") or [0, 0]
        name = f"gpu{dev.get('index', len(out))}"
        total = dev.get("total_memory") or 0
        feats = []
        if cc[0] >= 8:
            feats.append("bf16 + TF32 tensor cores")
        elif cc[0] == 7:
            feats.append("fp16 tensor cores, no bf16/TF32")
        summary = (f"{dev.get('name')} · sm_{cc[0]}{cc[1]} · {_gib(total)}"
                   + (f" · {dev['sm_count']} SMs" if dev.get("sm_count") else "")
                   + (f" · {', '.join(feats)}" if feats else ""))
        if dev.get("arch_supported") is False:
            arch = " ".join(_cuda(f).get("arch_list") or [])
            out.append(Check(name, FAIL, f"{summary}: this torch build has no kernels for sm_{cc[0]}{cc[1]} "
                             f"(built for: {arch})",
                             "install a torch build that supports this GPU (newer GPUs need newer torch and CUDA "
                             f"builds; {GET_STARTED_URL})"))
            continue
        free = dev.get("free_memory")
        used = total - free if free is not None and total else 0
        if free is not None and used > max(2 * GIB, 0.10 * total):
            out.append(Check(name, WARN, f"{summary}: {_gib(used)} already in use before training starts "
                             "(another process on this GPU?)",
                             "nvidia-smi lists the processes; a second job on the same GPU takes its memory and "
                             "its time"))
            continue
        out.append(Check(name, OK, summary + (f" · {_gib(free)} free" if free is not None else "")))
    return out


def check_driver(f) -> List[Check]:
    d = _drv(f)
    rt = _runtime(f)
    if not driver_present(f):
        if rt is None:
            return [Check("driver", OK, "no NVIDIA driver (none needed by a CPU-only build)")]
        return [Check("driver", OK, "no NVIDIA driver found (see the build line)")]
    dc, exact = driver_cuda(f)
    words = _driver_words(f)
    if rt is None or _torch(f).get("hip"):
        return [Check("driver", OK, words)]
    if dc is None:
        return [Check("driver", OK, f"{words}; the CUDA version it supports is unknown (nvidia-smi shows it, top "
                      f"right); torch needs CUDA {cuda_str(rt)}")]
    available = bool(_cuda(f).get("available"))
    if dc >= rt:
        return [Check("driver", OK, f"{words} · torch's CUDA {cuda_str(rt)} runtime needs no more")]
    if not exact:  # a lower bound from the version number: too old only if below the major's minimum
        need = MINOR_COMPAT_MIN_DRIVER.get(rt[0])
        if need and vtuple(d.get("version") or "0") < vtuple(need[0]):
            return [Check("driver", WARN if available else FAIL, f"driver {d.get('version')} is older than {need[0]}, the minimum for any "
                          f"CUDA {rt[0]}.x application: torch's CUDA {cuda_str(rt)} runtime cannot run",
                          f"upgrade the NVIDIA driver to {full_support_driver(rt)}, or install a torch built for "
                          f"an older CUDA ({GET_STARTED_URL})", [MINOR_COMPAT_URL])]
        return [Check("driver", OK, f"{words} (from the version number); torch needs CUDA {cuda_str(rt)}: "
                      "the driver's exact CUDA version is unknown (nvidia-smi shows it, top right)")]
    if dc[0] < rt[0]:
        if available:
            return [Check("driver", WARN, f"{words}, older than torch's CUDA {cuda_str(rt)} runtime, yet CUDA "
                          "initialised (a forward-compatibility package?)",
                          f"upgrade the driver to {full_support_driver(rt)}", [CUDA_COMPAT_URL])]
        return [Check("driver", FAIL, f"{words}; torch was built with CUDA {cuda_str(rt)}: the driver is too old, "
                      "which is why torch.cuda.is_available() is False",
                      f"upgrade the NVIDIA driver to {full_support_driver(rt)}; or install a torch built for an "
                      f"older CUDA: cuXYZ {pick_wheel(dc)}", [CUDA_COMPAT_URL, RELEASE_NOTES_URL])]
    # same major, older minor: CUDA minor version compatibility
    need = MINOR_COMPAT_MIN_DRIVER.get(rt[0])
    if not available:
        return [Check("driver", FAIL, f"{words}, older than torch's CUDA {cuda_str(rt)} runtime, and CUDA is not "
                      "available",
                      f"upgrade the NVIDIA driver to {full_support_driver(rt)}", [MINOR_COMPAT_URL])]
    base = f" (any CUDA {rt[0]}.x driver from {need[0]} on Linux)" if need else ""
    return [Check("driver", WARN,
                  f"{words}, older than torch's CUDA {cuda_str(rt)} runtime: it runs through CUDA minor version "
                  f"compatibility{base}, with a limited feature set (PTX newer than the driver cannot be JIT-compiled)",
                  f"upgrade the NVIDIA driver to {full_support_driver(rt)}", [MINOR_COMPAT_URL])]


# --- CUDA packages
def _who(p, skip: Sequence[str] = ()) -> str:
    req = [r for r in p.get("required_by") or [] if r != p["name"] and r not in skip]
    return f" (required by {', '.join(req[:3])}{'…' if len(req) > 3 else ''})" if req else ""


def _torch_tag(f) -> Optional[str]:
    t = _torch(f)
    if not t:
        return None
    if t.get("hip"):
        return "rocm"
    rt = _runtime(f)
    return f"cu{rt[0]}{rt[1]}" if rt else "cpu"


def _companions(f) -> List[Check]:
    """torchvision / torchaudio built for another CUDA (or for the CPU) than torch."""
    tag = _torch_tag(f)
    if tag is None:
        return []
    out = []
    for p in f.get("packages") or []:
        if p["name"] not in ("torchvision", "torchaudio"):
            continue
        m = re.search(r"\+(cpu|cu\d+|rocm[\d.]*)$", p.get("version") or "")
        if not m:
            continue  # a PyPI build without a local tag: which CUDA it targets is not written down
        theirs = m.group(1)
        mine_major = major_of_digits(tag[2:]) if tag.startswith("cu") else tag
        theirs_major = major_of_digits(theirs[2:]) if theirs.startswith("cu") else re.sub(r"[\d.]+$", "", theirs)
        if mine_major != theirs_major:
            out.append(Check("cuda-libs", WARN,
                             f"{p['name']} {p['version']} is a {theirs} build but torch is a {tag} build: "
                             f"{p['name']}'s compiled ops fail or refuse to load",
                             f"pip install --force-reinstall {p['name']} --index-url "
                             f"https://download.pytorch.org/whl/{tag} (the version that matches torch "
                             f"{_torch(f).get('version')})"))
    return out


def check_cuda_libs(f) -> List[Check]:
    pkgs = f.get("packages") or []
    rt = _runtime(f)
    out: List[Check] = []
    # 1. CUDA majors across the installed packages (and torch's own)
    by_major: Dict[int, List[Dict]] = {}
    for p in pkgs:
        m = package_cuda_major(p["name"], p.get("version") or "")
        if m is not None:
            by_major.setdefault(m, []).append(p)
    conda = f.get("conda") or {}
    conda_rt = [p for p in conda.get("packages", []) if p["name"] in CONDA_RUNTIMES]
    for p in conda_rt:
        v = vtuple(p["version"])
        if v and v[0] >= 10:
            by_major.setdefault(v[0], []).append({"name": f"conda:{p['name']}", "version": p["version"]})
    majors = set(by_major) | ({rt[0]} if rt else set())
    if len(majors) > 1:
        parts = []
        for m in sorted(majors):
            names = [f"{p['name']} {p.get('version')}{_who(p)}" for p in by_major.get(m, [])]
            label = f"CUDA {m}" + (" (torch's)" if rt and m == rt[0] else "")
            shown = "; ".join(names[:4]) + (f"; +{len(names) - 4} more" if len(names) > 4 else "")
            parts.append(f"{label}: {shown or 'torch ' + str(_torch(f).get('version'))}")
        keep = f"CUDA {rt[0]}, torch's" if rt else "one CUDA major"
        out.append(Check("cuda-libs", WARN,
                         f"packages for {len(majors)} CUDA major versions in one environment: " + " | ".join(parts),
                         f"keep {keep}: uninstall the others or install their builds for that CUDA (e.g. "
                         "cupy-cuda12x instead of cupy-cuda11x), or give each framework its own environment "
                         "(`pip list | grep -i cuda` shows them)", [CUDA_COMPAT_URL]))
    # 2. torch's exact pins on NVIDIA wheels, replaced by another package's
    installed = {p["name"]: p for p in pkgs}
    for name, spec in f.get("torch_pins") or []:
        p = installed.get(name)
        if p is None or not name.startswith("nvidia-"):
            continue
        ok = spec_ok(spec, p.get("version") or "")
        if ok is False:
            out.append(Check("cuda-libs", WARN,
                             f"torch {_torch(f).get('version')} pins {name}{spec}, but {p.get('version')} is "
                             f"installed{_who(p, ('torch',))}: torch loads a library it was not built and tested with",
                             f"pip install '{name}{spec}' (and keep the package that wanted another version in "
                             "its own environment); `pip check` lists every such conflict"))
    # 3. the CUDA libraries torch actually loaded
    out += _loaded_libs(f, pkgs)
    out += _companions(f)
    if not out:
        n_nv = sum(1 for p in pkgs if p["name"].startswith("nvidia-"))
        what = f"CUDA {rt[0]} only" if rt else ("no CUDA packages" if not majors else f"CUDA {next(iter(majors))} only")
        extra = f" · {n_nv} nvidia-* wheels" if n_nv else ""
        pins = " · torch's pins met" if f.get("torch_pins") else ""
        out.append(Check("cuda-libs", OK, what + extra + pins))
    return out


def _loaded_libs(f, pkgs) -> List[Check]:
    libs = f.get("loaded_libs") or []
    if not libs:
        return []
    out = []
    groups: Dict[str, List[str]] = {}
    for lib in libs:
        stem = re.sub(r"\.so.*$", "", lib["soname"])
        groups.setdefault(stem, []).append(lib["path"])
    for stem, paths in sorted(groups.items()):
        if len(set(paths)) > 1:
            out.append(Check("cuda-libs", WARN,
                             f"two copies of {stem} are loaded in one process: {', '.join(sorted(set(paths)))}",
                             "remove the second CUDA installation from the process's path (LD_LIBRARY_PATH, "
                             "another package's bundled runtime)", [CUDA_COMPAT_URL]))
    # a library loaded from outside the NVIDIA wheel torch depends on
    wheel_dirs = sorted({os.path.join(p["location"], "nvidia") for p in pkgs
                         if p["name"].startswith("nvidia-") and p.get("location")})
    pinned = {n for n, _ in f.get("torch_pins") or []}
    if wheel_dirs and any(n.startswith("nvidia-cuda-runtime") for n in pinned):
        for stem in ("libcudart", "libcudnn"):
            for path in groups.get(stem, []):
                if not any(path.startswith(w + os.sep) for w in wheel_dirs):
                    ld = _env(f, "LD_LIBRARY_PATH")
                    out.append(Check("cuda-libs", WARN,
                                     f"torch loaded {os.path.basename(path)} from {path}, not from the NVIDIA wheel "
                                     "it depends on" + (" (LD_LIBRARY_PATH comes first)" if ld else ""),
                                     "remove that directory from LD_LIBRARY_PATH (or unset it) so torch uses its "
                                     "own CUDA libraries", [CUDA_COMPAT_URL]))
    return out


def check_cudnn(f) -> List[Check]:
    t = _torch(f)
    if not t or _runtime(f) is None:
        return [Check("cudnn", OK, "not used (no CUDA in this build)")] if t else []
    v = t.get("cudnn")
    if v is None:
        return [Check("cudnn", WARN, "cuDNN is not available to torch: convolutions and RNNs use slower kernels",
                      "reinstall torch with its cuDNN (pip install --force-reinstall torch with your index URL)")]
    ver = f"{v // 10000}.{(v // 100) % 100}.{v % 100}" if v >= 90000 else (
        f"{v // 1000}.{(v // 100) % 10}.{v % 100}")
    if t.get("cudnn_enabled") is False:
        return [Check("cudnn", WARN, f"cuDNN {ver}, but torch.backends.cudnn.enabled is False at start",
                      "find what turns it off at start-up (sitecustomize, a .pth file) and remove it")]
    out = []
    wheels = [p for p in f.get("packages") or [] if p["name"].startswith("nvidia-cudnn")]
    conda_cudnn = [p for p in (f.get("conda") or {}).get("packages", []) if p["name"] == "cudnn"]
    if wheels and conda_cudnn:
        w, c = wheels[0], conda_cudnn[0]
        if vtuple(w["version"])[:1] != vtuple(c["version"])[:1]:
            out.append(Check("cudnn", WARN, f"two cuDNN majors installed: {w['name']} {w['version']} (pip) and "
                             f"cudnn {c['version']} (conda); torch loaded {ver}",
                             "keep one: torch's own (pip) or conda's, not both"))
    return out or [Check("cudnn", OK, f"cuDNN {ver}"
                         + (" · cudnn.benchmark on at start" if (f.get("settings") or {}).get("cudnn_benchmark") else ""))]


def _max_cc(f) -> Optional[int]:
    ccs = [d["capability"][0] for d in _cuda(f).get("devices") or [] if d.get("capability")]
    return max(ccs) if ccs else None


def check_tf32(f) -> List[Check]:
    s = f.get("settings") or {}
    if not s:
        return []
    prec = s.get("float32_matmul_precision")
    mm, cd = s.get("matmul_allow_tf32"), s.get("cudnn_allow_tf32")
    cc = _max_cc(f)
    state = f"fp32 matmul precision {prec!r} (TF32 matmuls {'on' if mm else 'off'}) · cuDNN TF32 {'on' if cd else 'off'}"
    override = _env(f, "NVIDIA_TF32_OVERRIDE")
    if cc is None:
        return [Check("tf32", OK, f"{state} at start (no GPU: TF32 does not apply)")]
    if cc < 8:
        return [Check("tf32", OK, f"{state} at start (this GPU has no TF32: sm < 80)")]
    if override is not None and override.strip() == "0":
        return [Check("tf32", WARN, f"NVIDIA_TF32_OVERRIDE=0: cuBLAS and cuDNN never use TF32, whatever the script "
                      f"asks ({state})",
                      "unset NVIDIA_TF32_OVERRIDE unless you need full FP32 matmuls everywhere", [TF32_URL])]
    if cd is False:
        return [Check("tf32", WARN, f"{state} at start: cuDNN TF32 is on by default, something turned it off at "
                      "start-up",
                      "find it (sitecustomize, a .pth file) and remove it; set precision in the training script",
                      [TF32_URL])]
    if mm:
        return [Check("tf32", OK, f"{state} at start")]
    return [Check("tf32", OK, f"{state} at start (torch's defaults)",
                  "fp32 matmuls on this GPU run several times faster as TF32: call "
                  "torch.set_float32_matmul_precision('high') in the training script, or train under autocast "
                  "(`gpulint check` flags loops that use neither: GPU403)", [TF32_URL])]


def check_allocator(f) -> List[Check]:
    c = _cuda(f)
    conf_key = "PYTORCH_CUDA_ALLOC_CONF" if _env(f, "PYTORCH_CUDA_ALLOC_CONF") is not None else (
        "PYTORCH_ALLOC_CONF" if _env(f, "PYTORCH_ALLOC_CONF") is not None else None)
    conf = _env(f, conf_key) if conf_key else None
    out = []
    if (_env(f, "PYTORCH_NO_CUDA_MEMORY_CACHING") or "0").strip() not in ("", "0"):
        out.append(Check("allocator", WARN, "PYTORCH_NO_CUDA_MEMORY_CACHING is set: the caching allocator is off, "
                         "every tensor allocation and free calls cudaMalloc / cudaFree",
                         "unset PYTORCH_NO_CUDA_MEMORY_CACHING (it is a debugging switch)"))
    if c.get("alloc_error"):
        out.append(Check("allocator", FAIL, "the first CUDA allocation fails"
                         + (f" with {conf_key}={conf!r}" if conf_key else "") + f": {c['alloc_error']}",
                         f"fix or unset {conf_key}" if conf_key else "see the error above"))
    for w in c.get("alloc_warnings") or []:
        if re.search(r"alloc|expandable", w, re.I):
            what = f"{conf_key}={conf!r}: " if conf_key else ""
            out.append(Check("allocator", WARN, f"{what}the first CUDA allocation warns: {w}",
                             f"fix or unset {conf_key}" if conf_key else "see the warning"))
    if out:
        return out
    if conf_key:
        return [Check("allocator", OK, f"{conf_key}={conf!r}")]
    tip = None
    if _runtime(f) is not None:
        tip = ("if you hit out-of-memory with much memory reserved but not allocated (shapes that vary, long runs), "
               "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    return [Check("allocator", OK, "default caching allocator (PYTORCH_CUDA_ALLOC_CONF unset)", tip,
                  [ALLOC_CONF_URL] if tip else [])]


def check_debug_modes(f) -> List[Check]:
    s = f.get("settings") or {}
    c = _cuda(f)
    startup = f.get("startup_modules") or {}
    where = (" (loaded at start: " + ", ".join(startup.values()) + ")") if startup else ""
    out = []
    torch_known = bool(_torch(f))
    lb = _env(f, "CUDA_LAUNCH_BLOCKING")
    if lb is not None and lb.strip() not in ("", "0"):
        out.append(Check("launch-blocking", WARN, f"CUDA_LAUNCH_BLOCKING={lb}: every kernel launch waits for the "
                         "kernel to finish, so the CPU never runs ahead of the GPU",
                         "unset CUDA_LAUNCH_BLOCKING (it is for finding the line of a CUDA error)"))
    else:
        out.append(Check("launch-blocking", OK, "CUDA_LAUNCH_BLOCKING unset"))
    if not torch_known:  # torch could not be imported: its start-up state is unknown
        return out
    mode = c.get("sync_debug_mode")
    if mode:
        out.append(Check("sync-debug", WARN, f"CUDA sync debug mode is {'warn' if mode == 1 else 'error'} at start"
                         f"{where}: every synchronizing call is checked",
                         "remove torch.cuda.set_sync_debug_mode(...) from start-up code; use it only while "
                         "hunting syncs"))
    else:
        out.append(Check("sync-debug", OK, "off" if mode == 0 else "off (no CUDA)"))
    if s.get("anomaly"):
        out.append(Check("anomaly", WARN, f"autograd anomaly detection is on at start{where}: every backward "
                         "records and checks each op (several times slower)",
                         "remove torch.autograd.set_detect_anomaly(True) from start-up code (`gpulint check` "
                         "flags it in your scripts: GPU502)"))
    else:
        out.append(Check("anomaly", OK, "off"))
    if s.get("deterministic") or s.get("cudnn_deterministic"):
        which = "torch.use_deterministic_algorithms(True)" if s.get("deterministic") else "cudnn.deterministic = True"
        out.append(Check("determinism", WARN, f"{which} at start{where}: slower deterministic kernels everywhere",
                         "set it in the scripts that need bit-exact runs, not at start-up"))
    return out


def _usable_cpus(f) -> Tuple[Optional[int], str]:
    cpu = f.get("cpu") or {}
    count, aff, quota = cpu.get("count"), cpu.get("affinity"), cpu.get("quota")
    usable = aff or count
    why = []
    if aff and count and aff < count:
        why.append(f"affinity {aff} of {count}")
    if quota is not None and usable and quota < usable:
        usable = max(1, int(quota))
        why.append(f"cgroup quota {quota:g} CPUs")
    return usable, (", ".join(why) or f"{count} logical")


def check_cpu(f) -> List[Check]:
    usable, why = _usable_cpus(f)
    if not usable:
        return []
    n_gpu = len(_cuda(f).get("devices") or [])
    if n_gpu == 0:
        return [Check("cpu", OK, f"{usable} usable CPU cores ({why})")]
    per = usable // n_gpu
    rec = f"num_workers {max(1, per // 2)}-{max(1, per * 3 // 4)} per GPU process"
    if per < 4:
        return [Check("cpu", WARN, f"{usable} usable CPU cores ({why}) for {n_gpu} GPU{'s' if n_gpu != 1 else ''}: "
                      f"{per} per GPU, fewer than the 4 DataLoader workers per GPU that input pipelines usually start "
                      "with; decoding and augmentation may starve the GPU",
                      f"use num_workers ≤ {max(1, per - 1)}, move augmentation to the GPU, or get more cores "
                      "(check the --cpus limit of the container)", [LOADER_WORKERS_URL])]
    return [Check("cpu", OK, f"{usable} usable CPU cores ({why}) for {n_gpu} GPU{'s' if n_gpu != 1 else ''}",
                  f"{rec} (start at 4, double while time per sample still drops)",
                  [LOADER_WORKERS_URL])]


def check_shm(f) -> List[Check]:
    shm = f.get("shm")
    if not shm:
        return []
    total = shm.get("total") or 0
    if total < GIB:
        return [Check("shm", WARN, f"/dev/shm is {total / 2**20:.0f} MiB: DataLoader workers hand batches over "
                      "through shared memory; with num_workers > 0 they fail with 'bus error' or 'No space left on "
                      "device' once a few batches are in flight",
                      "in Docker: run with --ipc=host or --shm-size=8g (PyTorch's README, 'Using pre-built images')")]
    return [Check("shm", OK, f"/dev/shm {_gib(total)}")]


def check_pinned(f) -> List[Check]:
    c = _cuda(f)
    p = c.get("pinned")
    if not _torch(f):
        return []
    if not c.get("available"):
        return [Check("pinned-memory", OK, "not available without CUDA (DataLoader pin_memory=True is ignored)")]
    if not p:
        return []
    if p.get("error") or not p.get("ok"):
        return [Check("pinned-memory", WARN, f"pinning host memory fails: {p.get('error') or 'is_pinned() is False'}: "
                      "pin_memory=True cannot overlap copies with compute",
                      "check the memory limits of the container or VM (locked memory)", [PIN_MEMORY_URL])]
    return [Check("pinned-memory", OK, f"host→GPU copies {p['pinned_gbps']:g} GB/s pinned, {p['pageable_gbps']:g} GB/s "
                  f"pageable ({p['bytes'] >> 20} MiB)",
                  "use DataLoader(pin_memory=True) with .to(device, non_blocking=True)", [PIN_MEMORY_URL])]


CHECKS: Sequence[Callable[[Dict], List[Check]]] = (
    check_torch, check_build, check_gpus, check_driver, check_cuda_libs, check_cudnn, check_tf32,
    check_allocator, check_debug_modes, check_cpu, check_shm, check_pinned,
)


def run_checks(facts: Dict) -> List[Check]:
    out: List[Check] = []
    for chk in CHECKS:
        out.extend(chk(facts))
    return out


def overall(checks: Sequence[Check]) -> str:
    statuses = {c.status for c in checks}
    return FAIL if FAIL in statuses else WARN if WARN in statuses else OK


# ------------------------------------------------------------------ collecting
class DoctorError(Exception):
    """The interpreter could not be run, or torch is missing: one line."""


def _parse_facts(stdout: str) -> Optional[Dict]:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                return json.loads(line[len(MARKER):])
            except ValueError:
                return None
    return None


def gather(python: Optional[str] = None, timeout: float = 180.0) -> Dict:
    """Run doctor_facts.py in `python` (default: this interpreter) and
    return its facts. If importing torch kills the interpreter (a crash in a
    CUDA library), collect the rest without torch and say so."""
    python = python or sys.executable
    cmd = [python, FACTS_SCRIPT]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise DoctorError(f"cannot run {python}: no such file")
    except OSError as e:
        raise DoctorError(f"cannot run {python}: {e.strerror or e}")
    except subprocess.TimeoutExpired:
        raise DoctorError(f"collecting the facts took longer than {timeout:g} s (a hung CUDA init? run nvidia-smi)")
    facts = _parse_facts(r.stdout)
    if facts is not None:
        return facts
    stage = [ln for ln in r.stderr.splitlines() if ln.startswith("gpulint-doctor: ")]
    where = stage[-1][len("gpulint-doctor: "):] if stage else "start-up"
    how = f"exit status {r.returncode}"
    if r.returncode < 0:
        try:
            how = f"signal {signal.Signals(-r.returncode).name}"
        except ValueError:
            how = f"signal {-r.returncode}"
    tail = r.stderr.strip().splitlines()[-1][:300] if r.stderr.strip() else ""
    try:
        r2 = subprocess.run(cmd + ["--no-torch"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        r2 = None
    facts = _parse_facts(r2.stdout) if r2 is not None else None
    if facts is None:
        raise DoctorError(f"{python} could not report its facts ({how} during {where}): {tail}")
    facts["torch_error"] = f"the interpreter died ({how}) during {where}" + (f": {tail}" if tail else "")
    return facts


# ------------------------------------------------------------------ output
_COLORS = {OK: "green", WARN: "yellow", FAIL: "red"}


def render_text(facts: Dict, checks: Sequence[Check], color: bool = False) -> str:
    py = facts.get("python") or {}
    lines = [f"gpulint doctor · Python {py.get('version')} · {py.get('executable')}"]
    width = max((len(c.name) for c in checks), default=4)
    indent = " " * (4 + 2 + width + 2)
    for c in checks:
        status = click.style(f"{c.status:<4}", fg=_COLORS[c.status], bold=c.status != OK) if color else f"{c.status:<4}"
        lines.append(f"{status}  {c.name:<{width}}  {c.summary}")
        if c.fix:
            label = "tip" if c.status == OK else "fix"
            lines.append(f"{indent}{label}: {c.fix}")
    n_warn = sum(c.status == WARN for c in checks)
    n_fail = sum(c.status == FAIL for c in checks)
    for err in facts.get("errors") or []:
        lines.append(f"note: not collected: {err}")
    lines.append(f"{n_fail} failure{'s' if n_fail != 1 else ''}, {n_warn} warning{'s' if n_warn != 1 else ''}.")
    return "\n".join(lines) + "\n"


def report_json(facts: Dict, checks: Sequence[Check]) -> Dict:
    return {
        "schema": SCHEMA,
        "gpulint": __version__,
        "status": overall(checks).lower(),
        "counts": {s.lower(): sum(c.status == s for c in checks) for s in (OK, WARN, FAIL)},
        "checks": [{**asdict(c), "status": c.status.lower()} for c in checks],
        "facts": facts,
    }


def _missing_torch_message(facts: Dict) -> str:
    py = (facts.get("python") or {}).get("executable") or "this Python"
    if os.path.realpath(py) != os.path.realpath(sys.executable):
        return f"torch is not installed in {py}; install it there: {py} -m {INSTALL_HINT} (or pip install torch)"
    return f"torch is not installed in {py}; install the harness extra: {INSTALL_HINT}"


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable report (schema gpulint-doctor/1).")
@click.option("--python", "python", default=None, metavar="PATH",
              help="Diagnose this interpreter (default: the one running gpulint).")
@click.option("--timeout", type=click.FloatRange(min=1), default=180, show_default=True,
              help="Seconds the fact collection (import torch, CUDA init) may take.")
@click.option("--no-color", is_flag=True, help="Never colour the output (also NO_COLOR=1).")
def doctor(as_json, python, timeout, no_color) -> None:
    """Check whether this machine is ready to train fast: torch's build, the
    GPUs, the driver against torch's CUDA runtime, clashing CUDA packages,
    slow settings left on, CPU cores and pinned memory.

    Each line is OK, WARN or FAIL, with the reason and the fix. Exit 0 when
    nothing FAILs, 1 when something does, 2 when torch is not installed.
    Imports torch in a fresh interpreter; never imports your code.
    """
    from gpulint.engine.console import use_color

    try:
        facts = gather(python, timeout)
    except DoctorError as e:
        if as_json:
            click.echo(json.dumps({"schema": SCHEMA, "gpulint": __version__, "status": "error", "error": str(e)}))
        click.echo(f"gpulint doctor: {e}", err=True)
        sys.exit(EXIT_ERROR)
    if not facts.get("torch_installed"):
        msg = _missing_torch_message(facts)
        if as_json:
            click.echo(json.dumps({"schema": SCHEMA, "gpulint": __version__, "status": "error", "error": msg,
                                   "facts": facts}, indent=1))
        click.echo(f"gpulint doctor: {msg}", err=True)
        sys.exit(EXIT_ERROR)
    checks = run_checks(facts)
    if as_json:
        click.echo(json.dumps(report_json(facts, checks), indent=1))
    else:
        color = use_color(no_color, sys.stdout)
        click.echo(render_text(facts, checks, color), nl=False, color=color)
    sys.exit(EXIT_FAIL if overall(checks) == FAIL else EXIT_OK)
