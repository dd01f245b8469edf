"""Shape ops, fused by index mapping: the value of the result at an index is the value
of the source at a mapped index, so nothing is copied.

Each function evaluates the result `v` of one op at `idx` as `width` lanes running
along dimension `lane` (width 1: a scalar), through the emitter's `value` on the
source. `width` always divides the size of dimension `lane`, and the first lane's
index along it is a multiple of `width` (loop steps are).
The lanes may run along any dimension: a transposed load becomes a gather or, when the
source is contiguous along the lane dimension, a vector load.

Covered: tt.expand_dims, tt.broadcast, tt.trans (permute), tt.reshape, tt.join,
tt.split, tt.cat, tt.gather (its source is materialized in a buffer first:
`prepare_gather`), and tt.unsplat (a one-element tensor read as its scalar).
"""
from xdsl.dialects import vector
from xdsl.ir import Operation

from triton_cpu.analysis.axis_info import attr_int, element_type, shape_of
from triton_cpu.dialects.compat import arith

from .util import INDEX, vector_type


def expand_dims(em, v, idx, width, lane):
    op = v.owner
    axis = attr_int(op, "axis")
    return em.value(op.operands[0], idx[:axis] + idx[axis + 1:], width, lane - (lane > axis))


def broadcast(em, v, idx, width, lane):
    op = v.owner
    src = op.operands[0]
    src_shape, dst_shape = shape_of(src), shape_of(op.results[0])
    sidx = tuple(0 if s == 1 and d != 1 else i for i, s, d in zip(idx, src_shape, dst_shape))
    if src_shape[lane] == 1 and dst_shape[lane] != 1 and width > 1:
        s = em.value(src, sidx, 1)
        return em.emit(vector.BroadcastOp(s, vector_type(element_type(op.results[0].type), width)))
    return em.value(src, sidx, width, lane)


def trans(em, v, idx, width, lane):
    op = v.owner
    # Result dim i is source dim order[i].
    order = [int(x) for x in op.order.get_values()]
    sidx = [0] * len(order)
    for i, o in enumerate(order):
        sidx[o] = idx[i]
    return em.value(op.operands[0], tuple(sidx), width, order[lane])


def reshape(em, v, idx, width, lane):
    """Row-major reshape: the linear index of the first lane, split into source indices.

    Lanes along the last dimension are consecutive linear indices: when the source's
    last dimension holds them all, they are one source run; when it is shorter, they
    are several whole source rows, evaluated one by one and concatenated. (Consumers
    choose their lane count so that the second case is rare: see
    `FuncLowering.vector_length`.) Lanes along another dimension are evaluated one by one."""
    op = v.owner
    src = op.operands[0]
    dst_shape, src_shape = shape_of(v), shape_of(src)
    if width > 1 and lane != len(dst_shape) - 1:
        return em.lanes(v, idx, width, lane)
    run = min(width, src_shape[-1])
    lin = 0
    stride = 1
    for i, d in reversed(list(zip(idx, dst_shape))):
        lin = em.idx_add(lin, em.idx_mul(i, stride))
        stride *= d
    strides, stride = [], 1
    for d in reversed(src_shape):
        strides.append(stride)
        stride *= d
    strides.reverse()

    def source_run(start):
        sidx = tuple(0 if d == 1 else em.idx_div_rem(start, s, d) for d, s in zip(src_shape, strides))
        return em.value(src, sidx, run)
    # Power-of-two shapes: `run` divides `width`, and `lin` is a multiple of `width`.
    return em.concat([source_run(em.idx_add(lin, r)) for r in range(0, width, run)])


def _select_by_index(em, i, k, if_equal, otherwise):
    """`if_equal` where the index `i` equals `k`, else `otherwise`."""
    if isinstance(i, int):
        return if_equal if i == k else otherwise
    cond = em.emit(arith.CmpiOp(i, em.const_index(k), "eq"))
    return em.emit(arith.SelectOp(cond, if_equal, otherwise))


def join(em, v, idx, width, lane):
    op = v.owner
    a, b = op.operands
    rank = len(idx)
    if lane == rank - 1 and width == 2:  # the lanes are the joined pair
        x, y = em.value(a, idx[:-1], 1), em.value(b, idx[:-1], 1)
        vec = em.emit(vector.BroadcastOp(x, vector_type(element_type(a.type), 2)))
        return em.emit(vector.InsertOp(y, vec, [1]))
    x, y = em.value(a, idx[:-1], width, lane), em.value(b, idx[:-1], width, lane)
    return _select_by_index(em, idx[-1], 0, x, y)


def split(em, v, idx, width, lane):
    op = v.owner
    k = list(op.results).index(v)
    return em.value(op.operands[0], idx + (k,), width, lane)


def cat(em, v, idx, width, lane):
    op = v.owner
    """Concatenation along dim 0. Lanes along dim 0 that could straddle the two halves
    are evaluated one by one; otherwise one select per chunk picks the half."""
    a, b = op.operands
    n = shape_of(a)[0]
    i0 = idx[0]
    if lane == 0 and width > n:  # width == 2n: the whole result
        return em.concat([em.value(a, idx, n, 0), em.value(b, idx, n, 0)])
    if isinstance(i0, int):
        src, j = (a, i0) if i0 < n else (b, i0 - n)
        return em.value(src, (j,) + idx[1:], width, lane)
    j = em.idx_div_rem(i0, 1, n)
    x = em.value(a, (j,) + idx[1:], width, lane)
    y = em.value(b, (j,) + idx[1:], width, lane)
    first = em.emit(arith.CmpiOp(i0, em.const_index(n), "ult"))
    return em.emit(arith.SelectOp(first, x, y))


def gather(em, v, idx, width, lane):
    op = v.owner
    """src[..., indices[idx], ...]: data-dependent, so `src` is read from its buffer
    (materialized before the op by `prepare_gather`) one lane at a time."""
    if width > 1:
        return em.lanes(v, idx, width, lane)
    src, indices = op.operands
    axis = attr_int(op, "axis")
    buf = em.low.buffers[src]
    k = em.emit(arith.IndexCastOp(em.value(indices, idx, 1), INDEX))
    return em.load_buffer(buf, idx[:axis] + (k,) + idx[axis + 1:], 1)


def prepare_gather(low, op: Operation):
    """Materializes a gather's source, which the gather reads at data-dependent indices:
    before the gather, or, when the source is defined in an enclosing block, before the
    op of that block that holds the gather (a buffer filled inside one branch of an
    scf.if would be read, unfilled, by a gather of the same source in the other branch
    or after the scf.if; one filled inside a loop would be filled every iteration).
    Not at the source's definition: the ops between it and here are lowered already,
    and the source may read buffers they fill (a load a reduction's loop stores as it
    reads it, reductions.deferring_reduce). Between the definition and the gather no
    write changes what the source's fused loads read: the plan buffers or guards those
    (materialization_plan, the gather being one of their consumers)."""
    src = op.operands[0]
    if src not in low.buffers:
        at = op
        producer = src.owner
        home = producer.parent_block() if isinstance(producer, Operation) else src.owner
        while at.parent_block() is not home:
            at = at.parent_op()
        buf = low.alloc_buffer(src.type)
        low.materialize_into(low.emitter_before(at), src, buf)
        low.buffers[src] = buf


def lower_unsplat(low, op: Operation):
    """The one element of a one-element tensor, as a scalar (`x.item()`, `if t:`)."""
    src = op.operands[0]
    op.results[0].replace_all_uses_with(low.emitter_before(op).value(src, (0,) * len(shape_of(src)), 1))
    op.detach()
    op.erase()


# Result evaluators, by op name: f(emitter, result, idx, width, lane) -> value.
FUSED = {
    "tt.expand_dims": expand_dims,
    "tt.broadcast": broadcast,
    "tt.trans": trans,
    "tt.reshape": reshape,
    "tt.join": join,
    "tt.split": split,
    "tt.cat": cat,
    "tt.gather": gather,
}
