"""What the measuring machine is: asked of a subprocess, so gpulint itself
never imports torch."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from typing import Dict, Optional

_PROBE = r"""
import json, platform, sys
out = {"python": platform.python_version()}
try:
    import torch
except Exception as e:  # noqa: BLE001
    out["error"] = f"{type(e).__name__}: {e}"
else:
    out["torch"] = torch.__version__
    out["cuda"] = torch.version.cuda
    out["cuda_available"] = bool(torch.cuda.is_available())
    if out["cuda_available"]:
        out["gpu"] = torch.cuda.get_device_name(0)
        out["gpu_count"] = torch.cuda.device_count()
        out["gpu_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
    out["cpu"] = platform.processor() or platform.machine()
print(json.dumps(out))
"""


class HarnessUnavailable(Exception):
    """torch is missing, or the requested device is not there: a one-line reason."""


def probe(python: Optional[str] = None) -> Dict[str, object]:
    res = subprocess.run([python or sys.executable, "-c", _PROBE], capture_output=True, text=True)
    try:
        info = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise HarnessUnavailable(f"could not start Python to probe torch: {res.stderr.strip()[-300:]}")
    if "error" in info:
        raise HarnessUnavailable(
            f"the harness needs torch ({info['error']}); install it with: pip install 'gpulint[harness]'"
        )
    info["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    return info


def require_device(info: Dict[str, object], device: str) -> None:
    if device.startswith("cuda") and not info.get("cuda_available"):
        raise HarnessUnavailable(
            f"no CUDA device (torch {info.get('torch')}, CUDA {info.get('cuda')}): the harness measures on a GPU; "
            "pass --device cpu to run it on the CPU (every figure is then labelled CPU)"
        )


def describe(info: Dict[str, object], device: str) -> str:
    """One line: where the numbers come from."""
    where = info.get("gpu") if device.startswith("cuda") else f"CPU ({info.get('cpu')})"
    return f"{where} · torch {info.get('torch')} · CUDA {info.get('cuda') or 'none'} · {info.get('date')}"
