"""Division of a vector by a value its lanes share (codegen/uniform_division.py): the
reciprocal path must give the bits of IEEE division, which torch computes, on every kind
of numerator and divisor, including those that must take the plain division."""
import pytest
import torch
import triton
import triton.language as tl
from triton_cpu import llvm

# The reciprocal path is the default on some hosts only (pipeline.reciprocal_division_pays):
# these tests ask for it, so that it is tested on every host.
ON = {"reciprocal_division": True}

SPECIAL = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45, -1e-42, 1e-39, 3e38, -3e38,
           2.0**-60, 2.0**60, 2.0**-61, 2.0**61, 2.0**-30, 2.0**30, 2.0**-31, 2.0**31, 1.0, -1.0]


def numerators(rows, cols, seed):
    """Row r: numbers within a few decades of 1 (every vector takes the reciprocal path
    when the divisor is in range) when r % 3 == 0; random bit patterns over the whole fp32
    range (most vectors take the division) when r % 3 == 1; the first kind with the special
    values in one place each (the vectors holding them take the division) when r % 3 == 2."""
    g = torch.Generator().manual_seed(seed)
    tame = torch.randn(rows, cols, generator=g) * 10.0 ** torch.randint(-5, 6, (rows, cols), generator=g)
    bits = torch.randint(0, 2**31, (rows, cols), generator=g, dtype=torch.int64).to(torch.int32)
    wide = torch.where(torch.rand(rows, cols, generator=g) < 0.5, bits, bits | -2**31).view(torch.float32)
    wide = torch.where(wide.isnan(), torch.ones_like(wide), wide)
    kind = torch.arange(rows)[:, None] % 3
    x = torch.where(kind == 1, wide, tame)
    special = torch.tensor(SPECIAL)
    for r in range(2, rows, 3):  # (rows shorter than the list get some of them)
        k = min(cols, len(SPECIAL))
        x[r, torch.randperm(cols, generator=g)[:k]] = special[torch.randperm(len(SPECIAL), generator=g)[:k]]
    return x


def divisors():
    g = torch.Generator().manual_seed(1)
    ones = torch.tensor([0x3FFFFFFF, 0x407FFFFF, 0x4EFFFFFF, 0x30FFFFFF], dtype=torch.int32).view(torch.float32)
    return torch.cat([torch.tensor(SPECIAL + [3.0, 7.0, 1e-20, 1e20, 1024.0, 0.1]), ones, torch.randn(8, generator=g)])


def assert_same_bits(out, ref):
    nan = ref.isnan()
    assert torch.equal(out.isnan(), nan)
    assert torch.equal(out[~nan].view(torch.int32), ref[~nan].view(torch.int32))


@triton.jit
def row_divide_kernel(x_ptr, s_ptr, out_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + row * N + cols)
    s = tl.load(s_ptr + row)
    tl.store(out_ptr + row * N + cols, x / s)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_each_row_divided_by_its_scalar(vector_bits):
    s = divisors()
    x = numerators(len(s), 256, seed=vector_bits)
    out = torch.empty_like(x)
    k = row_divide_kernel[(len(s), )](x, s, out, N=256, vector_bits=vector_bits, **ON)
    assert "div.reciprocal" in k.asm["llir"]
    assert_same_bits(out, x / s[:, None])


@triton.jit
def normalize_kernel(x_ptr, e_ptr, s_ptr, out_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    e = tl.exp(tl.load(x_ptr + row * N + cols))
    s = tl.sum(e, axis=0)
    tl.store(e_ptr + row * N + cols, e)
    tl.store(s_ptr + row, s)
    tl.store(out_ptr + row * N + cols, e / s)


def test_softmax_style_rows():
    """The kernel's own exps divided by its own sums (torch's exp and summation order
    may differ in the last bits; the division may not)."""
    x = torch.randn(64, 1024) * 4
    x[3] = -200.0  # every exp underflows to 0: 0 / 0
    x[5, :7] = -95.0  # subnormal numerators in the first vector
    e, s, out = torch.empty_like(x), torch.empty(64), torch.empty_like(x)
    normalize_kernel[(64, )](x, e, s, out, N=1024, **ON)
    assert_same_bits(out, e / s[:, None])
    assert out[3].isnan().all()
    rows = [r for r in range(64) if r != 3]  # torch.softmax subtracts the row's max first
    torch.testing.assert_close(out[rows], torch.softmax(x[rows], -1), rtol=1e-5, atol=1e-7)


@triton.jit
def column_broadcast_kernel(acc_ptr, l_ptr, out_ptr, M: tl.constexpr, D: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, D)
    acc = tl.load(acc_ptr + rows[:, None] * D + cols[None, :])
    l_i = tl.load(l_ptr + rows)
    tl.store(out_ptr + rows[:, None] * D + cols[None, :], acc / l_i[:, None])


def test_attention_style_division_by_a_row_vector():
    l_i = divisors()[:32]
    acc = numerators(32, 64, seed=7)
    out = torch.empty_like(acc)
    column_broadcast_kernel[(1, )](acc, l_i, out, M=32, D=64, **ON)
    assert_same_bits(out, acc / l_i[:, None])


@triton.jit
def divide_by_constant_kernel(x_ptr, out_ptr, D: tl.constexpr, N: tl.constexpr):
    cols = tl.arange(0, N)
    tl.store(out_ptr + cols, tl.load(x_ptr + cols) / D)


# 3.0 takes the reciprocal path; a power of two keeps the plain division, which LLVM turns
# into a multiply by its exact reciprocal (the last two: reciprocals at the ends of the
# normal range, and a subnormal divisor whose reciprocal is normal); 0.0 keeps the division.
@pytest.mark.parametrize("d", [3.0, 2.0, -0.25, 2.0**-126, 2.0**127, 2.0**-127, 0.0])
def test_division_by_a_constant(d):
    x = numerators(32, 128, seed=3).reshape(-1)
    out = torch.empty_like(x)
    divide_by_constant_kernel[(1, )](x, out, D=d, N=4096, **ON)
    assert_same_bits(out, x / torch.tensor(d))


def test_divisors_near_the_ends_of_the_exponent_range():
    """Quotients near 1 of divisors whose reciprocal is subnormal or huge: every lane's
    first product is in range, so only the divisor's own range check keeps these rows off
    the reciprocal path, where a subnormal 1/s would misround."""
    s = torch.tensor([1.5 * 2.0**127, 1.1 * 2.0**126, 1.7 * 2.0**-126, 1.3 * 2.0**-100, 1.9 * 2.0**100,
                      1.7 * 2.0**-31, 1.7 * 2.0**31, 1.234567 * 2.0**-129, -1.9 * 2.0**127])
    g = torch.Generator().manual_seed(5)
    ratio = 0.5 + 1.5 * torch.rand(len(s), 256, generator=g, dtype=torch.float64)
    x = (s.double()[:, None] * ratio).clamp(-3.4e38, 3.4e38).float()
    out = torch.empty_like(x)
    row_divide_kernel[(len(s), )](x, s, out, N=256, **ON)
    assert_same_bits(out, x / s[:, None])


@pytest.mark.parametrize("choice", [None, False])
def test_default_follows_the_host(choice):
    """Without the option, the reciprocal path is taken except on AMD Zen cores (whose
    vector divide is fast: README, Knobs); reciprocal_division=False never takes it. Either
    way the bits are those of IEEE division."""
    s = divisors()
    x = numerators(len(s), 256, seed=11)
    out = torch.empty_like(x)
    options = {} if choice is None else {"reciprocal_division": choice}
    k = row_divide_kernel[(len(s), )](x, s, out, N=256, **options)
    assert_same_bits(out, x / s[:, None])
    expected = choice is None and not llvm.host().cpu.startswith("znver")
    assert ("div.reciprocal" in k.asm["llir"]) == expected


@triton.jit
def short_rows_kernel(x_ptr, s_ptr, out_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    tl.store(out_ptr + row * N + cols, tl.load(x_ptr + row * N + cols) / tl.load(s_ptr + row))


def test_vectors_narrower_than_a_register_keep_the_divide():
    s = divisors()
    x = numerators(len(s), 4, seed=13)
    out = torch.empty_like(x)
    k = short_rows_kernel[(len(s), )](x, s, out, N=4, **ON)
    assert_same_bits(out, x / s[:, None])
    assert "div.reciprocal" not in k.asm["llir"]
