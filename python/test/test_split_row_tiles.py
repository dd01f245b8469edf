"""split-row-tiles end to end: Inductor-style persistent reductions on [XBLOCK, R] tiles
(softmax, layer norm with weights and row statistics, in place through one pointer, a
row-wise cumsum) give torch's results for XBLOCK 1 to 16, with rows and columns masked
off at the edges, at both vector widths; each kernel's TTIR is checked to be one the
pass splits (tiles too small to pay are checked not to be). Several reductions of a row
at once (argmax, integer sums, a scan, fp16 input, masked rows) match Triton's
interpreter bit for bit, and random Inductor-shaped row kernels (chains of elementwise ops
and row reductions, generated per seed) match it within float tolerance. Kernels it must leave alone, one per rule (a reduction across rows, an
argument stored and loaded through two pointer tensors, an in-place update whose rows
overlap) are checked not to be split, and to give the reference's results."""
import re

import pytest
import torch
import triton
import triton.language as tl

from triton_cpu.transforms.split_row_tiles import MIN_TILE


def _splits(compiled) -> bool:
    """Whether the compiled kernel's TritonCPU IR has the pass's loop over rows: the only
    scf.for over i32 in these kernels, which have no loop of their own."""
    return re.search(r"scf\.for .* : i32 \{", str(compiled.asm["ttcir"])) is not None


@triton.jit
def softmax_rows(out_ptr, in_ptr, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rindex = tl.arange(0, RBLOCK)[None, :]
    rmask = rindex < rnumel
    mask = xmask & rmask
    x = tl.load(in_ptr + (rindex + rnumel * xindex), mask, other=float("-inf"))
    m = tl.max(x, 1)[:, None]
    e = tl.exp(x - m)
    s = tl.sum(tl.where(mask, e, 0.0), 1)[:, None]
    tl.store(out_ptr + (rindex + rnumel * xindex), e / s, mask)


@pytest.mark.parametrize("xblock", [1, 2, 8, 16])
@pytest.mark.parametrize("rows,cols,rblock", [(64, 1024, 1024), (37, 1000, 1024), (20, 256, 256)])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_softmax(xblock, rows, cols, rblock, vector_bits):
    x = torch.randn(rows, cols) * 3
    y = torch.full_like(x, 7.0)
    k = softmax_rows[(triton.cdiv(rows, xblock),)](y, x, rows, cols, XBLOCK=xblock, RBLOCK=rblock,
                                                   vector_bits=vector_bits)
    torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
    assert _splits(k) == (xblock > 1 and xblock * rblock >= MIN_TILE)


@triton.jit
def layer_norm_rows(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, xnumel, rnumel, eps,
                    XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rindex = tl.arange(0, RBLOCK)[None, :]
    rmask = rindex < rnumel
    mask = xmask & rmask
    x = tl.load(x_ptr + (rindex + rnumel * xindex), mask, other=0.0)
    w = tl.load(w_ptr + rindex, rmask, other=0.0)  # one row for every row: stays outside the loop
    b = tl.load(b_ptr + rindex, rmask, other=0.0)
    mean = tl.sum(x, 1)[:, None] / rnumel
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, 1)[:, None] / rnumel + eps)
    tl.store(y_ptr + (rindex + rnumel * xindex), d * rstd * w + b, mask)
    tl.store(mean_ptr + xindex, mean, xmask)
    tl.store(rstd_ptr + xindex, rstd, xmask)


@pytest.mark.parametrize("xblock", [4, 8])
@pytest.mark.parametrize("rows,cols,rblock", [(64, 768, 1024), (13, 512, 512)])
def test_layer_norm(xblock, rows, cols, rblock):
    x, w, b = torch.randn(rows, cols), torch.rand(cols), torch.randn(cols)
    y, mean, rstd = torch.empty_like(x), torch.empty(rows), torch.empty(rows)
    k = layer_norm_rows[(triton.cdiv(rows, xblock),)](x, w, b, y, mean, rstd, rows, cols, 1e-5,
                                                      XBLOCK=xblock, RBLOCK=rblock)
    assert _splits(k)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mean, x.mean(-1))
    torch.testing.assert_close(rstd, 1 / torch.sqrt(x.var(-1, unbiased=False) + 1e-5), rtol=1e-4, atol=1e-4)


@triton.jit
def scale_rows_in_place(io_ptr, xnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, STRIDE: tl.constexpr):
    # Inductor's in_out_ptr0: the row is read and written through one pointer tensor.
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    rindex = tl.arange(0, RBLOCK)[None, :]
    ptrs = io_ptr + (rindex + STRIDE * xindex)
    x = tl.load(ptrs)
    tl.store(ptrs, x / tl.sum(tl.abs(x), 1)[:, None])


def test_in_place():
    x = torch.randn(64, 512)
    ref = x / x.abs().sum(-1, keepdim=True)
    k = scale_rows_in_place[(8,)](x, 64, XBLOCK=8, RBLOCK=512, STRIDE=512)
    assert _splits(k)
    torch.testing.assert_close(x, ref)


def _overlapping_rows():
    # Row i covers elements 256 i .. 256 i + 511: a row's store overwrites half of what the
    # next row loads. All rows are loaded before any is stored, as in the kernel as written (the
    # reduction orders them on a GPU too); where rows overlap, the last row's store wins
    # (the tile is stored in row order here, and by the interpreter's numpy assignment).
    flat = torch.randn(7 * 256 + 512)
    rows = flat.unfold(0, 512, 256)
    sums = rows.abs().sum(-1, keepdim=True)
    expected = flat.clone()
    for i in range(8):
        expected[256 * i:256 * i + 512] = rows[i] / sums[i]
    k = scale_rows_in_place[(1,)](flat, 8, XBLOCK=8, RBLOCK=512, STRIDE=256)
    return k, flat, expected


def test_in_place_overlapping_rows_not_split():
    k, flat, expected = _overlapping_rows()
    assert not _splits(k)
    torch.testing.assert_close(flat, expected)


@triton.jit
def cumsum_rows(x_ptr, y_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    rindex = tl.arange(0, RBLOCK)[None, :]
    x = tl.load(x_ptr + (rindex + RBLOCK * xindex))
    tl.store(y_ptr + (rindex + RBLOCK * xindex), tl.cumsum(x, 1))


def test_scan():
    x = torch.randn(32, 256)
    y = torch.empty_like(x)
    k = cumsum_rows[(4,)](x, y, XBLOCK=8, RBLOCK=256)
    assert _splits(k)
    torch.testing.assert_close(y, torch.cumsum(x, -1), rtol=1e-4, atol=1e-4)


@triton.jit
def row_shares(x_ptr, shares_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.arange(0, XBLOCK)[:, None]
    rindex = tl.arange(0, RBLOCK)[None, :]
    x = tl.load(x_ptr + (rindex + RBLOCK * xindex))
    row = tl.sum(tl.abs(x), 1)
    share = row / tl.sum(row, 0)  # across rows: the kernel is left alone
    tl.store(shares_ptr + xindex, share[:, None])


def test_reduction_across_rows_not_split():
    x = torch.randn(8, 256)
    shares = torch.empty(8)
    k = row_shares[(1,)](x, shares, XBLOCK=8, RBLOCK=256)
    assert not _splits(k)
    rows = x.abs().sum(-1)
    torch.testing.assert_close(shares, rows / rows.sum(), rtol=1e-5, atol=1e-6)


@triton.jit
def store_then_load(x_ptr, y_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xindex = tl.arange(0, XBLOCK)[:, None]
    rindex = tl.arange(0, RBLOCK)[None, :]
    x = tl.load(x_ptr + (rindex + RBLOCK * xindex))
    tl.store(y_ptr + (rindex + RBLOCK * xindex), x * 2.0)
    # Reads row i + 1 of y, written above by the whole tile's store: a row loop would read
    # it before the next iteration wrote it. (y is stored and loaded through two different
    # pointer tensors: the kernel is left alone.)
    shifted = tl.load(y_ptr + (rindex + RBLOCK * ((xindex + 1) % XBLOCK)))
    tl.store(x_ptr + (rindex + RBLOCK * xindex), tl.sum(shifted, 1)[:, None] + x * 0.0)


def test_two_pointers_to_a_stored_argument_not_split():
    x = torch.randn(8, 256)
    y = torch.empty_like(x)
    expected = (x * 2).roll(-1, 0).sum(-1, keepdim=True).expand(8, 256)
    k = store_then_load[(1,)](x, y, XBLOCK=8, RBLOCK=256)
    assert not _splits(k)
    torch.testing.assert_close(x, expected, rtol=1e-5, atol=1e-4)


@triton.jit
def row_stats(x_ptr, i_ptr, max_ptr, arg_ptr, isum_ptr, cum_ptr, xnumel, XBLOCK: tl.constexpr, R: tl.constexpr):
    # Several reductions per row, one with two operands (argmax), integer ones, a scan,
    # fp16 input and rows masked off past xnumel: exact results, compared bit for bit.
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r = tl.arange(0, R)[None, :]
    x = tl.load(x_ptr + (r + R * xindex), xmask, other=0.0).to(tl.float32)
    iv = tl.load(i_ptr + (r + R * xindex), xmask, other=0)
    tl.store(max_ptr + xindex, tl.max(x, 1)[:, None], xmask)
    tl.store(arg_ptr + xindex, tl.argmax(x, 1)[:, None], xmask)
    tl.store(isum_ptr + xindex, tl.sum(iv * 3 - 1, 1)[:, None], xmask)
    tl.store(cum_ptr + (r + R * xindex), tl.cumsum(iv, 1), xmask)


@pytest.mark.parametrize("xblock,rows", [(8, 37), (16, 64)])
def test_row_stats_match_interpreter(xblock, rows):
    from conftest import interpret_batch
    R = 256
    x = torch.randn(rows, R).to(torch.float16)
    iv = torch.randint(-1000, 1000, (rows, R), dtype=torch.int32)

    def outputs():
        return [torch.full((rows,), -7.0), torch.full((rows,), -7, dtype=torch.int32),
                torch.full((rows,), -7, dtype=torch.int32), torch.full((rows, R), -7, dtype=torch.int32)]
    ours = outputs()
    grid = (triton.cdiv(rows, xblock),)
    k = row_stats[grid](x, iv, *ours, rows, XBLOCK=xblock, R=R)
    assert _splits(k)
    (after,) = interpret_batch([(row_stats, grid, [x, iv, *outputs(), rows], dict(XBLOCK=xblock, R=R))])
    for mine, theirs in zip(ours, after[2:6]):
        assert torch.equal(mine, theirs)
    assert torch.equal(ours[0], x.float().amax(-1))
    assert torch.equal(ours[3], torch.cumsum(iv, -1, dtype=torch.int32))


def _random_row_kernel(rng) -> str:
    """The source of a random Inductor-shaped row kernel: masked [XBLOCK, RBLOCK] loads, a
    row of weights, a chain of elementwise ops and row reductions (sum, max, min) whose
    results broadcast back over their rows, one [XBLOCK, RBLOCK] and one per-row output.
    Every reduction reads a tile that depends on x (so that it reduces rows); values stay
    finite: exp only of v - rowmax(v), divisions only by 1 + |v|."""
    tiles, rowdep, stats = ["x", "w"], ["x"], []
    lines = []
    for i in range(rng.randint(3, 8)):
        a = rng.choice(rowdep)
        kind = rng.choice(["binary", "binary", "unary", "reduce", "reduce", "where"])
        name = "t%d" % i
        if kind == "binary":
            b = rng.choice(tiles + stats + ["0.5"])
            op = rng.choice(["+", "-", "*", "max", "min", "div"])
            if op == "max":
                expr = "tl.maximum(%s, %s)" % (a, b)
            elif op == "min":
                expr = "tl.minimum(%s, %s)" % (a, b)
            elif op == "div":
                expr = "%s / (1.0 + tl.abs(%s))" % (a, b)
            else:
                expr = "%s %s %s" % (a, op, b)
        elif kind == "unary":
            expr = rng.choice(["tl.abs(%s)", "-%s", "tl.exp(%s - tl.max(%s, 1)[:, None])", "%s * 0.25"])
            expr = expr.replace("%s", a)
        elif kind == "where":
            expr = "tl.where(mask, %s, %s)" % (a, rng.choice(["0.0", "1.0", rng.choice(tiles)]))
        else:
            red = rng.choice(["tl.sum", "tl.max", "tl.min"])
            src = "tl.where(mask, %s, 0.0)" % a if red == "tl.sum" else a
            lines.append("    s%d = %s(%s, 1)[:, None]" % (i, red, src))
            stats.append("s%d" % i)
            expr = "%s - s%d" % (a, i) if rng.random() < 0.5 else "%s * 0.0 + s%d" % (a, i)
        lines.append("    %s = %s" % (name, expr))
        tiles.append(name)
        rowdep.append(name)
    stat = stats[-1] if stats else "tl.sum(tl.where(mask, %s, 0.0), 1)[:, None]" % tiles[-1]
    return "\n".join([
        "import triton",
        "import triton.language as tl",
        "",
        "",
        "@triton.jit",
        "def row_kernel(x_ptr, w_ptr, out_ptr, stat_ptr, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):",
        "    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]",
        "    xmask = xindex < xnumel",
        "    r = tl.arange(0, RBLOCK)[None, :]",
        "    rmask = r < rnumel",
        "    mask = xmask & rmask",
        "    x = tl.load(x_ptr + (r + RBLOCK * xindex), mask, other=0.0)",
        "    w = tl.load(w_ptr + r, rmask, other=1.0)",
        *lines,
        "    tl.store(out_ptr + (r + RBLOCK * xindex), %s, mask)" % tiles[-1],
        "    tl.store(stat_ptr + xindex, %s, xmask)" % stat,
        "",
    ])


@pytest.mark.parametrize("seed", range(12))
def test_random_row_kernels_match_interpreter(seed, tmp_path):
    import importlib.util
    import random

    from conftest import interpret_batch
    rng = random.Random(seed)
    path = tmp_path / ("row_kernel_%d.py" % seed)
    path.write_text(_random_row_kernel(rng))
    spec = importlib.util.spec_from_file_location("row_kernel_%d" % seed, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    xblock, rblock = rng.choice([(2, 1024), (4, 512), (8, 256), (8, 1024), (16, 256)])
    rows, cols = rng.randint(1, 3 * xblock), rng.choice([rblock, rblock - rng.randint(1, 100)])
    x, w = torch.randn(rows, rblock), torch.randn(rblock)

    def outputs():
        return [torch.full((rows, rblock), -7.0), torch.full((rows,), -7.0)]
    ours = outputs()
    grid = (triton.cdiv(rows, xblock),)
    k = mod.row_kernel[grid](x, w, *ours, rows, cols, XBLOCK=xblock, RBLOCK=rblock)
    assert _splits(k)
    (after,) = interpret_batch([(mod.row_kernel, grid, [x, w, *outputs(), rows, cols],
                                 dict(XBLOCK=xblock, RBLOCK=rblock))])
    for mine, theirs in zip(ours, after[2:4]):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-4)
