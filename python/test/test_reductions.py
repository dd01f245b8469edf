"""Reductions: every reduction op, along every axis of 1-D to 3-D tensors and over all
axes, against torch, and against Triton's interpreter on the same kernels."""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from conftest import interpreted


@triton.jit
def _combine_max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@triton.jit
def reduce_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, RANK: tl.constexpr,
                  OP: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr, SCALAR: tl.constexpr):
    a = tl.arange(0, A)
    if RANK == 1:
        x = tl.load(x_ptr + a)
    elif RANK == 2:
        b = tl.arange(0, B)
        x = tl.load(x_ptr + a[:, None] * B + b[None, :])
    else:
        b = tl.arange(0, B)
        c = tl.arange(0, C)
        x = tl.load(x_ptr + a[:, None, None] * B * C + b[None, :, None] * C + c[None, None, :])
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmin":
        r = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "xor_sum":
        r = tl.xor_sum(x, axis=AXIS, keep_dims=KEEP)
    else:
        r = tl.reduce(x, AXIS, _combine_max_abs, keep_dims=KEEP)
    if SCALAR:
        tl.store(out_ptr, r)
    else:
        # Store the result flattened, whatever its rank.
        n: tl.constexpr = r.numel
        tl.store(out_ptr + tl.arange(0, n), tl.reshape(r, (n,)))


SHAPES = {1: (64, 1, 1), 2: (8, 32, 1), 3: (4, 8, 16)}


def _torch_ref(x, op, axis):
    dims = tuple(range(x.dim())) if axis is None else axis
    if op == "sum":
        return x.sum(dim=dims) if x.dtype.is_floating_point else x.sum(dim=dims).to(x.dtype)
    if op in ("max", "min"):
        return x.amax(dim=dims) if op == "max" else x.amin(dim=dims)
    if op == "reduce":
        return x.abs().amax(dim=dims)
    raise AssertionError(op)


def _scalar(rank, axis, keep):
    return (rank == 1 or axis is None) and not keep


def _run(x, op, axis, keep, rank, out_dtype, kernel=reduce_kernel):
    A, B, C = SHAPES[rank]
    n = 1 if axis is None else x.numel() // x.shape[axis]
    out = torch.empty(n, dtype=out_dtype)
    kernel[(1,)](x, out, A=A, B=B, C=C, RANK=rank, OP=op, AXIS=axis, KEEP=keep, SCALAR=_scalar(rank, axis, keep))
    return out


@pytest.mark.parametrize("rank, axis", [(1, 0), (1, None), (2, 0), (2, 1), (2, None), (3, 0), (3, 1), (3, 2),
                                        (3, None)])
@pytest.mark.parametrize("op", ["sum", "max", "min", "reduce"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16], ids=str)
def test_reduce(op, rank, axis, dtype):
    shape = SHAPES[rank][:rank]
    g = torch.Generator().manual_seed(rank * 10 + (axis or 0))
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g).to(dtype)
    else:
        x = torch.randint(-1000, 1000, shape, generator=g, dtype=dtype)
    out = _run(x, op, axis, False, rank, dtype)
    ref = _torch_ref(x.float() if dtype == torch.float16 and op == "sum" else x, op, axis).reshape(-1)
    if dtype.is_floating_point and op == "sum":
        torch.testing.assert_close(out.float(), ref.float(), rtol=2e-3 if dtype == torch.float16 else 1e-5,
                                   atol=2e-2 if dtype == torch.float16 else 1e-5)
    else:
        assert torch.equal(out, ref.to(dtype))


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("rank, axis", [(1, 0), (2, 0), (2, 1), (3, 1), (3, 2)])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argminmax_lowest_index_on_ties(op, rank, axis, keep):
    shape = SHAPES[rank][:rank]
    g = torch.Generator().manual_seed(7)
    x = torch.randint(0, 4, shape, generator=g).float()  # many ties
    out = _run(x, op, axis, keep, rank, torch.int32)
    # torch.argmax documents the first occurrence on ties, as Triton does.
    ref = (x.argmax(dim=axis) if op == "argmax" else x.argmin(dim=axis)).reshape(-1).to(torch.int32)
    assert torch.equal(out, ref)


def _int_ref(x, op, axis):
    a = x.numpy()
    kw = {} if axis is None else {"axis": axis}
    if op == "sum":  # wraps in the input type, like Triton's
        r = a.sum(dtype=a.dtype, **kw)
    elif op == "xor_sum":
        r = np.bitwise_xor.reduce(a, axis=axis)
    elif op == "max":
        r = a.max(**kw)
    else:
        r = a.min(**kw)
    return torch.from_numpy(np.asarray(r).reshape(-1))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("op", ["sum", "xor_sum", "max", "min"])
def test_integer_reductions(op, dtype):
    """Integer reductions are bit-exact; sums wrap in the input type."""
    info = torch.iinfo(dtype)
    x = torch.randint(info.min, info.max, (8, 32), dtype=dtype)
    for axis in (0, 1, None):
        n = 1 if axis is None else x.numel() // x.shape[axis]
        out = torch.empty(n, dtype=dtype)
        reduce_kernel[(1,)](x, out, A=8, B=32, C=1, RANK=2, OP=op, AXIS=axis, KEEP=False,
                            SCALAR=_scalar(2, axis, False))
        assert torch.equal(out, _int_ref(x, op, axis)), f"{op} axis={axis}"


@pytest.mark.parametrize("op, axis", [("sum", 1), ("xor_sum", 0), ("argmax", 1)])
def test_reductions_match_interpreter(op, axis):
    x = torch.randint(-128, 127, (8, 32), dtype=torch.int8)
    out_dtype = torch.int32 if op == "argmax" else torch.int8
    out, ref = torch.empty(x.numel() // x.shape[axis], dtype=out_dtype), torch.empty(x.numel() // x.shape[axis],
                                                                                      dtype=out_dtype)
    args = dict(A=8, B=32, C=1, RANK=2, OP=op, AXIS=axis, KEEP=False, SCALAR=False)
    reduce_kernel[(1,)](x, out, **args)
    interpreted(reduce_kernel, subprocess=True)[(1,)](x, ref, **args)
    assert torch.equal(out, ref)


@triton.jit
def _minmax_combine(a_min, a_max, b_min, b_max):
    return tl.minimum(a_min, b_min), tl.maximum(a_max, b_max)


@triton.jit
def two_operand_kernel(x_ptr, min_ptr, max_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r * N + c)
    lo, hi = tl.reduce((x, x), 1, _minmax_combine)
    tl.store(min_ptr + tl.arange(0, M), lo)
    tl.store(max_ptr + tl.arange(0, M), hi)


def test_reduce_with_several_operands():
    x = torch.randn(16, 64)
    lo, hi = torch.empty(16), torch.empty(16)
    two_operand_kernel[(1,)](x, lo, hi, M=16, N=64)
    assert torch.equal(lo, x.amin(1)) and torch.equal(hi, x.amax(1))


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, num / den, mask=mask)


@pytest.mark.parametrize("M, N", [(7, 100), (64, 1024), (3, 1)])
def test_row_softmax(M, N, interp):
    x = torch.randn(M, N)
    out = torch.empty_like(x)
    block = triton.next_power_of_2(N)
    softmax_kernel[(M,)](out, x, x.stride(0), out.stride(0), N, BLOCK=block)
    torch.testing.assert_close(out, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)
    if N == 100:
        ref = torch.empty_like(x)
        interp(softmax_kernel, subprocess=True)[(M,)](ref, x, x.stride(0), ref.stride(0), N, BLOCK=block)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)


@triton.jit
def large_reduce_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    # 256 x 256 fp32 = 256 KiB of intermediate: the column sums go to the scratch arena.
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r * N + c)
    s = tl.sum(x * 2.0, axis=0)
    tl.store(out_ptr + tl.arange(0, N), s)


def test_large_block_reduction():
    x = torch.randn(256, 256)
    out = torch.empty(256)
    large_reduce_kernel[(1,)](x, out, M=256, N=256)
    torch.testing.assert_close(out, (x * 2.0).sum(0), rtol=1e-5, atol=1e-4)


@triton.jit
def bool_xor_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :]).to(tl.int1)
    tl.store(z_ptr + rm, tl.xor_sum(x, axis=1))


def test_bool_reduction_per_row():
    """Boolean intermediates live in byte-per-element buffers (a packed i1 vector would not
    agree with scalar accesses)."""
    x = torch.randint(0, 2, (8, 32)).bool()
    z = torch.zeros(8, dtype=torch.bool)
    bool_xor_kernel[(1,)](x, z, M=8, N=32)
    assert torch.equal(z, torch.from_numpy(np.bitwise_xor.reduce(x.numpy(), axis=1)))


@triton.jit
def exp_reduced_kernel(x_ptr, out_ptr, idx_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                       OVERWRITE: tl.constexpr):
    """`e` (math with several consumers: computed once into a buffer) is read by two
    reductions, one with two operands, then by the output; with OVERWRITE a store of x
    comes in between, so e must still be what x held at its definition."""
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    e = tl.exp(x)
    if OVERWRITE:
        tl.store(x_ptr + offs, x * 0.0)
    s = tl.sum(e, axis=AXIS, keep_dims=True)
    i = tl.argmax(e, axis=AXIS, keep_dims=True)  # two operands (value, index)
    tl.store(out_ptr + offs, e / s)
    tl.store(idx_ptr + tl.arange(0, M if AXIS == 1 else N), tl.reshape(i, [M if AXIS == 1 else N]))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("M, N", [(4, 64), (16, 128), (2, 256)])
def test_materialized_value_read_by_reductions(M, N, axis, overwrite):
    x = torch.randn(M, N)
    ref_x = x.clone()
    out = torch.empty(M, N)
    idx = torch.empty(M if axis == 1 else N, dtype=torch.int32)
    exp_reduced_kernel[(1,)](x, out, idx, M=M, N=N, AXIS=axis, OVERWRITE=overwrite)
    e = torch.exp(ref_x)
    torch.testing.assert_close(out, e / e.sum(axis, keepdim=True), rtol=1e-6, atol=1e-7)
    assert torch.equal(idx.long(), e.argmax(axis))
    if overwrite:
        assert torch.equal(x, torch.zeros_like(x))


@triton.jit
def normalize_shifted_kernel(p_ptr, SHIFT: tl.constexpr, ROWS: tl.constexpr, N: tl.constexpr, STRIDE: tl.constexpr):
    """In place, through one argument: the tile is normalized by its sum and written back
    SHIFT elements further (rows STRIDE apart: with STRIDE < N they overlap). The sum
    needs the whole tile, so every element is read before any is written, as on a GPU
    (the reduction's barrier), even where a chunk's store lands on a later chunk's input."""
    offs = tl.arange(0, ROWS)[:, None] * STRIDE + tl.arange(0, N)[None, :]
    x = tl.load(p_ptr + offs)
    tl.store(p_ptr + offs + SHIFT, x / tl.sum(tl.abs(x), axis=1, keep_dims=True))


@pytest.mark.parametrize("shift,rows,n,stride", [(1, 1, 256, 256), (16, 1, 256, 256), (0, 4, 256, 128),
                                                 (3, 4, 128, 96), (0, 4, 256, 256)])
def test_store_overwrites_a_reduced_load(shift, rows, n, stride):
    size = (rows - 1) * stride + n + shift
    p = torch.randn(size)
    x = torch.stack([p[r * stride:r * stride + n] for r in range(rows)])
    expected = p.clone()
    for r in range(rows):  # rows stored in order: where they overlap, the later row wins
        start = r * stride + shift
        expected[start:start + n] = x[r] / x[r].abs().sum()
    normalize_shifted_kernel[(1,)](p, SHIFT=shift, ROWS=rows, N=n, STRIDE=stride)
    torch.testing.assert_close(p, expected)


@triton.jit
def looped_row_max_sum(x_ptr, max_ptr, sum_ptr, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    # Inductor's looped reduction: accumulators updated under the mask in every block.
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    _max = tl.full([XBLOCK, RBLOCK], float("-inf"), tl.float32)
    _sum = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        x = tl.load(x_ptr + (rindex + rnumel * xindex), rmask & xmask, other=0.0)
        _max = tl.where(rmask & xmask, tl.maximum(_max, x), _max)
        _sum = tl.where(rmask & xmask, _sum + x, _sum)
    tl.store(max_ptr + xindex, tl.max(_max, 1)[:, None], xmask)
    tl.store(sum_ptr + xindex, tl.sum(_sum, 1)[:, None], xmask)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("rows, cols, xblock, rblock", [(7, 1000, 1, 256), (16, 3000, 4, 512), (5, 64, 2, 128)])
def test_masked_accumulator_update(rows, cols, xblock, rblock, vector_bits):
    """`acc = tl.where(mask, f(acc, x), acc)` keeps masked-off lanes (the last block's tail,
    rows past the end). Without AVX-512 the stored select is frozen so that LLVM does not
    make it a vmaskmovps (codegen `_no_masked_store`)."""
    from triton_cpu import llvm
    x = torch.randn(rows, cols)
    mx, sm = torch.full((rows,), 7.0), torch.full((rows,), 7.0)
    k = looped_row_max_sum[(triton.cdiv(rows, xblock),)](x, mx, sm, rows, cols, XBLOCK=xblock, RBLOCK=rblock,
                                                           vector_bits=vector_bits)
    torch.testing.assert_close(mx, x.amax(1))
    torch.testing.assert_close(sm, x.sum(1), rtol=1e-5, atol=1e-4)
    if not llvm.host().has("avx512f"):
        assert "freeze <" in k.asm["llir"]


@triton.jit
def nan_extremum_kernel(x_ptr, out_ptr, N: tl.constexpr, BLOCK: tl.constexpr, ROWS: tl.constexpr,
                        OP: tl.constexpr):
    """tl.max / tl.min of rows of N elements (BLOCK lanes, the rest masked to NaN, which
    they ignore): ROWS == 1 one row per program (a scalar result), else ROWS rows of one
    2-D tile reduced along its last axis."""
    offs = tl.arange(0, BLOCK)
    if ROWS == 1:
        row = tl.program_id(0)
        x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=float("nan"))
        r = tl.max(x, 0) if OP == "max" else tl.min(x, 0)
        tl.store(out_ptr + row, r)
    else:
        rows = tl.arange(0, ROWS)
        x = tl.load(x_ptr + rows[:, None] * N + offs[None, :], mask=offs[None, :] < N, other=float("nan"))
        r = tl.max(x, 1) if OP == "max" else tl.min(x, 1)
        tl.store(out_ptr + rows, r)


def _nan_rows(n, dtype):
    """Rows whose max/min a reduction that ignores NaN must get right: NaN anywhere, only
    NaN, only -inf or +inf, one value among NaNs at either end."""
    nan, inf = float("nan"), float("inf")
    rows = [torch.randn(n), torch.full((n,), nan), torch.full((n,), -inf), torch.full((n,), inf)]
    for pos, v in [(0, -inf), (n - 1, inf), (n // 2, 3.5), (n - 1, -2.0), (0, 7.0)]:
        r = torch.full((n,), nan)
        r[pos] = v
        rows.append(r)
    r = torch.randn(n)
    r[::3] = nan
    rows.append(r)
    r = torch.full((n,), -inf)
    r[1::2] = nan
    rows.append(r)
    return torch.stack(rows).to(dtype)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("n, block", [(256, 256), (100, 128), (1000, 1024), (8, 8)])
@pytest.mark.parametrize("rows", [1, 16])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_max_min_ignore_nan(op, n, block, rows, dtype, vector_bits):
    """Against numpy's fmax/fmin (NaN ignored unless every element is NaN), bit for bit."""
    x = _nan_rows(n, dtype)
    if rows > 1:
        x = torch.cat([x, x[:rows - len(x)]])  # one tile of `rows` rows
    out = torch.empty(len(x), dtype=dtype)
    nan_extremum_kernel[(len(x) if rows == 1 else 1,)](x, out, N=n, BLOCK=block, ROWS=rows, OP=op,
                                                      vector_bits=vector_bits)
    ref = (np.fmax if op == "max" else np.fmin).reduce(x.float().numpy(), axis=1)
    assert np.array_equal(out.float().numpy(), ref, equal_nan=True), (out, ref)


@triton.jit
def deferred_values_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    """`e` and `d` (math and a division, each read by several consumers: computed into
    buffers) first feed a sum of a product of both, which computes them and fills their
    buffers in its loop (reductions.deferring_reduce); a max and the store read the
    buffers after it."""
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    e = tl.exp(x)
    d = 1.0 / (1.0 + e)
    s = tl.sum(d * e * 0.5, axis=AXIS, keep_dims=True)
    m = tl.max(d, axis=AXIS, keep_dims=True)
    tl.store(out_ptr + offs, d * e / s + m)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("M, N", [(1, 256), (8, 64), (4, 1024)])
def test_values_deferred_to_a_reduction(M, N, axis):
    x = torch.randn(M, N)
    out = torch.empty(M, N)
    deferred_values_kernel[(1,)](x, out, M=M, N=N, AXIS=axis)
    e = torch.exp(x)
    d = 1.0 / (1.0 + e)
    ref = d * e / (d * e * 0.5).sum(axis, keepdim=True) + d.amax(axis, keepdim=True)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
