"""Shape ops: trans/permute, reshape (with and without can_reorder), join/split, cat,
broadcast_to, flip, gather, histogram, sort and topk, against torch."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def permute_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                   O0: tl.constexpr, O1: tl.constexpr, O2: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * B * C + b * C + c)
    y = tl.permute(x, (O0, O1, O2))
    # Store y (shape dims[O0], dims[O1], dims[O2]) contiguously.
    D0: tl.constexpr = A if O0 == 0 else (B if O0 == 1 else C)
    D1: tl.constexpr = A if O1 == 0 else (B if O1 == 1 else C)
    D2: tl.constexpr = A if O2 == 0 else (B if O2 == 1 else C)
    i = tl.arange(0, D0)[:, None, None]
    j = tl.arange(0, D1)[None, :, None]
    k = tl.arange(0, D2)[None, None, :]
    tl.store(out_ptr + i * D1 * D2 + j * D2 + k, y)


@pytest.mark.parametrize("order", [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)])
def test_permute_3d(order):
    x = torch.randn(4, 8, 16)
    out = torch.empty(x.permute(order).shape)
    permute_kernel[(1,)](x, out, A=4, B=8, C=16, O0=order[0], O1=order[1], O2=order[2])
    assert torch.equal(out, x.permute(order))


@triton.jit
def trans_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    y = tl.trans(x * 2.0) + 1.0
    tl.store(out_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], y)


@pytest.mark.parametrize("M, N", [(8, 16), (32, 32), (1, 64), (64, 2)])
def test_trans_2d(M, N):
    x = torch.randn(M, N)
    out = torch.empty(N, M)
    trans_kernel[(1,)](x, out, M=M, N=N)
    assert torch.equal(out, (x * 2.0).t() + 1.0)


@triton.jit
def join_split_kernel(x_ptr, y_ptr, joined_ptr, diff_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    j = tl.join(x, y)
    tl.store(joined_ptr + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    a, b = tl.split(j * 3.0)
    tl.store(diff_ptr + offs, a - b)


def test_join_and_split():
    x, y = torch.randn(32), torch.randn(32)
    joined, diff = torch.empty(32, 2), torch.empty(32)
    # No fma contraction: the difference must round like torch's two products and a subtraction.
    join_split_kernel[(1,)](x, y, joined, diff, N=32, enable_fp_fusion=False)
    assert torch.equal(joined, torch.stack([x, y], dim=1))
    assert torch.equal(diff, x * 3.0 - y * 3.0)


@triton.jit
def interleave_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    z = tl.interleave(tl.load(x_ptr + offs), tl.load(y_ptr + offs))
    tl.store(out_ptr + tl.arange(0, 2 * N), z)


def test_interleave():
    x, y = torch.randn(16), torch.randn(16)
    out = torch.empty(32)
    interleave_kernel[(1,)](x, y, out, N=16)
    assert torch.equal(out, torch.stack([x, y], dim=1).reshape(-1))


@triton.jit
def cat_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr, M: tl.constexpr):
    r = tl.arange(0, N)[:, None]
    c = tl.arange(0, M)[None, :]
    x = tl.load(x_ptr + r * M + c)
    y = tl.load(y_ptr + r * M + c)
    z = tl.cat(x, y, can_reorder=False)
    tl.store(out_ptr + tl.arange(0, 2 * N)[:, None] * M + c, z)


def test_cat():
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    out = torch.empty(16, 16)
    cat_kernel[(1,)](x, y, out, N=8, M=16)
    assert torch.equal(out, torch.cat([x, y]))


@triton.jit
def reshape_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, REORDER: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M * N))
    y = tl.reshape(x, (M, N), can_reorder=REORDER)
    s = tl.sum(y, axis=1)
    tl.store(out_ptr + tl.arange(0, M), s)


@pytest.mark.parametrize("reorder", [False, True])
def test_reshape_can_reorder(reorder):
    x = torch.randn(128)
    out = torch.empty(8)
    reshape_kernel[(1,)](x, out, M=8, N=16, REORDER=reorder)
    # can_reorder may permute elements; row sums of the plain reshape are one valid answer.
    if reorder:
        torch.testing.assert_close(out.sum(), x.sum(), rtol=1e-5, atol=1e-5)
    else:
        torch.testing.assert_close(out, x.reshape(8, 16).sum(1), rtol=1e-5, atol=1e-5)


@triton.jit
def flip_bcast_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    f = tl.flip(x, 0)
    b = tl.broadcast_to(f[None, :], (4, N))
    tl.store(out_ptr + tl.arange(0, 4)[:, None] * N + tl.arange(0, N)[None, :], b)


def test_flip_and_broadcast_to():
    x = torch.randn(32)
    out = torch.empty(4, 32)
    flip_bcast_kernel[(1,)](x, out, N=32)
    assert torch.equal(out, x.flip(0).expand(4, 32))


@triton.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r * N + c)
    i = tl.load(idx_ptr + r * N + c)
    tl.store(out_ptr + r * N + c, tl.gather(x, i, AXIS))


@pytest.mark.parametrize("axis", [0, 1])
def test_gather(axis):
    M, N = 8, 16
    x = torch.randn(M, N)
    idx = torch.randint(0, x.shape[axis], (M, N), dtype=torch.int32)
    out = torch.empty(M, N)
    gather_kernel[(1,)](x, idx, out, M=M, N=N, AXIS=axis)
    assert torch.equal(out, torch.gather(x, axis, idx.long()))


@triton.jit
def histogram_kernel(x_ptr, out_ptr, N: tl.constexpr, BINS: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS))


def test_histogram():
    x = torch.randint(0, 16, (256,), dtype=torch.int32)
    out = torch.empty(16, dtype=torch.int32)
    histogram_kernel[(1,)](x, out, N=256, BINS=16)
    assert torch.equal(out, torch.bincount(x, minlength=16).int())


@triton.jit
def sort_kernel(x_ptr, out_ptr, top_ptr, N: tl.constexpr, K: tl.constexpr, DESC: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, N), tl.sort(x, descending=DESC))
    tl.store(top_ptr + tl.arange(0, K), tl.topk(x, K))


@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32], ids=str)
def test_sort_and_topk(desc, dtype):
    x = torch.randn(64).mul(100).to(dtype)
    out, top = torch.empty(64, dtype=dtype), torch.empty(8, dtype=dtype)
    sort_kernel[(1,)](x, out, top, N=64, K=8, DESC=desc)
    assert torch.equal(out, x.sort(descending=desc).values)
    assert torch.equal(top, x.topk(8).values)
