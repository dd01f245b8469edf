"""Masked loads and stores whose "is every lane in bounds?" test is done on scalars
(codegen/lane_masks.py): bound checks `splat(s) + iota <pred> splat(n)` in every predicate and
operand order, signed and unsigned, combined with `&` and with scalar conditions, at the
edges of a chunk and where the lane offsets wrap around the integer range. Against the
same masks computed by torch (whose int32 / int64 additions wrap the same way)."""
import re

import pytest
import torch

import triton
import triton.language as tl

BLOCK = 64


@triton.jit
def masked_copy(x_ptr, y_ptr, base, n, lo, PRED: tl.constexpr, UNSIGNED: tl.constexpr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    offs = base + lanes
    if UNSIGNED:
        offs = offs.to(tl.uint32, bitcast=True)
        n = n.to(tl.uint32, bitcast=True)
    if PRED == "lt":
        mask = offs < n
    elif PRED == "le":
        mask = offs <= n
    elif PRED == "gt":
        mask = offs > n
    elif PRED == "ge":
        mask = offs >= n
    elif PRED == "n_gt":  # the bound on the left
        mask = n > offs
    elif PRED == "n_le":
        mask = n <= offs
    elif PRED == "minus":  # a ramp minus a uniform
        mask = (offs - lo) < n
    elif PRED == "window":  # lo <= offs < n
        mask = (offs >= lo) & (offs < n)
    else:  # "guarded": a scalar condition and a bound check
        mask = (offs < n) & (lo > 0)
    x = tl.load(x_ptr + lanes, mask=mask, other=-1.0)
    tl.store(y_ptr + lanes, x, mask=mask)


def _reference_mask(pred, base, n, lo, unsigned, dtype):
    offs = torch.tensor(base, dtype=dtype) + torch.arange(BLOCK, dtype=dtype)  # wraps like the kernel
    nn = torch.tensor(n, dtype=dtype)
    if unsigned:  # compare as uint32: flip the sign bit of both sides
        offs, nn = offs ^ (-2**31), nn ^ (-2**31)
    return {
        "lt": offs < nn, "le": offs <= nn, "gt": offs > nn, "ge": offs >= nn, "n_gt": nn > offs,
        "n_le": nn <= offs, "minus": (offs - lo) < nn, "window": (offs >= lo) & (offs < nn), "guarded": (offs < nn) & (lo > 0),
    }[pred]


def _check(pred, base, n, lo=0, unsigned=False, dtype=torch.int32, **options):
    x = torch.arange(BLOCK, dtype=torch.float32)
    y = torch.full((BLOCK,), -2.0)
    masked_copy[(1,)](x, y, base, n, lo, PRED=pred, UNSIGNED=unsigned, BLOCK=BLOCK, **options)
    mask = _reference_mask(pred, base, n, lo, unsigned, dtype)
    assert torch.equal(y, torch.where(mask, x, torch.tensor(-2.0))), (pred, base, n, lo)


PREDS = ["lt", "le", "gt", "ge", "n_gt", "n_le"]


@pytest.mark.parametrize("pred", PREDS)
@pytest.mark.parametrize("n", [-1, 0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200])
def test_bound_checks_at_chunk_edges(pred, n):
    _check(pred, 0, n)


@pytest.mark.parametrize("pred", PREDS + ["minus", "window"])
@pytest.mark.parametrize("base,n", [(2**31 - 40, 2**31 - 1), (2**31 - 8, 2**31 - 1), (2**31 - 8, -5),
                                    (2**31 - 64, 2**31 - 1), (-2**31, -2**31 + 20), (-20, 3)])
def test_lane_offsets_that_wrap(pred, base, n):
    # base + 63 overflows int32 in the first cases: the upper lanes wrap to negative values.
    _check(pred, base, n, lo=-10)


@pytest.mark.parametrize("pred", ["lt", "ge", "n_gt"])
@pytest.mark.parametrize("base,n", [(0, 20), (2**31 - 8, 2**31 - 1), (2**32 - 40, 2**32 - 1 - 2**32),
                                    (-8, 5), (-8, -3)])
def test_unsigned_bound_checks(pred, base, n):
    # n and base as int32 arguments, compared as uint32 in the kernel (base -8 is 2^32 - 8).
    base = base - 2**32 if base >= 2**31 else base
    _check(pred, base, n, unsigned=True)


@pytest.mark.parametrize("pred", ["lt", "gt", "window"])
@pytest.mark.parametrize("base,n", [(2**40, 2**40 + 20), (2**63 - 40, 2**63 - 1), (2**40, 2**40 + 100)])
def test_int64_offsets(pred, base, n):
    _check(pred, base, n, lo=2**40 + 3, dtype=torch.int64)


@pytest.mark.parametrize("lo", [0, 1])
@pytest.mark.parametrize("n", [10, 64, 100])
def test_bound_check_and_a_scalar_condition(lo, n):
    _check("guarded", 0, n, lo=lo)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_both_vector_widths(vector_bits):
    for pred in ("lt", "gt", "minus", "window"):
        for n in (0, 17, 48, 64):
            _check(pred, 0, n, lo=5, vector_bits=vector_bits)


@triton.jit
def extended_copy(x_ptr, y_ptr, base64, base32, n, UNSIGNED: tl.constexpr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    narrow = base32 + lanes  # int32 lanes: they wrap where base32 is near the top
    if UNSIGNED:
        narrow = narrow.to(tl.uint32, bitcast=True)
    offs = base64 + narrow.to(tl.int64)  # sign- (or zero-) extended, then 64-bit
    mask = offs < n
    x = tl.load(x_ptr + lanes, mask=mask, other=-1.0)
    tl.store(y_ptr + lanes, x, mask=mask)


@pytest.mark.parametrize("unsigned", [False, True])
@pytest.mark.parametrize("base32", [0, 100, 2**31 - 40, 2**31 - 64, -2**31, -40])
@pytest.mark.parametrize("delta", [-5, 0, 17, 63, 64, 65])
def test_extended_ramps(unsigned, base32, delta):
    """64-bit offsets made of a 32-bit ramp extended (FlagGems' program ids are int64):
    tested on scalars, and where the 32-bit lanes wrap (base32 near 2^31, or near 2^32
    unsigned) the extended lanes are no ramp: the answer must still be each lane's."""
    base64 = 2**40
    n = base64 + (base32 & 0xFFFFFFFF if unsigned else base32) + delta
    x = torch.arange(BLOCK, dtype=torch.float32)
    y = torch.full((BLOCK,), -2.0)
    extended_copy[(1,)](x, y, base64, base32, n, UNSIGNED=unsigned, BLOCK=BLOCK)
    narrow = torch.tensor(base32, dtype=torch.int32) + torch.arange(BLOCK, dtype=torch.int32)  # wraps
    narrow = narrow.long() & 0xFFFFFFFF if unsigned else narrow.long()
    mask = base64 + narrow < n
    assert torch.equal(y, torch.where(mask, x, torch.tensor(-2.0))), (unsigned, base32, delta)


@triton.jit(do_not_specialize=["stride"])
def int64_offsets_kernel(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask)
    tl.store(y_ptr + offs * stride, tl.exp(x), mask=mask)


@pytest.mark.parametrize("stride", [1, 3])
def test_masks_computed_where_a_masked_access_needs_them(stride):
    """FlagGems' pointwise loop: 64-bit offsets, a bound check and a stride known at run
    time. The vector mask and offsets are computed only on the paths that read them
    (partial chunks, the gather and scatter of stride != 1), not once per chunk where the
    full chunk is a plain vector move: every vector compare of the emitted IR sits in a
    block with a masked access. Results against torch for both strides."""
    n = 1000
    x = torch.randn(n * stride)
    y = torch.zeros(n * stride)
    k = int64_offsets_kernel[(triton.cdiv(n, 256),)](x, y, n, stride, BLOCK=256)
    torch.testing.assert_close(y[::stride][:n], torch.exp(x[::stride][:n]), rtol=2e-7, atol=0)
    if stride > 1:
        assert torch.count_nonzero(y.view(n, stride)[:, 1:]) == 0
    blocks, current = [], []
    for line in k.asm["llir"].splitlines():
        if re.match(r"^[\w.$-]+:", line) or line.startswith("define") or line.startswith("}"):
            blocks.append(current)
            current = []
        current.append(line)
    compares = [b for b in blocks if any(re.search(r"icmp \w+ <\d+ x i64>", line) for line in b)]
    assert compares, "expected the vector bound check somewhere"
    for b in compares:
        assert any("llvm.masked" in line for line in b), "\n".join(b)
