"""Scans: cumsum, cumprod, associative_scan with user combiners (one and two operands),
reverse, any axis of 1-D to 3-D tensors."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def _affine_combine(a1, b1, a2, b2):
    # Composition of x -> a*x + b maps: the linear-recurrence scan.
    return a1 * a2, b1 * a2 + b2


@triton.jit
def scan_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, RANK: tl.constexpr,
                OP: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    offs = a * B * C + b * C + c
    x = tl.load(x_ptr + offs)
    if OP == "cumsum":
        r = tl.cumsum(x, AXIS, reverse=REVERSE)
    elif OP == "cumprod":
        r = tl.cumprod(x, AXIS, reverse=REVERSE)
    else:
        r = tl.associative_scan(x, AXIS, _max_combine, reverse=REVERSE)
    tl.store(out_ptr + offs, r)


def _ref(x, op, axis, reverse):
    if reverse:
        x = x.flip(axis)
    r = {"cumsum": lambda: x.cumsum(axis), "cumprod": lambda: x.cumprod(axis),
         "max": lambda: x.cummax(axis).values}[op]()
    return r.flip(axis) if reverse else r


@pytest.mark.parametrize("shape, axis", [((1, 1, 64), 2), ((1, 8, 16), 1), ((1, 8, 16), 2), ((4, 8, 16), 0),
                                         ((4, 8, 16), 1), ((4, 8, 16), 2)])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "max"])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan(shape, axis, op, reverse):
    x = torch.randint(-3, 4, shape).float() if op != "cumprod" else torch.rand(shape) + 0.5
    if op == "cumsum":
        x = torch.randint(-100, 100, shape).to(torch.int32)
    out = torch.empty_like(x)
    scan_kernel[(1,)](x, out, A=shape[0], B=shape[1], C=shape[2], RANK=3, OP=op, AXIS=axis, REVERSE=reverse)
    ref = _ref(x, op, axis, reverse)
    if op == "cumprod":
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    else:
        assert torch.equal(out, ref)


@triton.jit
def recurrence_kernel(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, h = tl.associative_scan((a, b), 0, _affine_combine)
    tl.store(out_ptr + offs, h)


def test_two_operand_scan_linear_recurrence():
    N = 64
    a, b = torch.rand(N) * 0.9, torch.randn(N)
    out = torch.empty(N)
    recurrence_kernel[(1,)](a, b, out, N=N)
    h, ref = torch.tensor(0.0), []
    for i in range(N):
        h = a[i] * h + b[i]
        ref.append(h)
    torch.testing.assert_close(out, torch.stack(ref), rtol=1e-5, atol=1e-5)


@triton.jit
def _roll_combine(a1, b1_last, b1_cur, a2, b2_last, b2_cur):
    # Uses a constant (0) that the compiler hoists out of the combine region.
    return a1 + a2, tl.where(a2 == 1, b1_cur, 0) + b2_last, b2_cur


@triton.jit
def roll_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    _, z, _ = tl.associative_scan((1 + 0 * x, 0 * x, x), axis=AXIS, combine_fn=_roll_combine, reverse=REVERSE)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], z)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_three_operand_scan_rolls(axis, reverse):
    x = torch.randint(-10, 10, (8, 16), dtype=torch.int32)
    z = torch.empty_like(x)
    roll_kernel[(1,)](x, z, M=8, N=16, AXIS=axis, REVERSE=reverse)
    # The scan shifts by one along the axis (toward the end, or the start when reversed),
    # with zeros coming in.
    ref = torch.zeros_like(x)
    if not reverse:
        (ref[1:] if axis == 0 else ref[:, 1:]).copy_(x[:-1] if axis == 0 else x[:, :-1])
    else:
        (ref[:-1] if axis == 0 else ref[:, :-1]).copy_(x[1:] if axis == 0 else x[:, 1:])
    assert torch.equal(z, ref)


@triton.jit
def narrow_float_kernel(x_ptr, cum_ptr, sum_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(cum_ptr + offs, tl.cumsum(x, AXIS))
    s = tl.sum(x, AXIS)
    if AXIS == 0:
        tl.store(sum_ptr + tl.arange(0, N), s)
    else:
        tl.store(sum_ptr + tl.arange(0, M), s)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("M,N,axis", [(2, 1024, 1), (1024, 2, 0), (8, 64, 1)])
def test_narrow_float_scan_and_sum_round_once(dtype, M, N, axis):
    """fp16/bf16 cumsum and sum carry fp32 and round each result once, like torch (a loop
    rounding every step drifts by ~sqrt(n) ulp over a 1024-long axis)."""
    x = torch.randn(M, N, generator=torch.Generator().manual_seed(1)).to(dtype)
    cum = torch.empty(M, N, dtype=dtype)
    s = torch.empty(N if axis == 0 else M, dtype=dtype)
    narrow_float_kernel[(1,)](x, cum, s, M=M, N=N, AXIS=axis)
    ref = x.float().cumsum(axis)
    # Exact up to the order of fp32 additions: at most one rounding step of the result type apart.
    torch.testing.assert_close(cum.float(), ref.to(dtype).float(), rtol=2 ** -7, atol=2 ** -7 * ref.abs().max().item())
    torch.testing.assert_close(s.float(), x.float().sum(axis).to(dtype).float(), rtol=2 ** -7, atol=1e-2)
