"""inline-ptx-math: a `tt.elementwise_inline_asm` whose PTX is one math instruction becomes
the math op it approximates.

Runs on TTIR, first. GPU kernels call the hardware's fast approximations through inline PTX,
`tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [x], ...)` (tanh-GELU and
sigmoid kernels, Mamba-3's rotary and gating code). A CPU cannot run PTX, but each of these
instructions is a function with a documented error bound, and the CPU's own implementation
of that function is within it (closer to the exact value than the approximation is):

    tanh.approx.f32                 math.tanh     (PTX: relative error up to ~2^-11)
    ex2.approx[.ftz].f32            math.exp2     (~2 ulp)
    lg2.approx[.ftz].f32            math.log2     (absolute error ~2^-22 near 1)
    sin.approx[.ftz].f32, cos...    math.sin/cos  (absolute error ~2^-21 on [-pi, pi])
    rcp.approx[.ftz].f32, rcp.rn.f32        1 / x (arith.divf, correctly rounded)
    sqrt.approx[.ftz].f32, sqrt.rn.f32      math.sqrt
    rsqrt.approx[.ftz].f32                  math.rsqrt
    mov.b32 / mov.f32 / mov.u32 / mov.s32   the operand itself (a bitcast when the result
                                            type differs; GPU kernels use it as a barrier)

Only the exact form `<instr> $0, $1;` (any spacing, `;` optional) with one operand, one
result, `pack = 1`, the constraints `=f,f` or `=r,r` and fp32 operands (32-bit ones for mov)
is rewritten. `.ftz` ("flush to zero") is kept: a subnormal operand is read as a zero of its
sign and a subnormal result is written as one, as the GPU does. Any other inline assembly is
left alone and refused by convert-triton-to-tcpu with its kernel and line.
"""
import re

from xdsl.context import Context
from xdsl.dialects import math
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr, Float32Type, FloatAttr, IntegerType, ModuleOp, TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import element_type
from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith

_F32 = Float32Type()
_FLT_MIN = 2.0**-126  # the smallest normal fp32

_FORM = re.compile(r"^\s*(?P<instr>[a-z0-9.]+)\s+\$0\s*,\s*\$1\s*;?\s*$")


def _reciprocal(x):
    return [one := _constant(x, 1.0), arith.DivfOp(one, x)]


# instruction without `.ftz` -> the ops it becomes, built on the operand (the last one's
# result is its value)
_MATH = {
    "tanh.approx.f32": lambda x: [math.TanhOp(x)],
    "ex2.approx.f32": lambda x: [math.Exp2Op(x)],
    "lg2.approx.f32": lambda x: [math.Log2Op(x)],
    "sin.approx.f32": lambda x: [math.SinOp(x)],
    "cos.approx.f32": lambda x: [math.CosOp(x)],
    "rcp.approx.f32": _reciprocal,
    "rcp.rn.f32": _reciprocal,
    "sqrt.approx.f32": lambda x: [math.SqrtOp(x)],
    "sqrt.rn.f32": lambda x: [math.SqrtOp(x)],
    "rsqrt.approx.f32": lambda x: [math.RsqrtOp(x)],
}
# every one but tanh exists with `.ftz` after its rounding mode
_FTZ = set(_MATH) - {"tanh.approx.f32"}
_MOV = {"mov.b32", "mov.f32", "mov.u32", "mov.s32"}


def _instruction(op) -> tuple[str, bool] | None:
    """(instruction without .ftz, whether .ftz) when `op` is one that this pass rewrites."""
    m = _FORM.match(op.asm_string.data)
    if not m or op.packed_element.value.data != 1 or len(op.args) != 1 or len(op.results) != 1:
        return None
    if op.constraints.data.replace(" ", "") not in ("=f,f", "=r,r"):
        return None
    instr = m.group("instr")
    ftz = ".ftz." in instr
    if ftz:
        instr = instr.replace(".ftz.", ".", 1)
        if instr not in _FTZ:
            return None
    src, dst = element_type(op.args[0].type), element_type(op.results[0].type)
    if instr in _MOV:
        return (instr, False) if _bits(src) == 32 and _bits(dst) == 32 else None
    if instr in _MATH and src == _F32 and dst == _F32:
        return instr, ftz
    return None


def _bits(t) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    return 32 if t == _F32 else 0


def _constant(like: SSAValue, value: float) -> Operation:
    """An fp32 constant of `like`'s shape (a splat for a tensor)."""
    if isinstance(like.type, TensorType):
        return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(like.type, [value]))
    return arith.ConstantOp(FloatAttr(value, _F32))


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
    found = _instruction(op)
    if found is None:
        return
    instr, ftz = found
    x = op.args[0]
    if instr in _MOV:
        y = x
        if x.type != op.results[0].type:
            cast = tt.BitcastOp(x, op.results[0].type)
            _insert([cast], op)
            y = cast.results[0]
    else:
        if ftz:
            x = _flush(x, op)
        ops = _MATH[instr](x)
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
