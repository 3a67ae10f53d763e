import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # tiny_workloads

import pytest  # noqa: E402


@pytest.fixture
def chip_aware_inductor():
    """The study's chip-aware Inductor with its default switches, reset around the test (later
    tests in this process, T3's plain rows among them, compile with Inductor's own choices)."""
    import torch

    from backend.inductor_cpu import options
    from study.inductor import configure, unconfigure
    configure()
    options.activate()
    torch._dynamo.reset()
    yield
    options.activate()
    unconfigure()
    torch._dynamo.reset()
