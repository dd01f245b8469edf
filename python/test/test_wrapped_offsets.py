"""Offsets through % and // (the tutorials' `rn % N`, grouped tiles): vector accesses where the
axis analysis proves them, run-time-checked ones where it has to assume x >= 0, and the
per-lane fallback when the assumption fails (negative x). Against torch's elementwise
results (torch.fmod and truncating division match Triton's signed % and //)."""
import pytest
import torch

import triton
import triton.language as tl


@triton.jit
def wrapped_copy(x_ptr, y_ptr, shift, m, BLOCK: tl.constexpr):
    # x % m of x = offs - shift, which is negative in the first program when shift > 0.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = (offs - shift) % m
    tl.store(y_ptr + offs, tl.load(x_ptr + src + 64))


@triton.jit
def wrapped_store(x_ptr, y_ptr, shift, m, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    dst = (offs - shift) % m
    tl.store(y_ptr + dst + 64, tl.load(x_ptr + offs), mask=offs < m)


@triton.jit
def quotient_gather(x_ptr, y_ptr, shift, m, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + (offs - shift) // m + 64))


SHIFTS = [0, 5, 16, 32, 48, 64, 100, 128]  # multiples of 16 compile to the checked vector path


def _lanes(shift):
    return torch.arange(128) - shift


@pytest.mark.parametrize("shift", SHIFTS)
def test_remainder_offsets_of_maybe_negative_values(shift):
    x = torch.arange(256, dtype=torch.float32)
    y = torch.empty(128)
    wrapped_copy[(2,)](x, y, shift, 32, BLOCK=64)
    assert torch.equal(y, x[torch.fmod(_lanes(shift), 32) + 64])


@pytest.mark.parametrize("shift", SHIFTS)
def test_remainder_offsets_in_stores(shift):
    x = torch.arange(128, dtype=torch.float32) + 1000
    y = torch.zeros(256)
    wrapped_store[(2,)](x, y, shift, 32, BLOCK=64)
    ref = torch.zeros(256)
    idx = torch.fmod(_lanes(shift), 32)[:32] + 64  # lanes 0..31 store (mask offs < m)
    ref[idx] = x[:32]  # distinct targets within one program's 32 lanes
    assert torch.equal(y, ref)


@pytest.mark.parametrize("shift", SHIFTS)
def test_quotient_offsets(shift):
    x = torch.arange(256, dtype=torch.float32)
    y = torch.empty(128)
    quotient_gather[(2,)](x, y, shift, 16, BLOCK=64)
    assert torch.equal(y, x[torch.div(_lanes(shift), 16, rounding_mode="trunc") + 64])


@triton.jit
def wrapped_rows_in_loop(x_ptr, y_ptr, shift, m, n_rows, BLOCK: tl.constexpr, ROWS: tl.constexpr,
                         FORM: tl.constexpr):
    # The columns (offs - shift) % m are computed once, before the loop; each iteration
    # reads ROWS rows of x at those columns, and writes them back through them to y. FORM:
    # the row offset added to the pointer ("addptr"), added to the columns before the
    # address is formed, as upstream's tutorial 03 writes `b_ptr + (rk[:, None] * N +
    # rn[None, :])` ("sum"), or negated and subtracted from them ("difference").
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = (offs - shift) % m + 64
    rows = tl.arange(0, ROWS)
    for r0 in range(0, n_rows, ROWS):
        if FORM == "addptr":
            x_at = x_ptr + (r0 + rows)[:, None] * 256 + cols[None, :]
            y_at = y_ptr + (r0 + rows)[:, None] * 256 + cols[None, :]
        else:
            if FORM == "sum":
                at = (r0 + rows)[:, None] * 256 + cols[None, :]
            else:
                at = cols[None, :] - (-(r0 + rows) * 256)[:, None]
            x_at = x_ptr + at
            y_at = y_ptr + at
        tl.store(y_at, tl.load(x_at) * 2 + 1)


@pytest.mark.parametrize("form", ["addptr", "sum", "difference"])
@pytest.mark.parametrize("shift", SHIFTS)
def test_remainder_offsets_checked_once_before_a_loop(shift, form):
    # Each program's 64 columns are checked once before its loop. Shifts 32, 48, 64 and
    # 128 start a chunk of program 0 at a negative multiple of 32, where the run breaks
    # (-32 % 32 == 0, -31 % 32 == -31): that program gathers and scatters every chunk.
    # 16 makes x negative without a break; 5 and 100 are not multiples of 16, and are
    # never assumed contiguous.
    x = torch.randn(8, 256)
    y = torch.zeros(8, 256)
    wrapped_rows_in_loop[(2,)](x, y, shift, 32, 8, BLOCK=64, ROWS=4, FORM=form)
    cols = torch.fmod(_lanes(shift), 32) + 64
    ref = torch.zeros(8, 256)
    ref[:, cols] = x[:, cols] * 2 + 1  # lanes that share a column write the same value
    assert torch.equal(y, ref)


@triton.jit
def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   GROUP: tl.constexpr, SUMMED: tl.constexpr):
    # The tiles of the matmul tutorial: grouped program ids, then `% M` and `% N` offsets.
    # The group arithmetic divides by values whose sign depends on M and N, so the
    # analysis cannot prove rn >= 0: B's tiles take the run-time-checked vector path.
    # SUMMED: each pointer one addptr of a summed offset and no mask on K, as upstream's
    # tutorial 03 writes them.
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    first_m = (pid // per_group) * GROUP
    rows = min(tiles_m - first_m, GROUP)
    pid_m = first_m + (pid % per_group) % rows
    pid_n = (pid % per_group) // rows
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    if SUMMED:
        a = a_ptr + (rm[:, None] * K + rk[None, :])
        b = b_ptr + (rk[:, None] * N + rn[None, :])
    else:
        a = a_ptr + rm[:, None] * K + rk[None, :]
        b = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        if SUMMED:
            acc += tl.dot(tl.load(a), tl.load(b))
        else:
            acc += tl.dot(tl.load(a, mask=rk[None, :] < K - k), tl.load(b, mask=rk[:, None] < K - k))
        a += BK
        b += BK * N
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * N + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def _grouped_matmul_ttcir(tmp_path, monkeypatch, summed: bool) -> str:
    """Runs grouped_matmul (checked against torch) and returns the TTCIR it compiled to."""
    from triton import knobs
    monkeypatch.setattr(knobs.compilation, "always_compile", True)
    monkeypatch.setattr(knobs.compilation, "dump_ir", True)
    monkeypatch.setattr(knobs.cache, "dump_dir", str(tmp_path))
    a, b = torch.randn(64, 96), torch.randn(96, 80)
    c = torch.empty(64, 80)
    grouped_matmul[(2 * 3,)](a, b, c, 64, 80, 96, BM=32, BN=32, BK=32, GROUP=2, SUMMED=summed)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
    return "".join(p.read_text() for p in tmp_path.rglob("*.ttcir"))


def test_tutorial_matmul_tiles_take_the_checked_vector_path(tmp_path, monkeypatch):
    assert "tcpu.is_contiguous" in _grouped_matmul_ttcir(tmp_path, monkeypatch, summed=False)


def test_summed_tile_offsets_are_checked_before_the_k_loop(tmp_path, monkeypatch):
    # Before: every chunk of every row of every B tile built and compared 16 pointers (the
    # unmasked bf16 matmul at 1024^3 on AMX ran 18% slower than the tutorial's form).
    ttcir = _grouped_matmul_ttcir(tmp_path, monkeypatch, summed=True)
    checks = [line for line in ttcir.splitlines() if "tcpu.is_contiguous" in line]
    assert checks and not any("!tt.ptr" in line for line in checks), checks
