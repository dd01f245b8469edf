"""A small fixed campaign of scripts/fuzz.py: random kernels, backend vs Triton's interpreter.

Each seed is one generated kernel (elementwise chains, casts, reductions, scans, shape ops,
tl.dot, loops, ifs, masked and computed-pointer loads/stores, stores read back, atomics;
about a fifth of the seeds are
Inductor-shaped row kernels, `fuzz.is_rows`: masked row tiles, gathers, row reductions,
in-place stores; a quarter of the others end with a store into a buffer they loaded,
`fuzz.may_store_in_place`); both sides run in child processes. Any mismatch, backend error or interpreter error fails the test; rerun the seed
with `python scripts/fuzz.py --seeds 1 --start SEED` to shrink it into a reproducer."""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEEDS = range(0, 40)


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("triton_cpu_fuzz", os.path.join(ROOT, "scripts", "fuzz.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fuzz_fixed_seeds(tmp_path, monkeypatch):
    fuzz = _fuzz_module()
    monkeypatch.setenv("FUZZ_CACHE_DIR", str(tmp_path / "cache"))
    stats, findings = fuzz.campaign(SEEDS, str(tmp_path / "findings"), shrink_budget=0,
                                    workdir=str(tmp_path / "work"))
    assert stats["kernels"] == len(SEEDS)
    assert not findings, "\n".join("seed %(seed)d: %(status)s: %(detail)s" % f for f in findings)
    assert stats["passed"] == len(SEEDS), stats


# Seeds whose store in place wrote, lane by lane, what other lanes of its own load still had
# to read (a reversal, a rotation): wrong before the conversion buffered such loads.
IN_PLACE_SEEDS = (736, 1121, 1824, 2012, 2053)


def test_fuzz_in_place_seeds(tmp_path, monkeypatch):
    fuzz = _fuzz_module()
    assert all(fuzz.may_store_in_place(s) for s in IN_PLACE_SEEDS)
    monkeypatch.setenv("FUZZ_CACHE_DIR", str(tmp_path / "cache"))
    stats, findings = fuzz.campaign(IN_PLACE_SEEDS, str(tmp_path / "findings"), shrink_budget=0,
                                    workdir=str(tmp_path / "work"))
    assert not findings, "\n".join("seed %(seed)d: %(status)s: %(detail)s" % f for f in findings)
    assert stats["passed"] == len(IN_PLACE_SEEDS), stats


def test_generator_is_deterministic():
    fuzz = _fuzz_module()
    # The fixed campaign covers both families.
    rows = [s for s in SEEDS if fuzz.is_rows(s)]
    assert rows and len(rows) < len(SEEDS)
    for seed in (0, 7, 123):
        assert fuzz.render(fuzz.generate(seed)) == fuzz.render(fuzz.generate(seed))


@pytest.mark.parametrize("family", ["generic", "rows"])
def test_shrinker_candidates_stay_well_formed(family):
    """Every single-statement replacement the shrinker may try renders and analyzes, for
    the first two seeds of each generator family."""
    fuzz = _fuzz_module()
    for seed in [s for s in range(100) if fuzz.is_rows(s) == (family == "rows")][:2]:
        _check_shrinker_candidates(fuzz, seed)


def _check_shrinker_candidates(fuzz, seed):
    k = fuzz.generate(seed)
    sites = fuzz.all_sites(k.body)
    for si, (block, i) in enumerate(sites):
        for rep in fuzz.replacements(k, block, i):
            cand = fuzz.clone(k)
            cblock, ci = fuzz.all_sites(cand.body)[si]
            cblock.nodes[ci:ci + 1] = [fuzz.clone_node(x) for x in rep]
            fuzz.dce(cand.body, set())
            fuzz.analyze(cand)
            compile(fuzz.render(cand), "<candidate>", "exec")
