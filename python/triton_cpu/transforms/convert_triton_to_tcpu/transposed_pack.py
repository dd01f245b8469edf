"""Packing a tile whose memory runs down its columns, through in-register transposes.

`tt.dot` packs its operands row-major (see dot.py): a row of the packed buffer is one
vector along the tile's last axis. When the operand's memory runs along its other axis
instead (`tl.dot(q, tl.trans(k))` with k loaded row-major, `tl.dot(tl.trans(x), dy)`, a
tile loaded through a column-major pointer), every such vector is a gather. Here the
tile is read in T x T blocks (T: the native lanes of the packed type): T vectors down the
columns, each one contiguous access, then transposed in registers by log2(T) rounds of
two-input shuffles (`transpose`) and stored as T rows. On AVX2 an 8 x 8 fp32 block takes
24 shuffles (vshufps, vinsertf128, vperm2f128) instead of 64 single-lane loads.

`runs_down_columns` decides from the axis analysis of the loads that produce the tile,
followed through the ops that are fused by index mapping (elementwise ops, trans,
broadcast, expand_dims, splat): only when lanes down the columns read memory contiguously
and lanes along the rows would not. Any producer it does not know keeps the row-wise
pack.
"""
from xdsl.dialects import vector
from xdsl.dialects.builtin import DenseArrayBase, DenseIntOrFPElementsAttr, TensorType, i64
from xdsl.ir import Operation, SSAValue

from triton_cpu.analysis.axis_info import attr, attr_int, element_type, shape_of

from .util import is_elementwise, is_tensor, widen

# How lanes along one dimension read a tensor's sources.
_UNIFORM = 0   # no memory access varies along it (splats, ranges, constants)
_CONTIGUOUS = 1  # every load varies along it in consecutive addresses
_OTHER = 2     # a gather, or a producer this module does not follow


def runs_down_columns(low, value: SSAValue, lanes: int) -> bool:
    """Whether `value` (rank >= 2) is read contiguously with `lanes` lanes down its
    columns (dimension -2) and not along its rows (dimension -1)."""
    rank = len(shape_of(value))
    return _access(low, value, rank - 2, lanes, {}) == _CONTIGUOUS \
        and _access(low, value, rank - 1, lanes, {}) == _OTHER


def _access(low, v: SSAValue, lane: int, lanes: int, seen: dict) -> int:
    if not is_tensor(v):
        return _UNIFORM
    key = (v, lane)
    if key in seen:
        return seen[key]
    seen[key] = _OTHER  # a cycle (not expected in SSA) is not followed
    seen[key] = result = _access_of(low, v, lane, lanes, seen)
    return result


def _access_of(low, v, lane, lanes, seen) -> int:
    if v in low.buffers:  # materialized: a row-major buffer
        return _CONTIGUOUS if lane == len(shape_of(v)) - 1 else _OTHER
    op = v.owner
    if not isinstance(op, Operation):
        return _OTHER
    name = op.name
    if name in ("tt.splat", "tt.make_range"):
        return _UNIFORM
    if name == "arith.constant":  # a splat, or distinct elements read from a row-major buffer
        value = attr(op, "value")
        if isinstance(value, DenseIntOrFPElementsAttr) and value.is_splat():
            return _UNIFORM
        return _CONTIGUOUS if lane == len(shape_of(v)) - 1 else _OTHER
    if name == "tt.load":
        if shape_of(v)[lane] < lanes:
            return _OTHER
        if low.axis.get(op.ptr).contiguity[lane] < lanes:
            return _OTHER
        parts = [_access(low, x, lane, lanes, seen) for x in (op.mask, op.other) if x is not None]
        return _OTHER if _OTHER in parts else _CONTIGUOUS
    if name == "tt.trans":
        order = [int(x) for x in op.order.get_values()]
        return _access(low, op.operands[0], order[lane], lanes, seen)
    if name == "tt.expand_dims":
        axis = attr_int(op, "axis")
        if lane == axis:
            return _UNIFORM
        return _access(low, op.operands[0], lane - (lane > axis), lanes, seen)
    if name == "tt.broadcast":
        src = op.operands[0]
        if shape_of(src)[lane] == 1:
            return _UNIFORM
        return _access(low, src, lane, lanes, seen)
    if is_elementwise(op):
        parts = [_access(low, x, lane, lanes, seen) for x in op.operands]
        if _OTHER in parts:
            return _OTHER
        return _CONTIGUOUS if _CONTIGUOUS in parts else _UNIFORM
    return _OTHER


def transpose(e, rows: list[SSAValue]) -> list[SSAValue]:
    """The transpose of the T x T block whose rows are the T-lane vectors `rows` (T a
    power of two): round b (b = 1, 2, .., T/2) swaps the off-diagonal b x b blocks of
    each 2b x 2b block, pairing row i with row i + b."""
    n = len(rows)
    t = rows[0].type
    rows = list(rows)
    b = 1
    while b < n:
        lo, hi = [], []
        for c in range(0, n, 2 * b):
            lo += list(range(c, c + b)) + list(range(n + c, n + c + b))
            hi += list(range(c + b, c + 2 * b)) + list(range(n + c + b, n + c + 2 * b))
        for i in range(n):
            if i & b:
                continue
            x, y = rows[i], rows[i + b]
            rows[i] = e.emit(vector.ShuffleOp(x, y, DenseArrayBase.from_list(i64, lo), result_type=t))
            rows[i + b] = e.emit(vector.ShuffleOp(x, y, DenseArrayBase.from_list(i64, hi), result_type=t))
        b *= 2
    return rows


def pack_transposed(low, em, value: SSAValue, elem, lanes: int) -> SSAValue:
    """A row-major buffer of `value` converted to `elem` (util.widen), read in `lanes` x
    `lanes` blocks down the columns. The caller checks that both trailing dimensions are
    multiples of `lanes`."""
    shape = shape_of(value)
    rank = len(shape)
    src_elem = element_type(value.type)
    buf = low.alloc_buffer(TensorType(elem, shape))

    def column(e, pre, r0, c):
        col = e.value(value, pre + (r0, c), lanes, rank - 2)
        return col if src_elem == elem else e.emit(widen(col, src_elem, elem, lanes))
    fill_by_blocks(low, em, shape, lanes, column, buf)
    return buf


def fill_by_blocks(low, em, shape, lanes: int, column, buf, at=()):
    """Fills the row-major tile `shape` of `buf` (at index prefix `at`) in `lanes` x
    `lanes` blocks: `column(emitter, pre, r0, c)` gives the `lanes` elements of column c
    from row r0 as one vector; a block's columns are transposed in registers and stored
    as its rows."""
    rank = len(shape)

    def body(e, idx):
        pre, r0, c0 = idx[:-2], idx[-2], idx[-1]
        columns = [column(e, pre, r0, e.idx_add(c0, j)) for j in range(lanes)]
        for i, row in enumerate(transpose(e, columns)):
            e.store_buffer(row, buf, at + pre + (e.idx_add(r0, i), c0))
    low.nest_steps(em, shape, [1] * (rank - 2) + [lanes, lanes], body)
