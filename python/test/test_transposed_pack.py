"""tl.dot operands whose memory runs down their columns (`tl.trans(k)` of a row-major
tile, a column-major pointer tile, `tl.trans(x)` as A) are packed in T x T blocks
transposed in registers instead of one gathered vector per row
(convert_triton_to_tcpu/transposed_pack.py). Checked against torch in fp32, fp16, bf16
and int8, with masks, batched (3-D) and at both vector widths; shapes that are not
multiples of the block keep the row-wise pack and stay correct."""
import pytest
import torch
import triton
import triton.language as tl

from triton_cpu import llvm


@triton.jit
def qk_kernel(q_ptr, k_ptr, o_ptr, n_valid, M: tl.constexpr, N: tl.constexpr, D: tl.constexpr,
              OUT: tl.constexpr):
    # Attention's scores: k is loaded row-major [N, D] and used transposed; rows of k past
    # n_valid are masked to zero.
    rm, rn, rd = tl.arange(0, M), tl.arange(0, N), tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :], mask=(rn < n_valid)[:, None], other=0)
    s = tl.dot(q, tl.trans(k), out_dtype=OUT)
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], s)


def _inputs(shape_q, shape_k, dtype, g):
    if dtype == torch.int8:
        return (torch.randint(-128, 127, shape_q, generator=g, dtype=dtype),
                torch.randint(-128, 127, shape_k, generator=g, dtype=dtype))
    return torch.randn(shape_q, generator=g).to(dtype), torch.randn(shape_k, generator=g).to(dtype)


@pytest.mark.parametrize("M, N, D", [(16, 16, 16), (32, 64, 32), (64, 16, 128), (8, 32, 8)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8], ids=str)
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_scores_with_transposed_keys(M, N, D, dtype, vector_bits):
    g = torch.Generator().manual_seed(M + 7 * N + D)
    q, k = _inputs((M, D), (N, D), dtype, g)
    n_valid = N - 3
    integer = dtype == torch.int8
    out = torch.empty(M, N, dtype=torch.int32 if integer else torch.float32)
    kern = qk_kernel[(1,)](q, k, out, n_valid, M=M, N=N, D=D, OUT=tl.int32 if integer else tl.float32,
                           vector_bits=vector_bits)
    k_ref = k.clone()
    k_ref[n_valid:] = 0
    if integer:
        assert torch.equal(out, q.int() @ k_ref.int().T)
    else:
        torch.testing.assert_close(out.double(), q.double() @ k_ref.double().T, rtol=1e-5, atol=1e-5 * D)
    ir = kern.asm["ttcir"]
    lanes = vector_bits // 32
    if N % lanes == 0 and D % lanes == 0:  # the block path: contiguous loads and shuffles
        assert "tcpu.gather" not in ir and "vector.shuffle" in ir
    else:  # not a multiple of the block: the row-wise pack (a gather per vector)
        assert "tcpu.gather" in ir


@triton.jit
def column_major_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                        TRANS_A: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    if TRANS_A:  # A^T @ B with A stored [K, M] row-major (a weight gradient's shape)
        a = tl.trans(tl.load(a_ptr + rk[:, None] * M + rm[None, :]))
    else:
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    # B stored column-major: element (k, n) at n * K + k
    b = tl.load(b_ptr + rk[:, None] + rn[None, :] * K)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_column_major_operands(trans_a, vector_bits):
    M, N, K = 32, 16, 64
    a = torch.randn(K, M) if trans_a else torch.randn(M, K)
    b_cm = torch.randn(N, K)  # b = b_cm.T, column-major
    out = torch.empty(M, N)
    kern = column_major_kernel[(1,)](a, b_cm, out, M=M, N=N, K=K, TRANS_A=trans_a, vector_bits=vector_bits)
    ref = (a.double().T if trans_a else a.double()) @ b_cm.double().T
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-4)
    assert "tcpu.gather" not in kern.asm["ttcir"]


@triton.jit
def batched_kernel(q_ptr, k_ptr, o_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, D: tl.constexpr):
    rb, rm, rn, rd = tl.arange(0, B), tl.arange(0, M), tl.arange(0, N), tl.arange(0, D)
    q = tl.load(q_ptr + rb[:, None, None] * M * D + rm[None, :, None] * D + rd[None, None, :])
    k = tl.load(k_ptr + rb[:, None, None] * N * D + rn[None, :, None] * D + rd[None, None, :])
    s = tl.dot(q, tl.permute(k, (0, 2, 1)))
    tl.store(o_ptr + rb[:, None, None] * M * N + rm[None, :, None] * N + rn[None, None, :], s)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_batched_transposed_keys(vector_bits):
    B, M, N, D = 2, 16, 32, 16
    q, k = torch.randn(B, M, D), torch.randn(B, N, D)
    out = torch.empty(B, M, N)
    kern = batched_kernel[(1,)](q, k, out, B=B, M=M, N=N, D=D, vector_bits=vector_bits)
    torch.testing.assert_close(out.double(), q.double() @ k.double().transpose(1, 2), rtol=1e-5, atol=1e-4)
    assert "tcpu.gather" not in kern.asm["ttcir"]


@triton.jit
def materialized_operand_kernel(q_ptr, k_ptr, o_ptr, ITERS: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                                D: tl.constexpr):
    # q is loaded once before the loop and read by a dot in every iteration (a
    # materialized operand the micro-kernel reads in place); the accumulator is carried.
    rm, rn, rd = tl.arange(0, M), tl.arange(0, N), tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    acc = tl.zeros((M, N), dtype=tl.float32)
    for i in range(ITERS):
        k = tl.load(k_ptr + i * N * D + rn[:, None] * D + rd[None, :])
        acc = tl.dot(q, tl.trans(k), acc)
        q = q * 0.5
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], acc)


def test_operand_materialized_before_a_loop():
    M, N, D, iters = 16, 16, 32, 3
    q, k = torch.randn(M, D), torch.randn(iters, N, D)
    out = torch.empty(M, N)
    materialized_operand_kernel[(1,)](q, k, out, ITERS=iters, M=M, N=N, D=D)
    ref = sum((q.double() * 0.5**i) @ k[i].double().T for i in range(iters))
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-4)


BF16_DOT = llvm.host().has("avx512bf16")


@pytest.mark.skipif(not BF16_DOT, reason="the host has no vdpbf16ps (AVX512-BF16)")
@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("M, N, D", [(32, 64, 32), (16, 32, 64), (64, 16, 128), (16, 16, 16), (8, 32, 8)])
def test_bf16_pairs_of_transposed_keys(M, N, D, vector_bits):
    """bf16 scores on vdpbf16ps (bf16_dot): k^T's pairs (rows 2p and 2p + 1 of a column,
    adjacent in k's memory) are read T pairs at a time down the columns and transposed
    in registers, no gathers, where D/2 and N fill T x T blocks of i32 (T = vector_bits /
    32); otherwise the dot takes the widened path and its transposed pack (D and N
    multiples of T); where neither avoids gathers, the pairs gather."""
    g = torch.Generator().manual_seed(M + 3 * N + D)
    q, k = torch.randn(M, D, generator=g).bfloat16(), torch.randn(N, D, generator=g).bfloat16()
    n_valid = N - 3
    out = torch.empty(M, N)
    kern = qk_kernel[(1,)](q, k, out, n_valid, M=M, N=N, D=D, OUT=tl.float32, vector_bits=vector_bits,
                           bf16_dot=True, amx=False)
    k_ref = k.clone()
    k_ref[n_valid:] = 0
    torch.testing.assert_close(out.double(), q.double() @ k_ref.double().T, rtol=1e-5, atol=1e-5 * D)
    T = vector_bits // 32
    widened_transposes = N % T == 0 and D % T == 0
    pairs_transpose = N % T == 0 and (D // 2) % T == 0
    # the pairs unless only the widened path avoids gathers
    assert ("vdpbf16ps" in kern.asm["asm"]) == (pairs_transpose or not widened_transposes)
    if widened_transposes:
        assert "tcpu.gather" not in kern.asm["ttcir"] and "vector.shuffle" in kern.asm["ttcir"]


@pytest.mark.skipif(not BF16_DOT, reason="the host has no vdpbf16ps (AVX512-BF16)")
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_bf16_pairs_of_column_major_operands(trans_a, vector_bits):
    """A column-major B packs to pairs through the transposed blocks; A stored [K, M] and
    used transposed (x^T @ dy) takes the widened path (its pairs along K are not adjacent
    in memory), read through transposes too: no gathers either way."""
    M, N, K = 32, 32, 64
    g = torch.Generator().manual_seed(5)
    a = (torch.randn(K, M, generator=g) if trans_a else torch.randn(M, K, generator=g)).bfloat16()
    b_cm = torch.randn(N, K, generator=g).bfloat16()
    out = torch.empty(M, N, dtype=torch.bfloat16)
    kern = column_major_kernel[(1,)](a, b_cm, out, M=M, N=N, K=K, TRANS_A=trans_a, vector_bits=vector_bits,
                                     bf16_dot=True, amx=False)
    ref = (a.double().T if trans_a else a.double()) @ b_cm.double().T
    torch.testing.assert_close(out.double(), ref, rtol=1e-2, atol=1e-2)
    assert "tcpu.gather" not in kern.asm["ttcir"]
    assert ("vdpbf16ps" in kern.asm["asm"]) == (not trans_a)
