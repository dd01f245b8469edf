"""Run-time checks for the vector accesses that rest on an assumption, done once per loop
nest where the addresses allow it.

The optimistic axis analysis (`AxisInfoAnalysis(optimistic=True)`) keeps the runs of x
through x % m and x // m when it cannot prove x >= 0; an access that is vectorized on
that claim branches on `tcpu.is_contiguous` to a vector access or to a gather/scatter
(`TileEmitter.speculative`). Checking every chunk of lanes where it is accessed costs a
vector of 64-bit addresses, a compare and a mask test per chunk: in the matmul
tutorial's K loop, for every row of every B tile.

Whether a chunk of pointers is consecutive depends only on the part of the address that
varies along the lanes. `lane_varying_root` strips what does not: an addptr operand or
an integer addend (arith.addi; the subtrahend of arith.subi) that is constant along the
lane axis (proven, not assumed), and the broadcasts and expand_dims that keep the lane
axis. For the tutorial's `b_ptr + rk[:, None] * stride + rn[None, :]`,
advanced by a scalar each iteration, that leaves `rn`: the lanes of a B chunk are
consecutive elements exactly when those of the matching chunk of `rn` are consecutive
integers (as 64-bit values; `tcpu.is_contiguous` on an integer vector). Upstream's
tutorial writes `b_ptr + (rk[:, None] * stride + rn[None, :])`, one addptr of a sum: the
same `rn` (unmasked bf16 matmul 1024^3 on AMX, 128 x 256 x 64: 2.7-2.9 -> 2.2 ms, as fast
as the two-addptr form; fp32 7.5 -> 7.1 ms).

When the root is defined outside the loops around the access (rn, before the K loop),
all its chunks are checked once, before the outermost of those loops, and the access
branches on that one scalar: every chunk takes the vector access, or every chunk the
gather/scatter. The root is read from its buffer, or recomputed there when it is
computed only from cheap ops that cannot trap (no integer division, no loads). At most
`MAX_CHUNKS` chunks; otherwise, or when the root is in the access's own block, each
access checks its own lanes as before.

A root x * s, with x proven in runs and s one scalar the compiler does not know (a stride
argument Triton does not specialize: FlagGems' pointwise kernels, Inductor's dynamic
shapes; the optimistic analysis's `unit_strides` claim), is checked as s == 1
(`unit_stride_check`): one scalar compare, where the lanes' addresses would cost a vector
of 64-bit products (emulated on AVX2) per chunk.
"""
from itertools import product
from math import prod

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from triton_cpu.analysis.axis_info import attr_int, shape_of
from triton_cpu.dialects import tcpu
from triton_cpu.dialects.compat import arith

from . import strided_loads
from .util import INTEGER_DIVISIONS, is_tensor

MAX_CHUNKS = 16

_SHAPE_OPS = {"tt.splat", "tt.make_range", "tt.broadcast", "tt.expand_dims"}


def lane_varying_root(low, ptr: SSAValue, width: int) -> SSAValue | None:
    """The value whose chunks of `width` lanes along the last axis are consecutive exactly
    when those of `ptr` are (see the module docstring); None when nothing is stripped."""
    v = ptr
    while isinstance(v.owner, Operation):
        op = v.owner
        rank = len(shape_of(v))
        if op.name in ("tt.addptr", "arith.addi"):
            # A term constant along the lanes shifts every lane alike. (An integer sum that
            # wraps within a chunk would break the runs; the axis analysis, like Triton's
            # own, assumes that no index arithmetic wraps, and so does this.)
            x, y = op.operands
            if _lane_constant(low, x, width):
                v = y
            elif _lane_constant(low, y, width):
                v = x
            else:
                break
        elif op.name == "arith.subi" and _lane_constant(low, op.operands[1], width):
            v = op.operands[0]
        elif op.name == "tt.broadcast" and shape_of(op.operands[0])[-1] == shape_of(v)[-1]:
            v = op.operands[0]
        elif op.name == "tt.expand_dims" and attr_int(op, "axis") % rank != rank - 1:
            v = op.operands[0]
        else:
            break
    return v if v is not ptr and is_tensor(v) else None


def _lane_constant(low, v: SSAValue, width: int) -> bool:
    return not is_tensor(v) or low.axis.get(v).constancy[-1] >= width


def hoisted_check(em, ptr: SSAValue, width: int, lane: int, stride: int) -> SSAValue | None:
    """An i1 that holds when every chunk of `width` lanes of `ptr` runs `stride` elements
    apart, computed before the outermost loop around `em` that `ptr`'s lane-varying root
    is defined outside of; None when the access has to check its own lanes."""
    low = em.low
    rank = len(shape_of(ptr))
    if lane % rank != rank - 1:
        return None
    root = lane_varying_root(low, ptr, width)
    if root is None or not _available(low, root):
        return None
    anchor = _outermost_loop_inside(em.block, _defining_block(root))
    shape = shape_of(root)
    if anchor is None or prod(shape) // width > MAX_CHUNKS:
        return None
    key = ("contiguous", root, width, stride, anchor)
    ok = low.hoisted.get(key)
    if ok is None:
        outer = low.emitter_before(anchor)
        chunks = product(*(range(0, d, width if i == len(shape) - 1 else 1) for i, d in enumerate(shape)))
        for idx in chunks:
            c = outer.emit(tcpu.IsContiguousOp(outer.value(root, idx, width), stride))
            ok = c if ok is None else outer.emit(arith.AndIOp(ok, c))
        low.hoisted[key] = ok
    return ok


def unit_stride_check(em, ptr: SSAValue, width: int, lane: int) -> SSAValue | None:
    """An i1 that holds when `ptr`'s chunks of `width` lanes are consecutive because a
    factor unknown at compile time is 1: past what is constant along the lanes
    (`lane_varying_root`, then the terms of `strided_loads.offset_terms`), one term
    x * splat(s) of coefficient 1, with x proven in runs of `width` along the lane axis.
    Then the check is s == 1, emitted once per emitter and s; None otherwise."""
    low = em.low
    rank = len(shape_of(ptr))
    if lane % rank != rank - 1:
        return None
    root = lane_varying_root(low, ptr, width)
    terms = strided_loads.offset_terms(low.axis, root) if root is not None else None
    varying = [(coef, leaf) for coef, leaf in terms or () if not _lane_constant(low, leaf, width)]
    if len(varying) != 1 or varying[0][0] != 1:
        return None
    op = varying[0][1].owner
    if not (isinstance(op, Operation) and op.name == "arith.muli"):
        return None
    for x, y in (op.operands, op.operands[::-1]):
        if is_tensor(x) and low.axis.get(x).contiguity[-1] >= width and isinstance(y.owner, Operation) \
                and y.owner.name == "tt.splat":
            s = y.owner.operands[0]
            key = ("unit stride", s)
            if key not in em.cache:
                one = em.emit(arith.ConstantOp(IntegerAttr(1, s.type)))
                em.cache[key] = em.emit(arith.CmpiOp(s, one, "eq"))
            return em.cache[key]
    return None


def _defining_block(v: SSAValue):
    return v.block if isinstance(v, BlockArgument) else v.owner.parent_block()


def _outermost_loop_inside(block, outer_block) -> Operation | None:
    """The op in `outer_block` that holds `block` (None: `block` is `outer_block`, or not
    inside it)."""
    anchor = None
    while block is not outer_block:
        op = block.parent_op() if block is not None else None
        if op is None:
            return None
        anchor, block = op, op.parent_block()
    return anchor


def _available(low, v: SSAValue) -> bool:
    """Whether `v` can be read before a loop that uses it: materialized, or computed from
    scalars and materialized tensors by ops that cannot trap (recomputed there, it runs
    where the access may not: no integer division, whose zero divisor the program may
    guard)."""
    if not is_tensor(v) or v in low.buffers:
        return True
    op = v.owner
    if not isinstance(op, Operation) or op.regions or op.name in INTEGER_DIVISIONS:
        return False
    if not (op.name.startswith("arith.") or op.name in _SHAPE_OPS or op.name == "tt.addptr"):
        return False
    return all(_available(low, o) for o in op.operands)
