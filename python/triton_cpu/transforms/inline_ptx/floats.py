"""Floating-point instructions: f32 and f64 arithmetic, the GPU's approximations, and f16 /
bf16 arithmetic, scalar and packed two to a register (`.f16x2`, `.bf16x2`).

    add sub mul [.rn]       arith.addf/subf/mulf; without a rounding modifier PTX lets them
                            contract into an fma (as `enable_fp_fusion` does here); `.rn`
                            ones carry `tcpu.no_contract` and never do
    fma.rn, mad.rn          math.fma
    div.rn                  tt.precise_divf (correctly rounded); div.full/approx: arith.divf
    rcp.rn/approx           1 / x (correctly rounded)
    sqrt.rn/approx, rsqrt   math.sqrt, math.rsqrt
    ex2 lg2 sin cos tanh    .approx: math.exp2/log2/sin/cos/tanh, closer to the exact value
                            than the GPU's approximations
    abs neg copysign        exact
    min max                 PTX's rules: a NaN operand yields the other one (`.NaN`: a NaN),
                            -0 < +0; `.xorsign.abs`: min/max of the magnitudes, with the sign
                            of a XOR b
    .ftz                    f32 only: subnormal operands and results read and written as a
                            zero of their sign
    .sat                    the result clamped to [0, 1], NaN to 0

Half precision (add/sub/mul/fma/neg/abs/min/max and the ex2/tanh approximations on .f16,
.bf16 and their x2 forms) is computed per half in f32 and rounded to nearest even: exact for
neg/abs/min/max, within an ulp of the half type for ex2/tanh, correctly
rounded for add/sub/mul (f32 holds every product of two halves exactly, and its precision is
enough for a sum's double rounding to be innocuous). An fma rounds twice (to f32, then to the
half type), which can differ from the GPU's single rounding in the last bit when the f32
result is inexact and lands on a half-way point.
"""
from xdsl.dialects import math
from xdsl.dialects.builtin import UnitAttr

from triton_cpu.analysis.axis_info import element_type
from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith
from triton_cpu.dialects.tcpu import NO_CONTRACT

from .machine import BF16, F16, F32, FLOATS, TYPES, int_type
from .parse import PTXError

_FLT_MIN = 2.0**-126


def flush(m, x):
    """x with subnormals replaced by a zero of their sign (PTX .ftz)."""
    tiny = m.emit(arith.CmpfOp(m.emit(math.AbsFOp(x)), m.const(_FLT_MIN, F32), "olt"))
    return m.select(tiny, m.emit(math.CopySignOp(m.const(0.0, F32), x)), x)


def _exact(op):
    op.attributes[NO_CONTRACT] = UnitAttr()
    return op


def _reciprocal(m, x):
    return m.emit(arith.DivfOp(m.const(1.0, element_type(x.type)), x))


def _min_max(m, a, b, which: str, nan: bool, xorsign: bool):
    elem = element_type(a.type)
    ibits = int_type(32 if elem == F32 else 64)
    if xorsign:
        sign = m.emit(arith.XOrIOp(m.as_type(a, ibits), m.as_type(b, ibits)))
        a, b = m.emit(math.AbsFOp(a)), m.emit(math.AbsFOp(b))
    less = m.emit(arith.CmpfOp(a, b, "olt" if which == "min" else "ogt"))
    r = m.select(less, a, b)
    # Equal: the same value, or +0 and -0, of which min takes -0 (the OR of the bits) and max +0.
    both = (arith.OrIOp if which == "min" else arith.AndIOp)(m.as_type(a, ibits), m.as_type(b, ibits))
    r = m.select(m.emit(arith.CmpfOp(a, b, "oeq")), m.as_type(m.emit(both), elem), r)
    if nan:
        either = m.emit(arith.CmpfOp(a, b, "uno"))
        r = m.select(either, m.const(float("nan"), elem), r)
    else:
        r = m.select(m.emit(arith.CmpfOp(b, b, "uno")), a, r)
    if xorsign:
        top = m.iconst(1 << (32 if elem == F32 else 64) - 1, 32 if elem == F32 else 64)
        signed = m.emit(arith.OrIOp(m.as_type(r, ibits), m.emit(arith.AndIOp(sign, top))))
        r = m.as_type(signed, elem)
    return r


def saturate(m, x):
    """x clamped to [0, 1], NaN to 0 (PTX .sat on floats)."""
    elem = element_type(x.type)
    lo = m.select(m.emit(arith.CmpfOp(x, m.const(0.0, elem), "ugt")), x, m.const(0.0, elem))  # NaN -> 0
    return m.select(m.emit(arith.CmpfOp(lo, m.const(1.0, elem), "ogt")), m.const(1.0, elem), lo)


def _split(ins):
    """(base, modifiers, type) of a float instruction."""
    parts = ins.parts
    return parts[0], parts[1:-1], "." + parts[-1]


_ROUNDED = {"add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt"}
_APPROX = {"ex2": math.Exp2Op, "lg2": math.Log2Op, "sin": math.SinOp, "cos": math.CosOp, "tanh": math.TanhOp}


def _compute(m, ins, base, mods, elem, args):
    """The result of a scalar-typed float instruction on `args` (already flushed)."""
    rnd = next((p for p in mods if p in ("rn", "rz", "rm", "rp", "approx", "full")), None)
    if rnd in ("rz", "rm", "rp"):
        raise PTXError(f"'{ins.opcode}' (rounding mode .{rnd})")
    if base in ("add", "sub", "mul"):
        op = {"add": arith.AddfOp, "sub": arith.SubfOp, "mul": arith.MulfOp}[base](*args)
        return m.emit(_exact(op) if rnd == "rn" else op)
    if base in ("fma", "mad"):
        if rnd != "rn":
            raise PTXError(f"'{ins.opcode}' (without .rn)")
        return m.emit(math.FmaOp(*args))
    if base == "div":
        if rnd == "rn":
            return m.emit(tt.PreciseDivFOp(*args))
        if rnd in ("full", "approx"):
            return m.emit(arith.DivfOp(*args))
        raise PTXError(f"'{ins.opcode}'")
    if base == "rcp" and rnd in ("rn", "approx"):
        return _reciprocal(m, args[0])
    if base == "sqrt" and rnd in ("rn", "approx"):
        return m.emit(math.SqrtOp(args[0]))
    if base == "rsqrt" and rnd == "approx":
        return m.emit(math.RsqrtOp(args[0]))
    if base in _APPROX and rnd == "approx" and elem == F32 and not (base == "tanh" and "ftz" in mods):
        return m.emit(_APPROX[base](args[0]))
    if base == "abs":
        return m.emit(math.AbsFOp(args[0]))
    if base == "neg":
        return m.emit(arith.NegfOp(args[0]))
    if base == "copysign":
        return m.emit(math.CopySignOp(args[1], args[0]))
    if base in ("min", "max"):
        return _min_max(m, *args, base, "NaN" in mods, "xorsign" in mods)
    raise PTXError(f"'{ins.opcode}'")


_ARITY = {"add": 2, "sub": 2, "mul": 2, "fma": 3, "mad": 3, "div": 2, "rcp": 1, "sqrt": 1, "rsqrt": 1,
          "abs": 1, "neg": 1, "copysign": 2, "min": 2, "max": 2, **{k: 1 for k in _APPROX}}


def is_float(ins) -> bool:
    t = "." + ins.parts[-1]
    return t in TYPES and TYPES[t][1] in ("f", "fx2")


def instruction(m, ins):
    base, mods, t = _split(ins)
    if base not in _ARITY:
        raise PTXError(f"'{ins.opcode}'")
    n = _ARITY[base]
    if len(ins.operands) != n + 1:
        raise PTXError(f"'{ins.text}' ({len(ins.operands)} operands, {n + 1} expected)")
    unknown = [p for p in mods if p not in ("rn", "rz", "rm", "rp", "approx", "full", "ftz", "sat", "NaN",
                                             "xorsign", "abs")]
    if unknown or ("xorsign" in mods) != ("abs" in mods):
        raise PTXError(f"'{ins.opcode}'")
    if t in (".f32", ".f64"):
        elem = FLOATS[t]
        ftz = "ftz" in mods
        if ftz and elem != F32:
            raise PTXError(f"'{ins.opcode}'")
        args = [m.read(o, t) for o in ins.operands[1:]]
        if ftz:
            args = [flush(m, a) for a in args]
        r = _compute(m, ins, base, mods, elem, args)
        if ftz:
            r = flush(m, r)
        if "sat" in mods:
            r = saturate(m, r)
        m.write(ins.operands[0], r)
        return
    if base not in ("add", "sub", "mul", "fma", "neg", "abs", "min", "max", "ex2", "tanh"):
        raise PTXError(f"'{ins.opcode}'")
    # .ftz on halves: PTX has it for ex2 of bf16, whose results below 2^-126 it flushes.
    if "ftz" in mods and not (base == "ex2" and t.startswith(".bf16")):
        raise PTXError(f"'{ins.opcode}'")
    half = F16 if t.startswith(".f16") else BF16
    lanes = 2 if t.endswith("x2") else 1
    regs = [m.read(o, ".b32" if lanes == 2 else ".b16") for o in ins.operands[1:]]
    out = None
    for lane in range(lanes):
        args = []
        for r in regs:
            v = m.emit(arith.ShRUIOp(r, m.iconst(16, 32))) if lane else r
            v = m.emit(arith.TruncIOp(v, m.ty(int_type(16)))) if lanes == 2 else v
            args.append(m.emit(arith.ExtFOp(m.as_type(v, half), m.ty(F32))))
        y = _compute(m, ins, base, [p for p in mods if p != "ftz"], F32, args)
        if "ftz" in mods:
            y = flush(m, y)
        if "sat" in mods:
            y = saturate(m, y)
        bits = m.as_type(m.emit(arith.TruncFOp(y, m.ty(half))), int_type(16))
        if lanes == 1:
            out = bits
        else:
            wide = m.emit(arith.ExtUIOp(bits, m.ty(int_type(32))))
            out = wide if out is None else m.emit(arith.OrIOp(out, m.emit(arith.ShLIOp(wide, m.iconst(16, 32)))))
    m.write(ins.operands[0], out)
