"""Versions of the software stack jobs run on: the agent, torch and the CUDA, cuDNN and NCCL it was built with.

torch is probed in a child interpreter: importing it costs seconds and hundreds of MB, and the agent itself must stay
small while idle. The answer is cached for the life of the process.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys
from typing import Any

from dossier_agent import __version__

TORCH_PROBE = """
import json
import torch
info = {"torch_version": torch.__version__, "torch_cuda_version": torch.version.cuda}
try:
    cudnn = torch.backends.cudnn.version()
except Exception:
    cudnn = None
info["cudnn_version"] = str(cudnn) if cudnn else None
try:
    nccl = torch.cuda.nccl.version() if torch.version.cuda else None
except Exception:
    nccl = None
info["nccl_version"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else (str(nccl) if nccl else None)
print(json.dumps(info))
"""

_NO_TORCH = {"torch_version": None, "torch_cuda_version": None, "cudnn_version": None, "nccl_version": None}


@functools.lru_cache(maxsize=1)
def probe_torch(timeout_s: float = 120.0) -> dict[str, Any]:
    if importlib.util.find_spec("torch") is None:
        return {**_NO_TORCH, "torch_error": "torch is not installed"}
    try:
        completed = subprocess.run(  # noqa: S603 - our own interpreter running a fixed probe
            [sys.executable, "-c", TORCH_PROBE], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return {**_NO_TORCH, "torch_error": f"importing torch took longer than {timeout_s:.0f} s"}
    if completed.returncode != 0:
        last_line = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        return {**_NO_TORCH, "torch_error": f"importing torch failed: {last_line}"}
    return {**_NO_TORCH, **json.loads(completed.stdout.strip().splitlines()[-1]), "torch_error": None}


def collect_software_inventory() -> dict[str, Any]:
    return {"agent_version": __version__, **probe_torch()}
