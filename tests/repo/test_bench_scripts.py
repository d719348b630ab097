"""The benchmark scripts load (their imports resolve) and describe their usage (issue 14)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py")))
def test_a_bench_script_loads(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # the scripts import one another
    spec = importlib.util.spec_from_file_location(f"bench_{script[:-3]}", BENCH / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # runs its imports, not its main (guarded by __name__)
    assert callable(module.main)
    assert module.__doc__
