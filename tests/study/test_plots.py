"""Helpers the notebooks share (study/plots.py)."""
from __future__ import annotations

import pandas as pd

from study.plots import natural_sort


def test_shapes_with_numbers_sort_by_their_numbers():
    df = pd.DataFrame({"workload": ["q", "q", "q", "a"], "shape": ["m14336xn4096", "m9xn1000", "m4096xn4096", "x"],
                       "dtype": ["f32", "f32", "bf16", "f32"]})
    got = natural_sort(df, ["workload", "shape", "dtype"])
    assert got["shape"].tolist() == ["x", "m9xn1000", "m4096xn4096", "m14336xn4096"]
