"""Lane groups: values that repeat along the lane dimension computed once per group.

A loop nest's innermost loop walks the last dimension in steps of VL lanes and evaluates
every fused producer at each step. A value whose runs along that dimension are longer
than VL (the axis analysis' constancy or contiguity) is then recomputed for every step
although it only changes once per run: Inductor's `x1 = xindex // 128` and the load of
`idx[x1]` it feeds, or `x0 = xindex % 128`, cost a signed division per 16 lanes.

When a division, remainder or load with such runs is in a nest, the nest splits that loop
in two (`FuncLowering.nest_steps`): an outer loop over groups of G lanes (G the shortest
such run; no outer loop when G is the whole dimension) and an inner one over the VL-lane steps of a
group. Inside the inner loop, a request for a value at lane index `j = g + i` (group start
g, offset i) is answered from the group start, evaluated once before the inner loop:

  * constancy a multiple of G: v(j) = v(g); a vector request is that scalar broadcast;
  * contiguity a multiple of G (integers and pointers): v(j) = v(g) + i, and a vector
    request along the lanes is that plus 0, 1, ..., VL-1.

Runs are aligned (they start at multiples of their length, see AxisInfoAnalysis) and G
divides them, so [g, g + G) lies inside one run. Only the proven analysis is used.
A lane a constant k past j (0 < k < VL: another lane of the same step, like a prefetch of
the step's second cache line, or one lane of a vector assembled lane by lane) is in the
group too, as VL divides G: `TileEmitter.lane_add` records it, and v(j + k) is answered
from the group start the same way (i + k for i). Requests at other indices (through a
reshape, a transpose, a reduction's own loops) are evaluated as before.
"""
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects import vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType
from xdsl.ir import SSAValue

from triton_cpu.analysis.axis_info import element_type, is_ptr, shape_of
from triton_cpu.dialects import tcpu
from triton_cpu.dialects.compat import arith

from .util import INTEGER_DIVISIONS, vector_type

if TYPE_CHECKING:
    from .core import TileEmitter

# Ops whose runs decide a split: what costs more per step than the add a group saves
# (a division or remainder, a memory access). Sums and products of ranges and splats are
# strength-reduced by LLVM already; splitting for them alone would only churn the code.
_WORTH_A_GROUP = INTEGER_DIVISIONS | {"tt.load"}


@dataclass
class LaneGroup:
    """The inner loop of a split lane loop: lane index `j` = `start` + `offset`, with `start`
    a multiple of `size` and `offset` one of `step` (which divides `size`); `outer` emits
    before the inner loop. `shifted` maps lane indices j + k (0 < k < step) to k."""
    outer: "TileEmitter"
    start: SSAValue | int
    offset: SSAValue
    j: SSAValue
    size: int
    step: int
    shifted: dict = field(default_factory=dict)


def group_size(low, shape, vl: int, roots) -> int | None:
    """G for a nest over `shape` stepping `vl` lanes that evaluates `roots`, or None when
    no division, remainder or load among their fused producers runs longer than `vl` along
    the last dimension."""
    n = shape[-1] if shape else 1
    if vl >= n:
        return None
    runs = set()
    for v in low.fused_producers(roots):
        if v.owner.name not in _WORTH_A_GROUP or shape_of(v)[-1] != n:
            continue
        info = low.axis.get(v)
        candidates = [info.constancy[-1]]
        if _affine_type(element_type(v.type)):
            candidates.append(info.contiguity[-1])
        runs.update(min(c, n) for c in candidates if c > vl)
    return min(runs) if runs else None


def _affine_type(t) -> bool:
    return isinstance(t, IntegerType) and t.width.data > 1 or is_ptr(t)


def grouped_value(em, v: SSAValue, idx, width: int, lane: int) -> SSAValue | None:
    """`v` at `idx` (whose last index is the group's j, or a lane of `shifted`) from the
    group start, or None when v's runs do not cover the group."""
    g = em.group
    k = g.shifted.get(idx[-1], 0)
    last = len(idx) - 1
    if k and width > 1 and lane == last:
        return None  # lanes j + k onwards might run past the group's end
    info = em.low.axis.get(v)
    at_start = idx[:-1] + (g.start,)
    elem = element_type(v.type)
    if info.constancy[-1] % g.size == 0:
        if width == 1 or lane != last:
            return g.outer.value(v, at_start, width, lane)
        return em.emit(vector.BroadcastOp(g.outer.value(v, at_start, 1), vector_type(elem, width)))
    if info.contiguity[-1] % g.size or not _affine_type(elem):
        return None
    if width > 1 and (lane != last or is_ptr(elem)):
        return None
    return from_start(em, g.outer.value(v, at_start, 1), em.idx_add(g.offset, k), elem, width)


def from_start(em, base: SSAValue, offset, elem, width: int, stride: int = 1) -> SSAValue:
    """A value that steps by `stride` per lane, at `offset` (an index) lanes past the lane
    where it is `base`: a scalar (or a pointer) for width 1, else the vector of `width`
    lanes from there (integers only)."""
    if stride != 1:
        offset = em.emit(arith.MuliOp(offset, em.const_index(stride)))
    if is_ptr(elem):
        return em.emit(tcpu.AddPtrOp(base, em.emit(arith.IndexCastOp(offset, IntegerType(32))), elem))
    scalar = em.emit(arith.AddiOp(base, em.emit(arith.IndexCastOp(offset, elem))))
    if width == 1:
        return scalar
    vt = vector_type(elem, width)
    steps = em.emit(tcpu.IotaOp(vt))
    if stride != 1:
        steps = em.emit(arith.MuliOp(steps, em.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vt, [stride])))))
    return em.emit(arith.AddiOp(em.emit(vector.BroadcastOp(scalar, vt)), steps))
