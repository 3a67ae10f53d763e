"""Where a measurement came from: source fingerprint, package versions, device name."""
from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Edits here change what is measured; edits to results/ or notebooks/ do not.
CODE_PATHS = ("backend", "kernels", "baselines", "study", "pyproject.toml", "requirements.txt")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


@functools.lru_cache(maxsize=None)
def source_fingerprint() -> str:
    """HEAD's sha, plus a hash of uncommitted code changes: a resumed sweep on an edited tree
    must not reuse rows measured before the edit."""
    try:
        sha = _git("rev-parse", "--short=12", "HEAD").strip()
        diff = _git("diff", "HEAD", "--", *CODE_PATHS)
        untracked = _git("ls-files", "--others", "--exclude-standard", "--", *CODE_PATHS).split()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "nogit"
    if not diff and not untracked:
        return sha
    h = hashlib.sha256(diff.encode())
    for name in sorted(untracked):
        p = REPO / name
        if p.is_file() and p.suffix in (".py", ".toml", ".txt"):
            h.update(name.encode())
            h.update(p.read_bytes())
    return f"{sha}+dirty.{h.hexdigest()[:8]}"


@functools.lru_cache(maxsize=None)
def versions() -> str:
    import torch
    import triton
    from backend.compiler import BACKEND_VERSION
    return f"python={platform.python_version()};torch={torch.__version__};triton={triton.__version__};backend={BACKEND_VERSION}"


SIM_DEVICE = "mtia-sim"
