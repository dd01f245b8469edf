"""uniform-loop-increments: a loop-carried tensor that each iteration advances by one
uniform amount is rewritten as its initial value plus a loop-carried scalar.

Runs on TTIR, before convert-triton-to-tcpu. The pattern is how GPU kernels walk their
operands (upstream's matmul tutorial, `a_ptrs += BLOCK_K * stride_ak`):

    %r = scf.for ... iter_args(%p = %p0) {          %r = scf.for ... iter_args(%o = 0 : i64) {
      ... uses of %p ...                      =>      %p = tt.addptr %p0, splat(%o)
      %next = tt.addptr %p, splat(%s)                 ... uses of %p ...
      scf.yield %next                                 scf.yield %o + sext(%s)
    }                                               }
                                                    %r' = tt.addptr %p0, splat(%r)

and the same for an integer tensor advanced by `arith.addi %t, splat(%s)` (the offset
accumulates in the tensor's own integer type, so wrap-around is the same). The step
`%s` must be loop-invariant: defined outside the loop, or a splat constant.

Why: a loop-carried tensor has to live in a buffer that every iteration reads, updates
and writes back (for a 64x32 tile of pointers, 16 KiB of pointer traffic per iteration
next to 8 KiB of data), while a loop-invariant tensor is recomputed where it is used and
its structure (contiguous rows, uniform columns) stays visible to the axis analysis.
Pointer offsets accumulate in i64: `p + s + s + ...` in 64-bit pointer arithmetic is
`p + (s + s + ...)` exactly, where an i32 sum could wrap.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, ModuleOp, TensorType, i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import attr, element_type, is_ptr
from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith, splat_value


def _defined_outside(value: SSAValue, loop: Operation) -> bool:
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    return op is None or not loop.is_ancestor(op)


def _uniform_step(offset: SSAValue, loop: Operation):
    """The loop-invariant scalar that the tensor `offset` splats, as ("value", ssa) or
    ("const", int); None when `offset` is not a uniform invariant."""
    op = offset.owner
    if isinstance(op, tt.SplatOp) and _defined_outside(op.src, loop):
        return ("value", op.src)
    if isinstance(op, Operation) and op.name == "arith.constant":
        v = attr(op, "value")
        if isinstance(v, DenseIntOrFPElementsAttr):
            first = splat_value(v)
            if isinstance(first, int):
                return ("const", first)
    return None


@dataclass
class _Candidate:
    index: int  # position among the iter_args
    step: tuple  # ("value", ssa) | ("const", int)
    pointer: bool  # tt.addptr (offset in i64) or arith.addi (offset in the element type)
    advance: Operation  # the op computing the yielded value
    init: SSAValue  # the loop's initial tensor

    @property
    def offset_type(self):
        return i64 if self.pointer else element_type(self.init.type)

    def tensor_at(self, offset: SSAValue) -> list[Operation]:
        """The ops computing the tensor `offset` past `init`: a splat, then the add."""
        splat = tt.SplatOp(offset, TensorType(offset.type, self.init.type.get_shape()))
        return [splat, tt.AddPtrOp(self.init, splat) if self.pointer else arith.AddiOp(self.init, splat)]


def _candidates(loop: scf.ForOp) -> list[_Candidate]:
    body = loop.body.block
    found = []
    for i, (arg, yielded) in enumerate(zip(body.args[1:], body.last_op.operands)):
        if not isinstance(arg.type, TensorType):
            continue
        adv = yielded.owner
        if isinstance(adv, tt.AddPtrOp) and adv.ptr == arg and is_ptr(element_type(arg.type)):
            pointer, offset = True, adv.offset
        elif isinstance(adv, Operation) and adv.name == "arith.addi" and \
                isinstance(element_type(arg.type), IntegerType) and arg in adv.operands:
            pointer = False
            offset = adv.operands[1] if adv.operands[0] == arg else adv.operands[0]
        else:
            continue
        step = _uniform_step(offset, loop)
        if step is not None and adv.parent_block() is body:
            found.append(_Candidate(i, step, pointer, adv, loop.operands[3 + i]))
    return found


def _scalar_step(c: _Candidate, loop: Operation) -> SSAValue:
    """The step as a scalar of the offset type, computed before the loop when needed."""
    kind, s = c.step
    if kind == "value" and s.type == c.offset_type:
        return s
    op = arith.ConstantOp(IntegerAttr(s, c.offset_type)) if kind == "const" else arith.ExtSIOp(s, c.offset_type)
    loop.parent_block().insert_op_before(op, loop)
    return op.result


def rewrite_loop(loop: scf.ForOp) -> bool:
    """Rewrites the candidate iter_args of `loop` (replacing the loop); False if it has none."""
    cands = _candidates(loop)
    if not cands:
        return False
    parent = loop.parent_block()
    body = loop.body.block
    inits = list(loop.operands[3:])
    for c in cands:
        zero = arith.ConstantOp(IntegerAttr(0, c.offset_type))
        parent.insert_op_before(zero, loop)
        inits[c.index] = zero.result
        step = _scalar_step(c, loop)
        # In the body: the tensor is its init plus the splatted offset, which advances by step.
        arg = body.args[1 + c.index]
        offset = body.insert_arg(c.offset_type, 1 + c.index + 1)
        ops = c.tensor_at(offset)
        body.insert_ops_before(ops, body.first_op)
        arg.replace_all_uses_with(ops[-1].results[0])
        body.erase_arg(arg)
        advance = arith.AddiOp(offset, step)
        body.insert_op_before(advance, body.last_op)
        body.last_op.operands = [advance.result if i == c.index else v for i, v in enumerate(body.last_op.operands)]
    region = loop.regions[0]
    loop.detach_region(region)
    new = scf.ForOp(loop.operands[0], loop.operands[1], loop.operands[2], inits, region)
    new.attributes.update(loop.attributes)  # loop hints (tt.num_stages, ...)
    parent.insert_op_before(new, loop)
    # After the loop: the final tensor is the init plus the final offset.
    by_index = {c.index: c for c in cands}
    anchor = new
    for i, (old, res) in enumerate(zip(loop.results, new.results)):
        if i not in by_index:
            old.replace_all_uses_with(res)
        elif old.uses:
            ops = by_index[i].tensor_at(res)
            parent.insert_ops_after(ops, anchor)
            anchor = ops[-1]
            old.replace_all_uses_with(ops[-1].results[0])
    loop.detach()
    loop.erase()
    # The old advancing ops are dead unless the body used them for something else.
    for c in cands:
        if not c.advance.results[0].uses:
            c.advance.detach()
            c.advance.erase()
    return True


@dataclass(frozen=True)
class UniformLoopIncrements(ModulePass):
    name = "uniform-loop-increments"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Innermost loops first: rewriting a loop replaces it, so collect, then rewrite.
        loops = [o for o in op.walk() if isinstance(o, scf.ForOp)]
        for loop in reversed(loops):
            rewrite_loop(loop)
