"""Loop-carried tensors advanced by one uniform step per iteration (`ptrs += BLOCK * stride`,
`offs += BLOCK`), which uniform-loop-increments rewrites as a loop-invariant tensor plus a
scalar offset: results against torch, including the tensor the loop leaves behind, steps that
are negative or only known at run time, zero-trip loops and nested loops."""
import pytest
import torch

import triton
import triton.language as tl


@triton.jit
def strided_row_sums(x_ptr, out_ptr, last_ptr, n_chunks, step, BLOCK: tl.constexpr):
    # Walks x in chunks of BLOCK elements `step` elements apart (step may be negative), with
    # a pointer tensor and an index tensor both advanced uniformly; stores the sum of the
    # chunks and, after the loop, the chunk the walk stopped at (the loop's final tensors).
    ptrs = x_ptr + tl.arange(0, BLOCK)
    idx = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(n_chunks):
        acc += tl.load(ptrs) + idx.to(tl.float32)
        ptrs += step
        idx += 3
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)
    tl.store(last_ptr + tl.arange(0, BLOCK), tl.load(ptrs) + idx.to(tl.float32))


def _reference(x, n_chunks, step, block, base):
    acc = torch.zeros(block)
    idx = torch.arange(block, dtype=torch.float32)
    for i in range(n_chunks):
        acc += x[base + i * step:base + i * step + block] + idx + 3 * i
    end = base + n_chunks * step
    return acc, x[end:end + block] + idx + 3 * n_chunks


@pytest.mark.parametrize("n_chunks,step", [(5, 16), (4, 7), (6, -16), (0, 16), (1, 0)])
def test_pointer_and_index_walks(n_chunks, step):
    block, base = 16, 128
    x = torch.randn(512)
    out, last = torch.empty(block), torch.empty(block)
    # The kernel starts at x[base]: pass a view so that negative steps stay inside x.
    strided_row_sums[(1, )](x[base:], out, last, n_chunks, step, BLOCK=block)
    ref_acc, ref_last = _reference(x, n_chunks, step, block, base)
    torch.testing.assert_close(out, ref_acc)
    torch.testing.assert_close(last, ref_last)


@triton.jit
def tiled_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # The GPU tutorial's pointer walk over K, inside an outer loop over column tiles.
    rm = tl.arange(0, BM)
    rk = tl.arange(0, BK)
    for n0 in range(0, N, BN):
        rn = n0 + tl.arange(0, BN)
        a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for k0 in range(0, K, BK):
            a = tl.load(a_ptrs, mask=(rk[None, :] < K - k0), other=0.0)
            b = tl.load(b_ptrs, mask=(rk[:, None] < K - k0) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
            a_ptrs += BK
            b_ptrs += BK * N
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("K", [64, 40])
def test_nested_matmul_walk(K):
    M, N = 16, 48
    a, b = torch.randn(M, K), torch.randn(K, N)
    c = torch.empty(M, N)
    tiled_matmul[(1, )](a, b, c, M, N, K, BM=16, BN=16, BK=16)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
