"""Structured control flow carrying tensors: scf.for, scf.while and scf.if.

A tensor carried by a loop or yielded by an `if` lives in a buffer: the init is
materialized before the loop (or, when it is in a buffer already and read by nothing
else, the loop takes that buffer over), the body reads the buffer, the yield writes it. A
yielded value that reads the loop's carried tensors other than elementwise at its own
index (or reads another carried tensor) is computed into a temporary first, then
copied, so no iteration reads a half-updated buffer. Once every tensor lives in a
buffer, the scf ops are rebuilt without their tensor operands and results
(`strip_yields`, then `strip_tensors`). Scalar control flow is left to the code
generator; `cf` branches carrying tensors are refused.
"""
from xdsl.dialects import scf
from xdsl.ir import BlockArgument, Operation, SSAValue

from .util import is_elementwise, is_tensor


def lower_for(low, op: Operation):
    body = op.regions[0].blocks[0]
    carried = {}
    em = low.emitter_before(op)
    for i, init in enumerate(op.operands[3:]):
        if is_tensor(init):
            buf = _buffer_to_take_over(low, init)
            if buf is None:
                buf = low.alloc_buffer(init.type)
                low.materialize_into(em, init, buf)
            low.buffers[body.args[1 + i]] = buf
            low.buffers[op.results[i]] = buf
            carried[i] = buf
    if carried:
        low.carried[op] = carried
        low.loops_to_strip.append(op)


def _buffer_to_take_over(low, init: SSAValue):
    """The buffer `init` lives in already, when a loop may carry its tensor there instead
    of in a copy: a buffer of this function (not a constant's read-only global) holding a
    value that nothing but the loop reads (e.g. the first iteration that
    peel-accumulator-loops moved into an scf.if before the loop)."""
    buf = low.buffers.get(init)
    if buf is None or not isinstance(buf.owner, Operation) or buf.owner.name != "memref.alloca":
        return None
    return buf if init.has_one_use() else None


def lower_while(low, op: Operation):
    """`before` arguments live in one buffer per init; `after` arguments and results in
    the buffer of what scf.condition forwards (the same one when it forwards a `before`
    argument unchanged: see `lower_condition`)."""
    before = op.regions[0].blocks[0]
    em = low.emitter_before(op)
    carried = {}
    for i, init in enumerate(op.operands):
        if is_tensor(init):
            buf = low.alloc_buffer(init.type)
            low.materialize_into(em, init, buf)
            low.buffers[before.args[i]] = buf
            carried[i] = buf
    if carried or any(is_tensor(r) for r in op.results):
        low.carried[op] = carried
        low.loops_to_strip.append(op)


def lower_condition(low, op: Operation):
    loop = op.parent_op()
    if loop not in low.carried:
        return
    after = loop.regions[1].blocks[0]
    em = low.emitter_before(op)
    for j, v in enumerate(list(op.operands)[1:]):
        if not is_tensor(v):
            continue
        buf = low.buffers.get(v) if isinstance(v, BlockArgument) and v.block is loop.regions[0].blocks[0] else None
        if buf is None:
            buf = low.alloc_buffer(v.type)
            low.materialize_into(em, v, buf)
        low.buffers[after.args[j]] = buf
        low.buffers[loop.results[j]] = buf


def lower_if(low, op: Operation):
    bufs = {i: low.alloc_buffer(r.type) for i, r in enumerate(op.results) if is_tensor(r)}
    if bufs:
        for i, b in bufs.items():
            low.buffers[op.results[i]] = b
        low.carried[op] = bufs
        low.loops_to_strip.append(op)


def lower_yield(low, op: Operation):
    parent = op.parent_op()
    bufs = low.carried.get(parent)
    if not bufs:
        return
    em = low.emitter_before(op)
    if parent.name == "scf.if":
        for i, b in bufs.items():
            low.materialize_into(em, op.operands[i], b)
        return
    if parent.name == "scf.while" and op.parent_block() is not parent.regions[1].blocks[0]:
        return
    direct, staged = [], []
    for i, b in bufs.items():
        v = op.operands[i]
        (direct if _in_place_ok(low, v, parent, i) else staged).append((v, b))
    temps = []
    for v, b in staged:
        t = low.alloc_buffer(v.type)
        low.materialize_into(em, v, t)
        temps.append((t, b, v))
    for v, b in direct:
        low.materialize_into(em, v, b)
    for t, b, v in temps:
        low.copy_buffer(em, t, b, v.type)


def _carried_arg(loop: Operation, i: int) -> SSAValue:
    """The block argument that holds loop-carried value i at the top of an iteration."""
    if loop.name == "scf.for":
        return loop.regions[0].blocks[0].args[1 + i]
    return loop.regions[0].blocks[0].args[i]  # scf.while: the `before` region


def _in_place_ok(low, value, loop, index) -> bool:
    """True when `value` reads the loop's carried tensors only as its own argument
    `index`, and only elementwise (at the index it writes)."""
    own = _carried_arg(loop, index)
    others = {_carried_arg(loop, i) for i in low.carried[loop] if i != index}
    seen = set()

    def walk(v, shifted):
        if v in seen or not is_tensor(v):
            return True
        seen.add(v)
        if v is own:
            return not shifted
        if v in others:
            return False
        if v in low.buffers:
            return True
        op = v.owner
        if not isinstance(op, Operation):
            return True
        moves = not is_elementwise(op)
        return all(walk(x, shifted or moves) for x in op.operands)

    return walk(value, False)


def _replace_terminator(old: Operation, new: Operation):
    old.parent_block().insert_op_before(new, old)
    old.detach()
    old.erase()


def strip_yields(op: Operation):
    """Drops the tensor operands of an scf.for/scf.if/scf.while's terminators (the
    values are in buffers now)."""
    if op.name == "scf.while":
        cond = op.regions[0].blocks[0].last_op
        _replace_terminator(cond, scf.ConditionOp(cond.operands[0],
                                                  *[v for v in list(cond.operands)[1:] if not is_tensor(v)]))
        y = op.regions[1].blocks[0].last_op
        _replace_terminator(y, scf.YieldOp(*[v for v in y.operands if not is_tensor(v)]))
        return
    keep = [i for i, r in enumerate(op.results) if not is_tensor(r)]
    for region in op.regions:
        for blk in region.blocks:
            y = blk.last_op
            if y is not None and y.name == "scf.yield":
                _replace_terminator(y, scf.YieldOp(*[y.operands[i] for i in keep]))


def strip_tensors(op: Operation):
    """Rebuilds an scf.for/scf.if/scf.while without its tensor values, once nothing reads them."""
    keep = [i for i, r in enumerate(op.results) if not is_tensor(r)]
    if op.name == "scf.while":
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        inits = [v for v in op.operands if not is_tensor(v)]
        regions = list(op.regions)
        for r in regions:
            op.detach_region(r)
        for blk in (before, after):
            for a in reversed(list(blk.args)):
                if is_tensor(a):
                    blk.erase_arg(a)
        new = scf.WhileOp(inits, [op.results[i].type for i in keep], regions[0], regions[1])
    elif op.name == "scf.for":
        body = op.regions[0].blocks[0]
        inits = [op.operands[3 + i] for i in keep]
        region = op.regions[0]
        op.detach_region(region)
        new = scf.ForOp(op.operands[0], op.operands[1], op.operands[2], inits, region)
        for i in reversed(range(len(op.results))):
            if i not in keep:
                body.erase_arg(body.args[1 + i])
    else:
        regions = list(op.regions)
        for r in regions:
            op.detach_region(r)
        new = scf.IfOp(op.operands[0], [op.results[i].type for i in keep], regions[0],
                       regions[1] if len(regions) > 1 else None)
    new.attributes.update(op.attributes)  # loop hints (llvm.loop_annotation, tt.num_stages, ...)
    op.parent_block().insert_op_before(new, op)
    for k, i in enumerate(keep):
        op.results[i].replace_all_uses_with(new.results[k])
    op.detach()
    op.erase()
