"""bf16 and int8 tl.dot on AMX tiles (convert_triton_to_tcpu/dot.py `tile_kernel`), the `amx` option,
and the OS permission the tiles need (triton_cpu/amx.py, the driver's check)."""
from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl

from triton_cpu import amx, llvm

AMX = amx.available(llvm.host()) and amx.permitted()
needs_amx = pytest.mark.skipif(not AMX, reason="the host has no AMX-BF16 tiles, or Linux refused the tile state")


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               ACC: tl.constexpr, TRANS_A: tl.constexpr, TRANS_B: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    if TRANS_A:  # A stored K x M: its tile runs down the columns
        a = tl.trans(tl.load(a_ptr + rk[:, None] * M + rm[None, :]))
    else:
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    if TRANS_B:
        b = tl.trans(tl.load(b_ptr + rn[:, None] * K + rk[None, :]))
    else:
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if ACC:
        c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        d = tl.dot(a, b, acc=c)
    else:
        d = tl.dot(a, b)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], d.to(d_ptr.dtype.element_ty))


def _operands(M, N, K, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(M, K, generator=g).bfloat16(), torch.randn(K, N, generator=g).bfloat16(),
            torch.randn(M, N, generator=g))


def _check(d, a, b, c=None):
    """Within fp32 summation error of the exact product (float64 from the bf16 operands)."""
    exact = a.double() @ b.double() + (c.double() if c is not None else 0)
    K = a.shape[-1]
    bound = K * 2.0**-23 * (a.double().abs() @ b.double().abs() + (c.double().abs() if c is not None else 0)) + 1e-30
    assert (d.double() - exact).abs().le(bound).all(), (d.double() - exact).abs().max()


@needs_amx
@pytest.mark.parametrize("M, N, K", [(16, 16, 32), (32, 32, 32), (64, 32, 64), (32, 64, 128), (16, 64, 32),
                                     (64, 16, 64), (64, 128, 256)])
@pytest.mark.parametrize("acc", [False, True])
def test_bf16_dot_on_tiles(M, N, K, acc):
    """Shapes that tile exactly (M, N multiples of 16, K of 32; blocks of 1 x 1 to 2 x 2
    tiles), with and without an accumulator: tdpbf16ps in the code, results within fp32
    summation error."""
    a, b, c = _operands(M, N, K, M * N + K)
    d = torch.empty(M, N)
    k = dot_kernel[(1,)](a, b, c, d, M=M, N=N, K=K, ACC=acc, TRANS_A=False, TRANS_B=False)
    assert "tdpbf16ps" in k.asm["asm"] and "ldtilecfg" in k.asm["asm"] and "tilerelease" in k.asm["asm"]
    _check(d, a, b, c if acc else None)


@needs_amx
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int8], ids=str)
def test_tiles_at_256_bit_vectors(dtype):
    """The packing around the tiles at vector_bits=256 (AVX2-width chunks and shuffles)."""
    if dtype == torch.int8 and not llvm.host().has("amx-int8"):
        pytest.skip("the host has no AMX-INT8")
    M, N, K = 32, 64, 128
    g = torch.Generator().manual_seed(21)
    if dtype == torch.int8:
        a = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int32).to(torch.int8)
        b = torch.randint(-128, 128, (K, N), generator=g, dtype=torch.int32).to(torch.int8)
        d = torch.empty(M, N, dtype=torch.int32)
    else:
        a, b, _ = _operands(M, N, K, 21)
        d = torch.empty(M, N)
    k = dot_kernel[(1,)](a, b, None, d, M=M, N=N, K=K, ACC=False, TRANS_A=False, TRANS_B=False, vector_bits=256)
    assert ("tdpbssd" if dtype == torch.int8 else "tdpbf16ps") in k.asm["asm"]
    if dtype == torch.int8:
        assert torch.equal(d, a.int() @ b.int())
    else:
        _check(d, a, b)


@needs_amx
@pytest.mark.parametrize("trans_a, trans_b", [(True, False), (False, True), (True, True)])
def test_bf16_dot_on_tiles_of_transposed_operands(trans_a, trans_b):
    """Operands whose memory runs down their columns (tl.trans of a load)."""
    M, N, K = 32, 64, 64
    a, b, _ = _operands(M, N, K, 3)
    a_mem = a.T.contiguous() if trans_a else a
    b_mem = b.T.contiguous() if trans_b else b
    d = torch.empty(M, N)
    k = dot_kernel[(1,)](a_mem, b_mem, None, d, M=M, N=N, K=K, ACC=False, TRANS_A=trans_a, TRANS_B=trans_b)
    assert "tdpbf16ps" in k.asm["asm"]
    _check(d, a, b)


@needs_amx
def test_bf16_result_rounds_once():
    """A bf16 result: accumulated in fp32 on the tiles, rounded to bf16 once (as torch rounds
    the float64 product, up to one bf16 ulp where fp32 sums land near a rounding tie)."""
    M, N, K = 32, 32, 64
    a, b, _ = _operands(M, N, K, 5)
    d = torch.empty(M, N, dtype=torch.bfloat16)
    k = dot_kernel[(1,)](a, b, None, d, M=M, N=N, K=K, ACC=False, TRANS_A=False, TRANS_B=False)
    assert "tdpbf16ps" in k.asm["asm"]
    torch.testing.assert_close(d, (a.double() @ b.double()).bfloat16(), rtol=2**-7, atol=1e-2)


AMX_INT8 = AMX and llvm.host().has("amx-int8")


@pytest.mark.skipif(not AMX_INT8, reason="the host has no AMX-INT8 tiles, or Linux refused the tile state")
@pytest.mark.parametrize("M, N, K", [(16, 16, 64), (32, 64, 128), (64, 16, 256)])
@pytest.mark.parametrize("trans_b", [False, True])
def test_int8_dot_on_tiles(M, N, K, trans_b):
    """int8 x int8 -> int32 on tdpbssd: exactly torch's integer product; the accumulator
    starts near 2^31 so that sums wrap, as the vector code's (and a GPU's) do."""
    g = torch.Generator().manual_seed(M + N + K)
    a = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int32).to(torch.int8)
    b = torch.randint(-128, 128, (K, N), generator=g, dtype=torch.int32).to(torch.int8)
    c = torch.randint(2**31 - 2**20, 2**31 - 1, (M, N), generator=g, dtype=torch.int32)
    d = torch.empty(M, N, dtype=torch.int32)
    b_mem = b.T.contiguous() if trans_b else b
    k = dot_kernel[(1,)](a, b_mem, c, d, M=M, N=N, K=K, ACC=True, TRANS_A=False, TRANS_B=trans_b)
    assert "tdpbssd" in k.asm["asm"]
    exact = a.long() @ b.long() + c.long()
    wrapped = ((exact + 2**31) % 2**32 - 2**31).to(torch.int32)
    assert (exact > 2**31 - 1).any()  # the test wraps
    assert torch.equal(d, wrapped)
    vec = torch.empty_like(d)
    dot_kernel[(1,)](a, b_mem, c, vec, M=M, N=N, K=K, ACC=True, TRANS_A=False, TRANS_B=trans_b, amx=False)
    assert torch.equal(vec, wrapped)


@pytest.mark.skipif(not AMX_INT8, reason="the host has no AMX-INT8 tiles, or Linux refused the tile state")
def test_int8_dot_with_k_not_a_tile_row_falls_back():
    M, N, K = 16, 16, 32  # 32 int8 per row: half a tile row
    g = torch.Generator().manual_seed(1)
    a = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int32).to(torch.int8)
    b = torch.randint(-128, 128, (K, N), generator=g, dtype=torch.int32).to(torch.int8)
    d = torch.empty(M, N, dtype=torch.int32)
    k = dot_kernel[(1,)](a, b, None, d, M=M, N=N, K=K, ACC=False, TRANS_A=False, TRANS_B=False)
    assert "tdpbssd" not in k.asm["asm"]
    assert torch.equal(d, (a.int() @ b.int()))


@triton.jit
def signed_zero_kernel(a_ptr, b_ptr, d_ptr, NEGATIVE: tl.constexpr):
    # (a bool, not the zero itself: Triton's kernel cache keys 0.0 and -0.0 alike)
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 32 + r[None, :])
    d = tl.dot(a, b, acc=tl.full((32, 32), -0.0 if NEGATIVE else 0.0, tl.float32))
    tl.store(d_ptr + r[:, None] * 32 + r[None, :], d)


@needs_amx
@pytest.mark.parametrize("negative", [False, True])
def test_zero_accumulator(negative):
    """An accumulator of +0.0 starts the tiles from tilezero; one of -0.0 is not taken for
    it (loaded from its buffer). The sums are zeros either way; their sign is the
    hardware's: tdpbf16ps returns +0.0 for -0.0 plus -0.0 products (measured here), as
    BLAS sums that start from +0.0 do, where the vector path keeps -0.0."""
    a = torch.zeros(32, 32).bfloat16()
    b = -torch.ones(32, 32).bfloat16()
    d = torch.full((32, 32), float("nan"))
    k = signed_zero_kernel[(1,)](a, b, d, NEGATIVE=negative)
    assert "tdpbf16ps" in k.asm["asm"]
    assert ("tilezero" in k.asm["asm"]) == (not negative)
    assert torch.equal(d, torch.zeros(32, 32))


@pytest.mark.parametrize("M, N, K", [(16, 16, 16), (8, 16, 32), (16, 8, 32)])
def test_shapes_that_do_not_tile_fall_back(M, N, K):
    """K not a multiple of 32, or M or N not of 16: the vector code, same results."""
    a, b, _ = _operands(M, N, K, 9)
    d = torch.empty(M, N)
    k = dot_kernel[(1,)](a, b, None, d, M=M, N=N, K=K, ACC=False, TRANS_A=False, TRANS_B=False)
    assert "tdpbf16ps" not in k.asm["asm"]
    _check(d, a, b)


def test_amx_false_keeps_the_vector_code():
    M, N, K = 32, 32, 32
    a, b, _ = _operands(M, N, K, 11)
    d = torch.empty(M, N)
    k = dot_kernel[(1,)](a, b, None, d, M=M, N=N, K=K, ACC=False, TRANS_A=False, TRANS_B=False, amx=False)
    assert "tdpbf16ps" not in k.asm["asm"] and "ldtilecfg" not in k.asm["asm"]
    _check(d, a, b)


@triton.jit
def batched_kernel(a_ptr, b_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb = tl.arange(0, 2)
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rb[:, None, None] * M * K + rm[None, :, None] * K + rk[None, None, :])
    b = tl.load(b_ptr + rb[:, None, None] * K * N + rk[None, :, None] * N + rn[None, None, :])
    d = tl.dot(a, b)
    tl.store(d_ptr + rb[:, None, None] * M * N + rm[None, :, None] * N + rn[None, None, :], d)


@needs_amx
def test_batched_bf16_dot_on_tiles():
    M, N, K = 32, 32, 64
    g = torch.Generator().manual_seed(13)
    a = torch.randn(2, M, K, generator=g).bfloat16()
    b = torch.randn(2, K, N, generator=g).bfloat16()
    d = torch.empty(2, M, N)
    k = batched_kernel[(1,)](a, b, d, M=M, N=N, K=K)
    assert "tdpbf16ps" in k.asm["asm"]
    for i in range(2):
        _check(d[i], a[i], b[i])


@needs_amx
@pytest.mark.parametrize("M, N, K", [(256, 256, 256), (200, 136, 100)])
def test_tutorial_matmul_on_tiles(M, N, K):
    """Tutorial 03's kernel (its K loop, masked edges, fp32 accumulator carried over the loop,
    bf16 output) on sizes that fill its blocks and on ragged ones."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "tutorials", "03-matrix-multiplication.py")
    spec = importlib.util.spec_from_file_location("tutorial_matmul", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    g = torch.Generator().manual_seed(M + N + K)
    a = torch.randn(M, K, generator=g).bfloat16()
    b = torch.randn(K, N, generator=g).bfloat16()
    c = torch.empty(M, N, dtype=torch.bfloat16)
    grid = (triton.cdiv(M, 64) * triton.cdiv(N, 64),)
    k = mod.matmul_kernel.fn[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                   c.stride(0), c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8,
                                   ACTIVATION="")
    assert "tdpbf16ps" in k.asm["asm"]
    torch.testing.assert_close(c, (a.double() @ b.double()).bfloat16(), rtol=2**-7, atol=2e-2)


@pytest.mark.parametrize("granted", [True, False])
def test_resolve_needs_the_host_the_request_and_the_permission(monkeypatch, granted):
    """The option resolves to False on a host without AMX-BF16 whatever is asked, when asked
    False, and where Linux refuses the permission (simulated); to True otherwise."""
    monkeypatch.setattr(amx, "permitted", lambda: granted)
    without = SimpleNamespace(has=lambda f: False)
    with_amx = SimpleNamespace(has=lambda f: f in ("amx-tile", "amx-bf16"))
    assert amx.resolve(without, None) is False and amx.resolve(without, True) is False
    assert amx.resolve(with_amx, False) is False
    assert amx.resolve(with_amx, None) is granted and amx.resolve(with_amx, True) is granted


@needs_amx
def test_driver_refuses_a_tile_kernel_without_the_permission(monkeypatch):
    """A kernel that uses tiles, loaded where Linux refused the tile state (simulated), is
    refused with a RuntimeError that says why, not run into a SIGILL."""
    from triton_cpu.backend.driver import CPUUtils
    M = N = K = 32
    a, b, _ = _operands(M, N, K, 17)
    d = torch.empty(M, N)
    k = dot_kernel[(1,)](a, b, None, d, M=M, N=N, K=K, ACC=False, TRANS_A=False, TRANS_B=False)
    monkeypatch.setattr(amx, "permitted", lambda: False)
    with pytest.raises(RuntimeError, match="AMX tile state"):
        CPUUtils().load_binary(k.name, k.kernel, 0, 0)
    plain = dot_kernel[(1,)](a, b, None, d, M=16, N=16, K=16, ACC=False, TRANS_A=False, TRANS_B=False)
    CPUUtils().load_binary(plain.name, plain.kernel, 0, 0)  # no tiles: loads


@triton.jit
def k_loop_kernel(a_ptr, b_ptr, c_ptr, d_ptr, K, stride_a, M: tl.constexpr, N: tl.constexpr,
                  BLOCK_K: tl.constexpr, CLOBBER: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    for k in range(0, K, BLOCK_K):  # unmasked: A and B hold more blocks than the loop reads
        a_tile = a_ptr + rm[:, None] * stride_a + (k + rk)[None, :]
        a = tl.load(a_tile)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
        if CLOBBER:  # A's block, once read, is zeroed: a dot evaluated later would see zeros
            tl.store(a_tile, tl.zeros_like(a))
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], acc)


def _ttcir(tmp_path, monkeypatch, kernel, grid, *args, **kwargs) -> str:
    """Runs `kernel` (compiled again) and returns the TTCIR it compiled to."""
    from triton import knobs
    monkeypatch.setattr(knobs.compilation, "always_compile", True)
    monkeypatch.setattr(knobs.compilation, "dump_ir", True)
    monkeypatch.setattr(knobs.cache, "dump_dir", str(tmp_path))
    kernel.device_caches.clear()  # compiled again even for a specialization run before
    kernel[grid](*args, **kwargs)
    return "".join(p.read_text() for p in tmp_path.rglob("*.ttcir"))


def _k_loop_ttcir(tmp_path, monkeypatch, a, b, c, d, K, block_k, clobber) -> str:
    return _ttcir(tmp_path, monkeypatch, k_loop_kernel, (1,), a, b, c, d, K, a.stride(0), M=c.shape[0],
                  N=c.shape[1], BLOCK_K=block_k, CLOBBER=clobber)


def _k_loop_operands(M, N, K, block_k, seed, make):
    """A (M x KA) and B (KA x N) with four blocks more than the loop's ceil(K / block_k)
    (an iteration too many would add them), and how many columns of A the loop reads."""
    read = -(-K // block_k) * block_k
    g = torch.Generator().manual_seed(seed)
    return make((M, read + 4 * block_k), g), make((read + 4 * block_k, N), g), read


@needs_amx
@pytest.mark.parametrize("block_k, chain", [(32, 4), (64, 2)])
@pytest.mark.parametrize("K", [0, 40, 64, 200, 256, 480])
@pytest.mark.parametrize("clobber", [False, True])
def test_bf16_k_loop_runs_chains_of_iterations(tmp_path, monkeypatch, block_k, chain, K, clobber):
    """A K loop over bf16 blocks of 32 or 64 (unroll-tile-dot-loops): unrolled into chains
    of 4 or 2 iterations, each chain one tile kernel (a loop of chains and one for the
    iterations left: two tile_configs in the TTCIR), over trip counts of 0 to 15. With a
    store between the iterations' dots (CLOBBER zeroes each block of A after its dot) the
    dots stay one kernel each, and each reads A before it is zeroed."""
    M, N = 32, 64
    a, b, read = _k_loop_operands(M, N, K, block_k, K + block_k, lambda s, g: torch.randn(s, generator=g).bfloat16())
    c = torch.randn(M, N)
    d = torch.empty(M, N)
    a_in = a.clone()
    ttcir = _k_loop_ttcir(tmp_path, monkeypatch, a, b, c, d, K, block_k, clobber)
    _check(d, a_in[:, :read], b[:read], c)
    assert ttcir.count('"tcpu.tile_config"') == (chain + 1 if clobber else 2)
    if clobber:
        assert not a[:, :read].any() and torch.equal(a[:, read:], a_in[:, read:])


@pytest.mark.skipif(not AMX_INT8, reason="the host has no AMX-INT8 tiles, or Linux refused the tile state")
@pytest.mark.parametrize("K", [0, 64, 320, 1000])
def test_int8_k_loop_runs_chains_of_iterations(tmp_path, monkeypatch, K):
    """int8 blocks of 64 along K: chains of 4 iterations, exactly torch's integer product."""
    M, N = 32, 32
    a, b, read = _k_loop_operands(
        M, N, K, 64, K, lambda s, g: torch.randint(-128, 128, s, generator=g, dtype=torch.int32).to(torch.int8))
    c = torch.randint(-2**20, 2**20, (M, N), dtype=torch.int32)
    d = torch.empty(M, N, dtype=torch.int32)
    ttcir = _k_loop_ttcir(tmp_path, monkeypatch, a, b, c, d, K, 64, False)
    assert torch.equal(d, (a[:, :read].long() @ b[:read].long() + c.long()).to(torch.int32))
    assert ttcir.count('"tcpu.tile_config"') == 2


@triton.jit
def k_loop_max_kernel(a_ptr, b_ptr, d_ptr, m_ptr, K, M: tl.constexpr, N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((M, N), dtype=tl.float32)
    top = tl.full((M, BLOCK_K), float("-inf"), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        e = tl.exp(tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]).to(tl.float32))
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(e.to(tl.bfloat16), b, acc)
        top = tl.maximum(top, e)  # an exp read twice: computed into a buffer where it is defined
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], acc)
    tl.store(m_ptr + rm[:, None] * BLOCK_K + rk[None, :], top)


@needs_amx
def test_bf16_k_loop_chain_with_a_buffer_filled_between(tmp_path, monkeypatch):
    """A K loop whose dot's A, an exp, also feeds an elementwise maximum: each iteration's
    exp goes to a buffer where it is computed, a loop nest that the conversion puts
    between the chain's dots; the chain, decided before, still runs as one tile kernel, on
    the right values."""
    M, N, BK, K = 32, 32, 64, 320
    g = torch.Generator().manual_seed(3)
    a = torch.randn(M, K, generator=g).bfloat16()
    b = torch.randn(K, N, generator=g).bfloat16()
    d = torch.empty(M, N)
    m = torch.empty(M, BK)
    ttcir = _ttcir(tmp_path, monkeypatch, k_loop_max_kernel, (1,), a, b, d, m, K, M=M, N=N, BLOCK_K=BK)
    e = a.float().exp()
    _check(d, e.bfloat16(), b)
    torch.testing.assert_close(m, e.reshape(M, K // BK, BK).amax(1), rtol=1e-6, atol=0)
    assert ttcir.count('"tcpu.tile_config"') == 2


@triton.jit
def persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for t in range(tl.program_id(0), tiles, tl.num_programs(0)):  # a persistent loop over C's tiles
        rm = (t // tiles_n) * BM + tl.arange(0, BM)
        rn = (t % tiles_n) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & (k + rk < K)[None, :],
                        other=0.0)
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=(k + rk < K)[:, None] & (rn[None, :] < N),
                        other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@needs_amx
@pytest.mark.parametrize("M, N, K", [(96, 80, 232), (64, 64, 32)])
def test_bf16_persistent_matmul_k_loops(tmp_path, monkeypatch, M, N, K):
    """A K loop inside a persistent loop over tiles, unrolled where it stands (a loop of
    chains and one for the iterations left: two tile kernels) and prefetching its next
    tiles, ragged on every axis, 3 programs over more tiles than programs."""
    g = torch.Generator().manual_seed(M + N + K)
    a = torch.randn(M, K, generator=g).bfloat16()
    b = torch.randn(K, N, generator=g).bfloat16()
    c = torch.empty(M, N)
    ttcir = _ttcir(tmp_path, monkeypatch, persistent_kernel, (3,), a, b, c, M, N, K, BM=32, BN=32, BK=32)
    assert ttcir.count('"tcpu.tile_config"') == 2
    assert '"tcpu.prefetch"' in ttcir  # the nested K loop's next tiles (prefetch-next-program)
    _check(c, a, b)
