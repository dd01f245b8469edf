"""Ops that compute nothing on a CPU, or only hint.

ttg.barrier (`tl.debug_barrier`) orders the threads of one GPU program; here a program
runs on one thread, in program order, so it is dropped. (llvm.intr.assume, which Triton
only allows on scalars, needs no lowering: it stays for the code generator, which emits
LLVM's assume.)

tcpu.prefetch on a tensor of pointers (from prefetch-next-program) becomes one scalar
tcpu.prefetch per cache line: a loop over the tile's rows and, along the last axis, one
element every `prefetch_step` lanes (a line's worth of contiguous lanes; of lanes s
elements apart, as Inductor's `2*x0 + 256*row`; or of lanes that repeat one address).
A `spread` prefetch of a 2-D tile is handed to the tt.dot after it, which issues its
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
    if op.spread is not None and len(shape) == 2:
        dot = op.next_op
        while dot is not None and dot.name not in ("tt.dot", "tt.dot_scaled"):
            dot = dot.next_op
        if dot is not None:  # issued between that dot's micro-tiles (dot.py)
            low.spread_prefetches.setdefault(dot, []).append((ptr, step))
            drop(low, op)
            return
    steps = [1] * (len(shape) - 1) + [step]
    # In lane groups (lane_groups.py): a gathered row's index is loaded once per row.
    low.nest_steps(low.emitter_before(op), shape, steps,
                   lambda em, idx: em.emit(tcpu.PrefetchOp(em.value(ptr, idx, 1))),
                   group_size(low, shape, step, [ptr]))
    drop(low, op)
