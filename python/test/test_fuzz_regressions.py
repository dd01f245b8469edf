"""Kernels the differential fuzzer (scripts/fuzz.py) found, shrunk, as regression tests.

Each runs in a child process: some aborted the process (an LLVM assertion in the loop
vectorizer, now contained by the LLVM worker, see llvm_worker.py), and a regression must fail
its test, not end the test session; others were wrong results (LLVM miscompiles worked
around in the code generator)."""
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
    # fuzz seed 270454: tl.max(-x) of a [64, 1] tile, whose lanes stay scalar. LLVM 22's loop
    # vectorizer ran the max loop in vector iterations with a NaN check and skipped the scalar
    # iterations left over (llvm/llvm-project#209159): the last 12 elements were not compared.
    "neg_max_of_column_tile": """
        @triton.jit
        def kernel(X, Y):
            pid = tl.program_id(0)
            x = tl.load(X + pid * 190 + tl.arange(0, 64)[:, None] + tl.arange(0, 1)[None, :])
            tl.store(Y + pid, tl.max(-x))

        for dtype in (torch.float32, torch.float64):
            X = torch.linspace(-4, 4, 760, dtype=dtype)[torch.randperm(760, generator=torch.Generator().manual_seed(1))]
            X[190 + 63] = -9.0  # each program's extreme in its last element
            X[380 + 60] = -9.5
            Y = torch.zeros(4, dtype=dtype)
            kernel[(4,)](X, Y)
            ref = torch.stack([(-X[p * 190:p * 190 + 64]).max() for p in range(4)])
            assert torch.equal(Y, ref), (dtype, Y.tolist(), ref.tolist())
    """,
    # fuzz seed 270141: tl.min along axis 1 of a masked bf16 [8, 4, 1] tile, then a sum: the
    # same vectorizer bug on a minnum loop.
    "min_axis1_of_masked_8x4x1": """
        @triton.jit
        def kernel(X, Y):
            rows = tl.arange(0, 8)[:, None, None] + 0 * tl.arange(0, 4)[None, :, None]
            x = tl.load(X + tl.arange(0, 8)[:, None, None] * 4 + tl.arange(0, 4)[None, :, None]
                        + tl.arange(0, 1)[None, None, :], mask=rows < 3, other=1.0)
            tl.store(Y + tl.arange(0, 1), tl.sum(tl.min(x, axis=1), axis=0))

        X = torch.randn(32, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
        X[11] = -6.0  # the last live row's minimum in its last element
        Y = torch.zeros(1)
        kernel[(1,)](X, Y)
        ref = X.float().view(8, 4)[:3].min(1).values.sum() + 5.0  # 5 masked rows of 1.0
        assert Y.item() == ref.item(), (Y.item(), ref.item())
    """,
    # fuzz seed 290269: tl.flip of fma(x, sin(x), sin(x)) with NaN inputs. flip works on the
    # bits (y ^ xor_sum(y)); copies of the value with different NaN payloads (x86 returns the
    # first NaN operand in the order of the FMA form chosen) corrupted a lane that was not NaN.
    "flip_of_computed_nans": """
        @triton.jit
        def kernel(X, Y, Z):
            offs = tl.arange(0, 64)
            x = tl.where(offs < 27, tl.load(X + offs), -2.0)
            s = tl.sin(x)
            v = tl.fma(x, s, s)
            tl.store(Y + offs, tl.flip(v, 0))
            tl.store(Z + offs, v.to(tl.int32, bitcast=True))

        X = torch.randn(64, generator=torch.Generator().manual_seed(3))
        X[[5, 10, 16, 20]] = float("nan")
        X[[7, 12]] = float("inf")
        Y, Z = torch.empty(64), torch.empty(64, dtype=torch.int32)
        kernel[(1,)](X, Y, Z)
        x = torch.where(torch.arange(64) < 27, X, torch.tensor(-2.0)).double()
        ref = (x * torch.sin(x) + torch.sin(x)).float().flip(0)
        assert torch.allclose(Y, ref, rtol=1e-6, atol=1e-6, equal_nan=True), (Y.tolist(), ref.tolist())
        # the bits of a computed NaN are one pattern, NVIDIA's canonical NaN
        nans = torch.isnan(Z.view(torch.float32))
        assert nans.sum() == 6 and (Z[nans] == 0x7FFFFFFF).all(), Z[nans].tolist()
    """,
    # fuzz seed 371021: the bits of tl.where(x == x, x, float('nan')) over a float made from
    # integer bits. A select moves bits (PTX selp): its NaN lanes are the constant's 0x7fc00000
    # on a GPU, and a loaded NaN keeps its payload; they were canonicalized to 0x7fffffff as if
    # computed. Where one side of the select is computed, only its lanes are canonical.
    "bits_of_selected_nans": """
        @triton.jit
        def kernel(X, Y, Z, W):
            offs = tl.arange(0, 64)
            f = tl.load(X + offs).to(tl.float32, bitcast=True)
            q = tl.where(f == f, f, float("nan"))
            tl.store(Y + offs, q.to(tl.int32, bitcast=True))
            tl.store(Z + offs, tl.where(offs % 2 == 0, f, q).to(tl.int32, bitcast=True))
            m = tl.where(offs < 32, f * 2.0, float("nan"))  # computed NaNs, then the constant's
            tl.store(W + offs, m.to(tl.int32, bitcast=True))

        X = torch.arange(-32, 32, dtype=torch.int32)  # -32..-1 are NaNs (negative, payloads)
        X[40] = 0x7F800000  # +inf
        Y, Z, W = (torch.empty(64, dtype=torch.int32) for _ in range(3))
        for bits in (256, 512):
            kernel[(1,)](X, Y, Z, W, vector_bits=bits)
            nan = X.view(torch.float32).isnan()
            quiet = torch.where(nan, torch.tensor(0x7FC00000, dtype=torch.int32), X)
            assert torch.equal(Y, quiet), (bits, Y.tolist())
            even = torch.arange(64) % 2 == 0
            assert torch.equal(Z, torch.where(even, X, quiet)), (bits, Z.tolist())
            # a computed NaN is NVIDIA's canonical one; the constant's lanes keep its bits
            assert nan[:32].all()
            ref = torch.tensor([0x7FFFFFFF] * 32 + [0x7FC00000] * 32, dtype=torch.int32)
            assert torch.equal(W, ref), (bits, W.tolist())
    """,
    # fuzz seed 6528: a row max truncated to int8 stored with a one-lane mask. LLVM 22's X86
    # backend (AVX-512) wrote the untruncated i32 (4 bytes) into the neighbours. Floats too.
    "truncated_store_one_lane": """
        @triton.jit
        def kernel(X, Y, LIVE: tl.constexpr):
            r = tl.arange(0, 16)
            v = tl.max(tl.load(X + r[:, None] * 16 + r[None, :]), axis=1)
            tl.store(Y + r, v.to(Y.dtype.element_ty), mask=r < LIVE)

        # the float narrowings store with a plain mask (no truncating masked store exists)
        for src, dst in ((torch.int32, torch.int8), (torch.int32, torch.int16), (torch.int64, torch.int32),
                         (torch.float64, torch.float32), (torch.float32, torch.float16), (torch.float32, torch.bfloat16)):
            for live in (1, 2, 15):
                for bits in (256, 512):
                    X = torch.randint(-100, 100, (256,)).to(src)
                    Y = torch.full((24,), 77, dtype=dst)
                    kernel[(1,)](X, Y, LIVE=live, vector_bits=bits)
                    ref = torch.full((24,), 77, dtype=dst)
                    ref[:live] = X.view(16, 16).max(1).values[:live].to(dst)
                    assert torch.equal(Y, ref), (src, dst, live, bits, Y.tolist(), ref.tolist())
    """,
    # fuzz seed 11051 (AVX2 host): LLVM 22's O3 turned the unrolled reverse cumsum into a
    # module that does not verify (a shufflevector before its operands); the optimizer's
    # output is now verified and the next pipeline used (llvm.optimize).
    "reverse_cumsum_then_scan_of_branch_value": """
        @triton.jit
        def c_min(a, b):
            return tl.minimum(a, b)

        @triton.jit
        def c_summax(a0, a1, b0, b1):
            return a0 + b0, tl.maximum(a1, b1)

        @triton.jit
        def kernel(X1, X5, X10, OUT):
            pid = tl.program_id(0)
            offs = pid * 64 + tl.arange(0, 16)[:, None] * 4 + tl.arange(0, 4)[None, :]
            v1 = tl.load(X1 + offs)
            v3 = tl.cumsum(v1, axis=0, reverse=True)
            if pid > 0:
                r4 = tl.load(X5 + offs)
            else:
                v7 = tl.associative_scan(v3.to(tl.float64), 1, c_min, reverse=True)
                v8 = tl.where(v7 != v7, 0.0, tl.minimum(tl.maximum(v7, -9.2e18), 9.2e18)).to(tl.int64)
                r4 = v1 - v8
            v12, v13 = tl.associative_scan((r4, tl.load(X10 + offs)), 0, c_summax)
            tl.store(OUT + offs, v12, mask=(offs - pid * 64) < 41)

        import warnings
        from triton_cpu.errors import LLVMFallbackWarning
        X1, X5, X10 = (torch.randint(-8, 9, (128,), dtype=torch.int64) for _ in range(3))
        OUT = torch.full((128,), 7, dtype=torch.int64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LLVMFallbackWarning)  # whether LLVM breaks it depends on its version
            kernel[(2,)](X1, X5, X10, OUT)
        v1 = X1[:64].view(16, 4)
        v7 = v1.flip(0).cumsum(0).flip(0).double().flip(1).cummin(1).values.flip(1)
        ref0 = (v1 - v7.long()).cumsum(0).flatten()
        ref1 = X5[64:].view(16, 4).cumsum(0).flatten()
        ref = torch.full((128,), 7, dtype=torch.int64)
        ref[:41], ref[64:105] = ref0[:41], ref1[:41]
        assert torch.equal(OUT, ref), (OUT.tolist(), ref.tolist())
    """,
    # fuzz seed 60013: a masked load in a loop of pid & 3 iterations, hoisted out of the loop
    # by Triton's LICM (mask & (0 < trips)): lanes past the mask read memory instead of
    # `other` (LLVM 22 x86 codegen, see core.TileEmitter._load).
    "hoisted_masked_load_in_loop": """
        @triton.jit
        def kernel(A, B, OUT):
            pid = tl.program_id(0)
            cols = tl.arange(0, 32)
            c = tl.load(A + pid * 32 + cols)
            for i in range(pid & 3):
                c = tl.load(B + pid * 32 + cols, mask=cols < 4, other=2)
            tl.store(OUT + pid * 32 + cols, c, mask=cols < 25)

        A = torch.arange(128, dtype=torch.int32)
        B = torch.arange(128, dtype=torch.int32) + 1000
        OUT = torch.full((128,), -1, dtype=torch.int32)
        kernel[(4,)](A, B, OUT)
        cols = torch.arange(32)
        ref = torch.full((128,), -1, dtype=torch.int32)
        for pid in range(4):
            row = A[pid * 32:(pid + 1) * 32] if pid & 3 == 0 else \
                torch.where(cols < 4, B[pid * 32:(pid + 1) * 32], torch.tensor(2, dtype=torch.int32))
            ref[pid * 32:pid * 32 + 25] = row[:25]
        assert torch.equal(OUT, ref), (OUT.tolist(), ref.tolist())
    """,
    # fuzz seed 356221: a constant tile gathered in both branches of an scf.if (here the
    # copies version-single-iteration-loops makes): its buffer was filled in the first
    # branch only, and the other branch gathered from it unfilled.
    "gather_source_in_both_branches": """
        @triton.jit
        def kernel(Idx, Out, c):
            src = tl.zeros((16, 32), tl.int32) + 3
            idx = tl.load(Idx + tl.arange(0, 16)[:, None] * 4 + tl.arange(0, 4)[None, :]) & 31
            o = Out + tl.arange(0, 16)[:, None] * 4 + tl.arange(0, 4)[None, :]
            if c > 0:
                tl.store(o, tl.gather(src, idx, 1))
            else:
                tl.store(o, tl.gather(src, idx, 1) + 1)

        Idx = torch.randint(0, 32, (64,), dtype=torch.int32)
        for c, want in ((0, 4), (1, 3)):
            Out = torch.zeros(64, dtype=torch.int32)
            kernel[(1,)](Idx, Out, c)
            assert (Out == want).all(), (c, Out.tolist())
    """,
    # fuzz seed 1059 (the store-then-load statements): a masked load without `other` of
    # what a store under the same mask just wrote, forwarded by forward-stored-tiles,
    # showed the stored value in the lanes the mask leaves off instead of 0.
    "forwarded_masked_load_without_other": """
        @triton.jit
        def kernel(X, S, Y):
            o = tl.arange(0, 16)
            tl.store(S + o, tl.load(X + o), mask=o < 5)
            tl.store(Y + o, tl.load(S + o, mask=o < 5))

        X = torch.arange(1, 17, dtype=torch.float32)
        S = torch.full((16,), -1.0)
        Y = torch.full((16,), -2.0)
        kernel[(1,)](X, S, Y)
        ref = torch.where(torch.arange(16) < 5, X, torch.zeros(16))
        assert torch.equal(Y, ref), (Y, ref)
    """,
    # fuzz seed 411536: a tl.gather along axis 0 of an int32 tile that a tl.reduce also
    # reads, the gather inside a branch (the loop that runs no iteration is versioned into
    # an scf.if): 28 of the 256 comparisons were wrong. The gather's source was built at its
    # definition once the lowering had passed the reduce, whose loop fills the buffer of the
    # load the source reads: it read that buffer unwritten (now: built before the branch).
    "gather_axis0_after_reduce_and_empty_loop": """
        @triton.jit
        def c_min(a, b):
            return tl.minimum(a, b)

        @triton.jit
        def kernel(F, V, I, A, B, OUT_MIN, OUT_COPY, OUT_NE):
            pid = tl.program_id(0)
            offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
            f = tl.ceil(tl.load(F + offs))
            v = pid + tl.load(V + offs)
            idx = tl.load(I + offs).to(tl.int32) & 15
            m = tl.reduce(v, 0, c_min)
            c = tl.load(A + offs)
            for _ in range(0, pid & 3):  # runs no iteration in program 0
                c = tl.load(B + offs)
            g = tl.gather(v, idx, 0)
            tl.store(OUT_MIN + tl.arange(0, 16), m)
            tl.store(OUT_COPY + offs, c)
            tl.store(OUT_NE + offs, f != g.to(tl.float32))

        gen = torch.Generator().manual_seed(0)
        F = torch.randint(-8, 9, (256,), generator=gen).float() + torch.rand(256, generator=gen) * 0.5
        V = torch.randint(-8, 9, (256,), dtype=torch.int32, generator=gen)
        I = torch.randint(0, 17, (256,), dtype=torch.int32, generator=gen).to(torch.uint32)
        A, B = torch.randn(256, generator=gen), torch.randn(256, generator=gen)
        out_min, out_copy, out_ne = torch.zeros(16, dtype=torch.int32), torch.zeros(256), torch.zeros(256, dtype=torch.bool)
        kernel[(1,)](F, V, I, A, B, out_min, out_copy, out_ne)
        g = torch.gather(V.view(16, 16), 0, (I.to(torch.int64) & 15).view(16, 16))
        assert torch.equal(out_min, V.view(16, 16).min(0).values)
        assert torch.equal(out_copy, A)
        want = torch.ceil(F).view(16, 16) != g.float()
        assert torch.equal(out_ne.view(16, 16), want), int((out_ne.view(16, 16) != want).sum())
    """,
    # fuzz seed 423977: a tile stored in place, reversed, into the buffer its tl.gather's
    # indices were loaded from: the indices were read chunk by chunk inside the store's loop,
    # after earlier chunks had overwritten them (a GPU reads the whole tile first). A gather's
    # indices now count as read by the gather's consumers, so the store's overlap check sees
    # the load.
    "gather_indices_overwritten_by_reversed_store": """
        @triton.jit
        def kernel(V, IO):
            rows = tl.arange(0, 16)[:, None]
            v = tl.load(V + rows * 8 + tl.arange(0, 8)[None, :])
            offs = rows * 4 + tl.arange(0, 4)[None, :]
            idx = tl.load(IO + offs).to(tl.int32) & 7
            tl.store(IO + (63 - offs), tl.gather(v, idx, 1))

        gen = torch.Generator().manual_seed(0)
        V = torch.randint(0, 1000, (128,), dtype=torch.int32, generator=gen)
        IO = torch.randint(0, 1 << 20, (64,), dtype=torch.int32, generator=gen)
        g = torch.gather(V.view(16, 8), 1, (IO & 7).view(16, 4).long())
        want = g.flatten().flip(0)
        kernel[(1,)](V, IO)
        assert torch.equal(IO, want), int((IO != want).sum())
    """,
    # fuzz seed 440655 (AVX-512 hosts): lanes a constant mask zeroed, divided by
    # tl.where(|v| < 0.25, 1.0, v): LLVM's X86 code generation took the zero lanes of v / v
    # to be 0 (they are NaN) and selected them where the kernel chose v: NaN instead of 0.
    # The emitter now hides a vector divisor from it (llvm.arithmetic.fence).
    "division_of_constant_zero_lanes": """
        @triton.jit
        def kernel(X, OUT, N: tl.constexpr, WHERE: tl.constexpr):
            r = tl.arange(0, N)
            if WHERE:
                v = tl.where(r < 1, tl.load(X + r), 0.0)
            else:
                v = tl.load(X + r, mask=r < 1, other=0.0)
            tl.store(OUT + r, v / tl.where(tl.abs(v) < 0.25, 1.0, v))

        for n in (4, 16):
            x = torch.arange(2.0, 2.0 + n)
            want = torch.zeros(n)
            want[0] = 1.0
            for where in (False, True):
                for bits in (256, 512):
                    out = torch.full((n,), -7.0)
                    kernel[(1,)](x, out, N=n, WHERE=where, vector_bits=bits)
                    assert torch.equal(out, want), (n, where, bits, out)
    """,
    # Found while reviewing the case above (not by the fuzzer): the same LLVM rule with a
    # constant zero divisor, which the emitter first left unfenced (constants keep their
    # folds): 0 / 0.0 in the lanes the mask zeroed came out 0 instead of NaN. n = 16 also
    # takes the uniform-divisor path (uniform_division.py) and its plain-division fallback.
    "division_by_constant_zero": """
        @triton.jit
        def kernel(X, OUT, N: tl.constexpr, REM: tl.constexpr):
            r = tl.arange(0, N)
            v = tl.load(X + r, mask=r < 1, other=0.0)
            q = v % 0.0 if REM else v / 0.0
            tl.store(OUT + r, tl.where(v == 0.0, q, v))

        for n in (4, 16):
            x = torch.arange(2.0, 2.0 + n)
            v = torch.where(torch.arange(n) < 1, x, 0.0)
            for rem in (False, True):
                q = torch.fmod(v, 0.0) if rem else v / 0.0
                want = torch.where(v == 0.0, q, v)
                for bits in (256, 512):
                    out = torch.full((n,), -7.0)
                    kernel[(1,)](x, out, N=n, REM=rem, vector_bits=bits)
                    assert torch.equal(out.isnan(), want.isnan()) and torch.equal(out[:1], want[:1]), \\
                        (n, rem, bits, out)
    """,
}

# Findings not fixed yet: each runs as the others do and is expected to fail (strict: a fix
# makes it pass, and the test then asks to be moved into CASES).
OPEN = {
}


@pytest.mark.parametrize("name", list(CASES) + [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="open fuzz finding, wrong result: see OPEN"))
    for name in OPEN])
def test_fuzz_regression(name, tmp_path):
    body = CASES.get(name) or OPEN[name]
    script = tmp_path / f"{name}.py"
    script.write_text("import torch, triton, triton.language as tl\n" + textwrap.dedent(body))
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"))
    res = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stderr[-2000:]}"
