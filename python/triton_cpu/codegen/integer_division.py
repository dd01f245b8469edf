"""Integer division and remainder of a vector by a value every lane shares, through a multiply.

x86 has no vector integer division: LLVM turns `sdiv <16 x i32> %x, %d` into sixteen scalar
`idiv`s with the lane extractions and insertions around them. Constant divisors are
LLVM's business (it multiplies by a magic number itself); this module handles the divisor
that is only known at run time but is the same in every lane, which is what kernels write
for index arithmetic over run-time sizes: tutorial 03's `(pid_m * BLOCK + tl.arange(0,
BLOCK)) % M`, Inductor's `xindex % ks0` and `xindex // ks0` under dynamic shapes.

The magic number is computed once per divisor (scalar code, which LLVM hoists out of the
loops the divisor is invariant in), then every lane costs a high multiply, a subtraction,
an add and shifts. For 32-bit unsigned n and d >= 1 (Granlund and Montgomery, "Division by
invariant integers using multiplication", 1994, the variant that is exact for every n):

    l = ceil(log2(d))                 (0 for d = 1)
    m = floor(2^32 * (2^l - d) / d) + 1     (fits in 32 bits: 2^l - d < d)
    t = (m * n) >> 32                 (the high half of the 64-bit product)
    q = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0)

Signed (truncating) division divides the magnitudes as unsigned 32-bit numbers (|INT_MIN|
is 2^31 there) and gives the quotient the sign of n xor d; the remainder is n - q * d in
wrapping arithmetic. The backend's defined results for the cases LLVM leaves undefined are
kept: x / 0 = 0 and x % 0 = x (the magic number is computed for 1 instead, and a select
on the divisor, which every lane shares, takes those), INT_MIN / -1 = INT_MIN and
INT_MIN % -1 = 0 (what the formulas give). Lanes narrower than 32 bits are widened to 32
(zero- or sign-extended) and narrowed back. 64-bit lanes (Inductor passes sizes as i64, so
its `xindex % ks0` divides i64 lanes) take the same formulas on 32-bit lanes where |d| and
every lane's |x| fit in 32 bits, checked per vector (the quotient's sign and the remainder
computed in 64 bits); a vector with a larger lane, or a larger divisor, is divided lane by
lane as LLVM does (no vector instruction gives the high half of a 64-bit product).

Measured (2-core Intel Xeon VM, 2 threads): a broadcast add over 2^22 fp32 with `offs % n`
(i32) 4.6-5.2 -> 1.9-2.1 ms, the same as without the remainder; `bench_inductor.py --only
"dynamic shapes"` (i64 sizes) 18.0-19.1 -> 8.5-8.8 ms, against 18.4-19.2 ms for Inductor's
C++ backend.

Checked against Python's integers on the edge values of every width and divisor sign and
on random values, both vector widths (python/test/test_integer_division.py).
"""
import llvmlite.ir as ir

from . import cgutils as cg


def applies(x: ir.Value, divisor: ir.Value | None) -> bool:
    """Whether `divide` takes `x` (a vector) by `divisor` (the scalar its lanes share, or
    None when they do not share one): integer lanes of 8 to 64 bits, a divisor that is not
    a constant (LLVM's own expansion handles those)."""
    return (divisor is not None and not isinstance(divisor, ir.Constant) and isinstance(x.type, ir.VectorType)
            and isinstance(x.type.element, ir.IntType) and 8 <= x.type.element.width <= 64)


def divide(b: ir.IRBuilder, x: ir.Value, d: ir.Value, signed: bool, rem: bool, general) -> ir.Value:
    """x / d (rem False) or x % d (rem True), truncating, for an integer vector `x` and the
    scalar `d` of the same element type (`applies`), with the backend's results for d = 0
    and INT_MIN / -1 (module docstring). `general()` emits the division LLVM's way: what a
    vector of 64-bit lanes takes when a magnitude does not fit in 32 bits."""
    t = x.type
    width = t.element.width
    if width < 32:  # widen: the 32-bit formulas are exact for the narrower values too
        v32 = ir.VectorType(cg.I32, t.count)
        x32 = b.sext(x, v32) if signed else b.zext(x, v32)
        d32 = b.sext(d, cg.I32) if signed else b.zext(d, cg.I32)
        return b.trunc(_divide(b, x32, d32, signed, rem), t)
    if width == 32:
        return _divide(b, x, d, signed, rem)
    # 64 bits: the 32-bit formulas where |x| and |d| fit in 32 bits (index arithmetic over
    # sizes Inductor passes as i64: `xindex % ks0`), checked per vector; else LLVM's.
    x_mag = _magnitude(b, x, signed)
    mag_d, _ = _magnitude(b, d, signed)
    high = ir.Constant(cg.I64, 32)
    d_fits = b.icmp_unsigned("==", b.lshr(mag_d, high), ir.Constant(cg.I64, 0))
    x_fits = b.icmp_unsigned("==", b.lshr(x_mag[0], cg.splat_const(t, high)), cg.splat_const(t, ir.Constant(cg.I64, 0)))
    return cg.branch_value(b, b.and_(d_fits, cg.every_lane(b, x_fits)), lambda: _divide(b, x, d, signed, rem, x_mag),
                           general, weights=(2000, 1), names=("idiv.magic", "idiv.lanes", "idiv.join"))


def _magnitude(b: ir.IRBuilder, v: ir.Value, signed: bool):
    """(|v| as an unsigned number, the sign mask: all ones where v < 0), or (v, None)."""
    if not signed:
        return v, None
    width = cg.scalar_of(v.type).width
    shift = ir.Constant(cg.scalar_of(v.type), width - 1)
    sign = b.ashr(v, cg.splat_const(v.type, shift) if isinstance(v.type, ir.VectorType) else shift)
    return b.sub(b.xor(v, sign), sign), sign  # INT_MIN -> 2^(width - 1) unsigned


def _divide(b: ir.IRBuilder, x: ir.Value, d: ir.Value, signed: bool, rem: bool, x_mag=None) -> ir.Value:
    """`divide` for lanes of 32 bits, or of 64 bits whose magnitudes (and d's) fit in 32;
    `x_mag`: x's `_magnitude`, when the caller has it already."""
    t = x.type
    elem = t.element
    n = t.count
    zero = ir.Constant(elem, 0)
    d_is_zero = b.icmp_unsigned("==", d, zero)
    mag_x, sign_x = x_mag or _magnitude(b, x, signed)
    mag_d, sign_d = _magnitude(b, d, signed)
    safe_d = b.select(d_is_zero, ir.Constant(elem, 1), mag_d)
    if elem.width == 64:
        mag_x, safe_d = b.trunc(mag_x, ir.VectorType(cg.I32, n)), b.trunc(safe_d, cg.I32)
    q = _unsigned_quotient(b, mag_x, *_magic(b, safe_d))
    if elem.width == 64:
        q = b.zext(q, t)
    if signed:  # the quotient's sign: that of x xor d
        s = b.xor(sign_x, cg.splat(b, sign_d, n))
        q = b.sub(b.xor(q, s), s)
    if rem:
        return b.select(d_is_zero, x, b.sub(x, b.mul(q, cg.splat(b, d, n))))
    return b.select(d_is_zero, cg.splat_const(t, zero), q)


def _magic(b: ir.IRBuilder, d: ir.Value):
    """(m, min(l, 1), max(l - 1, 0)) for the unsigned 32-bit divisor d >= 1, scalars."""
    one32 = ir.Constant(cg.I32, 1)
    lead = b.ctlz(b.sub(d, one32), ir.Constant(cg.I1, 0))  # ctlz(0) = 32: l = 0 for d = 1
    l = b.sub(ir.Constant(cg.I32, 32), lead)
    l64 = b.zext(l, cg.I64)
    d64 = b.zext(d, cg.I64)
    # (2^l - d) * 2^32 / d + 1, in 64 bits (2^l - d < 2^31 for l = 32, so no overflow)
    num = b.shl(b.sub(b.shl(ir.Constant(cg.I64, 1), l64), d64), ir.Constant(cg.I64, 32))
    m = b.trunc(b.add(b.udiv(num, d64), ir.Constant(cg.I64, 1)), cg.I32)
    zero32 = ir.Constant(cg.I32, 0)
    l_zero = b.icmp_unsigned("==", l, zero32)
    shift1 = b.select(l_zero, zero32, one32)
    shift2 = b.select(l_zero, zero32, b.sub(l, one32))
    return m, shift1, shift2


def _unsigned_quotient(b: ir.IRBuilder, x: ir.Value, m, shift1, shift2) -> ir.Value:
    """floor(x / d) for the unsigned 32-bit lanes of x, from d's magic number (_magic)."""
    n = x.type.count
    v64 = ir.VectorType(cg.I64, n)
    # the high half of m * x: LLVM's x86 back end selects vpmuludq for this pattern
    wide = b.mul(b.zext(x, v64), b.zext(cg.splat(b, m, n), v64))
    t = b.trunc(b.lshr(wide, cg.splat_const(v64, ir.Constant(cg.I64, 32))), x.type)
    q = b.add(t, b.lshr(b.sub(x, t), cg.splat(b, shift1, n)))
    return b.lshr(q, cg.splat(b, shift2, n))
