"""fp32 division of a vector by a value every lane shares, correctly rounded without `vdivps`.

`x / tl.sum(x)` (softmax), `acc / l_i[:, None]` (attention's last step) and their kin
divide each vector by one broadcast scalar s. A vector divide is the slowest arithmetic
instruction of the ISA (`vdivps zmm`: one every ~9 cycles on a Xeon "Emerald Rapids",
against two FMAs per cycle; a softmax row spent ~40% of its time there), while the
division by one s can be computed from its reciprocal once per s:

    y  = RN(1 / s)                 one scalar division, hoisted out of loops by LLVM
    q0 = RN(a * y)                 within an ulp or so of a / s
    r  = fma(-q0, s, a)            the exact residual a - s*q0
    q  = fma(r, y, q0)             RN(a / s)

q is the correctly rounded quotient (Markstein's theorem: y the correctly rounded
reciprocal, q0 close enough that r is exact), the same bits `fdiv` gives, as long as
nothing in between overflows, underflows or is special. The code takes that path when
|s| is in [2^-30, 2^30] and every lane of the vector has |q0| in [2^-60, 2^60] (then a, r
and q are normal numbers with room to spare, and no lane is zero, infinite or NaN), one
branch per vector; any other vector is divided by `fdiv`. Checked bit for bit against
`vdivps` on 2.5e9 random quotients of that domain (divisors with all-ones, near-all-ones
and near-one significands among them) and, in an earlier session, 2.7e11 more.

The cost per vector is a multiply, two FMAs, an absolute value and two compares instead
of the divide: tutorial 02's softmax over 4096 rows of 1024 fp32 in a warm cache, 2
threads, best of 300 calls, 1.03 -> 0.93 ms (its division pass: ~40% -> ~20% of the
kernel's samples, now bound by its streaming stores). After a cache flush the same kernel
is bound by memory and does not change (1.36-1.43 ms either way).
"""
from llvmlite import ir

from . import cgutils as cg

# The ranges of |s| and of |q0| where the reciprocal path is exact (see above).
S_MIN, S_MAX = 2.0**-30, 2.0**30
Q_MIN, Q_MAX = 2.0**-60, 2.0**60


def divide(builder: ir.IRBuilder, a: ir.Value, s: ir.Value, fallback) -> ir.Value:
    """a / s (IEEE, round to nearest) for an fp32 vector `a` and an fp32 scalar `s`;
    `fallback()` emits the plain division (the emitter's, which keeps LLVM from
    misjudging zero lanes) for the vectors the reciprocal path does not take."""
    b = builder
    vt = a.type
    n = vt.count
    y = b.fdiv(ir.Constant(cg.F32, 1.0), s)
    abs_s = cg.call_intrinsic(b, "llvm.fabs", [cg.F32], cg.F32, [s])
    s_ok = b.and_(b.fcmp_ordered(">=", abs_s, ir.Constant(cg.F32, S_MIN)),
                  b.fcmp_ordered("<=", abs_s, ir.Constant(cg.F32, S_MAX)))
    sv, yv = cg.splat(b, s, n), cg.splat(b, y, n)
    q0 = b.fmul(a, yv)  # no contraction flags: q0 must be the rounded product
    abs_q0 = cg.call_intrinsic(b, "llvm.fabs", [vt], vt, [q0])
    in_range = b.and_(b.fcmp_ordered(">=", abs_q0, cg.const(vt, Q_MIN)),
                      b.fcmp_ordered("<=", abs_q0, cg.const(vt, Q_MAX)))
    every = cg.every_lane(b, in_range)

    def reciprocal():
        r = cg.call_intrinsic(b, "llvm.fma", [vt], vt, [b.fneg(q0), sv, a])
        return cg.call_intrinsic(b, "llvm.fma", [vt], vt, [r, yv, q0])
    return cg.branch_value(b, b.and_(s_ok, every), reciprocal, fallback, weights=(2000, 1),
                           names=("div.reciprocal", "div.fdiv", "div.join"))
