"""Reshapes that merge dimensions, consumed by reductions, scans and stores.

Regression for a silent wrong result found in a real library's bitonic sort (FlagGems'
topk): a 1-D tensor reshaped to [R, 2, C], summed over the middle axis, broadcast back
and reshaped to 1-D, was read by the next reduction with more vector lanes than the
reshape's source rows held, so lanes ran into other rows' data. Every consumer is
checked here against torch and, for the sort, against Triton's interpreter."""
import pytest
import torch
import triton
import triton.language as tl

from conftest import interpret_batch


@triton.jit
def _pair_halves(x, i: tl.constexpr, LOG_N: tl.constexpr):
    """For each element, the first and second of the pair it belongs to at distance
    2**(LOG_N - i - 1), through a reshape to [2**i, 2, 2**(LOG_N - i - 1)] and sums."""
    shape: tl.constexpr = [2 ** i, 2, 2 ** (LOG_N - i - 1)]
    y = tl.reshape(x, shape)
    second = tl.arange(0, 2)[None, :, None]
    lo = tl.broadcast_to(tl.sum(y * (1 - second), 1)[:, None, :], shape)
    hi = tl.broadcast_to(tl.sum(y * second, 1)[:, None, :], shape)
    return tl.reshape(lo, x.shape), tl.reshape(hi, x.shape)


@triton.jit
def _bitonic_step(x, flip, i: tl.constexpr, LOG_N: tl.constexpr):
    lo, hi = _pair_halves(x, i, LOG_N)
    swap = (lo > hi) ^ flip
    bits = x.to(tl.int32, bitcast=True)
    delta = lo.to(tl.int32, bitcast=True) ^ hi.to(tl.int32, bitcast=True)
    return (bits ^ tl.where(swap, delta, 0)).to(tl.float32, bitcast=True)


@triton.jit
def _alternating(stage: tl.constexpr, LOG_N: tl.constexpr):
    """0 and 1 alternating in runs of 2**stage (merge directions of a bitonic stage)."""
    shape: tl.constexpr = [2 ** (LOG_N - 1 - stage), 2, 2 ** stage]
    return tl.reshape(tl.broadcast_to(tl.arange(0, 2)[None, :, None], shape), [2 ** LOG_N])


@triton.jit
def _bitonic_stage(x, stage: tl.constexpr, LOG_N: tl.constexpr):
    if stage < LOG_N:
        flip = _alternating(stage, LOG_N)
    else:
        flip = 0
    for k in tl.static_range(stage):
        x = _bitonic_step(x, flip, k + LOG_N - stage, LOG_N)
    return x


@triton.jit
def bitonic_sort_kernel(x_ptr, out_ptr, N: tl.constexpr, LOG_N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    for stage in tl.static_range(1, LOG_N + 1):
        x = _bitonic_stage(x, stage, LOG_N)
    tl.store(out_ptr + offs, x)


@pytest.mark.parametrize("log_n", [1, 2, 3, 4, 5, 6])
def test_bitonic_sort_through_reshapes(log_n):
    n = 2 ** log_n
    x = torch.randn(n, generator=torch.Generator().manual_seed(log_n))
    out = torch.empty(n)
    bitonic_sort_kernel[(1,)](x, out, N=n, LOG_N=log_n)
    assert torch.equal(out, x.sort().values)
    (ref,) = interpret_batch([(bitonic_sort_kernel, (1,), [x, torch.empty(n)], dict(N=n, LOG_N=log_n))])
    assert torch.equal(out, ref[1])


@triton.jit
def flatten_consumers_kernel(x_ptr, v_ptr, sum_ptr, cum_ptr, max_ptr, R: tl.constexpr, C: tl.constexpr):
    """A [R, C] tile (plus a column broadcast along the rows) flattened to R*C, then
    reduced, scanned and reduced again along a non-last axis of a second reshape."""
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    v = tl.load(v_ptr + tl.arange(0, R))
    flat = tl.reshape(x * 2.0 + v[:, None], [R * C])
    tl.store(sum_ptr, tl.sum(flat, 0))
    tl.store(cum_ptr + tl.arange(0, R * C), tl.cumsum(flat, 0))
    cols = tl.reshape(flat, [C, R])  # a different factorisation of the same elements
    tl.store(max_ptr + tl.arange(0, R), tl.max(cols, 0))


@pytest.mark.parametrize("R,C", [(8, 2), (4, 1), (16, 4), (2, 32)])
def test_reduce_and_scan_of_flattened_tile(R, C):
    x = torch.randint(-8, 8, (R, C)).float()
    v = torch.randint(-8, 8, (R,)).float()
    s, cum, mx = torch.empty(1), torch.empty(R * C), torch.empty(R)
    flatten_consumers_kernel[(1,)](x, v, s, cum, mx, R=R, C=C)
    flat = (x * 2 + v[:, None]).reshape(-1)
    assert s.item() == flat.sum().item()
    assert torch.equal(cum, flat.cumsum(0))
    assert torch.equal(mx, flat.reshape(C, R).amax(0))


@triton.jit
def cat_whole_kernel(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    """tl.cat of two short vectors: the consumer's lanes cover both halves."""
    offs = tl.arange(0, N)
    c = tl.cat(tl.load(a_ptr + offs), tl.load(b_ptr + offs), can_reorder=True)
    tl.store(out_ptr + tl.arange(0, 2 * N), c)


def test_cat_lanes_cover_both_halves():
    a, b = torch.randn(4), torch.randn(4)
    out = torch.empty(8)
    cat_whole_kernel[(1,)](a, b, out, N=4)
    assert torch.equal(out, torch.cat([a, b]))
