"""An autotuned kernel's row is the chosen config's time, not the sum of the tuning launches."""
from backend.driver import record_launches
from study.measure import measure, reference
from study.registry import load_all


def test_autotuned_row_excludes_the_tuning_launches():
    w = load_all()["matmul_autotuned"]
    shape = w.shapes_tagged("test")[0]
    tuner = w.source["triton"]
    tuner.cache.clear()
    inputs, ref = reference(w, shape, "bf16")
    with record_launches() as all_launches:
        (row,) = measure(w, "triton", shape, "bf16", "mtia2i", inputs, ref, {})
    assert row["correct"] and "autotuning launches excluded" in row["notes"]
    assert len(all_launches) > row["launches"] == 1  # tuning launched every config first
    with record_launches() as again:  # tuned now: one launch of the chosen config
        w.impls["triton"](**inputs)
    assert len(again) == 1 and row["cycles"] == again[0].cycles
