"""Versions for `gpulint doctor`: NVIDIA's driver tables, and what a version
string, a driver or a package name says about CUDA. Pure functions, no facts."""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

# ------------------------------------------------------------------ driver tables
# Minimum Linux x86_64 driver for each CUDA toolkit's GA release: NVIDIA's
# "CUDA Toolkit and Corresponding Driver Versions" table in the CUDA Toolkit
# release notes (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/).
# Used only to name the driver that gives full support; releases newer than
# this table are named by the release notes, not guessed.
LINUX_MIN_DRIVER: Dict[Tuple[int, int], str] = {
    (11, 0): "450.51.05", (11, 1): "455.23", (11, 2): "460.27.03", (11, 3): "465.19.01",
    (11, 4): "470.42.01", (11, 5): "495.29.05", (11, 6): "510.39.01", (11, 7): "515.43.04",
    (11, 8): "520.61.05", (12, 0): "525.60.13", (12, 1): "530.30.02", (12, 2): "535.54.03",
    (12, 3): "545.23.06", (12, 4): "550.54.14", (12, 5): "555.42.02", (12, 6): "560.28.03",
    (12, 8): "570.26", (12, 9): "575.51.03", (13, 0): "580.65.06",
}
# CUDA minor version compatibility (CUDA 11 and later): an application built
# with any CUDA X.y runs, with a limited feature set, on a driver of the same
# major from this version on (Linux, Windows). NVIDIA, "CUDA Compatibility:
# Minor Version Compatibility",
# https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
MINOR_COMPAT_MIN_DRIVER: Dict[int, Tuple[str, Optional[str]]] = {
    11: ("450.80.02", "452.39"),
    12: ("525.60.13", "528.33"),
    13: ("580.65.06", None),
}
MINOR_COMPAT_URL = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
RELEASE_NOTES_URL = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/"
GET_STARTED_URL = "https://pytorch.org/get-started/locally/"


def vtuple(v: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def parse_cuda(v) -> Optional[Tuple[int, int]]:
    """'12.8' -> (12, 8); 12040 (cudaDriverGetVersion) -> (12, 4)."""
    if v is None:
        return None
    if isinstance(v, int):
        return (v // 1000, (v % 1000) // 10) if v > 0 else None
    m = re.match(r"\s*(\d+)\.(\d+)", str(v))
    return (int(m.group(1)), int(m.group(2))) if m else None


def cuda_str(v: Optional[Tuple[int, int]]) -> str:
    return f"{v[0]}.{v[1]}" if v else "?"


def cuda_from_linux_driver(version: str) -> Optional[Tuple[int, int]]:
    """The newest CUDA in LINUX_MIN_DRIVER that a Linux driver version
    reaches (a lower bound: the driver may support newer releases)."""
    best = None
    dv = vtuple(version)
    if not dv:
        return None
    for cuda, need in LINUX_MIN_DRIVER.items():
        if dv >= vtuple(need) and (best is None or cuda > best):
            best = cuda
    return best


def full_support_driver(runtime: Tuple[int, int]) -> str:
    need = LINUX_MIN_DRIVER.get(runtime)
    if need:
        return f"≥ {need} on Linux (CUDA {cuda_str(runtime)} GA), or its Windows entry in {RELEASE_NOTES_URL}"
    return f"the driver listed for CUDA {cuda_str(runtime)} in {RELEASE_NOTES_URL}"


def pick_wheel(driver: Optional[Tuple[int, int]]) -> str:
    """Which PyTorch wheel index to pick, for a driver that supports CUDA up
    to `driver` (None: unknown). The indexes on offer change with each torch
    release, so none is named that might not exist."""
    if driver:
        return (f"at most cu{driver[0]}{driver[1]} (this driver supports CUDA up to {cuda_str(driver)}): the newest "
                f"such build listed at {GET_STARTED_URL} (or its previous-versions page)")
    return f"for the CUDA your driver supports (nvidia-smi shows it, top right): see {GET_STARTED_URL}"


_UNSUFFIXED_TRACKING = {  # NVIDIA wheels without a -cuNN suffix whose version major is the CUDA major
    "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-cuda-cupti", "nvidia-nvjitlink", "nvidia-cublas",
    "nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt", "cuda-toolkit",
}
_SUFFIX_RE = re.compile(r"(?:^|[-_])cu(?:da)?(\d{2,3})x?(?:[-_]|$)")
_LOCAL_RE = re.compile(r"\+(?:cu|cuda)(\d{2,3})")
CONDA_RUNTIMES = {"cudatoolkit", "cuda-cudart", "cuda-runtime", "cuda-toolkit", "cuda-version"}


def major_of_digits(digits: str) -> int:
    return int(digits[:2]) if len(digits) == 3 else int(digits)


def package_cuda_major(name: str, version: str) -> Optional[int]:
    """The CUDA major a package targets, where its name or version says so:
    nvidia-cudnn-cu12 -> 12, cupy-cuda11x -> 11, jax-cuda12-plugin -> 12,
    nvidia-cuda-runtime 13.0.96 -> 13, jaxlib 0.4.23+cuda12.cudnn89 -> 12."""
    if name in ("torch", "torchvision", "torchaudio"):
        return None  # judged against each other in _companions
    m = _SUFFIX_RE.search(name)
    if m:
        return major_of_digits(m.group(1))
    if name in _UNSUFFIXED_TRACKING:
        v = vtuple(version)
        return v[0] if v and v[0] >= 11 else None
    m = _LOCAL_RE.search(version or "")
    if m:
        return major_of_digits(m.group(1))
    return None


def spec_ok(spec: str, version: str) -> Optional[bool]:
    """Whether `version` meets an `==V` or `==V.*` pin; None for any other spec."""
    m = re.fullmatch(r"==\s*([^\s,]+)", spec)
    if not m:
        return None
    want = m.group(1)
    if want.endswith(".*"):
        return version == want[:-2] or version.startswith(want[:-1])
    return version == want or vtuple(version) == vtuple(want) and bool(vtuple(want))
