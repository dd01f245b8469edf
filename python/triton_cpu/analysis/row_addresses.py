"""Which kernel argument a tile of pointers points into, and whether the rows of a 2-D tile
of pointers provably never share an address. Read on TTIR (make_range, expand_dims,
broadcast, splat, addptr), by split-row-tiles and by the conversion's choice between
reloading a load and keeping it in a buffer.
"""
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from triton_cpu.analysis.axis_info import attr, attr_int
from triton_cpu.analysis.loops import constant_int
from triton_cpu.dialects.compat import splat_value


def _op(v: SSAValue, *names: str) -> Operation | None:
    """v's defining op when it is one of `names`."""
    owner = v.owner
    return owner if isinstance(owner, Operation) and owner.name in names else None


def pointer_root(v: SSAValue) -> BlockArgument | None:
    """The kernel argument a pointer (or tile of pointers) derives from through addptr,
    splat and broadcast; None when it comes from anything else (int_to_ptr, a load)."""
    while not isinstance(v, BlockArgument):
        op = _op(v, "tt.addptr", "tt.splat", "tt.broadcast")
        if op is None:
            return None
        v = op.operands[0]
    return v


def through_broadcast(v: SSAValue) -> SSAValue:
    while (op := _op(v, "tt.broadcast")) is not None:
        v = op.operands[0]
    return v


def through_widening(v: SSAValue) -> SSAValue:
    """v without the broadcasts and sign extensions around it (Inductor computes i64
    offsets from i32 indices: `extsi(r0_index)`). Like the axis analysis, this takes the
    narrower index arithmetic not to wrap."""
    while (op := _op(v, "tt.broadcast", "arith.extsi")) is not None:
        v = op.operands[0]
    return v


def constant_value(v: SSAValue) -> int | None:
    """v's value when it is an integer constant (scalar, or splat through splat/broadcast
    or a dense splat constant); None otherwise."""
    while (op := _op(v, "tt.splat", "tt.broadcast")) is not None:
        v = op.operands[0]
    c = constant_int(v)
    if c is None and (op := _op(v, "arith.constant")) is not None:
        value = attr(op, "value")
        if isinstance(value, DenseIntOrFPElementsAttr):
            c = splat_value(value)
    return c if isinstance(c, int) else None


def constant_at_least(v: SSAValue, bound: int) -> bool:
    """v is an integer constant (constant_value) >= bound."""
    c = constant_value(v)
    return c is not None and c >= bound


def splat_scalar(v: SSAValue) -> SSAValue | None:
    """The scalar a splat (through broadcasts) spreads; None for anything else."""
    op = _op(through_broadcast(v), "tt.splat")
    return op.operands[0] if op is not None and not isinstance(op.operands[0].type, TensorType) else None


def conjuncts(mask: SSAValue) -> list[SSAValue]:
    """The terms of `a & b & ...` (through broadcasts)."""
    op = _op(through_broadcast(mask), "arith.andi")
    if op is None:
        return [through_broadcast(mask)]
    return [t for x in op.operands for t in conjuncts(x)]


def column_bound(mask: SSAValue | None, cols: SSAValue, same=lambda a, b: a is b) -> SSAValue | None:
    """K when one of the conjuncts of `mask` is `cols < K` (signed, through broadcasts and
    sign extensions; `same` compares the index with `cols`): the lanes the mask keeps lie
    in the columns below K. None when there is no such term."""
    for term in conjuncts(mask) if mask is not None else []:
        op = _op(term, "arith.cmpi")
        if op is not None and op.properties["predicate"].value.data == 2 \
                and same(through_widening(op.operands[0]), through_widening(cols)):  # slt
            return op.operands[1]
    return None


def _range_from_zero(v: SSAValue, axis: int, at_most: int | None = None) -> bool:
    """v = expand_dims(make_range(0, n), axis), with n <= at_most when given."""
    op = _op(v, "tt.expand_dims")
    if op is None or attr_int(op, "axis") != axis:
        return False
    src = _op(op.operands[0], "tt.make_range")
    return src is not None and attr_int(src, "start") == 0 and (at_most is None or attr_int(src, "end") <= at_most)


def range_plus_scalars(v: SSAValue, axis: int, at_most: int | None = None) -> list[SSAValue] | None:
    """The scalars s1, s2, ... when v is `arange(0, n)` expanded along the other axis
    (`[:, None]` for axis 1, `[None, :]` for axis 0; n <= at_most when given) plus splats
    of them, through broadcasts and sign extensions (through_widening); None for any other
    value. Its values along `axis` are distinct and span fewer than n."""
    v = through_widening(v)
    if _range_from_zero(v, axis, at_most):
        return []
    op = _op(v, "arith.addi")
    if op is None:
        return None
    for a, b in (op.operands, reversed(op.operands)):
        if _op(b, "tt.splat") is None:
            continue
        rest = range_plus_scalars(a, axis, at_most)
        if rest is not None:
            return rest + [_op(b, "tt.splat").operands[0]]
    return None


def row_injective(v: SSAValue) -> bool:
    """v is an [X, 1] row index, `arange(0, X)[:, None]`, plus splat scalars: distinct
    rows hold distinct values."""
    return range_plus_scalars(v, 1) is not None


def _tile_2d(ptr: SSAValue) -> tuple[Operation, int] | None:
    """(the addptr, the row length) of a 2-D tile of pointers made by tt.addptr."""
    op = _op(ptr, "tt.addptr")
    t = ptr.type
    if op is None or not isinstance(t, TensorType) or len(t.get_shape()) != 2:
        return None
    return op, t.get_shape()[1]


def row_layout(ptr: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    """(cols, C) when the 2-D tile of pointers `ptr` is splat(p) + (cols + C * row),
    `cols` the offsets within a row (range_plus_scalars along axis 0: distinct, spanning
    fewer than the tile's row length) and `row` a row_injective index: its rows share no
    address when |C| >= the row length, or >= the span of the columns a mask leaves on.
    `cols` and C as they appear (C a splat or broadcast of a scalar, or a constant
    tensor); None for any other tile."""
    tile = _tile_2d(ptr)
    if tile is None:
        return None
    op, length = tile
    add = _op(through_broadcast(op.operands[1]), "arith.addi")
    if add is None:
        return None
    for col, row in (add.operands, reversed(add.operands)):
        mul = _op(through_broadcast(row), "arith.muli")
        if mul is None or range_plus_scalars(col, 0, length) is None:
            continue
        for r, c in (mul.operands, reversed(mul.operands)):
            if row_injective(r):
                return col, c
    return None


def rows_disjoint(ptr: SSAValue) -> bool:
    """The rows of the 2-D tile of pointers `ptr` share no address: `ptr` is splat(p) +
    (arange(0, n)[None, :] + C * row) with n <= C (row_layout, C a constant), or
    splat(p) + row for one element per row, `row` a row_injective index. (What
    Inductor's in-place and per-row outputs look like: `in_out_ptr0 + (r0_1 + 1024 *
    x0)`, `out_ptr0 + x0`.)"""
    tile = _tile_2d(ptr)
    if tile is None:
        return False
    op, length = tile
    if length == 1 and row_injective(through_broadcast(op.operands[1])):
        return True
    layout = row_layout(ptr)
    return layout is not None and constant_at_least(layout[1], length)


def rows_disjoint_under(ptr: SSAValue, masks) -> bool:
    """rows_disjoint, or the lanes every mask of `masks` keeps share no address: `ptr` is
    splat(p) + (arange(0, n)[None, :] + C * row) (row_layout, columns from 0) with each
    mask holding a term `cols < K`, K and C constants, K <= C. (Inductor's persistent
    reduction of rows shorter than its block: `in_out_ptr0 + (r0_1 + 10 * x0)` under
    `r0_1 < 10`, 16 lanes a row.)"""
    if rows_disjoint(ptr):
        return True
    layout = row_layout(ptr)
    if layout is None or range_plus_scalars(layout[0], 0) != []:
        return False
    cols, stride = layout
    bounds = [constant_value(b) if (b := column_bound(m, cols)) is not None else None for m in masks]
    return bool(bounds) and None not in bounds and constant_at_least(stride, max(bounds))


def lanes_distinct(ptr: SSAValue, contiguity: int, masks) -> bool:
    """The lanes of the 1-D or 2-D tile of pointers `ptr` that every mask of `masks` keeps
    hold no address twice: contiguous along the last axis (`contiguity`, the axis
    analysis' value there, spans the row) and one row, or rows_disjoint_under."""
    t = ptr.type
    if not isinstance(t, TensorType):
        return False
    shape = t.get_shape()
    if len(shape) not in (1, 2) or contiguity < shape[-1]:
        return False
    return len(shape) == 1 or shape[0] == 1 or rows_disjoint_under(ptr, masks)
