"""Loads read again past stores of one element (convert_triton_to_tcpu/write_guards.py):
the consumers see what memory held at the load, whether or not a store in between wrote
inside the loaded row."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def norm_with_stats_kernel(x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    # The layer-norm shape of kernel libraries: parameters first, statistics stored for a
    # backward pass, then the output.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < N
    w = tl.load(w_ptr + cols, mask=ok, other=0.0)
    b = tl.load(b_ptr + cols, mask=ok, other=0.0)
    x = tl.load(x_ptr + row * N + cols, mask=ok, other=0.0)
    mean = tl.sum(x, 0) / N
    xc = tl.where(ok, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, 0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * N + cols, xc * rstd * w + b, mask=ok)


@pytest.mark.parametrize("N", [1000, 1024])
def test_norm_with_statistics_matches_torch(N):
    torch.manual_seed(0)
    M = 37
    x, w, b = torch.randn(M, N), torch.randn(N), torch.randn(N)
    mean, rstd, y = torch.empty(M), torch.empty(M), torch.empty(M, N)
    norm_with_stats_kernel[(M, )](x, w, b, mean, rstd, y, N, 1e-5, BLOCK=triton.next_power_of_2(N))
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (N, ), w, b, 1e-5), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mean, x.mean(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rstd, torch.rsqrt(x.var(1, unbiased=False) + 1e-5), rtol=1e-4, atol=1e-4)


@triton.jit
def store_then_use_kernel(w_ptr, stat_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    w = tl.load(w_ptr + offs)
    tl.store(stat_ptr, tl.sum(w, 0))
    tl.store(out_ptr + offs, w * 2)


# Where the statistic lands, in elements from the row's start: outside the row (separate
# tensor, just before, just after) or inside it (first, middle, last element).
@pytest.mark.parametrize("where", [None, -1, 64, 0, 3, 63])
def test_store_inside_the_loaded_row(where):
    N = 64
    torch.manual_seed(1)
    base = torch.randn(N + 8)
    w = base[1:N + 1]
    before = w.clone()
    stat = torch.empty(1) if where is None else base[1 + where:]
    out = torch.empty(N)
    store_then_use_kernel[(1, )](w, stat, out, N=N)
    assert torch.equal(out, before * 2)  # what memory held at the load
    torch.testing.assert_close(stat[0], before.sum(), rtol=1e-5, atol=1e-5)


@triton.jit
def store_in_loop_kernel(w_ptr, out_ptr, R, N: tl.constexpr):
    # The row is loaded once; each iteration reads it, then stores one element of it
    # (the store of an earlier iteration separates the load from a later read). A read in
    # a loop that does not hold the load keeps the copy taken at the load: not guarded.
    offs = tl.arange(0, N)
    w = tl.load(w_ptr + offs)
    for r in range(R):
        tl.store(out_ptr + r * N + offs, w + r)
        tl.store(w_ptr + r, -1.0 * r)


def test_store_inside_the_row_in_a_loop():
    N, R = 32, 5
    torch.manual_seed(2)
    w = torch.randn(N)
    before = w.clone()
    out = torch.empty(R, N)
    store_in_loop_kernel[(1, )](w, out, R, N=N)
    assert torch.equal(out, before[None, :] + torch.arange(R, dtype=torch.float32)[:, None])
    assert torch.equal(w[:R], -torch.arange(R, dtype=torch.float32))
    assert torch.equal(w[R:], before[R:])


@triton.jit
def conditional_store_kernel(w_ptr, stat_ptr, out_ptr, flag, N: tl.constexpr):
    offs = tl.arange(0, N)
    w = tl.load(w_ptr + offs)
    if flag > 0:
        tl.store(stat_ptr, 0.0)
    tl.store(out_ptr + offs, w + 1)


@pytest.mark.parametrize("flag", [0, 1])
def test_store_under_a_condition(flag):
    N = 32
    w = torch.randn(N)
    before = w.clone()
    out = torch.empty(N)
    conditional_store_kernel[(1, )](w, w[7:], out, flag, N=N)
    assert torch.equal(out, before + 1)
    assert w[7].item() == (0.0 if flag else before[7].item())


@triton.jit
def descriptor_store_kernel(w_ptr, out_ptr, N: tl.constexpr):
    # A store through a tensor descriptor writes a whole tile, inside the loaded row here.
    offs = tl.arange(0, N)
    w = tl.load(w_ptr + offs)
    d = tl.make_tensor_descriptor(w_ptr, shape=[N], strides=[1], block_shape=[8])
    d.store([8], tl.full((8, ), 5.0, tl.float32))
    tl.store(out_ptr + offs, w * 3)


def test_descriptor_store_inside_the_row():
    N = 32
    w = torch.randn(N)
    before = w.clone()
    out = torch.empty(N)
    descriptor_store_kernel[(1, )](w, out, N=N)
    assert torch.equal(out, before * 3)
    assert (w[8:16] == 5.0).all() and torch.equal(w[:8], before[:8]) and torch.equal(w[16:], before[16:])
