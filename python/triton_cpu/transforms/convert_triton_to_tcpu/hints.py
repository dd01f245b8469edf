"""Ops that compute nothing on a CPU, or only hint.

ttg.barrier (`tl.debug_barrier`) orders the threads of one GPU program; here a program
runs on one thread, in program order, so it is dropped. (llvm.intr.assume, which Triton
only allows on scalars, needs no lowering: it stays for the code generator, which emits
LLVM's assume.)

tcpu.prefetch on a tensor of pointers (from prefetch-next-program) becomes one scalar
tcpu.prefetch per cache line: a loop over the tile's rows and, along the last axis, one
element every `prefetch_step` lanes (a line's worth of contiguous lanes; of lanes s
elements apart, as Inductor's `2*x0 + 256*row`; or of lanes that repeat one address).
The lines are not issued at the prefetch's position but by the next loop nest the
conversion emits in the same block when it runs over the tile's shape (a materialization,
a store, a reduction that computes a materialized value in its loop: take_pending / issue),
a line per chunk between its computations; before any other loop (a reduction, a nest over
another shape), or at the end of the block, all at once. A `spread` prefetch of a 2-D tile is handed to the tt.dot after it, which issues its
lines between its micro-tiles (dot.py); the step of such a tile may rest on the axis
analysis' assumption (a prefetch is a hint: a wrong one only fetches other lines).
"""
from xdsl.ir import Operation

from triton_cpu.analysis.axis_info import element_type, pointee_bytes, shape_of
from triton_cpu.dialects import tcpu

from .lane_groups import group_size
from .strided_loads import offset_terms
from .util import is_tensor

LINE_BYTES = 64


def line_step(ptr) -> int:
    """Elements of a tile of pointers `ptr` along its last axis that one prefetch covers:
    a cache line's worth, or the whole axis when shorter."""
    return min(max(1, LINE_BYTES // pointee_bytes(element_type(ptr.type))), shape_of(ptr)[-1])


def prefetch_step(axis, ptr) -> int | None:
    """Lanes along the last axis of the tile of pointers `ptr` that one prefetch per step
    covers, every line of the tile visited: line_step when the lanes run contiguously over
    a line or repeat one address that long; 64 / (s x element bytes) when they are s
    elements apart within runs at least that long (one term of the offset contiguous, the
    others constant over the run); None otherwise (no prefetch)."""
    step = line_step(ptr)
    info = axis.get(ptr)
    if info.contiguity[-1] >= step or info.constancy[-1] >= step:
        return step
    strided, run = [], shape_of(ptr)[-1]
    for coef, leaf in offset_terms(axis, ptr) or ():
        if not is_tensor(leaf):
            continue  # a scalar: the same in every lane
        leaf_info = axis.get(leaf)
        if leaf_info.constancy[-1] >= step:
            run = min(run, leaf_info.constancy[-1])
        else:
            strided.append(coef)
            run = min(run, leaf_info.contiguity[-1])
    if len(strided) != 1 or strided[0] <= 1 or run < 2:
        return None  # several varying terms, or one that is not a run (an index per lane)
    lanes = LINE_BYTES // (strided[0] * pointee_bytes(element_type(ptr.type)))
    return lanes if 1 <= lanes <= run else None


def drop(low, op: Operation):
    op.detach()
    op.erase()


def lower_prefetch(low, op: Operation):
    ptr = op.ptr
    if not is_tensor(ptr):
        return
    shape = shape_of(ptr)
    step = low.prefetch_steps.get(op)
    if step is None:
        drop(low, op)
        return
    if op.spread is None:
        # Issued by the next loop nest over the tile's shape in this block (see
        # with_pending_prefetches); the op stays as a marker of its position until then.
        low.pending_prefetches.append(op)
        return
    if len(shape) == 2:
        dot = op.next_op
        while dot is not None and dot.name not in ("tt.dot", "tt.dot_scaled"):
            dot = dot.next_op
        if dot is not None:  # issued between that dot's micro-tiles (dot.py)
            low.spread_prefetches.setdefault(dot, []).append((ptr, step))
            drop(low, op)
            return
    _burst(low, op)


def _burst(low, op: Operation):
    """All of the prefetch's lines at its position."""
    issue_all(low, low.emitter_before(op), op.ptr, low.prefetch_steps[op])
    drop(low, op)


def issue_all(low, em, ptr, step: int):
    """Every line of the tile of pointers `ptr` at `em`, in a loop nest of their own."""
    shape = shape_of(ptr)
    steps = [1] * (len(shape) - 1) + [step]
    # In lane groups (lane_groups.py): a gathered row's index is loaded once per row.
    low.nest_steps(em, shape, steps, lambda e, idx: e.emit(tcpu.PrefetchOp(e.value(ptr, idx, 1))),
                   group_size(low, shape, step, [ptr]))


def _after(marker: Operation, before: Operation | None) -> bool:
    """Whether a position (before `before`; None: the end of the block) follows `marker`."""
    op = marker.next_op
    while op is not None and op is not before:
        op = op.next_op
    return before is None or op is before


def take_pending(low, em, shape) -> list:
    """The tile prefetches waiting in `em`'s block before its position, for a loop about
    to be emitted there over chunks of `shape` (None: one that takes none): those of
    that shape, as (pointers, lanes per line), for the loop to issue chunk by chunk
    (`issue`), a line at a time between its computations; the others all at once, before
    it. A softmax's exp pass spreads the next row's 64 prefetches over its 64 chunks (all
    at once, they stalled on the cache's miss buffers: 1.83-1.89 -> 1.55-1.60 ms, Zen 3,
    2 threads)."""
    waiting = [p for p in low.pending_prefetches if p.parent_block() is em.block and _after(p, em.before)]
    mine = [p for p in waiting if shape is not None and shape_of(p.ptr) == tuple(shape)]
    lines = [(p.ptr, low.prefetch_steps[p]) for p in mine]
    for p in waiting:
        low.pending_prefetches.remove(p)
        if p in mine:
            drop(low, p)
        else:
            _burst(low, p)
    return lines


def issue(e, lines, idx, width: int):
    """The prefetches of `lines` (from take_pending) for lanes idx[-1] .. idx[-1] + width
    along the last axis at `idx`: one per line (one when the chunk is narrower)."""
    for ptr, step in lines:
        for k in range(0, width, step) if width >= step else [0]:
            e.emit(tcpu.PrefetchOp(e.value(ptr, idx[:-1] + (e.lane_add(idx[-1], k),), 1)))


def with_pending_prefetches(low, em, shape, vl: int, body):
    """`body` of a loop nest about to be emitted at `em` over `shape` in chunks of `vl`
    lanes, extended with the waiting prefetches of that shape (take_pending)."""
    if not low.pending_prefetches:
        return body
    lines = take_pending(low, em, shape)
    if not lines:
        return body

    def spread(e, idx):
        body(e, idx)
        issue(e, lines, idx, vl)
    return spread


def flush_prefetches(low, em):
    """The prefetches waiting in `em`'s block before its position, all at once (before a
    loop that takes none, or the block's terminator)."""
    if low.pending_prefetches:
        take_pending(low, em, None)
