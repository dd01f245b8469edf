"""Dots whose packed B later programs of a launch reuse (share-dot-panels,
convert_triton_to_tcpu/shared_panels.py, runtime.c: tcpu_panel_cache), on both paths that
pack B: AMX tiles' panels and vdpbf16ps's pairs. Results against float64 torch on grouped
matmuls (programs on one thread share B's columns), ungrouped ones, K loops longer than
the cache's slots, B chosen through a loaded index, B changed between two launches, one
and two threads; a cache that cannot be allocated."""
import re

import pytest
import torch
import triton
import triton.language as tl

from triton_cpu import amx, llvm

AMX = amx.available(llvm.host()) and amx.permitted()
AMX_INT8 = AMX and llvm.host().has("amx-int8")
needs_amx = pytest.mark.skipif(not AMX, reason="the host has no AMX-BF16 tiles, or Linux refused the tile state")
BF16_DOT = llvm.host().has("avx512bf16")
# The two packings of B, by launch options: AMX tiles (the default where the host has
# them), vdpbf16ps pairs (AMX off, the instruction asked for).
PATHS = [pytest.param("amx", marks=needs_amx),
         pytest.param("pairs", marks=pytest.mark.skipif(not BF16_DOT, reason="the host has no vdpbf16ps (AVX512-BF16)"))]
OPTIONS = {"amx": {}, "pairs": {"amx": False, "bf16_dot": True}}
INSTRUCTION = {"amx": "tdpbf16ps", "pairs": "vdpbf16ps"}


@triton.jit
def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Tutorial 03's structure: grouped program order, wrapped rows and columns, K masked."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    row0 = (pid // per_group) * GROUP_M
    rows = min(tiles_m - row0, GROUP_M)
    tile_m = row0 + (pid % per_group) % rows
    tile_n = (pid % per_group) // rows
    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + (rm % M)[:, None] * stride_am + rk[None, :]
    b_tile = b_ptr + rk[:, None] * stride_bk + (rn % N)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=c_ptr.dtype.element_ty)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_tile, mask=rk[None, :] < K - k0, other=0)
        b = tl.load(b_tile, mask=rk[:, None] < K - k0, other=0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K
        b_tile += BLOCK_K * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _operands(M, N, K, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.int8:
        return (torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8),
                torch.randint(-128, 128, (K, N), generator=g, dtype=torch.int8))
    return torch.randn(M, K, generator=g).to(dtype), torch.randn(K, N, generator=g).to(dtype)


def _check(c, a, b):
    exact = a.double() @ b.double()
    if c.dtype == torch.int32:
        assert torch.equal(c, exact.to(torch.int32))
        return
    K = a.shape[1]
    bound = K * 2.0**-23 * (a.double().abs() @ b.double().abs()) + 1e-30
    assert (c.double() - exact).abs().le(bound).all(), (c.double() - exact).abs().max()


def _matmul(a, b, blocks, group, threads=None, k=None, path="amx"):
    M, K = a.shape
    N = b.shape[1]
    BM, BN, BK = blocks
    c = torch.empty(M, N, dtype=torch.int32 if a.dtype == torch.int8 else torch.float32)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    extra = {"num_threads": threads, **OPTIONS[path]} if threads else OPTIONS[path]
    return grouped_matmul[grid](a, b, c, M, N, K if k is None else k, a.stride(0), b.stride(0), c.stride(0),
                                BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=group, **extra), c


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M, N, K", [(512, 256, 512), (500, 200, 300), (256, 512, 2048)])
@pytest.mark.parametrize("blocks", [(64, 128, 64), (32, 64, 32)])
@pytest.mark.parametrize("group", [8, 3, 1])
@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_bf16_matmul(M, N, K, blocks, group, threads, path):
    """Programs sharing B's columns (GROUP_M 8 and 3: runs of 8 and 3 programs on a
    thread), none (1); ragged M, N and K (masked K tail, wrapped rows and columns); K = 2048
    at 64 x 128 x 64: on AMX 16 chains of two iterations, more than the cache's 8 slots at
    that width, so the later ones pack into the spare (the pairs: 32 iterations, 64 slots
    of 16 KiB)."""
    a, b = _operands(M, N, K, torch.bfloat16, M + N + K + group)
    kernel, c = _matmul(a, b, blocks, group, threads, path=path)
    assert '"tcpu.panel_cache"' in kernel.asm["ttcir"] and INSTRUCTION[path] in kernel.asm["asm"]
    _check(c, a, b)


@pytest.mark.skipif(not BF16_DOT, reason="the host has no vdpbf16ps (AVX512-BF16)")
def test_pairs_beyond_the_slots():
    """vdpbf16ps pairs of a K loop of 80 iterations (BLOCK_K 32, 64 columns: 4 KiB a
    slot, 64 slots): the iterations past the last slot pack into the spare, every
    program; two threads, grouped."""
    a, b = _operands(256, 128, 80 * 32, torch.bfloat16, 11)
    kernel, c = _matmul(a, b, (32, 64, 32), 4, 2, path="pairs")
    assert '"tcpu.panel_cache"' in kernel.asm["ttcir"] and "vdpbf16ps" in kernel.asm["asm"]
    _check(c, a, b)


@pytest.mark.skipif(not AMX_INT8, reason="the host has no AMX-INT8 tiles, or Linux refused the tile state")
@pytest.mark.parametrize("group", [8, 1])
def test_grouped_int8_matmul(group):
    """int8 x int8 -> i32 (tdpbssd; B packed in quads along K), exact."""
    a, b = _operands(384, 256, 640, torch.int8, group)
    kernel, c = _matmul(a, b, (64, 128, 64), group)
    assert '"tcpu.panel_cache"' in kernel.asm["ttcir"] and "tdpbssd" in kernel.asm["asm"]
    _check(c, a, b)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("N", [128, 256])
def test_b_changed_between_launches(N, path):
    """The same kernel launched again on the same tensors, B overwritten in between (then
    a K that changes the masks): each launch packs B again (the tags are cleared at each
    thread's first program of a launch), never reads the last launch's panels. With N =
    BLOCK_N every program reads the same columns, so a launch's first program has the
    key the last one ended with."""
    a, b = _operands(256, N, 256, torch.bfloat16, 7)
    for threads in (1, 2):
        _matmul(a, b, (64, 128, 64), 8, threads, path=path)
        b.copy_(torch.randn(b.shape, generator=torch.Generator().manual_seed(threads)).bfloat16())
        _, c = _matmul(a, b, (64, 128, 64), 8, threads, path=path)
        _check(c, a, b)
        _, c = _matmul(a, b, (64, 128, 64), 8, threads, k=200, path=path)
        _check(c, a[:, :200], b[:200])


@triton.jit
def expert_matmul(x_ptr, w_ptr, expert_ptr, y_ptr, K: tl.constexpr, N: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    """Each block of BLOCK_M rows of x times the weight of its expert (a loaded index),
    as a mixture-of-experts layer routes rows."""
    pid = tl.program_id(0)
    e = tl.load(expert_ptr + pid)
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        w = tl.load(w_ptr + e * K * N + (k0 + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(x, w, acc)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("pattern", ["runs", "alternating", "one"])
def test_b_chosen_by_a_loaded_index(pattern, path):
    """B's address from an expert index loaded per program: programs with the same expert
    share its panels (the loaded index is part of the key), the others do not."""
    blocks, BM, K, N, E = 24, 32, 256, 128, 3
    expert = {"runs": [i // 5 % E for i in range(blocks)], "alternating": [i % 2 for i in range(blocks)],
              "one": [1] * blocks}[pattern]
    g = torch.Generator().manual_seed(len(pattern))
    x = torch.randn(blocks * BM, K, generator=g).bfloat16()
    w = torch.randn(E, K, N, generator=g).bfloat16()
    idx = torch.tensor(expert, dtype=torch.int32)
    y = torch.empty(blocks * BM, N)
    kernel = expert_matmul[(blocks,)](x, w, idx, y, K=K, N=N, BLOCK_M=BM, BLOCK_K=64, **OPTIONS[path])
    assert '"tcpu.panel_cache"' in kernel.asm["ttcir"] and INSTRUCTION[path] in kernel.asm["asm"]
    for p in range(blocks):
        rows = slice(p * BM, (p + 1) * BM)
        _check(y[rows], x[rows], w[expert[p]])


@pytest.mark.parametrize("path", PATHS)
def test_a_panel_cache_that_cannot_be_allocated_raises(failing_aligned_alloc, path):
    """Each thread's panel cache is allocated at its first launch that needs one; when
    that fails (here aligned_alloc refuses it: conftest's failing_aligned_alloc), the launch
    raises and names the cause (runtime.c, out_of_memory) instead of faulting on a NULL
    cache. The next launch, with memory, is right."""
    code = """
        import os, torch
        from test_shared_panels import _operands, _matmul, _check, grouped_matmul
        from test_shared_panels import OPTIONS
        a, b = _operands(256, 256, 512, torch.bfloat16, 3)
        c = torch.empty(256, 256)
        grouped_matmul.warmup(a, b, c, 256, 256, 512, 512, 256, 256, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64,
                              GROUP_M=8, grid=(8,), num_threads=2, **OPTIONS[PATH])._init_handles()
        os.environ["TCPU_TEST_FAIL_ALLOC_FROM"] = str(1 << 20)
        try:
            _matmul(a, b, (64, 128, 64), 8, threads=2, path=PATH)
            print("no error")
        except RuntimeError as e:
            print("raised:", e)
        del os.environ["TCPU_TEST_FAIL_ALLOC_FROM"]
        _, c = _matmul(a, b, (64, 128, 64), 8, threads=2, path=PATH)
        _check(c, a, b)
        print("next launch right")
    """
    r = failing_aligned_alloc(code.replace("PATH", repr(path)))
    assert re.search(r"raised: out of memory: \d+ bytes per thread for this kernel's cache of packed dot operands",
                     r.stdout), (r.stdout, r.stderr[-2000:])
    assert "next launch right" in r.stdout, (r.stdout, r.stderr[-2000:])
