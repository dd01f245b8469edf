"""End-to-end: elementwise kernels compiled by the CPU backend, checked against torch
and against Triton's interpreter running the same kernel."""
import pytest
import torch
import triton
import triton.language as tl
import triton_cpu.llvm

from conftest import interpreted


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@pytest.mark.parametrize("n, block", [(1, 16), (1000, 128), (4096, 1024), (70000, 65536), (33, 1)])
def test_vector_add(n, block):
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    assert torch.equal(out, x + y)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
                                   torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_add_dtypes(dtype):
    n = 777
    if dtype.is_floating_point:
        x, y = torch.randn(n).to(dtype), torch.randn(n).to(dtype)
    else:
        info = torch.iinfo(dtype)
        x = torch.randint(info.min // 2, info.max // 2, (n,), dtype=dtype)
        y = torch.randint(info.min // 2, info.max // 2, (n,), dtype=dtype)
    out = torch.empty(n, dtype=dtype)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    assert torch.equal(out, x + y)


@triton.jit
def binop_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "shl":
        r = x << y
    elif OP == "shr":
        r = x >> y
    elif OP == "min":
        r = tl.minimum(x, y)
    elif OP == "max":
        r = tl.maximum(x, y)
    elif OP == "lt":
        r = x < y
    elif OP == "le":
        r = x <= y
    elif OP == "gt":
        r = x > y
    elif OP == "ge":
        r = x >= y
    elif OP == "eq":
        r = x == y
    else:
        r = x != y
    tl.store(out_ptr + offs, r, mask=m)


INT_TYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
FLOAT_TYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INT_OPS = ["add", "sub", "mul", "floordiv", "mod", "and", "or", "xor", "min", "max", "lt", "le", "gt", "ge",
           "eq", "ne", "shl", "shr"]
FLOAT_OPS = ["add", "sub", "mul", "div", "min", "max", "lt", "le", "gt", "ge", "eq", "ne", "mod"]


def _operands(dtype, op, n=300):
    g = torch.Generator().manual_seed(0)
    if dtype.is_floating_point:
        x = torch.randn(n, generator=g).to(dtype)
        y = torch.randn(n, generator=g).to(dtype)
        x[::7] = y[::7]
        return x, y
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -100), min(info.max, 100)
    x = torch.randint(lo, hi, (n,), generator=g).to(dtype)
    y = torch.randint(lo, hi, (n,), generator=g).to(dtype)
    if op in ("shl", "shr"):
        y = torch.randint(0, 8, (n,), generator=g).to(dtype)
    if op in ("floordiv", "mod"):
        y[y == 0] = 3
    x[::7] = y[::7]
    return x, y


@pytest.mark.parametrize("dtype", INT_TYPES + FLOAT_TYPES, ids=str)
def test_binary_ops_match_interpreter(dtype):
    """Every binary operator on every type, bit-exact against Triton's interpreter."""
    ops = FLOAT_OPS if dtype.is_floating_point else INT_OPS
    n = 300
    for op in ops:
        if dtype == torch.bfloat16 and op in ("div", "mod"):
            continue  # the interpreter computes bf16 div/mod in fp32 without rounding in between
        x, y = _operands(dtype, op, n)
        out_dtype = torch.bool if op in ("lt", "le", "gt", "ge", "eq", "ne") else dtype
        if dtype == torch.bfloat16:
            # The interpreter cannot hold bf16 (numpy has none): compare with torch instead.
            ref = {"add": x + y, "sub": x - y, "mul": x * y, "min": torch.minimum(x, y),
                   "max": torch.maximum(x, y), "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y,
                   "eq": x == y, "ne": x != y}[op]
        else:
            ref = torch.empty(n, dtype=out_dtype)
            interpreted(binop_kernel)[(2,)](x, y, ref, n, OP=op, BLOCK=256)
        out = torch.empty(n, dtype=out_dtype)
        binop_kernel[(2,)](x, y, out, n, OP=op, BLOCK=256)
        if dtype.is_floating_point and op == "mod":
            torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3, msg=f"op {op}")
        else:
            assert torch.equal(out, ref), f"op {op} on {dtype}"


@triton.jit
def unsigned_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.uint32)
    y = tl.load(y_ptr + offs).to(tl.uint32)
    if OP == "div":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "shr":
        r = x >> (y & 31)
    elif OP == "lt":
        r = (x < y).to(tl.uint32)
    else:
        r = tl.maximum(x, y)
    tl.store(out_ptr + offs, r.to(tl.int32, bitcast=True))


@pytest.mark.parametrize("op", ["div", "mod", "shr", "lt", "max"])
def test_unsigned_ops(op, interp):
    x = torch.randint(-2**31, 2**31 - 1, (64,), dtype=torch.int32)
    y = torch.randint(1, 2**31 - 1, (64,), dtype=torch.int32)
    y[::3] *= -1
    out, ref = torch.empty_like(x), torch.empty_like(x)
    unsigned_kernel[(1,)](x, y, out, OP=op, BLOCK=64)
    interp(unsigned_kernel)[(1,)](x, y, ref, OP=op, BLOCK=64)
    assert torch.equal(out, ref)


@triton.jit
def div_by_zero_kernel(x_ptr, y_ptr, q_ptr, r_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(q_ptr + offs, x // y)
    tl.store(r_ptr + offs, x % y)


def test_integer_division_by_zero_does_not_trap():
    """x86 traps on these; the backend defines them (see codegen/llvm_emitter.py)."""
    x = torch.tensor([7, -7, -2**31, 5, 0, -2**31, 9, 1], dtype=torch.int32)
    y = torch.tensor([0, 0, -1, 2, 0, 1, -2, 1], dtype=torch.int32)
    q, r = torch.empty_like(x), torch.empty_like(x)
    div_by_zero_kernel[(1,)](x, y, q, r, BLOCK=8)
    nz = y != 0
    nz[2] = False  # INT_MIN // -1
    # Triton's // and % truncate toward zero (C semantics), unlike torch's floor division.
    assert torch.equal(q[nz], torch.div(x[nz], y[nz], rounding_mode="trunc"))
    assert torch.equal(r[nz], x[nz] - torch.div(x[nz], y[nz], rounding_mode="trunc") * y[nz])
    assert q[0] == 0 and q[1] == 0 and r[0] == 7 and r[1] == -7 and q[4] == 0
    assert q[2] == -2**31 and r[2] == 0


CAST_TYPES = [torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
              torch.float16, torch.bfloat16, torch.float32, torch.float64]
TORCH_TO_TL = {torch.bool: tl.int1, torch.int8: tl.int8, torch.int16: tl.int16, torch.int32: tl.int32,
               torch.int64: tl.int64, torch.uint8: tl.uint8, torch.float16: tl.float16,
               torch.bfloat16: tl.bfloat16, torch.float32: tl.float32, torch.float64: tl.float64}


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x.to(DST), mask=m)


@pytest.mark.parametrize("src", CAST_TYPES, ids=str)
def test_casts(src):
    """Every cast between the supported types, against torch's conversion."""
    n = 200
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(n, generator=g) * 50).to(src) if src != torch.bool else torch.rand(n, generator=g) > 0.5
    for dst in CAST_TYPES:
        out = torch.empty(n, dtype=dst)
        cast_kernel[(1,)](x, out, n, DST=TORCH_TO_TL[dst], BLOCK=256)
        if src.is_floating_point and not dst.is_floating_point and dst != torch.bool:
            # Out-of-range float -> int is undefined in C/torch; compare where defined.
            info = torch.iinfo(dst)
            ok = (x.double() > info.min) & (x.double() < info.max)
            assert torch.equal(out[ok], x[ok].to(dst)), f"{src} -> {dst}"
        else:
            assert torch.equal(out, x.to(dst)), f"{src} -> {dst}"


@triton.jit
def bitcast_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.to(tl.int32, bitcast=True) ^ 0x0F0F)


def test_bitcast():
    x = torch.randn(64)
    out = torch.empty(64, dtype=torch.int32)
    bitcast_kernel[(1,)](x, out, BLOCK=64)
    assert torch.equal(out, x.view(torch.int32) ^ 0x0F0F)


@triton.jit
def bf16_bitcast_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.to(tl.int16, bitcast=True))


def test_bf16_bitcast():
    x = torch.randn(32).to(torch.bfloat16)
    out = torch.empty(32, dtype=torch.int16)
    bf16_bitcast_kernel[(1,)](x, out, BLOCK=32)
    assert torch.equal(out, x.view(torch.int16))


# name -> (Triton expression, torch reference, input range)
MATH = {
    "exp": ("tl.exp(x)", torch.exp, (-5, 5)),
    "exp2": ("tl.exp2(x)", torch.exp2, (-5, 5)),
    "log": ("tl.log(x)", torch.log, (0.01, 100)),
    "log2": ("tl.log2(x)", torch.log2, (0.01, 100)),
    "sqrt": ("tl.sqrt(x)", torch.sqrt, (0, 100)),
    "sqrt_rn": ("tl.sqrt_rn(x)", torch.sqrt, (0, 100)),
    "rsqrt": ("tl.rsqrt(x)", torch.rsqrt, (0.01, 100)),
    "sin": ("tl.sin(x)", torch.sin, (-10, 10)),
    "cos": ("tl.cos(x)", torch.cos, (-10, 10)),
    "floor": ("tl.floor(x)", torch.floor, (-10, 10)),
    "ceil": ("tl.ceil(x)", torch.ceil, (-10, 10)),
    "erf": ("tl.erf(x)", torch.erf, (-3, 3)),
    "abs": ("tl.abs(x)", torch.abs, (-10, 10)),
    "div_rn": ("tl.div_rn(x, 3.0)", lambda x: x / 3.0, (-10, 10)),
}


@triton.jit
def math_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, UPCAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    if UPCAST:  # Triton's math functions take fp32/fp64 only: half types compute in fp32
        x = x.to(tl.float32)
    tl.store(out_ptr + offs, FN(x), mask=m)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", list(MATH))
def test_math(name, dtype):
    _, ref, (lo, hi) = MATH[name]
    n = 1000
    x = (torch.rand(n, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    out = torch.empty(n, dtype=dtype)
    if dtype == torch.float64 and name in ("sqrt_rn", "div_rn"):
        pytest.skip("Triton defines sqrt_rn/div_rn for fp32 only")
    upcast = dtype in (torch.float16, torch.bfloat16) and name != "abs"
    math_kernel[(1,)](x, out, n, FN=_MATH_JIT[name], UPCAST=upcast, BLOCK=1024)
    expected = ref(x.double()).to(dtype)
    tol = {torch.float32: 4e-6, torch.float64: 1e-13, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    torch.testing.assert_close(out, expected, rtol=tol, atol=tol)


# One @triton.jit helper per function (constexpr function arguments must be JIT functions).
_MATH_JIT = {}
for _name in MATH:
    _src = MATH[_name][0]
    _ns = {"tl": tl, "triton": triton}
    _code = f"def _math_{_name}(x):\n    return {_src}\n"
    import linecache
    _fname = f"<math_{_name}>"
    linecache.cache[_fname] = (len(_code), None, _code.splitlines(True), _fname)
    exec(compile(_code, _fname, "exec"), _ns)
    _MATH_JIT[_name] = triton.jit(_ns[f"_math_{_name}"])


@triton.jit
def fma_kernel(a_ptr, b_ptr, c_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = tl.load(c_ptr + offs)
    tl.store(out_ptr + offs, tl.fma(a, b, c))


def test_fma():
    a, b, c = torch.randn(128, dtype=torch.float64), torch.randn(128, dtype=torch.float64), torch.randn(128, dtype=torch.float64)
    out = torch.empty(128, dtype=torch.float64)
    fma_kernel[(1,)](a, b, c, out, BLOCK=128)
    torch.testing.assert_close(out, torch.addcmul(c, a, b), rtol=1e-15, atol=1e-15)


@triton.jit
def int_abs_minmax_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.abs(x) + tl.minimum(x, y) * 3 - tl.maximum(x, y))


def test_int_abs_min_max():
    x = torch.randint(-1000, 1000, (64,), dtype=torch.int64)
    y = torch.randint(-1000, 1000, (64,), dtype=torch.int64)
    out = torch.empty_like(x)
    int_abs_minmax_kernel[(1,)](x, y, out, BLOCK=64)
    assert torch.equal(out, x.abs() + torch.minimum(x, y) * 3 - torch.maximum(x, y))


@triton.jit
def grid3d_kernel(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(2)
    lin = (z * ny + y) * nx + x
    tl.store(out_ptr + lin * 6 + 0, x)
    tl.store(out_ptr + lin * 6 + 1, y)
    tl.store(out_ptr + lin * 6 + 2, z)
    tl.store(out_ptr + lin * 6 + 3, nx)
    tl.store(out_ptr + lin * 6 + 4, ny)
    tl.store(out_ptr + lin * 6 + 5, nz)


def test_program_id_and_num_programs_3d():
    gx, gy, gz = 5, 3, 2
    out = torch.full((gz, gy, gx, 6), -1, dtype=torch.int32)
    grid3d_kernel[(gx, gy, gz)](out)
    zz, yy, xx = torch.meshgrid(torch.arange(gz), torch.arange(gy), torch.arange(gx), indexing="ij")
    expected = torch.stack([xx, yy, zz, torch.full_like(xx, gx), torch.full_like(xx, gy),
                            torch.full_like(xx, gz)], dim=-1).to(torch.int32)
    assert torch.equal(out, expected)


@triton.jit
def copy2d_kernel(x_ptr, out_ptr, M, N, sxm, sxn, som, son, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask, other=-7.0)
    y = tl.where(x > 0, x * 2.0, x - 1.0)
    tl.store(out_ptr + rm[:, None] * som + rn[None, :] * son, y, mask=mask)


@pytest.mark.parametrize("transpose_in, transpose_out", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("M, N", [(37, 53), (64, 64), (1, 100)])
def test_2d_strided(M, N, transpose_in, transpose_out, interp):
    x = torch.randn(N, M).t() if transpose_in else torch.randn(M, N)
    out = torch.empty(N, M).t() if transpose_out else torch.empty(M, N)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 32))
    copy2d_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BM=16, BN=32)
    assert torch.equal(out, torch.where(x > 0, x * 2.0, x - 1.0))
    ref = torch.empty_like(out)
    interp(copy2d_kernel)[grid](x, ref, M, N, x.stride(0), x.stride(1), ref.stride(0), ref.stride(1),
                                BM=16, BN=32)
    assert torch.equal(out, ref)


@triton.jit
def masked_other_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=42.0)
    tl.store(out_ptr + offs, x)


def test_masked_load_other_never_touches_masked_lanes():
    n = 10
    # The input ends exactly at n elements: reading lane n+ would read beyond it.
    x = torch.randn(n)
    out = torch.empty(64)
    masked_other_kernel[(1,)](x, out, n, BLOCK=64)
    assert torch.equal(out[:n], x)
    assert torch.all(out[n:] == 42.0)


@triton.jit
def kernel_3d(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * B * C + b * C + c)
    # Store transposed: (c, b, a) layout, a gather/scatter pattern.
    tl.store(out_ptr + c * A * B + b * A + a, x + 1)


def test_3d_permuted_store():
    A, B, C = 4, 8, 16
    x = torch.randn(A, B, C)
    out = torch.empty(C, B, A)
    kernel_3d[(1,)](x, out, A=A, B=B, C=C)
    assert torch.equal(out, (x + 1).permute(2, 1, 0))


@triton.jit
def shape_ops_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    r = tl.reshape(x, (BLOCK // 8, 8))
    r = r + tl.full((BLOCK // 8, 8), 2.0, tl.float32) + tl.zeros((BLOCK // 8, 8), tl.float32)
    v = r.reshape(BLOCK)
    e = tl.expand_dims(v, 0)
    b = tl.broadcast_to(e, (2, BLOCK))
    rows = tl.arange(0, 2)[:, None]
    tl.store(out_ptr + rows * BLOCK + offs[None, :], b + rows.to(tl.float32))


def test_shape_ops():
    x = torch.randn(64)
    out = torch.empty(2, 64)
    shape_ops_kernel[(1,)](x, out, BLOCK=64)
    r = x + 2.0
    assert torch.equal(out, torch.stack([r, r + 1.0]))


@triton.jit
def int_to_ptr_kernel(addr, out_addr, n, BLOCK: tl.constexpr):
    p = addr.to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(p + offs, mask=m)
    q = out_addr.to(tl.pointer_type(tl.float32))
    tl.store(q + offs, x * 3.0, mask=m)


def test_int_to_ptr():
    x = torch.randn(100)
    out = torch.zeros(100)
    int_to_ptr_kernel[(1,)](x.data_ptr(), out.data_ptr(), 100, BLOCK=128)
    assert torch.equal(out, x * 3.0)


@triton.jit
def ptr_to_int_kernel(x_ptr, out_ptr):
    tl.store(out_ptr, x_ptr.to(tl.int64, bitcast=True))
    tl.store(out_ptr + 1, (x_ptr + 3).to(tl.int64, bitcast=True))


def test_ptr_to_int():
    x = torch.randn(8)
    out = torch.zeros(2, dtype=torch.int64)
    ptr_to_int_kernel[(1,)](x, out)
    assert out[0] == x.data_ptr() and out[1] == x.data_ptr() + 12


@triton.jit
def scalar_ctrl_kernel(x_ptr, out_ptr, n, flag, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = 0.0
    for i in range(n):
        acc += i * 0.5
    if flag > 0:
        s = acc * 2
    else:
        s = acc - 1
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + s)
    v = tl.load(x_ptr + pid)
    tl.store(out_ptr + pid * BLOCK, v * 10)


@pytest.mark.parametrize("flag", [1, -1])
def test_scalar_control_flow(flag, interp):
    x = torch.randn(256)
    out, ref = torch.empty(256), torch.empty(256)
    scalar_ctrl_kernel[(2,)](x, out, 10, flag, BLOCK=128)
    interp(scalar_ctrl_kernel)[(2,)](x, ref, 10, flag, BLOCK=128)
    assert torch.equal(out, ref)


@triton.jit
def scalar_ptr_kernel(x_ptr, out_ptr, n):
    # Scalar loads and stores, with a scalar mask.
    for i in range(n):
        v = tl.load(x_ptr + i, mask=i < n - 1, other=-1.0)
        tl.store(out_ptr + i, v + 1.0, mask=i > 0)


def test_scalar_load_store():
    x = torch.randn(10)
    out = torch.zeros(10)
    scalar_ptr_kernel[(1,)](x, out, 10)
    expected = x + 1.0
    expected[0] = 0.0
    expected[-1] = 0.0
    assert torch.equal(out, expected)


@triton.jit
def where_scalar_kernel(x_ptr, out_ptr, thr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.where(thr > 0, x, -x)
    z = tl.where(x > thr, y, 0.0)
    tl.store(out_ptr + offs, z)


@pytest.mark.parametrize("thr", [0.5, -0.5])
def test_where(thr):
    x = torch.randn(64)
    out = torch.empty(64)
    where_scalar_kernel[(1,)](x, out, thr, BLOCK=64)
    y = x if thr > 0 else -x
    assert torch.equal(out, torch.where(x > thr, y, torch.zeros_like(x)))


@triton.jit
def broadcast_load_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # Every lane reads the same element: one scalar load, broadcast.
    x = tl.load(x_ptr + offs * 0)
    tl.store(out_ptr + offs, x + offs.to(tl.float32))


def test_broadcast_load():
    x = torch.tensor([2.5])
    out = torch.empty(64)
    broadcast_load_kernel[(1,)](x, out, BLOCK=64)
    assert torch.equal(out, 2.5 + torch.arange(64, dtype=torch.float32))


@triton.jit
def while_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Collatz steps of n, a data-dependent scalar while loop.
    steps = 0
    v = n
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + steps)


@pytest.mark.parametrize("n", [1, 6, 27])
def test_scalar_while_loop(n, interp):
    x = torch.arange(16, dtype=torch.int32)
    out, ref = torch.empty_like(x), torch.empty_like(x)
    while_kernel[(1,)](x, out, n, BLOCK=16)
    interp(while_kernel)[(1,)](x, ref, n, BLOCK=16)
    assert torch.equal(out, ref)


@pytest.mark.parametrize("block", [1, 2, 4, 8, 32])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_math_small_blocks(block, dtype):
    """Vectors narrower than the host's registers use the narrower libmvec variants (or libm)."""
    x = torch.rand(block, dtype=dtype) * 4 - 2
    for name in ("exp", "sin", "erf", "log2"):
        xi = x.abs() + 0.5 if name == "log2" else x
        out = torch.empty_like(xi)
        math_kernel[(1,)](xi, out, block, FN=_MATH_JIT[name], UPCAST=False, BLOCK=block)
        tol = 4e-6 if dtype == torch.float32 else 1e-13
        torch.testing.assert_close(out, MATH[name][1](xi.double()).to(dtype), rtol=tol, atol=tol)


@triton.jit
def downcast_kernel(x_ptr, rtne_ptr, rtz_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(rtne_ptr + offs, x.to(rtne_ptr.dtype.element_ty, fp_downcast_rounding="rtne"))
    tl.store(rtz_ptr + offs, x.to(rtz_ptr.dtype.element_ty, fp_downcast_rounding="rtz"))


@pytest.mark.parametrize("dst", [torch.float16, torch.bfloat16], ids=str)
def test_downcast_rounding_modes(dst):
    x = torch.randn(256) * 100
    rtne, rtz = torch.empty(256, dtype=dst), torch.empty(256, dtype=dst)
    downcast_kernel[(1,)](x, rtne, rtz, BLOCK=256)
    assert torch.equal(rtne, x.to(dst))
    # Round toward zero: never larger in magnitude, and within one ulp below.
    assert torch.all(rtz.float().abs() <= x.abs())
    nxt = torch.nextafter(rtz, torch.where(x > 0, torch.tensor(float("inf")), torch.tensor(float("-inf"))).to(dst))
    assert torch.all(nxt.float().abs() > x.abs())


@pytest.mark.parametrize("dst", [torch.float16, torch.bfloat16], ids=str)
def test_downcast_rtz_at_the_edges(dst):
    """Finite values beyond the target's range round toward zero to its largest finite
    value (not infinity); infinities, NaN, zeros and the largest finite values stay."""
    big = torch.finfo(dst).max
    vals = [70000.0, 1e30, 3.4e38, big, 65519.0, 65520.0, float("inf"), 0.0, -0.0, float("nan"), 1.0, 1e-30]
    x = torch.tensor(vals + [-v for v in vals], dtype=torch.float32)
    x = torch.cat([x, torch.zeros(64 - x.numel())])
    rtne, rtz = torch.empty(64, dtype=dst), torch.empty(64, dtype=dst)
    downcast_kernel[(1,)](x, rtne, rtz, BLOCK=64)
    # Reference: round to nearest (torch), then one step toward zero where that went away from zero.
    near = x.to(dst)
    away = near.double().abs() > x.double().abs()
    ref = torch.where(away, torch.nextafter(near, torch.zeros_like(near)), near)
    nan = ref.isnan()
    assert torch.equal(rtz.isnan(), nan)
    assert torch.equal(rtz[~nan].view(torch.int16), ref[~nan].view(torch.int16)), (x, rtz, ref)


def test_downcast_nans_stay_nans():
    """A NaN whose payload bits all lie in the half that bf16 drops is still a NaN after
    either rounding (the high half alone would be an infinity); fp16 likewise."""
    payloads = [0x7F800001, 0xFF800001, 0x7F80FFFF, 0x7FC00000, 0x7FBFFFFF]
    bits = torch.tensor(payloads + [0x3F800000] * (64 - len(payloads)), dtype=torch.int64).to(torch.int32)
    x = bits.view(torch.float32)
    for dst in (torch.bfloat16, torch.float16):
        rtne, rtz = torch.empty(64, dtype=dst), torch.empty(64, dtype=dst)
        downcast_kernel[(1,)](x, rtne, rtz, BLOCK=64)
        assert torch.equal(rtne.isnan(), x.isnan()), (dst, rtne)
        assert torch.equal(rtz.isnan(), x.isnan()), (dst, rtz)


@triton.jit
def copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_bf16_copy_moves_bits():
    """A bf16 load and store move the 16 bits, as a GPU's do: signaling and quiet NaNs with
    their payloads, subnormals, infinities (an emitted store does not round its value again)."""
    patterns = [0x7F81, 0xFF81, 0x7FC1, 0x7FFF, 0x0001, 0x8001, 0x7F80, 0xFF80, 0x3F80]
    bits = torch.tensor((patterns * 4)[:32], dtype=torch.int32).to(torch.int16)
    out = torch.empty(32, dtype=torch.bfloat16)
    copy_kernel[(1,)](bits.view(torch.bfloat16), out, BLOCK=32)
    assert torch.equal(out.view(torch.int16), bits)


@triton.jit
def clamp_kernel(x_ptr, out_ptr, lo, hi, PROPAGATE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if PROPAGATE:
        y = tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL)
    else:
        y = tl.clamp(x, lo, hi)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("propagate", [False, True])
def test_clamp_nan_modes(propagate):
    x = torch.randn(64) * 3
    x[::5] = float("nan")
    out = torch.empty(64)
    clamp_kernel[(1,)](x, out, -1.0, 1.0, PROPAGATE=propagate, BLOCK=64)
    nan = x.isnan()
    assert torch.equal(out[~nan], x[~nan].clamp(-1.0, 1.0))
    if propagate:
        assert out[nan].isnan().all()
    else:
        assert not out[nan].isnan().any()


@triton.jit
def row_tile_copy_kernel(x_ptr, o_ptr, N, TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    m = tl.arange(0, TILE_M)
    n = tl.arange(0, TILE_N)
    t = tl.load(x_ptr + m[:, None] * N + n[None, :])
    tl.store(o_ptr + m[:, None] * TILE_N + n[None, :], t)


@pytest.mark.parametrize("N", [5, 6, 7, 8, 17])
def test_rows_at_a_runtime_stride_are_not_assumed_aligned(N):
    """Row m starts at m * N elements: with N odd or 6, rows are only 4-byte aligned. (The
    axis analysis gave the broadcast row index arange's divisibility, and the aligned
    vector load faulted: found in FlagGems' softmax backward and bmm.)"""
    x = torch.randn(4, N)
    out = torch.empty(4, 4)
    row_tile_copy_kernel[(1,)](x, out, N, TILE_M=4, TILE_N=4)
    assert torch.equal(out, x[:, :4])


@triton.jit
def _mul_add(x_ptr, y_ptr, z_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs) * tl.load(y_ptr + offs) + tl.load(z_ptr + offs))


@pytest.mark.skipif(not triton_cpu.llvm.host().has("fma"), reason="the host has no fma instruction to contract into")
@pytest.mark.parametrize("fusion", [True, False])
def test_enable_fp_fusion(fusion):
    # (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 exactly; rounding the product first loses it.
    # With enable_fp_fusion (the default, as on GPUs) a * b + c is one fma; without, two
    # roundings, as torch computes it in fp32.
    n = 16
    a = torch.full((n, ), 1 + 2.0**-12)
    c = torch.full((n, ), -(1 + 2.0**-11))
    o = torch.empty(n)
    _mul_add[(1, )](a, a, c, o, N=n, enable_fp_fusion=fusion)
    if fusion:
        exact = (a.double() * a.double() + c.double()).float()
        assert torch.equal(o, exact) and o[0].item() == 2.0**-24
    else:
        assert torch.equal(o, a * a + c) and o[0].item() == 0.0
