"""Run corpus cases under Triton's interpreter and save their outputs (differential reference).

Usage: python interp_runner.py OUT_DIR SEED CASE [CASE ...]
TRITON_INTERPRET must be set before triton is imported, so this runs in its own process.
Writes OUT_DIR/<case>.pt holding {"outputs": {arg: tensor}} or {"error": message}.
"""
from __future__ import annotations

import os
import sys
import traceback

os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import corpus  # noqa: E402


def main(argv: list[str]) -> int:
    out_dir, seed, names = argv[0], int(argv[1]), argv[2:]
    for name in names:
        c = corpus.by_name(name)
        try:
            args = c.make(corpus.gen(seed))
            inputs = {k: v.clone() for k, v in args.items() if isinstance(v, torch.Tensor)}
            kwargs = {k: v for k, v in c.kwargs.items() if k != "debug"}
            c.kernel[c.grid_of(args)](**args, **kwargs)
            outs = {k: v for k, v in args.items() if isinstance(v, torch.Tensor)}
            res = {"inputs": inputs, "outputs": outs}
        except Exception:  # recorded; the test reports it against the case
            res = {"error": traceback.format_exc(limit=4)}
        torch.save(res, os.path.join(out_dir, f"{name}.pt"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
