"""tl.dot: dtypes, accumulators, output types, precisions, shapes; the tutorial matmul."""
import pytest
import torch
import triton
import triton.language as tl

from triton_cpu import llvm


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               ACC: tl.constexpr, PRECISION: tl.constexpr, OUT: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if ACC:
        c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        d = tl.dot(a, b, acc=c, input_precision=PRECISION)
    else:
        d = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], d)


SHAPES = [(16, 16, 16), (32, 64, 16), (64, 32, 128), (16, 16, 1), (1, 16, 16), (16, 1, 16), (2, 4, 8)]


@pytest.mark.parametrize("M, N, K", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8], ids=str)
def test_dot(M, N, K, dtype):
    g = torch.Generator().manual_seed(M * N + K)
    if dtype == torch.int8:
        a = torch.randint(-128, 127, (M, K), generator=g, dtype=dtype)
        b = torch.randint(-128, 127, (K, N), generator=g, dtype=dtype)
        out = torch.empty(M, N, dtype=torch.int32)
        dot_kernel[(1,)](a, b, None, out, M=M, N=N, K=K, ACC=False, PRECISION="ieee", OUT=tl.int32)
        assert torch.equal(out, a.int() @ b.int())
        return
    a = torch.randn(M, K, generator=g).to(dtype)
    b = torch.randn(K, N, generator=g).to(dtype)
    out = torch.empty(M, N)
    dot_kernel[(1,)](a, b, None, out, M=M, N=N, K=K, ACC=False, PRECISION="ieee", OUT=tl.float32)
    ref = a.double() @ b.double()
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5 * K)


@pytest.mark.parametrize("precision", ["tf32", "ieee", "tf32x3"])
def test_dot_accumulator_and_precisions(precision):
    """acc= adds in place; tf32 is computed as full fp32 on the CPU."""
    M, N, K = 32, 32, 64
    a, b, c = torch.randn(M, K), torch.randn(K, N), torch.randn(M, N)
    out = torch.empty(M, N)
    dot_kernel[(1,)](a, b, c, out, M=M, N=N, K=K, ACC=True, PRECISION=precision, OUT=tl.float32)
    torch.testing.assert_close(out.double(), (a.double() @ b.double()) + c.double(), rtol=1e-5, atol=1e-4)


def test_dot_out_dtype_fp16_accumulates_in_fp32():
    """An fp16 result is summed in fp32 and rounded once (an fp16 running sum is ~10x off)."""
    M, N, K = 64, 64, 64
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    out = torch.empty(M, N, dtype=torch.float16)
    dot_kernel[(1,)](a, b, None, out, M=M, N=N, K=K, ACC=False, PRECISION="ieee", OUT=tl.float16)
    exact = a.double() @ b.double()
    assert (out.double() - exact).abs().max() <= (exact.half().double() - exact).abs().max() * 1.01 + 1e-6


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk_col = tl.arange(0, K)[None, None, :]
    rk_row = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * M * K + rm * K + rk_col)
    b = tl.load(b_ptr + rb * K * N + rk_row * N + rn)
    tl.store(c_ptr + rb * M * N + rm * N + rn, tl.dot(a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_batched_3d_dot(dtype, vector_bits):
    B, M, N, K = 2, 16, 32, 16
    a, b = torch.randn(B, M, K).to(dtype), torch.randn(B, K, N).to(dtype)
    out = torch.empty(B, M, N)
    batched_dot_kernel[(1,)](a, b, out, B=B, M=M, N=N, K=K, vector_bits=vector_bits)
    torch.testing.assert_close(out.double(), torch.bmm(a.double(), b.double()), rtol=1e-5, atol=1e-4)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@pytest.mark.parametrize("M, N, K", [(300, 200, 150), (64, 64, 64), (1, 33, 17)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("transposed_b", [False, True])
def test_tutorial_matmul(M, N, K, dtype, transposed_b):
    a = torch.randn(M, K).to(dtype)
    b = torch.randn(N, K).to(dtype).t() if transposed_b else torch.randn(K, N).to(dtype)
    c = torch.empty(M, N, dtype=dtype)
    grid = (triton.cdiv(M, 32) * triton.cdiv(N, 32),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)
    ref = (a.float() @ b.float()).to(dtype)
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(c, ref, rtol=tol, atol=tol * 4)


# Block shapes against the micro-kernel's register tiles (dot._register_tile). At 512 bits:
# 6 x 4 (16 x 64 and 64 x 64 leave a last row of 4 rows, 128 x 128 one of 2), 12 x 2 (32 x
# 32 leaves 8), 8 x 2 (16 x 32, 8 x 64: too few rows for the larger tiles), 8 x 1 (16 x 16).
# At 256 bits: 6 x 2 (16 and 64 rows leave 4, 128 leaves 2, 32 leaves 2), 4 x 2 (8 x 64).
# With prefetch (a K loop's operands) the micro-tiles run column by column and B is packed
# by the first row; without, row by row.
@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("blocks", [(16, 64, 32), (64, 64, 16), (128, 128, 16), (32, 32, 16), (16, 32, 16),
                                    (16, 16, 32), (8, 64, 16)], ids=str)
@pytest.mark.parametrize("prefetch", [True, False])
def test_register_tiles(vector_bits, blocks, prefetch):
    BM, BN, BK = blocks
    M, N, K = 150, 140, 72
    g = torch.Generator().manual_seed(BM * BN + BK)
    a, b = torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)
    c = torch.empty(M, N)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), )
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=4, vector_bits=vector_bits,
                        prefetch=prefetch)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("M, N", [(64, 64), (32, 32), (16, 16)])
def test_register_tiles_int8_and_batched(vector_bits, M, N):
    """One dot outside a loop (row order) in i32 (a multiply and an add per step, not an
    FMA) and a 3-D dot (an outer batch loop), on the register tiles above."""
    g = torch.Generator().manual_seed(M + N)
    a = torch.randint(-128, 127, (M, 32), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 127, (32, N), generator=g, dtype=torch.int8)
    out = torch.empty(M, N, dtype=torch.int32)
    dot_kernel[(1, )](a, b, None, out, M=M, N=N, K=32, ACC=False, PRECISION="ieee", OUT=tl.int32,
                      vector_bits=vector_bits, amx=False)
    assert torch.equal(out, a.int() @ b.int())
    x, y = torch.randn(2, M, 16, generator=g), torch.randn(2, 16, N, generator=g)
    out = torch.empty(2, M, N)
    batched_dot_kernel[(1, )](x, y, out, B=2, M=M, N=N, K=16, vector_bits=vector_bits)
    torch.testing.assert_close(out.double(), torch.bmm(x.double(), y.double()), rtol=1e-5, atol=1e-4)


@triton.jit
def dot_scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                      TA: tl.constexpr, TB: tl.constexpr, SCALE_A: tl.constexpr, SCALE_B: tl.constexpr):
    KA: tl.constexpr = K // 2 if TA == "e2m1" else K
    KB: tl.constexpr = K // 2 if TB == "e2m1" else K
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * KA + tl.arange(0, KA)[None, :])
    b = tl.load(b_ptr + tl.arange(0, KB)[:, None] * N + tl.arange(0, N)[None, :])
    sa = None
    sb = None
    if SCALE_A:
        sa = tl.load(sa_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    if SCALE_B:
        sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    c = tl.dot_scaled(a, sa, TA, b, sb, TB)
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


_E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def _decode(x, kind, k_axis):
    """The fp32 matrix an mx operand stands for (e2m1: low nibble first along K)."""
    if kind == "e2m1":
        lo, hi = _E2M1[(x & 0xF).long()], _E2M1[(x >> 4).long()]
        if k_axis == 0:  # [K/2, N] bytes -> [K/2, 2, N] -> [K, N]
            return torch.stack([lo, hi], dim=1).flatten(0, 1)
        return torch.stack([lo, hi], dim=-1).flatten(-2, -1)  # [M, K/2, 2] -> [M, K]
    if kind in ("e4m3", "e5m2"):
        return x.view(torch.float8_e4m3fn if kind == "e4m3" else torch.float8_e5m2).float()
    return x.float()


@pytest.mark.parametrize("ta,tb,scale_a,scale_b", [("e2m1", "bf16", True, False), ("e4m3", "e5m2", True, True),
                                                   ("bf16", "e2m1", False, True), ("e5m2", "fp16", True, False)])
def test_dot_scaled(ta, tb, scale_a, scale_b):
    M, N, K = 16, 32, 64
    g = torch.Generator().manual_seed(3)

    def operand(kind, shape):
        if kind in ("bf16", "fp16"):
            return torch.randn(shape, generator=g).to(torch.bfloat16 if kind == "bf16" else torch.float16)
        x = torch.randint(0, 256, shape, generator=g, dtype=torch.int32).to(torch.uint8)
        if kind != "e2m1":  # no NaN/inf bytes, so the reference stays finite
            x = torch.where(_decode(x, kind, -1).isfinite(), x, torch.zeros_like(x))
        return x

    a = operand(ta, (M, K // 2 if ta == "e2m1" else K))
    b = operand(tb, (K // 2 if tb == "e2m1" else K, N))
    lo, hi = (120, 134) if "fp16" not in (ta, tb) else (124, 131)
    sa = torch.randint(lo, hi, (M, K // 32), generator=g, dtype=torch.int32).to(torch.uint8)
    sb = torch.randint(lo, hi, (N, K // 32), generator=g, dtype=torch.int32).to(torch.uint8)
    c = torch.empty(M, N)
    dot_scaled_kernel[(1,)](a, sa, b, sb, c, M=M, N=N, K=K, TA=ta, TB=tb, SCALE_A=scale_a, SCALE_B=scale_b)
    A = _decode(a, ta, -1)
    B = _decode(b, tb, 0)
    if scale_a:
        A = A * torch.exp2(sa.float() - 127).repeat_interleave(32, dim=1)
    if scale_b:
        B = B * torch.exp2(sb.float() - 127).repeat_interleave(32, dim=1).T
    torch.testing.assert_close(c, A @ B, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("ta,tb", [("e2m1", "e5m2"), ("e4m3", "e4m3")])
def test_dot_scaled_extreme_scales(ta, tb):
    """Scales over the whole range upstream's test_scaled_dot draws for a bf16 dot (0 to 142:
    2^-127 to 2^15), so that some scaled operands, products and sums are subnormal fp32
    numbers: every element within fp32 summation error of the exact product, computed in
    float64 from the operands' bits (upstream's own reference upcasts to bf16 first and
    loses those bits)."""
    M, N, K = 32, 32, 128
    g = torch.Generator().manual_seed(11)
    a = torch.randint(0, 256, (M, K // 2 if ta == "e2m1" else K), generator=g, dtype=torch.int32).to(torch.uint8)
    if ta != "e2m1":
        a = torch.where(_decode(a, ta, -1).isfinite(), a, torch.zeros_like(a))
    b = torch.randint(0, 256, (K, N), generator=g, dtype=torch.int32).to(torch.uint8)
    b = torch.where(_decode(b, tb, 0).isfinite(), b, torch.zeros_like(b))
    sa = torch.randint(0, 143, (M, K // 32), generator=g, dtype=torch.int32).to(torch.uint8)
    sa[0] = 0  # one row entirely at the smallest scale
    c = torch.empty(M, N)
    dot_scaled_kernel[(1,)](a, sa, b, None, c, M=M, N=N, K=K, TA=ta, TB=tb, SCALE_A=True, SCALE_B=False)
    A = _decode(a, ta, -1).double() * torch.exp2(sa.double() - 127).repeat_interleave(32, dim=1)
    B = _decode(b, tb, 0).double()
    exact = A @ B
    # fp32 accumulation: K roundings relative to the sum of magnitudes, and an absolute
    # 2^-149 per operation where partial sums are subnormal.
    bound = K * 2.0**-24 * (A.abs() @ B.abs()) + K * 2.0**-149
    assert (c.double() - exact).abs().le(bound).all()
    assert exact[0].abs().max() < 2.0**-100 and c[0].abs().max() > 0  # the smallest scale is not flushed


HAS_BF16_DOT = llvm.host().has("avx512bf16")


@pytest.mark.skipif(not HAS_BF16_DOT, reason="the host has no vdpbf16ps (AVX512-BF16)")
@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("M, N, K", [(16, 16, 16), (32, 64, 32), (64, 32, 128), (16, 16, 1), (2, 4, 8), (4, 8, 16)])
def test_bf16_dot_instruction(M, N, K, vector_bits):
    """bf16 x bf16 asked on vdpbf16ps (the bf16_dot option, AMX tiles off): used where N
    fills the fp32 lanes and K is even, widened to fp32 elsewhere; either way within fp32
    summation error of the exact product."""
    g = torch.Generator().manual_seed(M + N + K)
    a = torch.randn(M, K, generator=g).bfloat16()
    b = torch.randn(K, N, generator=g).bfloat16()
    d = torch.empty(M, N)
    k = dot_kernel[(1,)](a, b, None, d, M=M, N=N, K=K, ACC=False, PRECISION="ieee", OUT=tl.float32,
                         vector_bits=vector_bits, bf16_dot=True, amx=False)
    torch.testing.assert_close(d.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5 * K)
    uses = "vdpbf16ps" in k.asm["asm"]
    assert uses == (K % 2 == 0 and N % (vector_bits // 32) == 0)


# The pair product's register tiles (dot._register_tile): at 512 bits 4 x 4 where N is four
# vectors wide (16 x 64, 128 x 128, 64 x 256), 12 x 2 and 8 x 2 below; at 256 bits 6 x 2.
# M = 150 and N = 140 leave ragged last blocks (masked loads and stores).
@pytest.mark.skipif(not HAS_BF16_DOT, reason="the host has no vdpbf16ps (AVX512-BF16)")
@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("blocks", [(16, 64, 32), (128, 128, 64), (64, 256, 32), (32, 32, 16), (8, 64, 16)],
                         ids=str)
@pytest.mark.parametrize("prefetch", [True, False])
def test_bf16_dot_register_tiles(vector_bits, blocks, prefetch):
    BM, BN, BK = blocks
    M, N, K = 150, 140, 72
    g = torch.Generator().manual_seed(BM * BN + BK)
    a, b = torch.randn(M, K, generator=g).bfloat16(), torch.randn(K, N, generator=g).bfloat16()
    c = torch.empty(M, N)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), )
    k = matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                            c.stride(1), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=4, vector_bits=vector_bits,
                            prefetch=prefetch, bf16_dot=True, amx=False)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5 * K)
    assert "vdpbf16ps" in k.asm["asm"]


@pytest.mark.parametrize("choice", [None, False])
def test_bf16_dot_default_follows_the_host(choice):
    """Without the option, vdpbf16ps is used only on AMD Zen cores that have it (on Intel's
    Xeons widening to fp32 FMAs is faster: README, Knobs); bf16_dot=False never uses it.
    The widened result is within fp32 summation error of the exact product too."""
    M, N, K = 32, 64, 32
    g = torch.Generator().manual_seed(7)
    a = torch.randn(M, K, generator=g).bfloat16()
    b = torch.randn(K, N, generator=g).bfloat16()
    d = torch.empty(M, N)
    options = {} if choice is None else {"bf16_dot": choice}
    k = dot_kernel[(1,)](a, b, None, d, M=M, N=N, K=K, ACC=False, PRECISION="ieee", OUT=tl.float32, **options)
    torch.testing.assert_close(d.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5 * K)
    expected = choice is None and HAS_BF16_DOT and llvm.host().cpu.startswith("znver")
    assert ("vdpbf16ps" in k.asm["asm"]) == expected
