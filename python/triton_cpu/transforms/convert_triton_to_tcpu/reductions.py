"""Reductions, scans and histograms: loops along the reduced axis with vector
accumulators across the others; the user's combine region is inlined (any number of
operands, any associative combiner).

tt.reduce along the last axis: the lanes are the reduced axis; chunks are combined
lane-wise in a loop, then the lanes pairwise (a tree of shuffles). Along another axis:
the lanes run along the output's last axis and the reduced axis is a loop. Results go
to buffers, or stay scalars when the whole tensor is reduced.

tt.scan: a sequential carry along the axis (in reverse when asked), each step written
to the result's buffer; vectorized across the last axis unless that is the scanned one.

tt.histogram: counts into a zeroed buffer, one element at a time.
"""
from xdsl.dialects import vector
from xdsl.dialects.builtin import DenseArrayBase, DenseIntOrFPElementsAttr, IntegerAttr, VectorType, i64
from xdsl.ir import Block, Operation

from triton_cpu.analysis.axis_info import attr, element_type, shape_of
from triton_cpu.dialects.compat import arith

from .util import INDEX, attr_int


def inline_region(low, em, block: Block, args, width: int):
    """Clones a combine region (reduce/scan) on `args` with `width` lanes; returns the
    values its terminator returns."""
    env = dict(zip(block.args, args))

    def outside(x):
        """A scalar defined outside the region (e.g. a hoisted constant): splat it."""
        if width == 1 or isinstance(x.type, VectorType):
            return x
        env[x] = em.emit(vector.BroadcastOp(x, VectorType(x.type, [width])))
        return env[x]

    for op in block.ops:
        if op is block.last_op:
            return [env[v] for v in op.operands]
        if op.name == "arith.constant":
            a = attr(op, "value")
            c = arith.ConstantOp(a if width == 1 else
                                 DenseIntOrFPElementsAttr.from_list(VectorType(a.type, [width]), [a.value.data]))
            env[op.results[0]] = em.emit(c)
            continue
        env[op.results[0]] = low.elementwise(op, lambda x: env[x] if x in env else outside(x), width, em.emit)
    raise low.unsupported(block.parent_op(), "a combine region without terminator")


def _halves(em, vec, width):
    mask_lo = DenseArrayBase.from_list(i64, list(range(width // 2)))
    mask_hi = DenseArrayBase.from_list(i64, list(range(width // 2, width)))
    t = VectorType(vec.type.element_type, [width // 2])
    return (em.emit(vector.ShuffleOp(vec, vec, mask_lo, result_type=t)),
            em.emit(vector.ShuffleOp(vec, vec, mask_hi, result_type=t)))


def lower_reduce(low, op: Operation):
    axis = attr_int(op, "axis")
    inputs = list(op.operands)
    combine = op.regions[0].blocks[0]
    in_shape = shape_of(inputs[0])
    out_shape = in_shape[:axis] + in_shape[axis + 1:]
    scalar_result = not out_shape
    bufs = [] if scalar_result else [low.alloc_buffer(r.type) for r in op.results]
    em = low.emitter_before(op)
    results = []

    def combine_at(e, accs, idx_in, width):
        cur = [e.value(x, idx_in, width) for x in inputs]
        return inline_region(low, e, combine, accs + cur, width)

    if axis == len(in_shape) - 1:
        d = in_shape[-1]
        vl = low.vector_length(in_shape, inputs)

        def body(e, idx):
            accs = [e.value(x, idx + (0,), vl) for x in inputs]
            if d > vl:
                accs = e.for_loop(vl, d, vl, accs, lambda c, k, a: combine_at(c, a, idx + (k,), vl))
            w = vl
            while w > 2:
                halves = [_halves(e, a, w) for a in accs]
                accs = inline_region(low, e, combine, [h[0] for h in halves] + [h[1] for h in halves], w // 2)
                w //= 2
            if w == 2:
                lanes = [[e.emit(vector.ExtractOp(a, [k], a.type.element_type)) for a in accs] for k in (0, 1)]
                accs = inline_region(low, e, combine, lanes[0] + lanes[1], 1)
            if scalar_result:
                results.extend(accs)
            else:
                for v, b in zip(accs, bufs):
                    e.store_buffer(v, b, idx)
        low.nest(em, out_shape, 1, body) if out_shape else body(em, ())
    else:
        vl = low.vector_length(in_shape, inputs)
        d = in_shape[axis]

        def insert(idx, k):
            return idx[:axis] + (k,) + idx[axis:]

        def body(e, idx):
            accs = [e.value(x, insert(idx, 0), vl) for x in inputs]
            if d > 1:
                accs = e.for_loop(1, d, 1, accs, lambda c, k, a: combine_at(c, a, insert(idx, k), vl))
            for v, b in zip(accs, bufs):
                e.store_buffer(v, b, idx)
        low.nest(em, out_shape, vl, body)
    if scalar_result:
        for r, v in zip(op.results, results):
            r.replace_all_uses_with(v)
    else:
        for r, b in zip(op.results, bufs):
            low.buffers[r] = b


def lower_scan(low, op: Operation):
    axis = attr_int(op, "axis")
    reverse = bool(attr_int(op, "reverse", 0))
    inputs = list(op.operands)
    combine = op.regions[0].blocks[0]
    shape = shape_of(inputs[0])
    d = shape[axis]
    bufs = [low.alloc_buffer(r.type) for r in op.results]
    outer = shape[:axis] + shape[axis + 1:]
    vl = 1 if axis == len(shape) - 1 or not outer else low.vector_length(shape, inputs)
    em = low.emitter_before(op)

    def at(e, idx, k):
        """Full index with k at the axis (counted from the end in reverse)."""
        if reverse:
            k = d - 1 - k if isinstance(k, int) else e.emit(arith.SubiOp(e.const_index(d - 1), k))
        return idx[:axis] + (k,) + idx[axis:]

    def body(e, idx):
        first = at(e, idx, 0)
        carry = [e.value(x, first, vl) for x in inputs]
        for v, b in zip(carry, bufs):
            e.store_buffer(v, b, first)

        def step(c, k, carry):
            full = at(c, idx, k)
            cur = [c.value(x, full, vl) for x in inputs]
            new = inline_region(low, c, combine, list(carry) + cur, vl)
            for v, b in zip(new, bufs):
                c.store_buffer(v, b, full)
            return new
        if d > 1:
            e.for_loop(1, d, 1, carry, step)
    if outer:
        low.nest(em, outer, vl, body)
    else:
        body(em, ())
    for r, b in zip(op.results, bufs):
        low.buffers[r] = b


def lower_histogram(low, op: Operation):
    """Values outside [0, bins) (and masked-off ones) are not counted."""
    x = op.operands[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    out = op.results[0]
    bins = shape_of(out)[0]
    elem = element_type(out.type)
    buf = low.alloc_buffer(out.type)
    em = low.emitter_before(op)
    zero = em.emit(arith.ConstantOp(IntegerAttr(0, elem)))
    low.nest(em, (bins,), 1, lambda e, idx: e.store_buffer(zero, buf, idx))
    xt = element_type(x.type)

    def body(e, idx):
        v = e.value(x, idx, 1)
        lo = e.emit(arith.CmpiOp(v, e.emit(arith.ConstantOp(IntegerAttr(0, xt))), "sge"))
        hi = e.emit(arith.CmpiOp(v, e.emit(arith.ConstantOp(IntegerAttr(bins, xt))), "slt"))
        ok = e.emit(arith.AndIOp(lo, hi))
        if mask is not None:
            ok = e.emit(arith.AndIOp(ok, e.value(mask, idx, 1)))
        # Out-of-range values count into bin 0 with weight 0: no branch.
        k = e.emit(arith.IndexCastOp(e.emit(arith.SelectOp(ok, v, e.emit(arith.ConstantOp(IntegerAttr(0, xt))))),
                                     INDEX))
        inc = e.emit(arith.ExtUIOp(ok, elem))
        e.store_buffer(e.emit(arith.AddiOp(e.load_buffer(buf, (k,), 1), inc)), buf, (k,))
    low.nest(em, shape_of(x), 1, body)
    low.buffers[out] = buf
