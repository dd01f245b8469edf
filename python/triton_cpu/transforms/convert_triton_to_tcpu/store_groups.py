"""Store groups: a run of tile stores in one loop nest, when no store overlaps what the
nest reads.

Inductor's multi-output kernels end in several `tl.store`s of values computed from the
same loads: an optimizer step (AdamW writes the parameter and both moments, each also
loaded: the arguments alias, the update is in place), a backward kernel writing several
gradients. Lowered one store at a time, each store is a loop nest over the tile of its
own, so a load that a later store reads must first be copied into a buffer (the stores
before it may overwrite its memory; on a GPU the load filled registers), and a value two
stores read is computed into a buffer too.

Here a run of adjacent stores (`gather` moves the pure ops between them, their pointer
arithmetic, above the first) of one 1-D shape, each through pointers contiguous over the
tile, becomes one nest: each chunk evaluates every stored value (a value two stores read,
once: the emitter's cache) and its pointers, then stores them in program order. That is
the program's result when every pair of a store and a tile the nest reads from memory
(its loads) or another of the stores either lies apart in memory or covers the same bytes
lane for lane (the same first address, element size and length, and only elementwise ops
between the loads and the stores): an in-place update, whose chunk reads its lanes before
it writes them. The nest checks that at run time from each tile's first and last address
(a load it reads must then be 1-D and contiguous, or one address repeated); where the
check fails, the else branch runs the stores as before: the deferred values (below) into
buffers first, then a nest per store. Where the check finds a store on a loaded tile (in
place), that nest's stores do not stream (core's store_chunk): the lines were just loaded
into the cache, and a non-temporal store only evicts them (the AdamW step of
bench_inductor's MLP training step, 1M parameters on the Intel host of 2026-11-27: 1.25-1.46
ms per step one store at a time, 0.98-1.01 in one nest, 0.65-0.69 without streaming).

materialization_plan defers to a group the values it would compute into a buffer at their
definition only because of the group: every consumer is one of the group's stores, the
value is defined in the group's block, and, for a load, every write between it and a
consumer is one of the group's stores. Without a check the nest can make (a gather among
its loads, a guarded load: write_guards), the group is lowered as the else branch alone,
those values computed into buffers right before the first store.
"""
from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerAttr, i1
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import is_side_effect_free

from triton_cpu.analysis.axis_info import element_type, pointee_bytes, shape_of
from triton_cpu.dialects.compat import arith

from . import hints, write_guards
from .util import is_tensor, is_volatile


@dataclass(eq=False)
class StoreGroup:
    stores: list  # adjacent tt.store ops, in program order
    deferred: list = field(default_factory=list)  # values buffered only when the check fails


def _tile_store(op: Operation) -> bool:
    return op.name == "tt.store" and is_tensor(op.operands[0])


def gather(block: Block):
    """Moves the pure ops that stand between two tile stores of `block` (and of the blocks
    nested in it) above the first store of their run: they neither read nor write memory,
    and stores have no results, so every operand still comes first and every use after."""
    for op in block.ops:
        for region in op.regions:
            for b in region.blocks:
                gather(b)
    ops = list(block.ops)
    i = 0
    while i < len(ops):
        if not _tile_store(ops[i]):
            i += 1
            continue
        first, pending, j = ops[i], [], i + 1
        while j < len(ops):
            op = ops[j]
            if _tile_store(op):
                for p in pending:
                    p.detach()
                    block.insert_op_before(p, first)
                pending = []
            elif is_side_effect_free(op) and not op.regions:
                pending.append(op)
            else:
                break
            j += 1
        i = j


def find(low, ops) -> list[StoreGroup]:
    """The runs of two or more adjacent stores in `ops` through 1-D tiles of pointers of
    one shape, each contiguous over the whole tile."""
    def member(op, shape=None):
        if not _tile_store(op):
            return False
        s = shape_of(op.operands[0])
        return len(s) == 1 and s[0] >= 2 and (shape is None or s == shape) \
            and low.axis.get(op.operands[0]).contiguity[0] >= s[0]

    groups = []
    for op in ops:
        if not member(op) or (op.prev_op is not None and member(op.prev_op, shape_of(op.operands[0]))):
            continue
        run = [op]
        while run[-1].next_op is not None and member(run[-1].next_op, shape_of(op.operands[0])):
            run.append(run[-1].next_op)
        if len(run) >= 2:
            groups.append(StoreGroup(run))
    return groups


def deferring_group(groups_of: dict, producer: Operation, roots, between) -> StoreGroup | None:
    """The group that takes over `producer`'s value from materialization_plan (see the
    module docstring), or None. `between`: for a load, the writes between it and its
    consumers."""
    gs = {groups_of.get(r) for r in roots}
    if len(gs) != 1:
        return None
    g = gs.pop()
    if g is None or producer.parent_block() is not g.stores[0].parent_block():
        return None
    return g if set(between) <= set(g.stores) else None


# Ops that keep lane i of their operands in lane i of their result (1-D tiles): a load
# read only through them reaches a store in the lanes it was read from.
_LANEWISE = ("arith.", "math.", "tt.splat", "tt.addptr", "tt.load", "tt.make_range", "tt.broadcast",
             "tt.extern_elementwise", "tt.precise_", "tt.fp_to_fp", "tt.bitcast", "tt.clampf", "tt.mulhiui",
             "tt.int_to_ptr", "tt.ptr_to_int")


@dataclass
class _Tile:
    """The bytes [lo, hi) a 1-D tile of pointers may touch."""
    lo: SSAValue
    hi: SSAValue
    elem_bytes: int
    lanes: int
    contiguous: bool


def _tile(low, em, ptr) -> _Tile | None:
    shape = shape_of(ptr)
    if len(shape) != 1:
        return None
    n = shape[0]
    info = low.axis.get(ptr)
    contiguous = info.contiguity[0] >= n
    if not contiguous and info.constancy[0] < n:
        return None
    lo, hi = write_guards.byte_range(em, ptr)
    return _Tile(lo, hi, pointee_bytes(element_type(ptr.type)), n, contiguous)


def _apart_or_same(em, a: _Tile, b: _Tile, same_allowed: bool) -> tuple[SSAValue, SSAValue | None]:
    """Whether tiles a and b lie apart, and whether they cover the same bytes lane for lane
    (None where that cannot hold or is not allowed)."""
    apart = em.emit(arith.OrIOp(em.emit(arith.CmpiOp(a.hi, b.lo, "ule")), em.emit(arith.CmpiOp(b.hi, a.lo, "ule"))))
    if same_allowed and a.contiguous and b.contiguous and a.elem_bytes == b.elem_bytes and a.lanes == b.lanes:
        return apart, em.emit(arith.CmpiOp(a.lo, b.lo, "eq"))
    return apart, None


def _check(low, em, g: StoreGroup, roots) -> tuple[SSAValue, SSAValue | None] | None:
    """The run-time condition under which the group's one nest gives the program's result,
    and whether a store then writes where the nest loads (an update in place; None: never),
    or None when it cannot be checked."""
    producers = list(low.fused_producers(roots))
    loads = [v.owner for v in producers if v.owner.name == "tt.load"]
    if any(v in low.guarded for v in producers) or any(is_volatile(ld) or not is_tensor(ld.operands[0])
                                                       for ld in loads):
        return None
    same_allowed = all(v.owner.name.startswith(_LANEWISE) for v in producers)
    written = [s.operands[0] for s in g.stores]
    read = [ld.operands[0] for ld in loads]
    tiles = {}  # one range per tile of pointers (a load and a store through the same one share it)
    for ptr in written + read:
        if ptr not in tiles:
            tiles[ptr] = _tile(low, em, ptr)
            if tiles[ptr] is None:
                return None
    ok = em.emit(arith.ConstantOp(IntegerAttr(1, i1)))
    in_place = None
    pairs = set()
    for i, mine in enumerate(written):
        for ptr in written[i + 1:] + read:
            if (ptr is mine and same_allowed) or frozenset((mine, ptr)) in pairs:
                continue  # the same pointers (lane for lane), or a pair checked already
            pairs.add(frozenset((mine, ptr)))
            apart, same = _apart_or_same(em, tiles[mine], tiles[ptr], same_allowed)
            ok = em.emit(arith.AndIOp(ok, apart if same is None else em.emit(arith.OrIOp(apart, same))))
            if same is not None and ptr in read:
                in_place = same if in_place is None else em.emit(arith.OrIOp(in_place, same))
    return ok, in_place


def lower(low, g: StoreGroup):
    """Lowers the group's stores at the first one's position (and erases them all)."""
    first = g.stores[0]
    em = low.emitter_before(first)
    shape = shape_of(first.operands[0])
    roots = [x for s in g.stores for x in low.store_roots(s)]

    # Tile prefetches waiting for a nest over this shape (hints.py): issued by each version
    # of the one nest (taken by the first nest emitted, the other would go without).
    lines = hints.take_pending(low, em, shape) if low.pending_prefetches else []

    vl = low.vector_length(shape, roots, store_ptr=first.operands[0])

    def one_nest(e, stream=True):
        def body(c, idx):
            for s in g.stores:  # every value and pointer of the chunk before its first store
                with low.at(s):
                    for x in low.store_roots(s):
                        c.value(x, idx, 1 if x is s.operands[0] else vl)
            for s in g.stores:
                with low.at(s):  # each store's own line (debug info, bounds-check reports)
                    low.store_chunk(c, s, idx, vl, stream)
            hints.issue(c, lines, idx, vl)
        low.nest(e, shape, vl, body, roots)
        return []

    def one_by_one(e):
        for v in g.deferred:
            low.materialize_at(e, v)
        for s in g.stores:
            with low.at(s):
                low.store_nest(e, s)
        return []

    checked = _check(low, em, g, roots)
    if checked is None:
        one_by_one(em)
    elif checked[1] is None or not low.stream_allowed:
        em.if_else(checked[0], [], one_nest, one_by_one)
    else:
        # In place, the stored lines were just loaded: in the cache already, where streaming
        # stores would only evict them (an optimizer's state, read again by the next step).
        ok, in_place = checked
        em.if_else(ok, [], lambda e: e.if_else(in_place, [], lambda t: one_nest(t, False), one_nest), one_by_one)
    for s in g.stores:
        low.grouped_done.add(s)
        s.detach()
        s.erase()
