"""transpose-column-tiles: kernels whose tiles are contiguous down their first axis (the
column reductions Inductor writes for `x.amax(0)`, bias and layer-norm weight gradients)
run on transposed tiles with contiguous vector loads. Results are checked against torch;
the generated code is checked for having no gathers left."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _column_reduce(x_ptr, w_ptr, out_ptr, cum_ptr, n_rows, n_cols, stride, OP: tl.constexpr,
                   XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    # Inductor's shape: columns x on the tile's first axis, the reduced rows r on its last.
    x = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = x < n_cols
    w = tl.load(w_ptr + x, xmask, other=0.0)
    acc = tl.full([XBLOCK, RBLOCK], float("-inf") if OP == "max" else 0.0, tl.float32)
    for r0 in range(0, n_rows, RBLOCK):
        r = r0 + tl.arange(0, RBLOCK)[None, :]
        m = xmask & (r < n_rows)
        v = tl.load(x_ptr + x + stride * r, m, other=0.0) * w + r.to(tl.float32)
        if OP == "max":
            acc = tl.where(m, tl.maximum(acc, v), acc)
        else:
            acc = tl.where(m, acc + v, acc)
        if OP == "cumsum":
            # A scan along the reduced axis, stored column-contiguous like the loads.
            tl.store(cum_ptr + x + stride * r, tl.cumsum(v, axis=1), m)
    if OP == "max":
        res = tl.max(acc, axis=1)[:, None]
    else:
        res = tl.sum(acc, axis=1)[:, None]
    tl.store(out_ptr + x, res, xmask)


def _reference(x, w, op):
    v = x * w[None, :] + torch.arange(x.shape[0], dtype=torch.float32)[:, None]
    return v.amax(0) if op == "max" else v.sum(0), v


@pytest.mark.parametrize("op", ["max", "sum", "cumsum"])
@pytest.mark.parametrize("shape,blocks", [((2048, 1024), (64, 16)), ((1000, 300), (16, 64)), ((37, 5), (8, 8))])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_column_reductions(op, shape, blocks, vector_bits):
    rows, cols = shape
    x = torch.randn(rows, cols)
    w = torch.rand(cols) + 0.5
    out = torch.empty(cols)
    cum = torch.zeros(rows, cols)
    XB, RB = blocks
    k = _column_reduce[(triton.cdiv(cols, XB),)](x, w, out, cum, rows, cols, cols, OP=op, XBLOCK=XB, RBLOCK=RB,
                                                 vector_bits=vector_bits)
    ref, v = _reference(x, w, op)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-3)
    if op == "cumsum":
        # tl.cumsum restarts at each block of RB rows.
        blocks_ref = torch.cat([c.cumsum(0) for c in v.split(RB, 0)], 0)
        torch.testing.assert_close(cum, blocks_ref, rtol=1e-5, atol=1e-3)
    # Transposed: every load and store of the column tile is a vector access.
    assert "tcpu.gather" not in k.asm["ttcir"] and "tcpu.scatter" not in k.asm["ttcir"]


@triton.jit
def _transpose_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # Loads down the first axis, stores along the last: the access kinds disagree, so
    # the tile is left as it is (lanes on the store's axis).
    i = tl.arange(0, BLOCK)[:, None]
    j = tl.arange(0, BLOCK)[None, :]
    m = (i < n) & (j < n)
    tl.store(y_ptr + i * n + j, tl.load(x_ptr + i + j * n, m), m)


def test_mixed_access_left_alone():
    x = torch.randn(30, 30)
    y = torch.empty_like(x)
    k = _transpose_copy[(1,)](x, y, 30, BLOCK=32)
    torch.testing.assert_close(y, x.t())
    assert "tcpu.gather" in k.asm["ttcir"]
