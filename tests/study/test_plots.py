"""Helpers the notebooks share (study/plots.py)."""
from __future__ import annotations

import pandas as pd

from study.plots import natural_sort


def test_shapes_with_numbers_sort_by_their_numbers():
    df = pd.DataFrame({"workload": ["q", "q", "q", "a"], "shape": ["m14336xn4096", "m9xn1000", "m4096xn4096", "x"],
                       "dtype": ["f32", "f32", "bf16", "f32"]})
    got = natural_sort(df, ["workload", "shape", "dtype"])
    assert got["shape"].tolist() == ["x", "m9xn1000", "m4096xn4096", "m14336xn4096"]


def test_table_cells_near_one_keep_the_side_of_one() -> None:
    """A ratio within 0.1% of 1 keeps five decimals: 0.99996 must not print as a met 1.0 target."""
    from study.plots import _cell
    assert _cell(0.99996) == "0.99996"
    assert _cell(1.000247) == "1.00025"
    assert _cell(1.0) == "1"
    assert _cell(0.9418) == "0.9418"
    assert _cell(1.0304) == "1.03"
