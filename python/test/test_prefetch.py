"""prefetch-next-program end to end: row-wise kernels get prefetches of the next program's
(or next iteration's) row, results stay those of torch, and a prefetch past the end of
the memory a kernel may touch does not fault."""
import ctypes
import mmap

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def row_softmax(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@triton.jit
def persistent_row_sum(x_ptr, y_ptr, stride, n_rows, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        s = tl.sum(x, axis=0)
        tl.store(y_ptr + row * stride + cols, x - s / n_cols, mask=cols < n_cols)


@triton.jit
def one_program_rows(x_ptr, y_ptr, stride, n_rows, BLOCK: tl.constexpr):
    # One program over every row: the last iteration prefetches the row after the last.
    cols = tl.arange(0, BLOCK)
    for row in range(n_rows):
        x = tl.load(x_ptr + row * stride + cols)
        tl.store(y_ptr + row * stride + cols, x - tl.max(x, axis=0))


@triton.jit
def rows_on_axis1(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    # Grid (2, rows): two column halves per row, the row on axis 1.
    row = tl.program_id(1)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row * stride + cols, x * tl.max(x, axis=0), mask=cols < n_cols)


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def gather_pairs(idx_ptr, table_ptr, out_ptr, n, XBLOCK: tl.constexpr):
    # Inductor's shape for `e = table[idx]; e[:, ::2] * 2 + e[:, 1::2]` over 128-wide rows:
    # the rows come from an index load; a negative index marks a row to skip.
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < n
    x1 = xindex // 128
    x0 = xindex % 128
    t = tl.load(idx_ptr + x1, mask=xmask, other=0)
    live = xmask & (t >= 0)
    a = tl.load(table_ptr + (2 * x0 + 256 * t), mask=live, other=0.0)
    b = tl.load(table_ptr + (1 + 2 * x0 + 256 * t), mask=live, other=0.0)
    tl.store(out_ptr + xindex, a * 2.0 + b, mask=xmask)


@triton.jit
def matmul_k_loop(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  CARRIED: tl.constexpr):
    # The tutorials' K loop: edge rows and columns wrapped (`% M`, `% N`), the K tail
    # masked. CARRIED: pointers advanced each iteration (uniform-loop-increments makes
    # them loop-carried offsets); else addresses computed from the induction variable.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        if CARRIED:
            a = tl.load(a_ptrs, mask=rk[None, :] < K - k0, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < K - k0, other=0.0)
            a_ptrs += BK
            b_ptrs += BK * N
        else:
            a = tl.load(a_ptrs + k0, mask=rk[None, :] < K - k0, other=0.0)
            b = tl.load(b_ptrs + k0 * N, mask=rk[:, None] < K - k0, other=0.0)
        acc = tl.dot(a, b, acc)
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * N + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def prefetches(k) -> int:
    return k.asm["llir"].count("call void @llvm.prefetch")


@pytest.mark.parametrize("prefetch", [True, False])
def test_row_kernel_prefetches_next_row(prefetch):
    x = torch.randn(37, 300)
    y = torch.empty_like(x)
    k = row_softmax[(37,)](x, y, x.stride(0), 300, BLOCK=512, prefetch=prefetch)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))
    assert (prefetches(k) > 0) == prefetch


@pytest.mark.parametrize("programs", [1, 3, 16, 40])
def test_persistent_loop_prefetches_next_iteration(programs):
    # Rows not a multiple of the programs: the last iteration prefetches the next
    # program's first row, or past the end for the last program.
    x = torch.randn(37, 200)
    y = torch.empty_like(x)
    k = persistent_row_sum[(programs,)](x, y, x.stride(0), 37, 200, BLOCK=256)
    torch.testing.assert_close(y, x - x.sum(dim=1, keepdim=True) / 200)
    assert prefetches(k) > 0


def test_rows_on_second_axis():
    x = torch.randn(9, 100)
    y = torch.empty_like(x)
    k = rows_on_axis1[(2, 9)](x, y, x.stride(0), 100, BLOCK=64)
    ref = torch.cat([x[:, :64] * x[:, :64].amax(dim=1, keepdim=True), x[:, 64:] * x[:, 64:].amax(dim=1, keepdim=True)],
                    dim=1)
    torch.testing.assert_close(y, ref)
    assert prefetches(k) > 0


@triton.jit
def row_sum_tiles(x_ptr, y_ptr, n_cols, TILE: tl.constexpr):
    # FlagGems' row sum under its "arm" configs: a loop over a row in small tiles.
    row = tl.program_id(0)
    acc = tl.zeros([TILE], dtype=tl.float32)
    for start in range(0, n_cols, TILE):
        cols = start + tl.arange(0, TILE)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


@pytest.mark.parametrize("tile, expected", [(4, False), (16, False), (64, True)])
def test_small_tiles_of_a_row_stream_without_prefetch(tile, expected):
    # A loop whose address moves by a line or less per iteration is a stream the hardware
    # prefetcher follows: no prefetch (256 bytes per iteration: the next one's is prefetched).
    x = torch.randn(37, 300)
    y = torch.empty(37)
    k = row_sum_tiles[(37,)](x, y, 300, TILE=tile)
    torch.testing.assert_close(y, x.sum(dim=1), rtol=1e-5, atol=1e-4)
    assert (prefetches(k) > 0) == expected


def test_elementwise_kernel_has_no_prefetch():
    # A contiguous stream: the hardware prefetcher follows it (measured slower with one).
    x, y = torch.randn(5000), torch.randn(5000)
    out = torch.empty_like(x)
    k = add[(5,)](x, y, out, 5000, BLOCK=1024)
    torch.testing.assert_close(out, x + y)
    assert prefetches(k) == 0


@pytest.mark.parametrize("bounds_check", [False, True])
@pytest.mark.parametrize("rows, xblock", [(37, 512), (64, 256), (3, 1024)])
def test_gather_prefetches_next_programs_rows(rows, xblock, bounds_check):
    """A gather's rows come from an index load, which no hardware prefetcher follows: the
    index load is repeated for the next program and its rows prefetched (not in the
    bounds-checked mode, which would check that load as the next program's). Indices of
    -2^40 (skipped rows) make wild prefetch addresses, which must not fault."""
    table = torch.randn(1000, 256)
    idx = torch.randint(0, 1000, (rows,))
    idx[::5] = -(1 << 40)
    out = torch.empty(rows * 128)
    n = out.numel()
    k = gather_pairs[(triton.cdiv(n, xblock),)](idx, table, out, n, XBLOCK=xblock, bounds_check=bounds_check)
    e = table[idx.clamp(min=0)]
    ref = torch.where((idx >= 0)[:, None], e[:, ::2] * 2 + e[:, 1::2], 0.0).reshape(-1)
    torch.testing.assert_close(out, ref)
    assert (prefetches(k) > 0) == (not bounds_check)


@pytest.mark.parametrize("carried", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("prefetch", [True, False])
def test_matmul_prefetches_next_k_block(carried, dtype, prefetch):
    """A dot's operands in a K loop: the next block's tiles are prefetched during this
    block's micro-kernel (past the end of A and B at the last block: a prefetch never
    faults). Shapes that are not multiples of the blocks, a masked K tail."""
    M, N, K = 150, 100, 200
    a = torch.randn(M, K).to(dtype)
    b = torch.randn(K, N).to(dtype)
    c = torch.empty(M, N)
    k = matmul_k_loop[(triton.cdiv(M, 64), triton.cdiv(N, 32))](a, b, c, M, N, K, BM=64, BN=32, BK=32,
                                                               CARRIED=carried, prefetch=prefetch)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-4, atol=1e-3)
    assert (prefetches(k) > 0) == prefetch


def test_prefetch_past_the_end_of_mapped_memory():
    # The matrix ends at a page followed by an inaccessible page: the last iteration's
    # prefetch of the "next row" points into it, and must not fault.
    page = mmap.PAGESIZE
    rows, cols = 8, page // 4 // 8  # the matrix fills exactly one page
    buf = mmap.mmap(-1, 2 * page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mprotect(ctypes.c_void_p(addr + page), page, 0) == 0, ctypes.get_errno()
    try:
        x = torch.frombuffer(memoryview(buf)[:page], dtype=torch.float32).view(rows, cols)
        x.copy_(torch.randn(rows, cols))
        y = torch.empty_like(x)
        k = one_program_rows[(1,)](x, y, cols, rows, BLOCK=cols)
        assert prefetches(k) > 0
        torch.testing.assert_close(y, x - x.amax(dim=1, keepdim=True))
        del x
    finally:
        libc.mprotect(ctypes.c_void_p(addr + page), page, mmap.PROT_READ | mmap.PROT_WRITE)


@pytest.mark.parametrize("value, expected", [("0", False), ("off", False), ("1", True), ("", True)])
def test_prefetch_environment_variable(monkeypatch, value, expected):
    # Read when a kernel is compiled: a fresh JITFunction has no compiled kernel in memory.
    monkeypatch.setenv("TRITON_CPU_PREFETCH", value)
    x = torch.randn(5, 64)
    y = torch.empty_like(x)
    k = triton.jit(row_softmax.fn)[(5,)](x, y, x.stride(0), 64, BLOCK=64)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))
    assert (prefetches(k) > 0) == expected
