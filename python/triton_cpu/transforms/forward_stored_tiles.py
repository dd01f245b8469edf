"""forward-stored-tiles: a load that reads back what a store in the same block just wrote
takes the stored value instead, and a store that a later store overwrites before anything
reads it goes.

Runs on TTIR, after version-single-iteration-loops and before peel-accumulator-loops.
Inductor's looped softmax stores its exps to the output and, in a later loop, reads them
back and stores them divided by their sum. In the one-iteration copy of that kernel
(version-single-iteration-loops) both accesses sit in one block:

    tt.store %p, %e, %m                 // dropped: overwritten below, read by nothing
    %s = tt.reduce %e ...
    %x = tt.load %p, %m, %other         // -> arith.select %m, %e, %other
    tt.store %p, (%x / %s), %m

so the row is written once, with streaming stores (the conversion keeps them off an
argument it also reads), instead of being written, read back and written again, each
write first fetching its lines from memory.

Forwarding, for a load (not volatile) after a store in the same block:
  * the same tile of pointers (the same value, or computed by the same pure ops from the
    same values: the loops' copies compute it twice) and the same mask, or a store without
    one; the load's masked-off lanes take its `other`, or 0 without one (what a masked load
    reads there);
  * no op in between that may write what the load reads: a store through another kernel
    argument is taken not to (distinct arguments do not overlap, as elsewhere in the
    conversion); anything writing through the same argument, an unknown pointer or with
    unknown effects (a call, nested control flow holding a write) stops it;
  * no address twice in the tile (else memory holds one lane's value where forwarding
    would give each lane its own): a scalar, or a tile contiguous along its last axis with
    one row, or rows apart by a constant stride of at least a row (rows_disjoint). Rows
    apart by a stride known at run time only (Inductor's `ks0` under dynamic shapes) get a
    guard: the rest of the block from the store on runs in an scf.if on `stride >= row
    length`, forwarded in its then-branch and as written in its else-branch.
Dropping a store: a later store through the same tile of pointers with the same mask (or
none), and nothing in between that may read through the same argument (a load not
forwarded, an atomic, a call, an assert, which reports the memory it leaves) or with
unknown effects. Duplicate addresses do not matter there: the later store writes every
address the dropped one did.

Blocks nested in control flow are handled on their own: nothing is forwarded into or out
of a region.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, DenseIntOrFPElementsAttr, IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import RecursiveMemoryEffect, is_side_effect_free

from triton_cpu.analysis.axis_info import AxisInfoAnalysis
from triton_cpu.analysis.row_addresses import (column_bound, lanes_distinct, pointer_root, range_plus_scalars,
                                                  row_layout, splat_scalar, through_widening)
from triton_cpu.dialects.compat import arith
from triton_cpu.transforms.convert_triton_to_tcpu.util import is_volatile
from triton_cpu.transforms.loop_rewrites import InsertBefore, branch_on, ops_before_terminator
from triton_cpu.transforms.version_single_iteration_loops import FALLBACK_ELSE

_ANY = "any"  # an access through any pointer
_MAX_GUARDS = 4  # run-time stride guards per function (each copies the rest of a block)


def _root(ptr: SSAValue):
    root = pointer_root(ptr)
    return _ANY if root is None else root


def _accesses(op: Operation) -> tuple[set, set]:
    """(roots read, roots written) by `op` and the ops nested in it; _ANY among them when
    the pointer or the effect is unknown."""
    reads, writes = set(), set()
    for o in op.walk():
        name = o.name
        if name == "tt.load":
            reads.add(_root(o.operands[0]))
        elif name == "tt.store":
            writes.add(_root(o.operands[0]))
        elif name in ("tt.atomic_rmw", "tt.atomic_cas"):
            reads.add(_root(o.operands[0]))
            writes.add(_root(o.operands[0]))
        elif name in ("tcpu.prefetch", "tt.print"):
            continue
        elif name in ("tt.extern_elementwise", "tt.elementwise_inline_asm") and _pure(o):
            continue  # a libdevice function, inline asm declared pure
        elif name == "tt.assert":
            reads.add(_ANY)
        elif o.regions and o.has_trait(RecursiveMemoryEffect):
            continue  # its nested ops are visited
        elif not is_side_effect_free(o):
            reads.add(_ANY)
            writes.add(_ANY)
    return reads, writes


def _pure(op: Operation) -> bool:
    flag = op.attributes.get("pure") or op.properties.get("pure")
    return flag is not None and bool(getattr(flag, "value", None) and flag.value.data)


def _hits(roots: set, root) -> bool:
    """Whether accesses through `roots` may touch memory through `root`."""
    return bool(roots) and (root in roots or _ANY in roots or root == _ANY)


class _Equivalence:
    """Whether two values are computed alike: the same value, or results of the same pure
    op (name, properties, attributes, result types) on equivalent operands."""

    def __init__(self):
        self.memo: dict[tuple, bool] = {}

    def __call__(self, a: SSAValue | None, b: SSAValue | None) -> bool:
        if a is b:
            return True
        if not isinstance(a, OpResult) or not isinstance(b, OpResult):
            return False
        key = (a, b)
        if key not in self.memo:
            self.memo[key] = self._same_op(a, b)
        return self.memo[key]

    def _same_op(self, a: OpResult, b: OpResult) -> bool:
        x, y = a.op, b.op
        if (x.name != y.name or a.index != b.index or x.regions or y.regions
                or len(x.operands) != len(y.operands) or a.type != b.type
                or not is_side_effect_free(x) or x.properties != y.properties or x.attributes != y.attributes):
            return False
        return all(self(u, v) for u, v in zip(x.operands, y.operands))


def _zeros(t) -> DenseIntOrFPElementsAttr | None:
    """Zeros of type `t`; None unless `t` is a tensor of integers or floats."""
    if not isinstance(t, TensorType):
        return None
    elem = t.get_element_type()
    if isinstance(elem, IntegerType):
        return DenseIntOrFPElementsAttr.from_list(t, [0])
    if isinstance(elem, AnyFloat):
        return DenseIntOrFPElementsAttr.from_list(t, [0.0])
    return None


@dataclass(frozen=True)
class _Guard:
    """Rows `stride` apart share no address when stride >= length, or (a mask keeping
    the columns below `bound`, the columns starting at `start`) stride >= bound - start."""
    stride: SSAValue
    length: int
    bound: SSAValue | None = None
    start: SSAValue | None = None


class _Forwarder:
    def __init__(self):
        self.same = _Equivalence()
        self.axis = AxisInfoAnalysis()
        self.guards = 0

    def distinct_addresses(self, ptr: SSAValue, mask: SSAValue | None):
        """True when the lanes of the tile `ptr` that `mask` keeps hold no address twice;
        a _Guard when its rows are apart by a run-time stride; None otherwise."""
        t = ptr.type
        if not isinstance(t, TensorType):
            return True
        shape, contiguity = t.get_shape(), self.axis.get(ptr).contiguity[-1]
        if lanes_distinct(ptr, contiguity, [mask]):
            return True
        if len(shape) != 2 or contiguity < shape[-1]:
            return None
        layout = row_layout(ptr)
        stride = None if layout is None else splat_scalar(layout[1])
        if stride is None:
            return None
        cols = through_widening(layout[0])
        starts = range_plus_scalars(cols, 0)  # cols = arange(0, n)[None, :] + start
        bound = column_bound(mask, cols, self.same) if len(starts) <= 1 else None
        if bound is not None and splat_scalar(bound) is not None:
            return _Guard(stride, shape[-1], splat_scalar(bound), starts[0] if starts else None)
        return _Guard(stride, shape[-1])

    def satisfied(self, guard: _Guard, guards) -> bool:
        return any(self.same(guard.stride, g.stride) and guard.length == g.length
                   and self.same(guard.bound, g.bound) and self.same(guard.start, g.start) for g in guards)

    def run(self, block: Block, assumed: tuple = (), refused: tuple = ()):
        assumed = list(assumed)
        stores: list[Operation] = []  # stores whose value a load may take
        unread: list[Operation] = []  # stores nothing has read since
        for op in list(block.ops):
            for region in op.regions:
                for inner in region.blocks:
                    self.run(inner)
            if op.name == "tt.load" and not is_volatile(op):
                store = next((s for s in reversed(stores) if self.same(s.operands[0], op.operands[0])), None)
                if store is not None and self.masks_cover(store, op):
                    # the lanes that may alias are those the store wrote: its mask
                    distinct = self.distinct_addresses(op.operands[0], store.mask)
                    if distinct is True or (isinstance(distinct, _Guard) and self.satisfied(distinct, assumed)):
                        self.forward(store, op)
                        continue
                    if isinstance(distinct, _Guard) and self.strengthen(block, distinct):
                        assumed.append(distinct)
                        self.forward(store, op)
                        continue
                    if (isinstance(distinct, _Guard) and not self.satisfied(distinct, refused)
                            and self.guards < _MAX_GUARDS and self.guard(block, distinct, tuple(assumed), refused)):
                        return  # the rest of the block now runs in the guard's two branches
            reads, writes = _accesses(op)
            if op.name == "tt.store":
                dead = next((s for s in unread if self.same(s.operands[0], op.operands[0])
                             and self.overwrites(op, s)), None)
                if dead is not None:
                    unread.remove(dead)
                    if dead in stores:
                        stores.remove(dead)
                    Rewriter.erase_op(dead)
            unread = [s for s in unread if not _hits(reads, _root(s.operands[0]))]
            stores = [s for s in stores if not _hits(writes, _root(s.operands[0]))]
            if op.name == "tt.store":
                stores.append(op)
                unread.append(op)

    def masks_cover(self, store: Operation, load: Operation) -> bool:
        """The store wrote every lane the load reads, and the load's masked-off lanes have a
        value to take: its `other`, or 0 (what the conversion's masked load reads there,
        as the interpreter does) for a tile of numbers."""
        if load.mask is not None and load.other is None and _zeros(load.results[0].type) is None:
            return False
        return store.mask is None or self.same(store.mask, load.mask)

    def overwrites(self, later: Operation, earlier: Operation) -> bool:
        """`later` (through the same pointers) writes every lane `earlier` wrote."""
        return later.mask is None or self.same(later.mask, earlier.mask)

    @staticmethod
    def forward(store: Operation, load: Operation):
        value = store.operands[1]
        other = load.other
        if load.mask is not None:
            if other is None:
                zero = arith.ConstantOp(_zeros(load.results[0].type))
                Rewriter.insert_op(zero, InsertPoint.before(load))
                other = zero.result
            select = arith.SelectOp(load.mask, value, other)
            Rewriter.insert_op(select, InsertPoint.before(load))
            value = select.result
        load.results[0].replace_all_uses_with(value)
        Rewriter.erase_op(load)

    @staticmethod
    def strengthen(block: Block, guard: _Guard) -> bool:
        """When `block` is the then-branch of an scf.if whose else-branch is right whatever
        its condition (version-single-iteration-loops' copy) and the guard's operands are
        defined before that scf.if: adds the guard to its condition; whether it did."""
        branch = block.parent_op()
        if (branch is None or branch.name != "scf.if" or FALLBACK_ELSE not in branch.attributes
                or block is not branch.regions[0].blocks[0]):
            return False
        at = InsertBefore(branch)
        outside = {}
        for v in (guard.stride, guard.bound, guard.start):
            if v is None:
                continue
            owner = v.op if isinstance(v, OpResult) else v.block.parent_op()
            if owner is None or not branch.is_ancestor(owner):
                outside[v] = v
            elif isinstance(v, OpResult) and v.op.name == "arith.constant":
                outside[v] = at.emit(v.op.clone())  # (the loops' lower bound, copied inside)
            else:
                return False
        hoisted = _Guard(outside[guard.stride], guard.length, outside.get(guard.bound), outside.get(guard.start))
        cond = at.emit(arith.AndIOp(branch.operands[0], _condition(hoisted, at)))
        branch.operands[0] = cond
        return True

    def guard(self, block: Block, guard: _Guard, assumed, refused) -> bool:
        """Runs `block` from the definition of the guard's last operand on (from its start
        when they all come from outside) in an scf.if on the guard's condition; the
        then-branch forwarded with the guard assumed, the else-branch without; whether it
        could (the terminator may not use a value the copied part defines). The copy
        starts before the stored value's computation too, so that the conversion sees it
        and its consumers in one block (started at the store, the exps of a softmax were
        computed into a buffer before the scf.if and read back in both branches)."""
        term = block.last_op
        if term is None:
            return False
        operands = [v for v in (guard.stride, guard.bound, guard.start) if v is not None]
        local = [v.owner for v in operands if isinstance(v, OpResult) and v.op.parent_block() is block]
        first = max(local, key=block.get_operation_index).next_op if local else block.first_op
        if first is term:
            return False
        suffix = ops_before_terminator(first)
        defined = {r for o in suffix for r in o.results}
        if any(v in defined for v in term.operands):
            return False
        branch = branch_on(_condition(guard, InsertBefore(first)), suffix)
        then_blk, else_blk = (r.blocks[0] for r in branch.regions)
        self.guards += 1
        self.run(then_blk, assumed + (guard,), refused)
        self.run(else_blk, assumed, refused + (guard,))
        return True


def _condition(guard: _Guard, at: InsertBefore) -> SSAValue:
    """stride >= length, or stride >= bound - start (in i64: the difference cannot wrap)."""
    i64 = IntegerType(64)

    def wide(v):
        return v if v.type == i64 else at.emit(arith.ExtSIOp(v, i64))

    stride = wide(guard.stride)
    cond = at.emit(arith.CmpiOp(stride, at.const(guard.length, i64), "sge"))
    if guard.bound is not None:
        span = wide(guard.bound)
        if guard.start is not None:
            span = at.emit(arith.SubiOp(span, wide(guard.start)))
        cond = at.emit(arith.OrIOp(cond, at.emit(arith.CmpiOp(stride, span, "sge"))))
    return cond


@dataclass(frozen=True)
class ForwardStoredTiles(ModulePass):
    name = "forward-stored-tiles"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in [o for o in op.body.block.ops if o.name == "tt.func"]:
            _Forwarder().run(f.regions[0].blocks[0])
