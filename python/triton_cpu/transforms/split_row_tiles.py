"""split-row-tiles: a kernel that reduces each row of an [XBLOCK, R] tile on its own runs
its body once per row, in a loop over the XBLOCK rows, on [1, R] tiles.

Runs on TTIR, before prefetch-next-program. Inductor's persistent reductions (softmax,
layer norm, RMS norm, log-softmax over rows of 256 to 1024 elements) come with XBLOCK = 8
on a CPU: every value is an [8, R] tile, and convert-triton-to-tcpu walks each op over the
whole tile, so that the 8 rows of the input, of the exp and so on are in flight at once
(32 KiB per fp32 tile of 1024 columns, the whole L1) and the next program's rows are
prefetched in one burst. Row by row, each pass over a row reads it from L1, and
prefetch-next-program then prefetches the next row (the next iteration, or the next
program's first row) as it does for one row per program. Inductor's softmax on 4096 x
1024 fp32, 2 threads, Zen 3: 2.29 -> 1.70 ms (1.66 ms with XBLOCK = 1).

The rewrite: the row index `tl.arange(0, XBLOCK)[:, None]` (a make_range of 0..XBLOCK used
only through expand_dims on axis 1) becomes the loop's induction variable, splat to one
element; every tensor whose first dimension is XBLOCK (rank 2, or rank 1 like a row
reduction's result) is retyped with a first dimension of 1; broadcasts that become
identities go. Ops that do not depend on a row and touch no XBLOCK tensor (program ids,
scalar arithmetic, loads of a weight row) stay before the loop.

When (anything else leaves the kernel alone):
  * a straight-line body: no scf/cf control flow, no tensor arguments, tensors of rank <= 2;
  * one row size XBLOCK > 1 that no other dimension shares, and at least one tt.reduce or
    tt.scan along axis 1 of a tile of rows of at least MIN_ROW elements and at least
    MIN_TILE elements in all (smaller tiles ran slower split, measured below);
  * every op touching an XBLOCK tensor is elementwise (arith, math, pointer arithmetic,
    loads, stores, splat, broadcast, extern_elementwise, ...), a splat constant, an
    expand_dims to axis 1 or a reduce/scan along axis 1: no dot, reshape, trans,
    join/split/cat, gather, atomics, print, assert or calls;
  * memory: a kernel argument the kernel stores to is accessed by that one store only,
    or every access to it (load or store) goes through one and the same pointer tensor,
    whose rows provably do not overlap: `arg + (r + C * row)` with C >= the row length,
    or `arg + row` for one value per row (Inductor's `in_out_ptr0`, its mean and rstd
    outputs). Then each row touches its own addresses of that argument only, and
    running the rows one after the other keeps the order of the accesses to each
    address. Distinct kernel arguments are taken not to overlap, as the conversion's
    chunk-wise fusion of a store with its loads does.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, ModuleOp, TensorType, i32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import attr, attr_int
from triton_cpu.analysis.row_addresses import pointer_root, rows_disjoint
from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith
from triton_cpu.transforms.retype import ELEMENTWISE_TT, refit_splat_constant, set_shape

_SIDE_EFFECTS = {"tt.store", "tt.atomic_rmw", "tt.atomic_cas", "tt.print", "tt.assert", "tt.call",
                 "ttg.barrier", "tt.histogram"}
# The reduced tile for the split to pay (Inductor-style softmax, 16 MiB, 2 threads, Zen 3,
# split against not, ms): 256 x 8 rows 1.65 / 1.84, 128 x 32 1.89 / 1.99, 64 x 32 1.72 /
# 1.90, but 128 x 8 1.87 / 1.70 and 64 x 8 1.75 / 1.58, and 64 x 64 2.0 either way.
MIN_ROW = 64  # elements along the reduced axis
MIN_TILE = 2048  # elements of the tile


def _shape(v: SSAValue):
    t = v.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def _row_ranges(body: Block):
    """make_range(0, X) ops used only through expand_dims on axis 1: the row index."""
    out = []
    for op in body.ops:
        if op.name == "tt.make_range" and attr_int(op, "start") == 0 and op.results[0].uses and \
                all(u.operation.name == "tt.expand_dims" and attr_int(u.operation, "axis") == 1
                    for u in op.results[0].uses):
            out.append(op)
    return out


def _is_row_tensor(v: SSAValue, X: int) -> bool:
    s = _shape(v)
    return len(s) in (1, 2) and s[0] == X


def _plan(func: Operation):
    """(X, row make_ranges) when the kernel may be split, else None."""
    blocks = list(func.regions[0].blocks)
    body = blocks[0]
    if len(blocks) != 1 or body.last_op is None or body.last_op.name != "tt.return" or \
            any(_shape(a) for a in body.args):
        return None
    rows = _row_ranges(body)
    sizes = {attr_int(op, "end") for op in rows}
    if len(sizes) != 1:
        return None
    X = sizes.pop()
    if X <= 1:
        return None
    row_set = set(rows)
    reduces_rows = False
    accesses = {}  # kernel argument -> pointer tensors of its loads and stores, one per op
    stored = set()
    for op in body.ops:
        if op.regions and op.name not in ("tt.reduce", "tt.scan"):
            return None
        values = list(op.operands) + list(op.results)
        shapes = [_shape(v) for v in values]
        if any(len(s) > 2 for s in shapes):
            return None
        # No other dimension may have the row size: a retype by size would be ambiguous.
        if any(len(s) == 2 and s[1] == X for s in shapes):
            return None
        if op.name == "tt.make_range" and op not in row_set and attr_int(op, "end") - attr_int(op, "start") == X:
            return None
        touches = any(_is_row_tensor(v, X) for v in values)
        name = op.name
        if name in _SIDE_EFFECTS and name != "tt.store":
            return None
        if name in ("tt.load", "tt.store"):
            root = pointer_root(op.operands[0])
            accesses.setdefault(root, []).append(op.operands[0])
            if name == "tt.store":
                if not touches:
                    return None  # a store of one value per program would run once per row
                stored.add(root)
        if not touches:
            continue
        if name == "arith.constant":
            value = attr(op, "value")
            if not (isinstance(value, DenseIntOrFPElementsAttr) and value.is_splat()):
                return None
        elif name == "tt.expand_dims":
            if attr_int(op, "axis") != 1:
                return None
        elif name in ("tt.reduce", "tt.scan"):
            src = _shape(op.operands[0])
            if len(src) != 2 or attr_int(op, "axis") != 1:
                return None
            reduces_rows = reduces_rows or (src[1] >= MIN_ROW and src[0] * src[1] >= MIN_TILE)
        elif name == "tt.make_range":
            pass  # a row range
        elif not (name.startswith("arith.") or name.startswith("math.") or name in ELEMENTWISE_TT):
            return None
    if not reduces_rows:
        return None
    if None in accesses and stored:
        return None  # an access through a pointer of unknown origin may touch what a store writes
    for root in stored:
        ptrs = accesses[root]
        if len(ptrs) > 1 and (any(p is not ptrs[0] for p in ptrs) or not rows_disjoint(ptrs[0])):
            return None
    return X, rows


def _retype(v: SSAValue, X: int):
    s = _shape(v)
    if s and s[0] == X:
        set_shape(v, (1, *s[1:]))


def split(func: Operation, X: int, rows):
    body = func.regions[0].blocks[0]
    ret = body.last_op
    loop_body = Block(arg_types=[i32])
    iv = loop_body.args[0]
    inside: set[SSAValue] = set()
    for op in list(body.ops):
        if op is ret:
            break
        values = list(op.operands) + list(op.results)
        if not (any(_is_row_tensor(v, X) for v in values) or any(o in inside for o in op.operands)
                or op.name == "tt.store"):
            continue  # row-invariant: stays before the loop
        op.detach()
        loop_body.add_op(op)
        inside.update(op.results)
    for op in rows:
        new = tt.SplatOp(iv, TensorType(i32, [1]))
        loop_body.insert_op_before(new, op)
        op.results[0].replace_all_uses_with(new.results[0])
        op.detach()
        op.erase()
    for op in list(loop_body.ops):
        for r in op.results:
            _retype(r, X)
        if op.name == "arith.constant" and _shape(op.results[0]):
            refit_splat_constant(op)
        elif op.name == "tt.broadcast" and op.operands[0].type == op.results[0].type:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.detach()
            op.erase()
    loop_body.add_op(scf.YieldOp())
    lb = arith.ConstantOp(IntegerAttr(0, i32))
    ub = arith.ConstantOp(IntegerAttr(X, i32))
    step = arith.ConstantOp(IntegerAttr(1, i32))
    loop = scf.ForOp(lb.results[0], ub.results[0], step.results[0], [], loop_body)
    body.insert_ops_before([lb, ub, step, loop], ret)


@dataclass(frozen=True)
class SplitRowTiles(ModulePass):
    name = "split-row-tiles"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.body.block.ops:
            if func.name == "tt.func":
                plan = _plan(func)
                if plan is not None:
                    split(func, *plan)
