"""Integer division and remainder of a vector by a run-time value its lanes share
(codegen/integer_division.py): every width, signed and unsigned, every edge of the divisor
and the dividend, against Python's integers."""
import random
import re

import pytest
import torch
import triton
import triton.language as tl

INFO = {torch.int8: 8, torch.int16: 16, torch.int32: 32, torch.int64: 64}
DTYPE = {b: t for t, b in INFO.items()}
VECTOR_DIVISION = re.compile(r"= [su](div|rem) <")  # what the multiply path replaces


def edge_values(bits: int, signed: bool) -> list[int]:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    near = [lo, lo + 1, lo + 2, hi, hi - 1, hi - 2, 0, 1, 2, 3, 5, 7, 10, 1 << (bits - 2), (1 << (bits - 2)) + 1,
            (1 << (bits - 1)) - 3]
    if signed:
        near += [-1, -2, -3, -7, -10, -(1 << (bits - 2)), -(1 << (bits - 2)) - 1]
    else:
        near += [1 << (bits - 1), (1 << (bits - 1)) + 1, (1 << (bits - 1)) - 1]
    return sorted({v for v in near if lo <= v <= hi})


def dividends(bits: int, signed: bool, n: int, seed: int) -> list[int]:
    """Random values of the whole range, every third vector of 16 lanes small ones, for 64
    bits every third within 32-bit magnitudes (the fast path's), and the edge values."""
    rng = random.Random(seed)
    lo = -(1 << (bits - 1)) if signed else 0
    hi = lo + (1 << bits) - 1
    x = [lo + rng.getrandbits(bits) for _ in range(n)]
    for i in range(n):
        if i % 48 < 16:
            x[i] = rng.randint(max(lo, -300), min(hi, 300))
        elif bits == 64 and i % 48 < 32:
            x[i] = rng.randint(-(1 << 32) + 1 if signed else 0, (1 << 32) - 1)
    edges = edge_values(bits, signed)
    x[n // 2: n // 2 + len(edges)] = edges
    return x


def wrap(values: list[int], bits: int) -> torch.Tensor:
    """Python integers to the signed `bits`-bit type, wrapping (unsigned values by their
    bit patterns)."""
    out = []
    for v in values:
        low = v & ((1 << bits) - 1)
        out.append(low - (1 << bits) if low >> (bits - 1) else low)
    return torch.tensor(out, dtype=DTYPE[bits])


def reference(x: list[int], d: int, bits: int):
    """(x / d, x % d), truncating toward zero, in Python's integers, wrapped to `bits`;
    x / 0 = 0, x % 0 = x (the backend's results where LLVM's are undefined)."""
    if d == 0:
        return wrap([0] * len(x), bits), wrap(x, bits)
    q = [abs(v) // abs(d) * (1 if (v < 0) == (d < 0) else -1) for v in x]
    return wrap(q, bits), wrap([v - qi * d for v, qi in zip(x, q)], bits)


@triton.jit
def div_rem_kernel(x_ptr, q_ptr, r_ptr, d, n, UNSIGNED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if UNSIGNED:
        xu = x.to(tl.uint64 if x.dtype == tl.int64 else tl.uint32 if x.dtype == tl.int32 else
                  tl.uint16 if x.dtype == tl.int16 else tl.uint8, bitcast=True)
        du = d.to(xu.dtype)
        q = (xu // du).to(x.dtype, bitcast=True)
        r = (xu % du).to(x.dtype, bitcast=True)
    else:
        dd = d.to(x.dtype)
        q = x // dd
        r = x % dd
    tl.store(q_ptr + offs, q, mask=m)
    tl.store(r_ptr + offs, r, mask=m)


def _divisors(bits: int, signed: bool) -> list[int]:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    ds = [0, 2, 3, 7, 10, 16, 641, 1 << (bits - 1), (1 << (bits - 1)) - 1, (1 << (bits - 1)) + 1, hi, hi - 1, 6700417,
          1 << (bits // 2), (1 << (bits // 2)) + 1]
    if bits == 64:  # around the 32-bit magnitudes the fast path takes
        ds += [(1 << 32) - 1, 1 << 32, (1 << 32) + 1, (1 << 31) - 1, 1 << 31, (1 << 31) + 1]
    if signed:
        ds += [-1, -2, -3, -7, lo, lo + 1, -641, -(1 << 31), -(1 << 32) + 1, -(1 << 32)]
    # unsigned 64-bit divisors from 2^63 do not fit the kernel's i64 argument
    return sorted({v for v in ds if lo <= v <= hi and v < 1 << 63})


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
@pytest.mark.parametrize("dtype", list(INFO), ids=["i8", "i16", "i32", "i64"])
def test_division_by_a_runtime_scalar(dtype, signed, vector_bits):
    bits = INFO[dtype]
    n = 1000  # not a multiple of the vector: the masked tail too
    for i, d in enumerate(_divisors(bits, signed)):
        xs = dividends(bits, signed, n, seed=i)
        x = wrap(xs, bits)
        q, r = torch.empty_like(x), torch.empty_like(x)
        # d as the kernel's i32 argument (its bit pattern where it is unsigned and >= 2^31,
        # below 64 bits), or i64 where it does not fit
        arg = d - (1 << 32) if bits < 64 and d >= 1 << 31 else d
        k = div_rem_kernel[(triton.cdiv(n, 256),)](x, q, r, arg, n, UNSIGNED=not signed, BLOCK=256,
                                                   vector_bits=vector_bits)
        rq, rr = reference(xs, d, bits)
        assert torch.equal(q, rq), (d, (q != rq).nonzero()[:4].flatten().tolist())
        assert torch.equal(r, rr), (d, (r != rr).nonzero()[:4].flatten().tolist())
        if d != 1 and d % 16:  # not specialized into a constant by Triton
            llir = k.asm["llir"]
            assert not VECTOR_DIVISION.search(llir.split("idiv.lanes")[0]), d
            assert bits < 64 or "idiv.magic" in llir, d


@triton.jit
def wrapped_gather_kernel(x_ptr, y_ptr, out_ptr, numel, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < numel
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs % n, mask=m)
    row = offs // n
    tl.store(out_ptr + offs, x + y + row.to(tl.float32), mask=m)


@pytest.mark.parametrize("n", [3, 1000, 4099])
def test_broadcast_row_index(n):
    """Inductor's shape of index arithmetic under dynamic shapes: a row of `n` broadcast
    over a flat tensor (`offs % n`) and the row number (`offs // n`)."""
    numel = 20000
    x = torch.randn(numel)
    y = torch.randn(n)
    out = torch.empty(numel)
    wrapped_gather_kernel[(triton.cdiv(numel, 512),)](x, y, out, numel, n, BLOCK=512)
    i = torch.arange(numel)
    torch.testing.assert_close(out, x + y[i % n] + (i // n).to(torch.float32), rtol=0, atol=0)


@triton.jit
def per_row_divisor_kernel(x_ptr, d_ptr, q_ptr, N: tl.constexpr):
    """A divisor loaded per program, used in a loop: the magic number per row, hoisted."""
    row = tl.program_id(0)
    d = tl.load(d_ptr + row)
    for c in range(0, 4):
        cols = c * N + tl.arange(0, N)
        x = tl.load(x_ptr + row * 4 * N + cols)
        tl.store(q_ptr + row * 4 * N + cols, x // d - x % d)


def test_divisor_loaded_per_program():
    g = torch.Generator().manual_seed(3)
    d = torch.tensor([1, -1, 3, -7, 2**31 - 1, -2**31, 0, 12345, 16, -16], dtype=torch.int32)
    x = torch.randint(-2**31, 2**31, (len(d), 4 * 64), generator=g, dtype=torch.int64).to(torch.int32)
    x[:, :8] = torch.tensor([-2**31, 2**31 - 1, 0, -1, 1, 7, -7, 100], dtype=torch.int32)
    q = torch.empty_like(x)
    per_row_divisor_kernel[(len(d),)](x, d, q, N=64)
    for i, di in enumerate(d.tolist()):
        rq, rr = reference(x[i].tolist(), di, 32)
        assert torch.equal(q[i], wrap((rq.to(torch.int64) - rr.to(torch.int64)).tolist(), 32)), di
