"""Loads whose lanes step by a small constant stride: contiguous windows and shuffles.

`lane_stride` recognizes a pointer whose lanes are s elements apart (2 <= s <=
MAX_LOAD_STRIDE): its offsets are a sum of terms (through tt.addptr, arith.addi/subi,
widening and multiplication by a constant), every term constant along the chunk of lanes
except one contiguous term times s (`x[:, ::2]`, `base + 2 * i`, Inductor's
`2*x0 + 256*row`).

Such a load reads one contiguous window of s * VL elements and shuffles its lanes out.
The window starts at lane 0 and covers the gaps between lanes: an address between two that
the kernel reads, fewer than a page apart, is in a mapped page, so reading it cannot fault
(the values are dropped). Only elements past the last lane, or next to a masked-off lane,
are masked off in the window.

Loads that differ only in a constant offset smaller than the stride (`x[2*i]` and
`x[2*i + 1]`, an interleaved pair or an RGB triple) form a family (`families`): they
share one window, loaded once per chunk, that starts at the lane 0 of the member with the
smallest offset and is masked only past the last lane of the member with the largest one.
Members must sit in the same block and carry the same mask, so that whenever one is
executed the others are too: the window then lies between addresses the kernel reads.
"""
from dataclasses import dataclass

from xdsl.dialects import vector
from xdsl.dialects.builtin import DenseArrayBase, DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, i64
from xdsl.ir import Operation, SSAValue

from triton_cpu.analysis.axis_info import element_type
from triton_cpu.dialects import tcpu
from triton_cpu.dialects.compat import arith

from .util import is_tensor, is_volatile, vector_type

# Largest stride (in elements) a strided load reads as one contiguous window.
MAX_LOAD_STRIDE = 4


def offset_terms(axis, v: SSAValue, coef: int = 1, depth: int = 0):
    """[(coefficient, leaf)] with v = sum of coefficient * leaf, or None (too deep);
    `axis` (an AxisInfoAnalysis) tells the constant factors."""
    if depth > 8:
        return None
    op = v.owner if isinstance(v.owner, Operation) else None
    name = op.name if op is not None and is_tensor(v) else ""
    if name in ("tt.addptr", "arith.addi", "arith.subi"):
        a = offset_terms(axis, op.operands[0], coef, depth + 1)
        b = offset_terms(axis, op.operands[1], -coef if name == "arith.subi" else coef, depth + 1)
        return None if a is None or b is None else a + b
    if name in ("arith.extsi", "arith.extui"):
        # Widening keeps the sum (the analysis, too, assumes the narrow one did not wrap).
        return offset_terms(axis, op.operands[0], coef, depth + 1)
    if name == "arith.muli":
        for x, y in (op.operands, op.operands[::-1]):
            c = axis.get(y).value if is_tensor(y) else None
            if c is not None:
                return offset_terms(axis, x, coef * c, depth + 1)
    return [(coef, v)]


def lane_stride(low, ptr: SSAValue, width: int, lane: int) -> tuple[int, bool]:
    """(s, proven) when `ptr`'s elements along `lane` step by s elements (2 <= s <=
    MAX_LOAD_STRIDE) in every chunk of `width` lanes, else (0, False). `proven` is False
    when that rests on the optimistic analysis (`axis_assumed`): the caller then checks it
    at run time."""
    terms = offset_terms(low.axis, ptr)
    if terms is None:
        return 0, False
    for analysis in (low.axis, low.axis_assumed):
        strided = []
        for coef, leaf in terms:
            info = analysis.get(leaf) if is_tensor(leaf) else None
            if info is None or info.constancy[lane] >= width:
                continue
            strided.append(coef if info.contiguity[lane] >= width else 0)
        if len(strided) == 1 and 2 <= strided[0] <= MAX_LOAD_STRIDE:
            return strided[0], analysis is low.axis
    return 0, False


@dataclass(frozen=True)
class Member:
    """A load's place in its family: `family` identifies the shared window (None: a
    family of one), `rel` is this load's offset from the window start, `span` the largest
    member's."""
    family: object
    rel: int
    span: int


def families(low, loads) -> dict[Operation, Member]:
    """Groups the tensor `loads` whose pointers differ only in a constant offset, with
    offsets less than the largest coefficient of their terms apart (only strided loads can
    share a window; `window_load` checks the stride at its lanes). Loads that group
    with no other are left out."""
    groups: dict[tuple, list[tuple[int, Operation]]] = {}
    for op in loads:
        if is_volatile(op):
            continue  # each volatile load reads memory itself
        split = split_offset(low.axis, op.ptr)
        if split is None:
            continue
        rest, const = split
        groups.setdefault((op.parent_block(), op.mask, op.ptr.type, rest), []).append((const, op))
    out = {}
    for key, members in groups.items():
        coefs = [abs(c) for _, c in key[3]]
        lo = min(c for c, _ in members)
        span = max(c for c, _ in members) - lo
        if len(members) < 2 or not coefs or span >= max(coefs):
            continue
        for const, op in members:
            out[op] = Member(key, const - lo, span)
    return out


def split_offset(axis, ptr: SSAValue) -> tuple[frozenset, int] | None:
    """(rest, const) with ptr = rest + const elements: `rest` names the non-constant terms
    as a set of (leaf key, coefficient), equal for pointers that differ only in a constant
    offset; None when the offset is too deep to take apart."""
    terms = offset_terms(axis, ptr)
    if terms is None:
        return None
    const, rest = 0, {}
    for coef, leaf in terms:
        value = axis.get(leaf).value if is_tensor(leaf) else None
        if value is not None:
            const += coef * value
            continue
        key, offset = _leaf_key(axis, leaf)
        const += coef * offset
        rest[key] = rest.get(key, 0) + coef
    return frozenset((k, c) for k, c in rest.items() if c), const


def _leaf_key(axis, leaf: SSAValue):
    """(key, offset): leaf = (what key names) + offset, with equal keys for a splat of the
    same scalar and the offset of a scalar pointer plus a constant (`x + 1 + 2 * i` splats
    the scalar x + 1)."""
    op = leaf.owner if isinstance(leaf.owner, Operation) else None
    if op is None or op.name != "tt.splat":
        return leaf, 0
    scalar, offset = op.operands[0], 0
    while isinstance(scalar.owner, Operation) and scalar.owner.name == "tt.addptr":
        c = axis.get(scalar.owner.operands[1]).value
        if c is None:
            break
        offset += c
        scalar = scalar.owner.operands[0]
    return ("splat", scalar), offset


def window_load(em, op: Operation | None, p0: SSAValue, width: int, stride: int, m, o, idx, lane,
                elem=None) -> SSAValue:
    """The `width` lanes of load `op`, lane 0 at `p0`, `stride` elements apart, taken from
    its family's window (loaded here unless this chunk's window is in the emitter's cache).
    `op` None: a load of `elem` on its own (the run-time-checked path)."""
    if op is not None:
        elem = element_type(op.results[0].type)
    member = em.low.stride_families.get(op) if op is not None else None
    if member is not None and member.span >= stride:
        member = None  # this chunk's lanes step by a smaller stride than the family spans
    rel, span = (member.rel, member.span) if member is not None else (0, 0)
    n = width * stride
    key = ("window", member.family, idx, width, lane, stride) if member is not None else None
    window = em.cache.get(key) if key is not None else None
    if window is None:
        start = p0
        if rel:
            start = em.emit(tcpu.AddPtrOp(p0, em.emit(arith.ConstantOp(IntegerAttr(-rel, IntegerType(32)))),
                                          p0.type))
        window = em.emit(tcpu.VLoadOp(start, vector_type(elem, n), _window_mask(em, m, width, stride, span)))
        if key is not None:
            em.cache[key] = window
    pick = DenseArrayBase.from_list(i64, [rel + k * stride for k in range(width)])
    lanes = em.emit(vector.ShuffleOp(window, window, pick, result_type=vector_type(elem, width)))
    if m is not None and o is not None:
        lanes = em.emit(arith.SelectOp(m, lanes, o))
    return lanes


def _window_mask(em, m, width: int, stride: int, span: int):
    """Which of the window's width * stride elements may be read: with no lane mask, all
    up to the last lane of the last member (None when that is all of them); with one, the
    elements of each unmasked lane's group from its first member to its last."""
    n = width * stride
    i1 = IntegerType(1)
    if m is None:
        if span == stride - 1:
            return None
        keep = [int(q <= (width - 1) * stride + span) for q in range(n)]
        return em.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vector_type(i1, n), keep)))
    spread = DenseArrayBase.from_list(i64, [q // stride for q in range(n)])
    wide = em.emit(vector.ShuffleOp(m, m, spread, result_type=vector_type(i1, n)))
    if span == stride - 1:
        return wide
    keep = em.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(
        vector_type(i1, n), [int(q % stride <= span) for q in range(n)])))
    return em.emit(arith.AndIOp(wide, keep))
