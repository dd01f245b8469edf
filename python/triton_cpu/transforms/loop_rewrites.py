"""Helpers for the TTIR passes that rewrite scf.for loops (peel-accumulator-loops,
split-bound-check-loops, unroll-tile-dot-loops): scalar arithmetic emitted before an op,
and a copy of one iteration of a loop body."""
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from triton_cpu.dialects.compat import arith


class InsertBefore:
    """Emits ops before `anchor`, in its block."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor
        self.block = anchor.parent_block()

    def emit(self, op: Operation) -> SSAValue:
        self.block.insert_op_before(op, self.anchor)
        return op.results[0]

    def const(self, v: int, t) -> SSAValue:
        return self.emit(arith.ConstantOp(IntegerAttr(v, t)))


def copy_iteration(body: Block, iv: SSAValue, carried, dest: Block, outer: dict | None = None) -> list[SSAValue]:
    """Appends to `dest` a copy of the ops of loop body `body` (its terminator excepted),
    with `iv` for the induction variable and `carried` for the loop-carried values, and
    values defined outside the loop replaced as `outer` maps them (when the loop itself is
    being copied elsewhere); returns the copies of the values it yields."""
    mapping = dict(outer or {})
    mapping.update({body.args[0]: iv, **dict(zip(body.args[1:], carried))})
    for op in body.ops:
        if op is body.last_op:
            break
        dest.add_op(op.clone(value_mapper=mapping))  # maps the results too
    return [mapping.get(v, v) for v in body.last_op.operands]
