"""Debug ops: tt.print becomes one tcpu.print per element, operand after operand, in
Triton's GPU format; tt.assert becomes tcpu.assert per chunk of lanes (the code
generator records the first failure and leaves the program; the launcher raises)."""
from xdsl.dialects.builtin import i32
from xdsl.ir import Operation

from triton_cpu.analysis.axis_info import shape_of
from triton_cpu.dialects import tcpu
from triton_cpu.dialects.compat import arith
from triton_cpu.dialects.ttir import user_location

from .util import is_tensor


def lower_print(low, op: Operation):
    prefix = op.prefix.data
    hex_ = bool(op.hex.value.data)
    signed = list(op.isSigned.get_values())
    args = list(op.operands)
    em = low.emitter_before(op)
    if not args:
        em.emit(tcpu.PrintOp(None, [], prefix, hex_, False, 0, 0, []))
    for k, v in enumerate(args):
        is_signed = bool(signed[k]) if k < len(signed) else False
        if not is_tensor(v):
            em.emit(tcpu.PrintOp(v, [], prefix, hex_, is_signed, k, len(args), []))
            continue
        shape = shape_of(v)

        def body(e, idx, v=v, k=k, is_signed=is_signed, shape=shape):
            i32s = [e.emit(arith.IndexCastOp(e.as_ssa_index(i), i32)) for i in idx]
            e.emit(tcpu.PrintOp(e.value(v, idx, 1), i32s, prefix, hex_, is_signed, k, len(args), shape))
        low.nest(em, shape, 1, body)
    op.detach()
    op.erase()


def lower_assert(low, op: Operation):
    cond = op.operands[0]
    loc = user_location(op)
    file, line = (loc[0], loc[1]) if loc else ("<unknown>", 0)
    message = op.message.data
    em = low.emitter_before(op)
    if not is_tensor(cond):
        em.emit(tcpu.AssertOp(cond, message, file, line, low.kernel))
    else:
        shape = shape_of(cond)
        vl = low.vector_length(shape, [cond])
        low.nest(em, shape, vl, lambda e, idx: e.emit(
            tcpu.AssertOp(e.value(cond, idx, vl), message, file, line, low.kernel)))
    op.detach()
    op.erase()
