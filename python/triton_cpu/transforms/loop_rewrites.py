"""Helpers for the TTIR passes that rewrite scf.for loops and copy code under conditions
(peel-accumulator-loops, split-bound-check-loops, unroll-tile-dot-loops,
version-single-iteration-loops, forward-stored-tiles): scalar arithmetic emitted before an
op, a copy of one iteration of a loop body, and the rest of a block run in the two
branches of an scf.if."""
from xdsl.dialects import scf
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


def ops_before_terminator(first: Operation) -> list[Operation]:
    """`first` and the ops after it in its block, the terminator excepted."""
    ops, op = [], first
    term = first.parent_block().last_op
    while op is not term:
        ops.append(op)
        op = op.next_op
    return ops


def branch_on(cond: SSAValue, ops: list[Operation], copy=None) -> Operation:
    """Runs `ops` (the ops of a block from some op to its terminator excepted, using none of
    their results after them) under a new `scf.if cond` before the terminator: as they are
    in its else-branch, copied in its then-branch, each op by `copy(op, mapping, dest)`
    (default: a clone with `mapping`'s values; a copy maps the results it replaces)."""
    block = ops[0].parent_block()
    term = block.last_op
    then_blk, else_blk = Block(), Block()
    mapping: dict[SSAValue, SSAValue] = {}
    for op in ops:
        if copy is None:
            then_blk.add_op(op.clone(value_mapper=mapping))
        else:
            copy(op, mapping, then_blk)
    then_blk.add_op(scf.YieldOp())
    for op in ops:
        op.detach()
        else_blk.add_op(op)
    else_blk.add_op(scf.YieldOp())
    branch = scf.IfOp(cond, [], [then_blk], [else_blk])
    block.insert_op_before(branch, term)
    return branch
