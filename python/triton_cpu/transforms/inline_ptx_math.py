"""inline-ptx-math: a `tt.elementwise_inline_asm` whose PTX is one arithmetic instruction
becomes the ops that compute it.

Runs on TTIR, first. GPU kernels call the hardware's fast approximations and exactly rounded
operations through inline PTX, `tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f",
[x], ...)` (tanh-GELU and sigmoid kernels, Mamba-3's rotary and gating code, MoE activations,
MX scale computation). A CPU cannot run PTX, but each of these instructions is a function
with a documented result, and the CPU computes it (the approximations closer to the exact
value than the GPU's):

    tanh.approx.f32                 math.tanh     (PTX: relative error up to ~2^-11)
    ex2.approx[.ftz].f32            math.exp2     (~2 ulp)
    lg2.approx[.ftz].f32            math.log2     (absolute error ~2^-22 near 1)
    sin.approx[.ftz].f32, cos...    math.sin/cos  (absolute error ~2^-21 on [-pi, pi])
    rcp.approx[.ftz].f32, rcp.rn.f32        1 / x (arith.divf, correctly rounded)
    sqrt.approx[.ftz].f32, sqrt.rn.f32      math.sqrt
    rsqrt.approx[.ftz].f32                  math.rsqrt
    mov.b32 / mov.f32 / mov.u32 / mov.s32   the operand itself (a bitcast when the result
                                            type differs; GPU kernels use it as a barrier)
    add/sub/mul[.ftz].f32           arith.addf/subf/mulf: without a rounding modifier PTX
                                    lets them contract into an fma, as this backend's
                                    `enable_fp_fusion` does
    add/sub/mul.rn[.ftz].f32        the same, marked `tcpu.no_contract`: never contracted
                                    into an fma (the reason kernels write `.rn`)
    div.rn[.ftz].f32                tt.precise_divf (correctly rounded)
    div.full/approx[.ftz].f32       arith.divf (PTX: within 2 ulp)
    fma.rn[.ftz].f32                math.fma
    cvt.rp.satfinite.ue8m0x2.f32    two fp32 rounded up to powers of two, as the biased
                                    8-bit exponents of OCP MX scales, packed in 16 bits
                                    (the first operand in the high byte); see _ue8m0_rp

The form rewritten is exactly `<instr> $0, <src>, ...;` (any spacing, `;` optional): one
result, `pack = 1`, each source an argument `$k` or a float literal (`1.0`, `15.`, PTX's
`0f3F800000`), constraints `=f`/`=r` then `f`/`r` per argument (`=h` for the 16-bit result
of the ue8m0 conversion), fp32 arguments (32-bit ones for mov). `.ftz` ("flush to zero") is
kept: a subnormal operand is read as a zero of its sign and a subnormal result is written as
one, as the GPU does. Any other inline assembly (several instructions, predicates, packed
elements) is left alone and refused by convert-triton-to-tcpu with its kernel and line.
"""
import re
import struct
from dataclasses import dataclass
from typing import Callable

from xdsl.context import Context
from xdsl.dialects import math
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr, Float32Type, FloatAttr, IntegerAttr, IntegerType, ModuleOp, TensorType,
    UnitAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import element_type
from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith
from triton_cpu.dialects.tcpu import NO_CONTRACT

_F32 = Float32Type()
_I32 = IntegerType(32)
_I16 = IntegerType(16)
_FLT_MIN = 2.0**-126  # the smallest normal fp32


def _constant(like: SSAValue, value, elem=_F32) -> Operation:
    """A constant of element type `elem` in `like`'s shape (a splat for a tensor)."""
    if isinstance(like.type, TensorType):
        return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(elem, like.type.get_shape()), [value]))
    return arith.ConstantOp(FloatAttr(value, elem) if elem == _F32 else IntegerAttr(value, elem))


def _ue8m0_rp(a: SSAValue, b: SSAValue) -> list[Operation]:
    """cvt.rp.satfinite.ue8m0x2.f32 d, a, b: the codes of a (high byte) and b (low byte).
    A code c stands for 2^(c - 127), c = 0..254, and 255 for NaN. Each operand rounds up
    (toward +inf) to the nearest such power, saturating at 2^127 (satfinite: +inf too): for
    an fp32 of exponent field e and fraction f that is e, plus one when f is not zero, except
    for subnormals at most 2^-127 (f <= 2^22), which round to 2^-127 (code 0). A NaN gives
    255. A negative operand or zero rounds up to 2^-127, code 0: that is what rounding
    toward +inf to this format gives, but the kernels that use this instruction (MX scales:
    an absolute maximum over a block, divided by the element type's maximum) never pass a
    negative number, and no NVIDIA hardware was at hand to confirm that case."""
    ops: list[Operation] = []

    def emit(op):
        ops.append(op)
        return op.results[0]

    def const(like, v, elem=_I32):
        return emit(_constant(like, v, elem))

    def code(x):
        bits = emit(tt.BitcastOp(x, _retyped(x, _I32)))
        exp = emit(arith.AndIOp(emit(arith.ShRUIOp(bits, const(bits, 23))), const(bits, 255)))
        frac = emit(arith.AndIOp(bits, const(bits, 0x7FFFFF)))
        zero = const(bits, 0)
        above_half_min = emit(arith.CmpiOp(frac, const(bits, 0x400000), "ugt"))
        normal_inexact = emit(arith.AndIOp(emit(arith.CmpiOp(frac, zero, "ne")), emit(arith.CmpiOp(exp, zero, "ne"))))
        up = emit(arith.OrIOp(above_half_min, normal_inexact))
        c = emit(arith.MinUIOp(emit(arith.AddiOp(exp, emit(arith.ExtUIOp(up, _retyped(x, _I32))))), const(bits, 254)))
        c = emit(arith.SelectOp(emit(arith.CmpiOp(bits, zero, "slt")), zero, c))
        nan = emit(arith.CmpfOp(x, x, "uno"))
        c = emit(arith.SelectOp(nan, const(bits, 255), c))
        return c
    hi, lo = code(a), code(b)
    packed = emit(arith.OrIOp(emit(arith.ShLIOp(hi, const(hi, 8))), lo))
    emit(arith.TruncIOp(packed, _retyped(a, _I16)))
    return ops


def _retyped(x: SSAValue, elem):
    """x's type (tensor or scalar) with element type `elem`."""
    return TensorType(elem, x.type.get_shape()) if isinstance(x.type, TensorType) else elem


def _reciprocal(x):
    return [one := _constant(x, 1.0), arith.DivfOp(one, x)]


def _exact(op: Operation) -> list[Operation]:
    op.attributes[NO_CONTRACT] = UnitAttr()
    return [op]


@dataclass(frozen=True)
class _Instr:
    arity: int  # sources after $0
    build: Callable  # (*sources) -> ops; the last one's result is the value
    ftz: bool = True  # has a `.ftz` form (after its rounding mode)
    result: str = "f"  # the result's constraint letter: "f" (fp32) or "h" (16 bits)


# instruction without `.ftz` -> how it is computed
_INSTRS = {
    "tanh.approx.f32": _Instr(1, lambda x: [math.TanhOp(x)], ftz=False),
    "ex2.approx.f32": _Instr(1, lambda x: [math.Exp2Op(x)]),
    "lg2.approx.f32": _Instr(1, lambda x: [math.Log2Op(x)]),
    "sin.approx.f32": _Instr(1, lambda x: [math.SinOp(x)]),
    "cos.approx.f32": _Instr(1, lambda x: [math.CosOp(x)]),
    "rcp.approx.f32": _Instr(1, _reciprocal),
    "rcp.rn.f32": _Instr(1, _reciprocal),
    "sqrt.approx.f32": _Instr(1, lambda x: [math.SqrtOp(x)]),
    "sqrt.rn.f32": _Instr(1, lambda x: [math.SqrtOp(x)]),
    "rsqrt.approx.f32": _Instr(1, lambda x: [math.RsqrtOp(x)]),
    "add.f32": _Instr(2, lambda x, y: [arith.AddfOp(x, y)]),
    "sub.f32": _Instr(2, lambda x, y: [arith.SubfOp(x, y)]),
    "mul.f32": _Instr(2, lambda x, y: [arith.MulfOp(x, y)]),
    "add.rn.f32": _Instr(2, lambda x, y: _exact(arith.AddfOp(x, y))),
    "sub.rn.f32": _Instr(2, lambda x, y: _exact(arith.SubfOp(x, y))),
    "mul.rn.f32": _Instr(2, lambda x, y: _exact(arith.MulfOp(x, y))),
    "div.rn.f32": _Instr(2, lambda x, y: [tt.PreciseDivFOp(x, y)]),
    "div.full.f32": _Instr(2, lambda x, y: [arith.DivfOp(x, y)]),
    "div.approx.f32": _Instr(2, lambda x, y: [arith.DivfOp(x, y)]),
    "fma.rn.f32": _Instr(3, lambda x, y, z: [math.FmaOp(x, y, z)]),
    "cvt.rp.satfinite.ue8m0x2.f32": _Instr(2, _ue8m0_rp, ftz=False, result="h"),
}
_MOV = {"mov.b32", "mov.f32", "mov.u32", "mov.s32"}
_LITERAL = re.compile(r"^(?:0[fF](?P<hex>[0-9a-fA-F]{8})|(?P<dec>[+-]?(?:\d+\.\d*|\.\d+|\d+(?:\.\d*)?[eE][+-]?\d+)))$")


def _literal(text: str) -> float | None:
    """The value of a PTX fp32 literal (`1.0`, `15.`, `1e-3`, `0f3F800000`), or None."""
    m = _LITERAL.match(text)
    if m is None:
        return None
    if m.group("hex"):
        return struct.unpack("<f", bytes.fromhex(m.group("hex"))[::-1])[0]
    return struct.unpack("<f", struct.pack("<f", float(m.group("dec"))))[0]


def _parse(op) -> tuple[str, bool, list] | None:
    """(instruction without .ftz, whether .ftz, sources: argument indices or float literals)
    when `op` is one that this pass rewrites."""
    text = op.asm_string.data.strip()
    text = text[:-1].rstrip() if text.endswith(";") else text
    head = text.split(None, 1)
    if len(head) != 2 or op.packed_element.value.data != 1 or len(op.results) != 1 or not op.args:
        return None
    instr, rest = head
    operands = [o.strip() for o in rest.split(",")]
    if operands[0] != "$0":
        return None
    sources = []
    for o in operands[1:]:
        if re.fullmatch(r"\$\d+", o):
            k = int(o[1:])
            if not 1 <= k <= len(op.args):
                return None
            sources.append(k - 1)
        elif (value := _literal(o)) is not None:
            sources.append(value)
        else:
            return None
    ftz = ".ftz." in instr
    if ftz:
        instr = instr.replace(".ftz.", ".", 1)
    constraints = op.constraints.data.replace(" ", "").split(",")
    if instr in _MOV:
        if ftz or len(sources) != 1 or constraints not in (["=f", "f"], ["=r", "r"]) or sources[0] != 0:
            return None
        src, dst = element_type(op.args[0].type), element_type(op.results[0].type)
        return (instr, False, sources) if _bits(src) == 32 and _bits(dst) == 32 else None
    spec = _INSTRS.get(instr)
    if spec is None or (ftz and not spec.ftz) or len(sources) != spec.arity:
        return None
    if constraints[0] not in ({"=f", "=r"} if spec.result == "f" else {"=h"}) or len(constraints) != 1 + len(op.args) \
            or any(c not in ("f", "r") for c in constraints[1:]):
        return None
    if any(element_type(a.type) != _F32 for a in op.args):
        return None
    if element_type(op.results[0].type) != (_F32 if spec.result == "f" else _I16):
        return None
    return instr, ftz, sources


def _bits(t) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    return 32 if t == _F32 else 0


def _flush(x: SSAValue, before: Operation) -> SSAValue:
    """x with subnormals replaced by a zero of their sign (PTX .ftz)."""
    ops = [magnitude := math.AbsFOp(x), smallest := _constant(x, _FLT_MIN),
           tiny := arith.CmpfOp(magnitude, smallest, "olt"), zero := _constant(x, 0.0),
           signed := math.CopySignOp(zero, x), out := arith.SelectOp(tiny, signed, x)]
    _insert(ops, before)
    return out.result


def _insert(ops: list[Operation], before: Operation):
    """Inserts `ops` before `before`, with its source location (errors and debug lines)."""
    for new in ops:
        new.location = before.location
    before.parent_block().insert_ops_before(ops, before)


def _rewrite(op):
    found = _parse(op)
    if found is None:
        return
    instr, ftz, sources = found
    if instr in _MOV:
        x = y = op.args[0]
        if x.type != op.results[0].type:
            cast = tt.BitcastOp(x, op.results[0].type)
            _insert([cast], op)
            y = cast.results[0]
    else:
        values = []
        for s in sources:
            if isinstance(s, int):
                values.append(op.args[s])
            else:
                c = _constant(op.args[0], s)
                _insert([c], op)
                values.append(c.results[0])
        if ftz:
            values = [_flush(v, op) for v in values]
        ops = _INSTRS[instr].build(*values)
        _insert(ops, op)
        y = ops[-1].results[0]
        if ftz:
            y = _flush(y, op)
    op.results[0].replace_all_uses_with(y)
    op.detach()
    op.erase()


class InlinePTXMath(ModulePass):
    name = "inline-ptx-math"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for asm in [o for o in op.walk() if isinstance(o, tt.ElementwiseInlineAsmOp)]:
            _rewrite(asm)
