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

from triton_cpu.analysis.axis_info import element_type, is_ptr
from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith


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
        v = op.properties.get("value") or op.attributes.get("value")
        if isinstance(v, DenseIntOrFPElementsAttr) and v.is_splat():
            first = v.get_values()[0]
            if isinstance(first, int):
                return ("const", first)
    return None


@dataclass
class _Candidate:
    index: int  # position among the iter_args
    step: tuple  # ("value", ssa) | ("const", int)
    pointer: bool  # tt.addptr (offset in i64) or arith.addi (offset in the element type)
    advance: Operation  # the op computing the yielded value
    init: SSAValue | None = None  # the loop's initial tensor, once rewritten


def _candidates(loop: scf.ForOp) -> list[_Candidate]:
    body = loop.body.block
    yield_op = body.last_op
    found = []
    for i, (arg, yielded) in enumerate(zip(body.args[1:], yield_op.operands)):
        if not isinstance(arg.type, TensorType):
            continue
        adv = yielded.owner
        if isinstance(adv, tt.AddPtrOp) and adv.ptr == arg and is_ptr(element_type(arg.type)):
            pointer = True
            offset = adv.offset
        elif isinstance(adv, Operation) and adv.name == "arith.addi" and \
                isinstance(element_type(arg.type), IntegerType) and arg in adv.operands:
            pointer = False
            offset = adv.operands[1] if adv.operands[0] == arg else adv.operands[0]
        else:
            continue
        if not isinstance(adv, Operation) or adv.parent_block() is not body:
            continue
        step = _uniform_step(offset, loop)
        if step is not None:
            found.append(_Candidate(i, step, pointer, adv))
    return found


def _scalar_type(c: _Candidate, arg: SSAValue):
    return i64 if c.pointer else element_type(arg.type)


def _rebuild(loop: scf.ForOp, ops_before: list, cands: list[_Candidate]) -> scf.ForOp:
    """A new scf.for whose candidate iter_args are scalar offsets (body moved over)."""
    body = loop.body.block
    inits = list(loop.operands[3:])
    for c in cands:
        arg = body.args[1 + c.index]
        st = _scalar_type(c, arg)
        zero = arith.ConstantOp(IntegerAttr(0, st))
        ops_before.append(zero)
        init = inits[c.index]
        inits[c.index] = zero.result
        # The step as a scalar of the offset type, computed before the loop.
        kind, s = c.step
        if kind == "const":
            step_op = arith.ConstantOp(IntegerAttr(s, st))
            ops_before.append(step_op)
            step = step_op.result
        elif s.type != st:
            step_op = arith.ExtSIOp(s, st)
            ops_before.append(step_op)
            step = step_op.result
        else:
            step = s
        # In the body: the tensor is its init plus the splatted offset.
        new_arg = body.insert_arg(st, 1 + c.index + 1)
        splat = tt.SplatOp(new_arg, TensorType(st, arg.type.get_shape()))
        rebuilt = tt.AddPtrOp(init, splat) if c.pointer else arith.AddiOp(init, splat)
        first = body.first_op
        body.insert_op_before(splat, first)
        body.insert_op_after(rebuilt, splat)
        arg.replace_all_uses_with(rebuilt.results[0])
        body.erase_arg(arg)
        # The yielded value: offset + step.
        advance = arith.AddiOp(new_arg, step)
        body.insert_op_before(advance, body.last_op)
        body.last_op.operands = [advance.result if i == c.index else v
                                 for i, v in enumerate(body.last_op.operands)]
        c.init = init
    region = loop.regions[0]
    loop.detach_region(region)
    new = scf.ForOp(loop.operands[0], loop.operands[1], loop.operands[2], inits, region)
    new.attributes.update(loop.attributes)
    for k, v in loop.properties.items():
        new.properties.setdefault(k, v)
    return new


def rewrite_loop(loop: scf.ForOp) -> bool:
    cands = _candidates(loop)
    if not cands:
        return False
    before: list[Operation] = []
    new = _rebuild(loop, before, cands)
    parent = loop.parent_block()
    for op in before:
        parent.insert_op_before(op, loop)
    parent.insert_op_before(new, loop)
    # Results: the final tensor is the init plus the final offset, computed after the loop.
    anchor = new
    old_results = list(loop.results)
    for i, (old, res) in enumerate(zip(old_results, new.results)):
        c = next((c for c in cands if c.index == i), None)
        if c is None:
            old.replace_all_uses_with(res)
            continue
        if not old.uses:
            continue
        splat = tt.SplatOp(res, TensorType(res.type, old.type.get_shape()))
        rebuilt = tt.AddPtrOp(c.init, splat) if c.pointer else arith.AddiOp(c.init, splat)
        parent.insert_op_after(splat, anchor)
        parent.insert_op_after(rebuilt, splat)
        anchor = rebuilt
        old.replace_all_uses_with(rebuilt.results[0])
    loop.detach()
    loop.erase()
    # The old advancing ops now feed nothing when the tensor had no other use of them.
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
