"""8-bit (and 4-bit) floats: Triton's fp8 types and the element types of `tt.dot_scaled`.

On the CPU an fp8 value is its byte, in memory and in registers; only conversions
look inside it:

  * to a wider float: a lookup in a 256-entry table of the exact f32 values (a private
    global per format), then an exact widening or a rounding narrowing as usual;
  * from a wider float: the value is converted to f32 (exact from f16/bf16), rounded to
    the format's grid with integer-free float arithmetic (scale by a power of two, round
    to an integer: to nearest even, or toward zero for `rtz`) and assembled into bits.
    NaN stays NaN; values beyond the largest finite value, infinities included, saturate
    to it, as NVIDIA's `.satfinite` conversions that Triton uses do (and upstream's
    test_typeconvert_downcast_clamping requires). FNUZ formats have no negative zero. From f64 the value is first rounded to f32 (a double rounding that
    can differ from a direct conversion in the last bit of a tie).

Formats (exponent bits, mantissa bits, bias, special values):
  f8E4M3FN (fp8e4nv)     4, 3, 7   no inf; NaN = S.1111.111
  f8E5M2 (fp8e5)         5, 2, 15  IEEE-like: inf and NaNs at exponent 11111
  f8E4M3FNUZ (fp8e4b8)   4, 3, 8   no inf, no -0; NaN = 1.0000.000
  f8E5M2FNUZ (fp8e5b16)  5, 2, 16  no inf, no -0; NaN = 1.00000.00
  e2m1 (mxfp4, a nibble) 2, 1, 1   no inf, no NaN
"""
import functools
from dataclasses import dataclass

import llvmlite.ir as ir

from triton_cpu.codegen import cgutils as cg


@dataclass(frozen=True)
class Format:
    name: str
    ebits: int
    mbits: int
    bias: int
    kind: str  # "ieee", "fn" (no inf, all-ones NaN), "fnuz" (no inf, no -0, NaN = the sign bit
    #            alone) or "finite" (no inf, no NaN)

    @property
    def bits(self) -> int:
        return 1 + self.ebits + self.mbits

    def decode(self, code: int) -> float:
        sign = -1.0 if code >> (self.bits - 1) & 1 else 1.0
        e = code >> self.mbits & ((1 << self.ebits) - 1)
        m = code & ((1 << self.mbits) - 1)
        emax = (1 << self.ebits) - 1
        if self.kind == "fnuz" and code == 1 << (self.bits - 1):
            return float("nan")
        if self.kind == "ieee" and e == emax:
            return sign * float("inf") if m == 0 else float("nan")
        if self.kind == "fn" and e == emax and m == (1 << self.mbits) - 1:
            return float("nan")
        if e == 0:
            return sign * m * 2.0 ** (1 - self.bias - self.mbits)
        return sign * (1 + m / (1 << self.mbits)) * 2.0 ** (e - self.bias)

    @functools.cached_property  # (writes the instance __dict__: fine on a frozen dataclass)
    def max_finite(self) -> float:
        return max(abs(v) for v in map(self.decode, range(1 << self.bits)) if v == v and abs(v) != float("inf"))

    @functools.cached_property
    def max_finite_code(self) -> int:
        return next(c for c in range(1 << (self.bits - 1)) if self.decode(c) == self.max_finite)

    @property
    def nan_code(self) -> int:
        if self.kind == "fnuz":
            return 1 << (self.bits - 1)
        if self.kind == "fn":
            return (1 << (self.bits - 1)) - 1
        return ((1 << (self.ebits + 1)) - 1) << (self.mbits - 1)  # quiet NaN


FORMATS = {
    "f8E4M3FN": Format("f8E4M3FN", 4, 3, 7, "fn"),
    "f8E5M2": Format("f8E5M2", 5, 2, 15, "ieee"),
    "f8E4M3FNUZ": Format("f8E4M3FNUZ", 4, 3, 8, "fnuz"),
    "f8E5M2FNUZ": Format("f8E5M2FNUZ", 5, 2, 16, "fnuz"),
    "e2m1": Format("e2m1", 2, 1, 1, "finite"),  # decoded only (tt.dot_scaled)
}
# tt.dot_scaled's element-type keywords.
DOT_SCALED = {"e4m3": FORMATS["f8E4M3FN"], "e5m2": FORMATS["f8E5M2"], "e2m1": FORMATS["e2m1"]}


def format_of(t) -> Format | None:
    """The format of an xDSL fp8 type (scalar or vector element), or None."""
    t = getattr(t, "element_type", t)
    return FORMATS.get(getattr(t, "name", None))


def _table(module: ir.Module, fmt: Format) -> ir.GlobalVariable:
    name = f"__tcpu_{fmt.name}_to_f32"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    n = 1 << fmt.bits
    t = ir.ArrayType(cg.F32, n)
    g = ir.GlobalVariable(module, t, name=name)
    g.global_constant = True
    g.linkage = "private"
    g.align = 64
    g.initializer = ir.Constant(t, [ir.Constant(cg.F32, fmt.decode(c)) for c in range(n)])
    g.type = cg.PTR  # llvmlite types globals as typed pointers; LLVM 22 has opaque ones
    return g


def to_f32(b: ir.IRBuilder, x: ir.Value, fmt: Format) -> ir.Value:
    """The exact f32 value of fp8 bits `x` (i8 or a vector of i8; for e2m1, the low
    nibble of each byte)."""
    table = _table(b.module, fmt)

    def one(byte):
        idx = b.zext(b.and_(byte, ir.Constant(byte.type, (1 << fmt.bits) - 1)), cg.I64)
        return b.load(b.gep(table, [idx], source_etype=cg.F32), typ=cg.F32)

    return cg.map_lanes(b, one, [x], cg.F32)


def from_f32(b: ir.IRBuilder, x: ir.Value, fmt: Format, rtz: bool = False) -> ir.Value:
    """`x` (f32 or a vector of f32) rounded to `fmt`, as bits (i8 lanes); see the module
    docstring for the rounding and special values."""
    n = cg.lanes(x.type)
    vt = (lambda s: ir.VectorType(s, n)) if isinstance(x.type, ir.VectorType) else (lambda s: s)
    i32, f32, i8 = vt(cg.I32), vt(cg.F32), vt(cg.I8)
    c32 = lambda v: cg.const(i32, v)
    cf = lambda v: cg.const(f32, v)
    bits = b.bitcast(x, i32)
    a = cg.call_intrinsic(b, "llvm.fabs", [f32], f32, [x])
    # Grid spacing 2^(e - M) where e is the exponent of a, at least the smallest normal's.
    e = b.sub(b.and_(b.lshr(bits, c32(23)), c32(0xFF)), c32(127))
    e = cg.call_intrinsic(b, "llvm.smax", [i32], i32, [e, c32(1 - fmt.bias)])
    q = b.bitcast(b.shl(b.add(e, c32(127 - fmt.mbits)), c32(23)), f32)
    steps = cg.call_intrinsic(b, "llvm.trunc" if rtz else "llvm.roundeven", [f32], f32, [b.fdiv(a, q)])
    r = b.fmul(steps, q)  # exact: on the format's grid (maybe one binade up)
    rb = b.bitcast(r, i32)
    re = b.sub(b.lshr(rb, c32(23)), c32(127))
    normal = b.icmp_signed(">=", re, c32(1 - fmt.bias))
    normal_code = b.or_(b.shl(b.add(re, c32(fmt.bias)), c32(fmt.mbits)),
                        b.and_(b.lshr(rb, c32(23 - fmt.mbits)), c32((1 << fmt.mbits) - 1)))
    sub_code = b.fptoui(b.fdiv(r, cf(2.0 ** (1 - fmt.bias - fmt.mbits))), i32)
    code = b.select(normal, normal_code, sub_code)
    code = b.select(b.fcmp_ordered(">", r, cf(fmt.max_finite)), c32(fmt.max_finite_code), code)
    sign = b.and_(b.lshr(bits, c32(32 - fmt.bits)), c32(1 << (fmt.bits - 1)))
    if fmt.kind == "fnuz":  # no negative zero
        sign = b.select(b.icmp_unsigned("==", code, c32(0)), c32(0), sign)
    code = b.or_(code, sign)  # (an infinity is beyond the largest finite: saturated above)
    code = b.select(b.fcmp_unordered("uno", x, x), c32(fmt.nan_code), code)
    return b.trunc(code, i8)


def absolute(b: ir.IRBuilder, x: ir.Value, fmt: Format) -> ir.Value:
    """|x| on fp8 bits: the sign bit cleared (FNUZ NaN, the sign bit alone, stays NaN)."""
    sign = cg.const(x.type, 1 << (fmt.bits - 1))
    cleared = b.and_(x, cg.const(x.type, (1 << (fmt.bits - 1)) - 1))
    if fmt.kind == "fnuz":
        return b.select(b.icmp_unsigned("==", x, sign), x, cleared)
    return cleared
