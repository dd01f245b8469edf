"""version-single-iteration-loops and forward-stored-tiles end to end: Inductor's looped
softmax (its kernel under dynamic shapes: the exps stored to the output, read back and
divided in a third loop) against torch for rows of one block, of a partial block and of
several blocks, rows apart by strides at, above and below the block; and stored tiles
read back through rows that overlap against Triton's interpreter, where forwarding each
lane its own value would be wrong."""
import os
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

from triton_cpu.pipeline import ttcir_passes


@triton.jit
def looped_softmax(in_out_ptr0, in_ptr0, ks0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr,
                   WIDE: tl.constexpr = False):
    # The shape of Inductor's triton_red_fused__softmax_0 under dynamic=True, which takes
    # ks0 as i64 (WIDE: its offsets are then i64, from sign-extended i32 indices).
    if WIDE:
        ks0 = ks0.to(tl.int64)
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        tmp0 = tl.load(in_ptr0 + (r0_index + ks0 * xindex), r0_mask & xmask, other=0.0)
        _tmp2 = tl.where(r0_mask & xmask, tl.maximum(_tmp2, tmp0), _tmp2)
    tmp2 = tl.max(_tmp2, 1)[:, None]
    _tmp8 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        tmp4 = tl.load(in_ptr0 + (r0_index + ks0 * xindex), r0_mask & xmask, other=0.0)
        tmp6 = tl.exp(tmp4 - tmp2)
        _tmp8 = tl.where(r0_mask & xmask, _tmp8 + tmp6, _tmp8)
        tl.store(in_out_ptr0 + (r0_index + ks0 * xindex), tmp6, r0_mask & xmask)
    tmp8 = tl.sum(_tmp8, 1)[:, None]
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        tmp10 = tl.load(in_out_ptr0 + (r0_index + ks0 * xindex), r0_mask & xmask, other=0.0)
        tl.store(in_out_ptr0 + (r0_index + ks0 * xindex), tmp10 / tmp8, r0_mask & xmask)


# (rows, row length, row stride, XBLOCK, R0_BLOCK)
SHAPES = [
    (64, 1024, 1024, 2, 1024),   # one block
    (64, 1000, 1000, 2, 1024),   # one partial block: rows closer than a block, apart by the row
    (37, 1000, 1024, 4, 1024),   # a partial last program
    (64, 700, 1100, 8, 1024),    # rows further apart than a block
    (40, 3000, 3000, 2, 1024),   # three blocks: the loops
    (33, 600, 600, 1, 1024),     # one row per program
    (16, 0, 8, 2, 64),           # empty rows: no iteration
]


@pytest.mark.parametrize("rows, n, stride, xblock, rblock", SHAPES)
@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("wide", [False, True])
def test_looped_softmax(rows, n, stride, xblock, rblock, vector_bits, wide):
    x = torch.randn(rows, stride)
    out = torch.full((rows, stride), 7.0)
    looped_softmax[(triton.cdiv(rows, xblock),)](out, x, stride, rows, n, XBLOCK=xblock, R0_BLOCK=rblock,
                                                 WIDE=wide, vector_bits=vector_bits)
    torch.testing.assert_close(out[:, :n], torch.softmax(x[:, :n], -1), rtol=1e-5, atol=1e-6)
    assert (out[:, n:] == 7.0).all()


def _ttir_after(ttir: str, names) -> str:
    from triton_cpu.dialects.ttir import make_context, parse_ttir
    module = parse_ttir(ttir)
    for p in ttcir_passes(256):
        if p.name in names:
            p.apply(make_context(), module)
    return str(module)


@pytest.mark.parametrize("wide", [False, True])
def test_looped_softmax_one_block_copy_reads_no_exps_back(wide):
    """The copy for rows of one block loads the input only: the exps go to the division
    without a round trip through the output (and the output's first store is gone)."""
    k = looped_softmax.warmup(torch.empty(4, 1024), torch.empty(4, 1024), 1024, 4, 1024,
                              XBLOCK=2, R0_BLOCK=1024, WIDE=wide, grid=(2,))
    ir = _ttir_after(k.asm["ttir"], {"version-single-iteration-loops", "forward-stored-tiles"})
    once = ir[:ir.index("} else {")]  # the outer if's then-branch first, its stride guard's next
    guarded = once[once.index("scf.if"):]
    forwarded = guarded[guarded.index("scf.if"):]
    assert forwarded.count("tt.load") == 2  # x, twice (max, exps); not the output
    assert forwarded.count("tt.store") == 1


@triton.jit
def store_reload(buf, out, x_ptr, stride, n, ROWS: tl.constexpr, BLOCK: tl.constexpr, MASK_STORE: tl.constexpr):
    """Rows of `buf` `stride` apart are written from x (the first n columns, or all of
    them), read back (the first n) and copied to `out` (rows BLOCK apart). Where rows of
    `buf` overlap in what was written, memory holds the last row's values, and so must
    the copy."""
    rows = tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    m = cols < n
    p = buf + (cols + stride * rows)
    if MASK_STORE:
        tl.store(p, tl.load(x_ptr + cols + BLOCK * rows), mask=m)
    else:
        tl.store(p, tl.load(x_ptr + cols + BLOCK * rows))
    y = tl.load(p, mask=m, other=-1.0)
    tl.store(out + cols + BLOCK * rows, y, mask=m)


# (stride, n, whether the store is masked)
STRIDES = [(64, 64, True), (80, 64, True), (50, 64, True), (50, 50, True), (64, 40, True), (50, 30, True),
           (30, 50, True), (8, 64, True), (0, 64, True), (1, 64, True),
           (64, 40, False), (30, 30, False), (50, 30, False)]


def _store_reload_run(stride, n, mask_store):
    torch.manual_seed(0)
    rows, block = 4, 64
    x = torch.randn(rows, block)
    buf = torch.zeros(stride * (rows - 1) + block)
    out = torch.full((rows, block), 5.0)
    store_reload[(1,)](buf, out, x, stride, n, ROWS=rows, BLOCK=block, MASK_STORE=mask_store)
    return buf, out


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    """_store_reload_run for every case of STRIDES under Triton's interpreter (a process
    of its own: TRITON_INTERPRET is read when a kernel is defined)."""
    path = tmp_path_factory.mktemp("interpreted") / "store_reload.pt"
    code = ("import sys, torch\n"
            "from test_single_iteration_loops import _store_reload_run, STRIDES\n"
            "torch.save([_store_reload_run(*case) for case in STRIDES], sys.argv[1])\n")
    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.path.dirname(__file__) + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-c", code, str(path)], env=env, check=True, timeout=300, capture_output=True)
    return dict(zip(STRIDES, torch.load(path)))


@pytest.mark.parametrize("stride, n, mask_store", STRIDES)
def test_store_reload_against_interpreter(stride, n, mask_store, interpreted):
    buf, out = _store_reload_run(stride, n, mask_store)
    want_buf, want_out = interpreted[(stride, n, mask_store)]
    torch.testing.assert_close(buf, want_buf, rtol=0, atol=0)
    torch.testing.assert_close(out, want_out, rtol=0, atol=0)
