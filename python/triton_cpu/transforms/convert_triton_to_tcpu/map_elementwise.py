"""tt.map_elementwise: the user's scalar function applied to each element.

The region is scalar code, often with branches and early returns (several blocks joined
by `cf` branches: that is its point). It is outlined into a private scalar `tt.func`,
which this pass then lowers like any function, and the op becomes a loop nest over the
tensor's shape calling it once per step; LLVM inlines the call. Values the region reads
from outside (constants that canonicalization hoisted out of it) are cloned into the
function when they are constants and passed as arguments otherwise. With `pack = P` one
call takes P consecutive elements along the last dimension: block arguments are
(input 0 element 0..P-1, input 1 element 0..P-1, ...) and results (result 0 element
0..P-1, result 1 ...). Results go to buffers.
"""
from xdsl.dialects.builtin import FunctionType
from xdsl.ir import Operation

from triton_cpu.analysis.axis_info import attr_int, element_type, shape_of
from triton_cpu.dialects import tt

from .util import is_tensor


def _outside_values(op: Operation):
    """Values used inside `op`'s region and defined outside it, in first-use order."""
    seen = {}
    for inner in op.walk():
        if inner is op:
            continue
        for x in inner.operands:
            owner = x.owner if isinstance(x.owner, Operation) else x.owner.parent_op()
            if not op.is_ancestor(owner) and x not in seen:
                seen[x] = None
    return list(seen)


def lower_map_elementwise(low, op: Operation):
    pack = attr_int(op, "pack", 1)
    inputs = list(op.operands)
    shape = shape_of(op.results[0])
    if shape[-1] % pack:
        raise low.unsupported(op, f"map_elementwise with pack={pack} over a last dimension of {shape[-1]}")
    module = low.func.parent_op()
    prefix = f"{low.kernel}__map_elementwise_"
    taken = {o.properties["sym_name"].data for o in module.ops if "sym_name" in o.properties}
    name = next(f"{prefix}{k}" for k in range(1, len(taken) + 2) if f"{prefix}{k}" not in taken)
    outside = _outside_values(op)
    constants = [x for x in outside if isinstance(x.owner, Operation) and x.owner.name == "arith.constant"
                 and not is_tensor(x)]
    extra = [x for x in outside if x not in constants]

    # Outline: the region becomes the body of `name`, its terminator a tt.return.
    region = op.regions[0]
    op.detach_region(region)
    entry = region.blocks[0]
    for b in region.blocks:
        term = b.last_op
        if term is not None and term.name == "tt.map_elementwise.return":
            b.insert_op_before(tt.ReturnOp(*term.operands), term)
            term.detach()
            term.erase()
    for x in constants:
        c = x.owner.clone()
        entry.insert_op_before(c, entry.first_op)
        x.replace_uses_with_if(c.results[0], lambda use: _in_region(region, use.operation))
    for x in extra:
        arg = entry.insert_arg(element_type(x.type), len(entry.args))
        x.replace_uses_with_if(arg, lambda use: _in_region(region, use.operation))
    ftype = FunctionType.from_lists([a.type for a in entry.args], _region_result_types(region))
    module.body.block.insert_op_before(tt.FuncOp(name, ftype, region, "private"), low.func)

    bufs = [low.alloc_buffer(r.type) for r in op.results]

    def body(e, idx):
        elems = [idx[:-1] + (e.idx_add(idx[-1], j),) for j in range(pack)]
        args = [e.value(x, at, 1) for x in inputs for at in elems]
        args += [e.value(x, elems[0], 1) for x in extra]
        call = tt.CallOp(name, args, ftype.outputs.data)
        e.emit(call)
        # The call returns result k of element j at k * pack + j, as the region does.
        for k, b in enumerate(bufs):
            for j, at in enumerate(elems):
                e.store_buffer(call.results[k * pack + j], b, at)

    low.nest_steps(low.emitter_before(op), shape, [1] * (len(shape) - 1) + [pack], body)
    for r, b in zip(op.results, bufs):
        low.buffers[r] = b


def _in_region(region, op: Operation) -> bool:
    while op is not None:
        if op.parent_region() is region:
            return True
        op = op.parent_op()
    return False


def _region_result_types(region):
    for b in region.blocks:
        if b.last_op is not None and b.last_op.name == "tt.return":
            return [v.type for v in b.last_op.operands]
    return []
