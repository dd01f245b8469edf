"""Kernels the differential fuzzer (scripts/fuzz.py) found, shrunk, as regression tests.

Each runs in a child process: these aborted the process (an LLVM assertion in the loop
vectorizer, now contained by the LLVM worker, see llvm_worker.py), and a regression must fail
its test, not end the test session."""
import os
import subprocess
import sys
import textwrap

import pytest

CASES = {
    # fuzz seed 6579: tl.min over all axes of a bf16 (2, 16, 1) tensor.
    "bf16_min_all_axes": """
        @triton.jit
        def kernel(X, Y, S: tl.constexpr):
            x = tl.load(X + tl.arange(0, 2)[:, None, None] * 32 + tl.arange(0, 16)[None, :, None] * S
                        + tl.arange(0, 1)[None, None, :])
            tl.store(Y, tl.min(x, axis=None))

        X = (torch.arange(64) % 7 - 3).to(torch.bfloat16)
        Y = torch.zeros(1)
        kernel[(1,)](X, Y, S=1)
        ref = torch.cat([X[0:16], X[32:48]]).float().min()
        assert Y.item() == ref.item(), (Y.item(), ref.item())
    """,
    # fuzz seed 30677: fmod feeding tl.max along axis 0 of a (32, 1) tensor.
    "fmod_then_max_axis0": """
        @triton.jit
        def kernel(X, Y):
            x = tl.load(X + tl.arange(0, 32)[:, None] + tl.arange(0, 1)[None, :])
            r = x % tl.where(tl.abs(x) < 0.25, 1.0, x)
            tl.store(Y + tl.arange(0, 1), tl.max(r, axis=0))

        X = torch.linspace(-4, 4, 32)
        Y = torch.zeros(1)
        kernel[(1,)](X, Y)
        d = torch.where(X.abs() < 0.25, torch.ones_like(X), X)
        ref = torch.fmod(X, d).max()
        assert Y.item() == ref.item(), (Y.item(), ref.item())
    """,
    # fuzz seed 6528: a row max truncated to int8 stored with a one-lane mask. LLVM 22's X86
    # backend (AVX-512) wrote the untruncated i32 (4 bytes) into the neighbours.
    "truncated_store_one_lane": """
        @triton.jit
        def kernel(X, Y, LIVE: tl.constexpr):
            r = tl.arange(0, 16)
            v = tl.max(tl.load(X + r[:, None] * 16 + r[None, :]), axis=1)
            tl.store(Y + r, v.to(Y.dtype.element_ty), mask=r < LIVE)

        for src, dst in ((torch.int32, torch.int8), (torch.int32, torch.int16), (torch.int64, torch.int32)):
            for live in (1, 2, 15):
                for bits in (256, 512):
                    X = torch.randint(-100, 100, (256,), dtype=src)
                    Y = torch.full((24,), 77, dtype=dst)
                    kernel[(1,)](X, Y, LIVE=live, vector_bits=bits)
                    ref = torch.full((24,), 77, dtype=dst)
                    ref[:live] = X.view(16, 16).max(1).values[:live].to(dst)
                    assert torch.equal(Y, ref), (src, dst, live, bits, Y.tolist(), ref.tolist())
    """,
}


@pytest.mark.parametrize("name", list(CASES))
def test_fuzz_regression(name, tmp_path):
    body = CASES[name]
    script = tmp_path / f"{name}.py"
    script.write_text("import torch, triton, triton.language as tl\n" + textwrap.dedent(body))
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"))
    res = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stderr[-2000:]}"
