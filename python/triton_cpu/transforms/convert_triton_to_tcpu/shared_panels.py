"""A dot's packed B kept for the later programs of a launch.

share-dot-panels marks a dot with the scalars that determine its B operand
(`tcpu.panel_key`); here such a dot packs B into the thread's panel cache
(`tcpu.panel_cache`, runtime.c: tcpu_panel_cache) instead of a buffer of its own, under
a tag, and a later program of the same launch on the same thread whose key has the same
values reads the packed B from there and skips the packing. Two packings use it: an AMX
tile kernel's panels (dot.tile_kernel) and the bf16 pairs of the vdpbf16ps micro-kernel
(dot.pack_column_pairs).

Layout, per marked dot: `tags` i64 [S + 1, 8] and `data` [S + 1, *slot shape]. Slot s
holds a whole packed B: for a tile kernel i16 [N / BN, rows, 2 * BN] (rows and BN as
tile_kernel's panel), of which the spare, slot S, uses one panel reused column by column
as the small buffer was; for the pairs i32 [K / 2, N]. A dot directly in an scf.for
takes the slot of its iteration number ((iv - lb) / step, the spare from S on), another
dot slot 0. S = what fits in _CACHE_BYTES, at least 1.

A tag is [state, key values...]: state 0 empty (the runtime zeroes the tags at each
thread's first program of a launch), 1 seen once, 2 filled, 3 filled and used. A program
whose key matches a filled slot reads it (and marks it used). It packs into the slot and
marks it filled when its key matches a slot seen once, or when the slot is empty or was
used by another key (the launch's programs share B); otherwise, a slot filled but never
used or seen once with another key, it packs into the spare and marks the slot seen once
with its key. So grouped programs pack B once per run of programs that share it, and a
kernel whose programs never share B (GROUP_M = 1) packs into the spare after its first
program, as before: packing every program's B into the slots (1 MiB of lines through the
L2 per program) was 14% slower there (tutorial 03's kernel, bf16 1024^3, 128 x 256 x 64,
after do_bench's flush; benchmarks/RESULTS.md, "Shared B panels").
"""
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, i64

from triton_cpu.dialects import tcpu
from triton_cpu.dialects.compat import arith
from triton_cpu.dialects.tt import PointerType

_CACHE_BYTES = 1 << 20  # per marked tile kernel, per thread (virtual until written)
_MAX_SLOTS = 64          # their tags (64 bytes each) are zeroed at each launch
_TAG = 8                 # i64 per tag: the state and up to 7 key values
_EMPTY, _SEEN, _FILLED, _USED = 0, 1, 2, 3


def open_cache(low, em, chain: list, slot_shape: tuple, elem, BN: int = 0) -> "PanelCache | None":
    """The panel cache of the dots of `chain` (a tile kernel's, or one dot: their
    tcpu.panel_key ops, consumed here), slots of `slot_shape` in `elem`, or None unless
    every dot of the chain is marked and their keys together fit a tag. BN: the columns
    of a tile kernel's panel (PanelCache.at)."""
    marks = [low.panel_keys.pop(d, None) for d in chain]
    keys = []
    for m in marks:  # the union, in order
        if m is not None:
            keys += [k for k in m.keys if k not in keys]
    usable = all(m is not None for m in marks) and len(keys) < _TAG
    for m in marks:
        if m is not None:
            m.detach()
            m.erase()
    if not usable:
        return None
    loop = chain[0].parent_op()  # the dots of a chain share a block
    return PanelCache(low, em, keys, loop if isinstance(loop, scf.ForOp) else None, slot_shape, elem, BN)


class PanelCache:
    """The emitted state of one cache lookup: `pack` (i1: B must be packed in this
    program), and where the packed B lives (`ref` at `slot`; a tile kernel's panel:
    `at(e, j0)`)."""

    def __init__(self, low, em, keys: list, loop, slot_shape: tuple, elem, BN: int = 0):
        self.BN = BN
        slot_bytes = elem.width.data // 8
        for d in slot_shape:
            slot_bytes *= d
        S = min(_MAX_SLOTS, max(1, _CACHE_BYTES // slot_bytes)) if loop is not None else 1
        op = tcpu.PanelCacheOp(MemRefType(i64, [S + 1, _TAG]), MemRefType(elem, [S + 1, *slot_shape]))
        low._at_entry(op)
        self.tags, self.ref = op.results
        idx = IndexType()
        c = lambda v, e=em: e.emit(arith.ConstantOp(IntegerAttr(v, i64)))
        if loop is not None:
            lb, _, step = loop.operands[:3]
            n = em.emit(arith.DivSIOp(em.emit(arith.SubiOp(loop.body.block.args[0], lb)), step))
            if not isinstance(n.type, IndexType):
                n = em.emit(arith.IndexCastOp(n, idx))
        else:
            n = em.const_index(0)
        S_ = em.const_index(S)
        in_range = em.emit(arith.CmpiOp(n, S_, "ult"))
        slot = em.emit(arith.SelectOp(in_range, n, S_))
        state = em.emit(memref.LoadOp.get(self.tags, [slot, em.const_index(0)]))
        match = in_range
        values = []
        for i, k in enumerate(keys):
            v = _as_i64(em, k)
            values.append(v)
            stored = em.emit(memref.LoadOp.get(self.tags, [slot, em.const_index(i + 1)]))
            match = em.emit(arith.AndIOp(match, em.emit(arith.CmpiOp(stored, v, "eq"))))
        is_state = lambda v: em.emit(arith.CmpiOp(state, c(v), "eq"))
        either = lambda x, y: em.emit(arith.OrIOp(x, y))
        both = lambda x, y: em.emit(arith.AndIOp(x, y))
        hit = both(match, either(is_state(_FILLED), is_state(_USED)))
        # fill: asked for a second time, or a new key where the slot is empty or held
        # panels that were used (a launch whose programs share B)
        other = _and_not(em, in_range, match)
        fill = either(both(match, is_state(_SEEN)), both(other, either(is_state(_EMPTY), is_state(_USED))))
        seen = both(other, either(is_state(_SEEN), is_state(_FILLED)))
        first_hit = both(hit, is_state(_FILLED))
        self.pack = _not(em, hit)
        self.kept = either(hit, fill)  # the panels live in the slot, else in the spare
        self.slot = em.emit(arith.SelectOp(self.kept, slot, S_))
        for cond, new_state, with_keys in ((fill, _FILLED, True), (seen, _SEEN, True), (first_hit, _USED, False)):
            def store(e, new_state=new_state, with_keys=with_keys):
                e.emit(memref.StoreOp.get(c(new_state, e), self.tags, [slot, e.const_index(0)]))
                for i, v in enumerate(values if with_keys else ()):
                    e.emit(memref.StoreOp.get(v, self.tags, [slot, e.const_index(i + 1)]))
                return []
            em.if_else(cond, [], store, lambda _: [])

    def at(self, e, j0):
        """Indices of column j0's panel in `ref`: (slot, panel), the spare's first panel
        when the panels are not kept."""
        jp = e.as_ssa_index(e.idx_div_rem(j0, self.BN, 0))
        return (self.slot, e.emit(arith.SelectOp(self.kept, jp, e.const_index(0))))


def _not(e, x):
    return e.emit(arith.XOrIOp(x, e.emit(arith.ConstantOp(IntegerAttr(1, IntegerType(1))))))


def _and_not(e, x, y):
    """x & !y (i1)."""
    return e.emit(arith.AndIOp(x, _not(e, y)))


def _as_i64(em, v):
    t = v.type
    if isinstance(t, PointerType):
        return em.emit(tcpu.PtrToIntOp(v, i64))
    if isinstance(t, IndexType):
        return em.emit(arith.IndexCastOp(v, i64))
    if t.width == 64:
        return v
    return em.emit(arith.ExtUIOp(v, i64) if t.width == 1 else arith.ExtSIOp(v, i64))
