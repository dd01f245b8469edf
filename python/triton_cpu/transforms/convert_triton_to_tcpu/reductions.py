"""Reductions, scans and histograms: loops along the reduced axis with vector
accumulators across the others; the user's combine region is inlined (any number of
operands, any associative combiner).

tt.reduce along the last axis: the lanes are the reduced axis; chunks are combined
lane-wise in a loop with up to four independent accumulators (chunk k goes to
accumulator k mod 4, so the loop is not one chain at the combine's latency), these are
combined pairwise, then the lanes pairwise (a tree of shuffles). Along another axis:
the lanes run along the output's last axis and the reduced axis is a loop. Results go
to buffers, or stay scalars when the whole tensor is reduced.

A value the function computes into a buffer (an expensive value with several consumers,
core's materialization_plan) whose first consumer is a reduction of its own shape is
computed by the reduction's loop instead, chunk by chunk, and written into its buffer
there, before the reduction combines it: softmax's `exp(x - max)` and its sum, one pass
over the row instead of two (`deferring_reduce` says when that is the same program).

tl.max and tl.min on floats along the last axis step with one compare-and-select (x86's
max/min instruction) instead of maxnum's three instructions, and reduce a row again with
maxnum only when its result is the identity (-inf for max: no element above it, so maybe
all NaN): `_extremum_row`.

tt.scan: a sequential carry along the axis (in reverse when asked), each step written
to the result's buffer; vectorized across the last axis unless that is the scanned one.

fp16/bf16 combine regions made of float arithmetic (sums, products, max/min, compares
and selects) are evaluated in fp32: the accumulators and scan carries keep fp32, and
each result is rounded once when written. (A GPU rounds every combine step, but in a
tree whose depth is log2 of the axis; a sequential loop rounding every step would lose
far more: about sqrt(n) ulp of the running value over an axis of n.)

tt.histogram: counts into a zeroed buffer, one element at a time.
"""
from xdsl.dialects import vector
from xdsl.dialects.builtin import (
    BFloat16Type, DenseArrayBase, DenseIntOrFPElementsAttr, Float16Type, Float32Type, Float64Type, FloatAttr,
    IntegerAttr, VectorType, i64,
)
from xdsl.ir import Block, Operation

from triton_cpu.analysis.axis_info import attr, attr_int, element_type, shape_of
from triton_cpu.dialects.compat import arith

from . import hints
from .util import INDEX, bits, is_elementwise, is_tensor, vec_type, vector_type

_F32 = Float32Type()
_NARROW_FLOATS = (Float16Type, BFloat16Type)
# Ops a narrow-float combine region may hold to be evaluated in fp32 with the same meaning.
_PROMOTABLE = {"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.negf", "arith.maximumf",
               "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.cmpf", "arith.select", "arith.constant",
               "arith.addi", "arith.subi", "arith.cmpi", "arith.andi", "arith.ori", "arith.xori", "math.absf"}


def _is_narrow(t) -> bool:
    return isinstance(t, _NARROW_FLOATS)


def compute_types(block: Block) -> list:
    """The element type each carried value of a combine region is computed in: fp32 for
    fp16/bf16 when every op of the region keeps its meaning in fp32."""
    elems = [a.type for a in block.args]
    if any(_is_narrow(t) for t in elems) and all(op.name in _PROMOTABLE or op is block.last_op for op in block.ops):
        return [_F32 if _is_narrow(t) else t for t in elems]
    return elems


def to_compute(em, v, elem, width):
    """`v` converted to the compute type `elem` (a no-op unless it widens fp16/bf16)."""
    src = v.type.element_type if isinstance(v.type, VectorType) else v.type
    return em.emit(arith.ExtFOp(v, vec_type(elem, width))) if src != elem else v


def to_storage(em, v, elem, width):
    """`v` rounded once to the storage type `elem`."""
    src = v.type.element_type if isinstance(v.type, VectorType) else v.type
    return em.emit(arith.TruncFOp(v, vec_type(elem, width))) if src != elem else v


def inline_region(low, em, block: Block, args, width: int, promote: bool = False):
    """Clones a combine region (reduce/scan) on `args` with `width` lanes; returns the
    values its terminator returns. With `promote`, the region's fp16/bf16 values are
    computed in fp32 (`args` are then fp32 too: see `compute_types`)."""
    env = dict(zip(block.args, args))

    def compute(t):
        return _F32 if promote and _is_narrow(t) else t

    def outside(x):
        """A scalar defined outside the region (e.g. a hoisted constant): splat it."""
        if width == 1 or isinstance(x.type, VectorType):
            return to_compute(em, x, compute(x.type), 1) if width == 1 else x
        x2 = to_compute(em, x, compute(x.type), 1)
        env[x] = em.emit(vector.BroadcastOp(x2, vector_type(x2.type, width)))
        return env[x]

    for op in block.ops:
        if op is block.last_op:
            return [env[v] for v in op.operands]
        if op.name == "arith.constant":
            a = attr(op, "value")
            t = compute(a.type)
            if t != a.type:
                a = FloatAttr(a.value.data, t)
            c = arith.ConstantOp(a if width == 1 else
                                 DenseIntOrFPElementsAttr.from_list(vector_type(t, width), [a.value.data]))
            env[op.results[0]] = em.emit(c)
            continue
        env[op.results[0]] = low.elementwise(op, lambda x: env[x] if x in env else outside(x), width, em.emit,
                                             compute(op.results[0].type))
    raise low.unsupported(block.parent_op(), "a combine region without terminator")


def _halves(em, vec, width):
    mask_lo = DenseArrayBase.from_list(i64, list(range(width // 2)))
    mask_hi = DenseArrayBase.from_list(i64, list(range(width // 2, width)))
    t = vector_type(vec.type.element_type, width // 2)
    return (em.emit(vector.ShuffleOp(vec, vec, mask_lo, result_type=t)),
            em.emit(vector.ShuffleOp(vec, vec, mask_hi, result_type=t)))


class _Carried:
    """How a reduce/scan's operands are read (in their compute types) and its results
    written (rounded once to the result types)."""

    def __init__(self, op: Operation):
        self.inputs = list(op.operands)
        self.combine = op.regions[0].blocks[0]
        n = len(self.inputs)
        self.compute = compute_types(self.combine)[:n]
        self.storage = [element_type(r.type) for r in op.results]
        self.promote = self.compute != [a.type for a in self.combine.args[:n]]

    def read(self, e, idx, width):
        return [to_compute(e, e.value(x, idx, width), t, width) for x, t in zip(self.inputs, self.compute)]

    def combine_with(self, low, e, accs, cur, width):
        return inline_region(low, e, self.combine, list(accs) + list(cur), width, self.promote)

    def write(self, e, values, bufs, idx, width):
        for v, b, t in zip(values, bufs, self.storage):
            e.store_buffer(to_storage(e, v, t, width), b, idx)


# Vector registers the accumulators of one reduction may hold (of 16 on AVX2, 32 on AVX-512).
_ACCUMULATOR_REGISTERS = 8


def _chains(low, c, vl, d, deferred) -> int:
    """Independent accumulator chains for a last-axis reduction of extent `d` in steps of
    `vl` lanes: as many as fit `_ACCUMULATOR_REGISTERS` (counting every operand of the
    combine), at most 4, a power of two that divides the steps. One when the loop also
    computes a deferred value other than a load (math, a division: see deferring_reduce),
    whose work per chunk hides the combine's latency: more chains would only repeat that
    code in the loop."""
    if any(v.owner.name != "tt.load" for v in deferred):
        return 1
    regs = sum(max(1, vl * max(8, bits(t)) // low.config.vector_bits) for t in c.compute)
    chains = 1
    while chains < 4 and 2 * chains * regs <= _ACCUMULATOR_REGISTERS and d % (2 * chains * vl) == 0:
        chains *= 2
    return chains


# The combine of tl.max / tl.min on floats (NaN ignored unless every element is NaN), as
# the compare whose select gives the same result on non-NaN operands, and the identity.
_EXTREMA = {"arith.maxnumf": ("ogt", float("-inf")), "arith.minnumf": ("olt", float("inf"))}


def _nan_skipping_extremum(c: _Carried):
    """(predicate, identity) when the reduction's combine is a maxnumf/minnumf of its two
    arguments on a float compute type (tl.max and tl.min), else None."""
    ops = list(c.combine.ops)
    if len(c.inputs) != 1 or len(ops) != 2 or not isinstance(c.compute[0], (Float32Type, Float64Type)):
        return None
    op = ops[0]
    if op.name not in _EXTREMA or set(op.operands) != set(c.combine.args) \
            or list(ops[1].operands) != [op.results[0]]:
        return None
    return _EXTREMA[op.name]


def _extremum_row(e, extremum, elem, reduce_row, read, reread, region):
    """A row's tl.max (tl.min) with one instruction per step: x86 has no vector maxnum,
    and LLVM lowers each `maxnumf` to a max, an unordered compare and a blend (the
    accumulator may be NaN). Here each chain starts from select(x > -inf, x, -inf) of its
    first chunk, so no accumulator is ever NaN, and steps are select(x > acc, x, acc),
    which is x86's max instruction: a NaN x keeps acc, as maxnum does. The result is the
    maxnum of the row unless no element was above -inf: then (an all-NaN row must give
    NaN) the row is reduced again with the combine itself, which a masked or causal row
    of -inf only costs a second pass. `read` gives the first pass's chunks, `reread` the
    second's (values deferred to this reduction read from the buffers the first filled)."""
    pred, identity = extremum

    def ident(ex, width):
        key = ("extremum identity", identity, elem, width)
        if key not in ex.cache:
            ex.cache[key] = ex.emit(arith.ConstantOp(
                FloatAttr(identity, elem) if width == 1 else
                DenseIntOrFPElementsAttr.from_list(vector_type(elem, width), [identity])))
        return ex.cache[key]

    def step(ex, accs, chunk, width):
        (a,), (x,) = accs, chunk
        return [ex.emit(arith.SelectOp(ex.emit(arith.CmpfOp(x, a, pred)), x, a))]
    r = reduce_row(e, read, step, lambda ex, chunk, width: step(ex, [ident(ex, width)], chunk, width))[0]
    again = e.emit(arith.CmpfOp(r, ident(e, 1), "oeq"))
    return e.if_else(again, [r.type], lambda te: reduce_row(te, reread, region), lambda ee: [r])


def deferring_reduce(v, roots, plan, position, writes) -> Operation | None:
    """The reduction that is to compute `v` (a value the function would compute into a
    buffer right after its definition) and write its buffer, or None. It is the first of
    `v`'s consumers (`roots`: the ops whose nests evaluate it) when that is a tt.reduce in
    `v`'s block whose operands are elementwise functions of `v` (same shape: the
    reduction's loop visits every index of `v` once, at the indices the operands are read
    at; not through another value of `plan`, which is read from its buffer), every other
    consumer comes after it, and nothing between `v`'s definition and it writes memory
    (`v`'s loads read then what they would have read at `v`)."""
    producer = v.owner
    first = min(roots, key=lambda r: position.get(r, len(position)))
    if first.name != "tt.reduce" or first not in position or first.parent_block() is not producer.parent_block():
        return None
    if any(r is not first and position.get(r, len(position)) <= position[first] for r in roots):
        return None
    if any(position[producer] < position[w] < position[first] for w in writes):
        return None
    shape = shape_of(v)
    if any(shape_of(x) != shape for x in first.operands):
        return None
    seen, stack = set(), list(first.operands)
    while stack:
        x = stack.pop()
        if x is v:
            return first
        if x in seen or x in plan or not is_tensor(x) or not isinstance(x.owner, Operation):
            continue
        seen.add(x)
        if is_elementwise(x.owner) and shape_of(x) == shape:
            stack.extend(x.owner.operands)
    return None


def lower_reduce(low, op: Operation):
    axis = attr_int(op, "axis")
    c = _Carried(op)
    # Values this loop computes into their buffers (deferring_reduce), written as each
    # chunk is read: the reads evaluate them, and the emitter's cache has them then.
    # The next program's prefetches of their shape are spread over the chunks, as the
    # loop that materialized them would have (hints.take_pending: the softmax's row).
    in_shape = shape_of(c.inputs[0])
    deferred = low.reduce_deferred.pop(op, [])
    deferred_bufs = [low.alloc_buffer(v.type) for v in deferred]
    em = low.emitter_before(op)
    lines = hints.take_pending(low, em, in_shape) if deferred and low.pending_prefetches else []

    def read(e, idx, width):
        values = c.read(e, idx, width)
        for v, b in zip(deferred, deferred_bufs):
            e.store_buffer(e.value(v, idx, width), b, idx)
        hints.issue(e, lines, idx, width)
        return values

    def reread(e, idx, width):
        """A chunk read again after the loop above has filled the deferred buffers."""
        for v, b in zip(deferred, deferred_bufs):
            low.buffers[v] = b
        return c.read(e, idx, width)

    out_shape = in_shape[:axis] + in_shape[axis + 1:]
    scalar_result = not out_shape
    bufs = [] if scalar_result else [low.alloc_buffer(r.type) for r in op.results]
    results = []

    if axis == len(in_shape) - 1:
        d = in_shape[-1]
        vl = low.vector_length(in_shape, c.inputs)

        chains = _chains(low, c, vl, d, deferred)
        # The next row's prefetches waiting for a loop (a layer norm's, after its mean)
        # go all at once before this one: issued a line per chunk of the variance's
        # reduction, the layer norm was 5-10% slower (Zen 3, 4096 x 1024).
        hints.flush_prefetches(low, em)

        def reduce_row(e, idx, read, combine, first=None):
            """The row at `idx` combined to one scalar per carried value: `read(e, idx,
            width)` gives a chunk's values, `combine(e, accs, chunk, width)` combines two
            sets, `first(e, chunk, width)` (if given) maps each chain's first chunk."""
            # `chains` independent accumulators, chain j reading chunks j, j + chains, ...:
            # one loop-carried chain would run at the latency of the combine (3 cycles for
            # an fp32 add) instead of the throughput of the vector units.
            sets = [read(e, idx + (j * vl,), vl) for j in range(chains)]
            if first is not None:
                sets = [first(e, s, vl) for s in sets]
            n = len(c.inputs)  # loop-carried values per chain

            def chunk(ce, k, flat):
                return [a for j in range(chains) for a in combine(
                    ce, flat[j * n:(j + 1) * n], read(ce, idx + (ce.idx_add(k, j * vl),), vl), vl)]
            step = chains * vl
            if d > step:
                flat = e.for_loop(step, d, step, [a for s in sets for a in s], chunk, unroll=False)
                sets = [flat[j * n:(j + 1) * n] for j in range(chains)]
            while len(sets) > 1:  # pairwise, in order
                sets = [combine(e, sets[j], sets[j + 1], vl) for j in range(0, len(sets), 2)]
            accs = sets[0]
            w = vl
            while w > 2:
                halves = [_halves(e, a, w) for a in accs]
                accs = combine(e, [h[0] for h in halves], [h[1] for h in halves], w // 2)
                w //= 2
            if w == 2:
                lanes = [[e.emit(vector.ExtractOp(a, [k], a.type.element_type)) for a in accs] for k in (0, 1)]
                accs = combine(e, lanes[0], lanes[1], 1)
            return accs

        def region(e, accs, chunk, width):
            return c.combine_with(low, e, accs, chunk, width)
        extremum = _nan_skipping_extremum(c)

        def body(e, idx):
            if extremum is None:
                accs = reduce_row(e, idx, read, region)
            else:
                accs = _extremum_row(e, extremum, c.compute[0], lambda ex, *a: reduce_row(ex, idx, *a),
                                     read, reread, region)
            if scalar_result:
                results.extend(to_storage(e, v, t, 1) for v, t in zip(accs, c.storage))
            else:
                c.write(e, accs, bufs, idx, 1)
        low.nest(em, out_shape, 1, body) if out_shape else body(em, ())
    else:
        vl = low.vector_length(in_shape, c.inputs)
        d = in_shape[axis]

        def insert(idx, k):
            return idx[:axis] + (k,) + idx[axis:]

        def body(e, idx):
            accs = read(e, insert(idx, 0), vl)
            if d > 1:
                accs = e.for_loop(1, d, 1, accs,
                                  lambda ce, k, a: c.combine_with(low, ce, a, read(ce, insert(idx, k), vl), vl))
            c.write(e, accs, bufs, idx, vl)
        low.nest(em, out_shape, vl, body)
    if scalar_result:
        for r, v in zip(op.results, results):
            r.replace_all_uses_with(v)
    else:
        for r, b in zip(op.results, bufs):
            low.buffers[r] = b
    for v, b in zip(deferred, deferred_bufs):
        low.buffers[v] = b


def lower_scan(low, op: Operation):
    axis = attr_int(op, "axis")
    reverse = bool(attr_int(op, "reverse", 0))
    c = _Carried(op)
    shape = shape_of(c.inputs[0])
    d = shape[axis]
    bufs = [low.alloc_buffer(r.type) for r in op.results]
    outer = shape[:axis] + shape[axis + 1:]
    vl = 1 if axis == len(shape) - 1 or not outer else low.vector_length(shape, c.inputs)
    em = low.emitter_before(op)

    def at(e, idx, k):
        """Full index with k at the axis (counted from the end in reverse)."""
        if reverse:
            k = d - 1 - k if isinstance(k, int) else e.emit(arith.SubiOp(e.const_index(d - 1), k))
        return idx[:axis] + (k,) + idx[axis:]

    def body(e, idx):
        first = at(e, idx, 0)
        carry = c.read(e, first, vl)
        c.write(e, carry, bufs, first, vl)

        def step(ce, k, carry):
            full = at(ce, idx, k)
            new = c.combine_with(low, ce, carry, c.read(ce, full, vl), vl)
            c.write(ce, new, bufs, full, vl)
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
