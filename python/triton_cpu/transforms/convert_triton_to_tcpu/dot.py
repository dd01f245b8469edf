"""tt.dot: C = A @ B + C0 with a register-blocked micro-kernel.

A and B are packed to row-major buffers in the accumulation type (fp16/bf16/fp8 widen
to fp32, int8 to int32; tf32 is computed as full fp32), so the micro-kernel reads plain
contiguous rows. A is packed by a copy loop before the micro-kernel; B, when it is a fused
value (a tt.load, possibly converted), by the micro-tiles of the first row: their K loop
loads B from memory and stores the packed copy that the later rows read, so those loads
overlap with FMAs instead of running in a copy loop of their own (tutorial matmul 1024^3
fp32 on a 2-core Xeon: 7.8-8.1 -> 7.6-7.7 ms, best of 200 calls). For each MR x (NR*VL)
tile of C, MR*NR vector accumulators stay in
registers over the whole K loop; each step loads NR vectors of a row of B and
broadcasts MR scalars of a column of A. A leading batch dimension (3-D dot) is an outer
loop. C is written in place into C0's buffer when nothing else reads C0 (a loop-carried
accumulator). fp16/bf16 results accumulate in fp32 and round once at the end, as GPU
matrix units and Triton's interpreter do.

bf16 x bf16 -> fp32 on a host with AVX512-BF16 (`Config.bf16_dot`) skips the widening:
A and B are repacked as i32 pairs of bf16 along K (`pack_row_pairs`,
`pack_column_pairs`) and each step of the K/2 loop is one vdpbf16ps per accumulator
(`tcpu.dot_bf16_pairs`): products exact, summed in fp32 in pairs, denormals as zero.

On a host with Intel AMX (`Config.amx`, `Config.amx_int8`: the host has the tiles and the
process Linux's permission, triton_cpu/amx.py) bf16 x bf16 -> fp32 and int8 x int8 -> i32
dots whose M and N are multiples of 16 and K fills tile rows run on the tile registers
instead (`tile_kernel`: tdpbf16ps, tdpbssd), ahead of both paths above.

tt.dot_scaled (microscaling formats): each operand is decoded to fp32 while it is
packed (e4m3/e5m2 bytes exactly, e2m1 nibbles two per byte along K, low nibble first,
or along M/N when not K-packed; bf16/fp16 widened), multiplied by its E8M0 scale
2^(s - 127) shared by each group of K elements (s = 255 is NaN; s = 0 is 2^-127 when the
dot computes in bf16 and 0 in fp16, as Triton's interpreter has it), then the same
micro-kernel accumulates in fp32.
"""
from dataclasses import dataclass
from math import copysign, gcd

from xdsl.dialects import math, vector
from xdsl.dialects.builtin import (
    BFloat16Type, DenseArrayBase, DenseIntOrFPElementsAttr, Float16Type, Float32Type, FloatAttr, IntegerAttr,
    IntegerType, TensorType, i32, i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.traits import MemoryEffectKind, get_effects, has_effects

from triton_cpu.analysis.axis_info import attr, element_type, shape_of
from triton_cpu.dialects import tcpu, tt
from triton_cpu.dialects.compat import arith, splat_value

from . import hints, shared_panels
from .transposed_pack import fill_by_blocks, pack_transposed, runs_down_columns
from .util import bits, vec_type, vector_type, widen


def pack(low, em, value: SSAValue, elem, reuse: bool = True) -> SSAValue:
    """A row-major buffer holding `value` converted to `elem`: with `reuse`, the value's
    own buffer when it is materialized in `elem` already (the micro-kernel only reads
    it); read in blocks down the columns and transposed in registers when its memory
    runs that way (transposed_pack)."""
    shape = shape_of(value)
    src_elem = element_type(value.type)
    own = low.buffers.get(value)
    if reuse and own is not None and src_elem == elem:
        return own
    lanes = _transposed_lanes(low, value, elem)
    if lanes:
        return pack_transposed(low, em, value, elem, lanes)
    buf = low.alloc_buffer(TensorType(elem, shape))
    vl = low.vector_length(shape, [value])

    def body(e, idx):
        v = e.value(value, idx, vl)
        if src_elem != elem:
            v = e.emit(widen(v, src_elem, elem, vl))
        e.store_buffer(v, buf, idx)
    low.nest(em, shape, vl, body)
    return buf


def _transposed_lanes(low, value: SSAValue, elem) -> int:
    """The block size when `value` is packed to `elem` through transposes (its memory runs
    down its columns: transposed_pack), else 0."""
    shape = shape_of(value)
    lanes = low.config.vector_bits // bits(elem)
    if len(shape) >= 2 and lanes > 1 and shape[-1] % lanes == 0 and shape[-2] % lanes == 0 \
            and runs_down_columns(low, value, lanes):
        return lanes
    return 0


def lower_dot(low, op: Operation):
    a, b, c0 = op.operands
    out_elem = element_type(op.results[0].type)
    acc_elem = Float32Type() if isinstance(out_elem, (Float16Type, BFloat16Type)) else out_elem
    kind = _amx_kind(low, a, b, acc_elem, shape_of(op.results[0]))
    if kind is not None:
        # Decided at the first dot of a chain, while the ops up to the next one are still
        # TTIR (their lowering may put loop nests between them).
        chain = low.dot_chains.pop(op, []) + [op]
        nxt = _chained_next(low, op)
        if nxt is not None:
            low.dot_chains[nxt] = chain
            return  # lowered with the dot that reads its result
        em = low.emitter_before(op)
        tile_kernel(low, em, chain, kind, _pack_chain_bits(low, em, [d.operands[0] for d in chain], kind))
        return
    em = low.emitter_before(op)
    if _bf16_pairs(low, a, b, acc_elem):
        a_pairs = pack_row_pairs(low, em, a)
        K, N = shape_of(b)[-2:]
        # B's pairs: in the thread's panel cache when later programs may reuse them
        # (shared_panels.py; 2-D dots only), else a buffer of this dot's own
        cache = None if shape_of(b)[:-2] else shared_panels.open_cache(low, em, [op], (K // 2, N), i32)
        if cache is None:
            b_pairs, b_pre = pack_column_pairs(low, em, b), ()
        else:
            b_pairs, b_pre = cache.ref, (cache.slot,)

            def pack_b(p_em):
                pack_column_pairs(low, p_em, b, (b_pairs, b_pre))
                return []
            em.if_else(cache.pack, [], pack_b, lambda _: [])
        micro_kernel(low, em, op, a_pairs, b_pairs, acc_elem,
                     lambda k_em, av, bv, acc: k_em.emit(tcpu.DotBF16PairsOp(acc, av, bv)), b_pre=b_pre)
        return
    a_buf = pack(low, em, a, acc_elem)
    if _packed_by_first_row(low, b, acc_elem, shape_of(op.results[0])):
        micro_kernel(low, em, op, a_buf, None, acc_elem, b_src=b)
        return
    micro_kernel(low, em, op, a_buf, pack(low, em, b, acc_elem), acc_elem)


@dataclass(frozen=True)
class TileKind:
    """One of AMX's dot products: `dot` (tcpu.tile_dot's kind) on operands of `elem`, held in
    buffers as their bit patterns (`bits`), accumulated in `acc`; a row of a B tile holds
    `group` consecutive K elements of each of its 16 columns (4 bytes)."""
    dot: str
    elem: object
    bits: IntegerType
    acc: object
    group: int

    @property
    def k_step(self) -> int:
        """K elements per row of an A tile (64 bytes)."""
        return 16 * self.group


BF16_TILES = TileKind("bf16", BFloat16Type(), IntegerType(16), Float32Type(), 2)
INT8_TILES = TileKind("ss", IntegerType(8), IntegerType(8), i32, 4)


def _amx_kind(low, a, b, acc_elem, out_shape) -> TileKind | None:
    """The AMX dot product this dot runs on (tile_kernel), or None (`tile_kind`)."""
    return tile_kind(element_type(a.type), element_type(b.type), acc_elem, out_shape, shape_of(a)[-1],
                     low.config.amx, low.config.amx_int8)


def tile_kind(ea, eb, acc_elem, out_shape, K: int, amx: bool, amx_int8: bool) -> TileKind | None:
    """The AMX dot product a dot of `ea` x `eb` accumulated in `acc_elem` runs on, or None:
    bf16 operands accumulated in fp32 (`amx`), or int8 ones in i32 (signed, as tt.dot's i8
    is; `amx_int8`); M and N multiples of 16 (a tile's rows and 4-byte columns), K of a
    tile row's elements (32 bf16, 64 int8)."""
    if amx and ea == eb == BFloat16Type() and acc_elem == Float32Type():
        kind = BF16_TILES
    elif amx_int8 and ea == eb == IntegerType(8) and acc_elem == i32:
        kind = INT8_TILES
    else:
        return None
    M, N = out_shape[-2:]
    return kind if M % TILE_ROWS == 0 and N % TILE_ROWS == 0 and K % kind.k_step == 0 else None


def _chained_next(low, op: Operation) -> Operation | None:
    """The dot that runs as one tile kernel with AMX dot `op`, after it, or None: the next
    dot in the same block, reading `op`'s result alone as its C0, on the same tiles, with
    no memory write (nor region) between the two, so that `op`'s operands read there hold
    what they held at `op` (unroll-tile-dot-loops makes such chains of a K loop's
    iterations). Then each block of C is loaded and stored once for both."""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or uses[0].index != 2:
        return None
    nxt = uses[0].operation
    if nxt.name != "tt.dot" or nxt.parent is not op.parent:
        return None
    # tt.dot's C0 and result have one type, so both dots have `op`'s. Both must accumulate
    # in it: a dot that rounds its sums (bf16 out) must not have one rounding for the two.
    out_elem = element_type(op.results[0].type)
    kinds = {_amx_kind(low, d.operands[0], d.operands[1], out_elem, shape_of(d.results[0])) for d in (op, nxt)}
    if len(kinds) != 1 or None in kinds:
        return None
    between = op.next_op
    while between is not nxt:
        if between.name != "tcpu.prefetch" and (  # a hint (prefetch-next-program's), else:
                between.regions or get_effects(between) is None or has_effects(between, MemoryEffectKind.WRITE)):
            return None
        between = between.next_op
    return nxt


# An AMX tile is 16 rows of 64 bytes: 16 x 16 fp32 or i32 of C, 16 rows x 64 bytes along K
# of A, or 16 rows of B, each 16 columns of a group of 4 bytes along K.
TILE_ROWS = 16
# Tile registers: C's 2 x 2 tiles 0..3, A's two row tiles 4 and 5, B's two column tiles 6, 7.
_C_TILES, _A_TILES, _B_TILES = (0, 1, 2, 3), (4, 5), (6, 7)
# The next K iteration's A and B lines (prefetch-next-program) go to the L2 only: a
# 128 x 256 x 64 step's are 48 KiB, the whole L1, which the tiles' own operands and C need.
# Tutorial bf16 matmul 1024^3 after do_bench's cache flush, 3 pairs of processes (7 rounds
# each, medians, ratio to torch's bf16 matmul timed alongside): prefetcht0 0.85 / 0.86 /
# 0.94x, prefetcht1 0.93 / 0.95 / 0.92x.
TILE_PREFETCH_LOCALITY = 2


def tile_kernel(low, em, chain: list, kind: TileKind, a_buf):
    """C = A @ B + C0 on AMX tiles (`kind`: bf16 or int8) for the dots of `chain`, each
    one's C0 the result of the one before (_chained_next; usually a single dot), from
    their A rows side by side along K in a buffer of their bit patterns ([.., M, sum of
    the Ks], _pack_chain_bits) and their B values. C is accumulated (fp32 or i32) in a
    buffer (the first C0's, in place, when nothing else reads it), panel by panel of 32
    columns (16 where N is not a multiple of 32): the panel of every B is first packed in
    groups along K (pairs of bf16, quads of int8: the layout of a tile of B,
    `_pack_group_panel`) into a small buffer, one after the other along K, then every
    block of 2 x 2 tiles of the panel's C (32 x 32; one row of tiles where M is not a
    multiple of 32) is loaded, takes one tile dot product per pair of A and B tiles for
    each 64 bytes of the chain's K, and is stored back.
    Packing panel by panel keeps it in the L1 and lets the core run the next panel's
    packing while the tile unit still works on the previous panel's products. A dot that
    share-dot-panels marked packs its panels into the thread's panel cache instead, and
    skips the packing where an earlier program of the launch left them there with the same
    key (shared_panels.py).

    A block of C makes a round trip through the L1 per tile kernel, which costs as much as
    the products when K is 64 bf16 (the tutorial's 128 x 256 x 64 matmul at 1024^3 ran
    ~20% faster with every block of C kept at one address: a timing variant, wrong
    results); a chain of two such dots takes the round trip once.

    tdpbf16ps flushes denormal inputs and results to zero, as vdpbf16ps does; its products
    are exact and summed in fp32 (the order of the sums within a 32-step group is the
    hardware's; a zero sum comes out +0.0 even from -0.0 terms, measured). tdpbssd's
    products and sums are exact, wrapping in i32 as the vector code's. The tile registers
    are configured before the panels and released after them: no tile state lives across
    other code."""
    op = chain[-1]
    c0 = chain[0].operands[2]
    out = op.results[0]
    shape = shape_of(out)
    batch, (M, N) = shape[:-2], shape[-2:]
    Ks = [shape_of(d.operands[0])[-1] for d in chain]
    acc_elem = kind.acc
    # C0 = +0.0 everywhere (the first iteration of a K loop, peeled): the tiles start from
    # tilezero, and the buffer is only written (by the tile stores).
    zero_init = _positive_zeros(c0)
    c_buf = low.alloc_buffer(TensorType(acc_elem, shape)) if zero_init else \
        _accumulator(low, em, c0, acc_elem, element_type(out.type), (a_buf,))
    MT = 2 if M % (2 * TILE_ROWS) == 0 else 1
    NT = 2 if N % (2 * TILE_ROWS) == 0 else 1
    BM, BN = MT * TILE_ROWS, NT * TILE_ROWS
    # A panel row holds BN columns of 4 bytes: 2 * BN i16 (bf16 pairs or two int8 pairs);
    # dot i's rows start at row `first_rows[i]`.
    first_rows = [sum(Ks[:i]) // kind.group for i in range(len(Ks))]
    prefetches = [p for d in chain for p in low.spread_prefetches.pop(d, [])]
    blocks = (M // BM) * (N // BN)

    def block(e, pre, i0, j0, panel_ref, panel_at):
        if prefetches:  # this block's share of the next iteration's lines, dealt in row order
            t = e.idx_add(e.idx_mul(e.idx_div_rem(i0, BM, 0), N // BN), e.idx_div_rem(j0, BN, 0))
            _spread_prefetches(e, prefetches, t, blocks, TILE_PREFETCH_LOCALITY)
        rows = [e.idx_add(i0, m * TILE_ROWS) for m in range(MT)]
        c_tiles = [(_C_TILES[m * 2 + n], r, e.idx_add(j0, n * TILE_ROWS)) for m, r in enumerate(rows)
                   for n in range(NT)]
        for t, r, c in c_tiles:
            if zero_init:
                e.emit(tcpu.TileZeroOp(t))
            else:
                _tile_move(e, tcpu.TileLoadOp, t, c_buf, pre + (r, c))

        def step(k_em, k, _):
            for m, r in enumerate(rows):
                _tile_move(k_em, tcpu.TileLoadOp, _A_TILES[m], a_buf, pre + (r, k))
            kp = k_em.idx_div_rem(k, kind.group, 0)
            for n in range(NT):
                _tile_move(k_em, tcpu.TileLoadOp, _B_TILES[n], panel_ref, panel_at + (kp, 2 * n * TILE_ROWS))
            for m in range(MT):
                for n in range(NT):
                    k_em.emit(tcpu.TileDotOp(kind.dot, _C_TILES[m * 2 + n], _A_TILES[m], _B_TILES[n]))
            return []
        e.for_loop(0, sum(Ks), kind.k_step, [], step)
        for t, r, c in c_tiles:
            _tile_move(e, tcpu.TileStoreOp, t, c_buf, pre + (r, c))

    def column(e, idx):
        pre, j0 = idx[:-1], idx[-1]
        at = cache.at(e, j0) if cache is not None else ()
        ref = cache.ref if cache is not None else panel

        def pack(p_em):
            for d, read_b, row0 in zip(chain, readers, first_rows):
                _pack_group_panel(low, p_em, kind, d.operands[1], read_b, pre, j0, BN, ref, row0, at)
            return []
        if cache is not None:
            e.if_else(cache.pack, [], pack, lambda _: [])
        else:
            pack(e)
        e.for_loop(0, M, BM, [], lambda m_em, i0, _: block(m_em, pre, i0, j0, ref, at) or [])

    # B's panels: in the thread's panel cache when later programs may reuse them
    # (shared_panels.py), else one small buffer packed column by column
    rows = sum(Ks) // kind.group
    cache = None if batch else shared_panels.open_cache(low, em, chain, (N // BN, rows, 2 * BN), IntegerType(16), BN)
    panel = low.alloc_buffer(TensorType(IntegerType(16), (rows, 2 * BN))) if cache is None else None
    readers = []
    if cache is None or not any(_copied_for_bits(low, d.operands[1], kind) for d in chain):
        readers += [_bit_reader(low, em, d.operands[1], kind) for d in chain]
    else:  # B's transposed copies only where the panels are packed
        em.if_else(cache.pack, [], lambda p_em: readers.extend(
            _bit_reader(low, p_em, d.operands[1], kind) for d in chain) or [], lambda _: [])
    em.emit(tcpu.TileConfigOp())
    if prefetches and batch:  # hints.py hands only 2-D tiles to a dot; kept general
        for ptr, pstep in prefetches:
            hints.issue_all(low, em, ptr, pstep)
        prefetches = []
    low.nest_steps(em, batch + (N,), [1] * len(batch) + [BN], column)
    em.emit(tcpu.TileReleaseOp())
    _result(low, em, out, c_buf, acc_elem)


def _bit_reader(low, em, value: SSAValue, kind: TileKind):
    """A function (emitter, indices, lanes) -> the bit patterns (`kind.bits`) of `value`'s
    lanes there: read where the value is, or, when its memory runs down its columns
    (tl.trans of a load, attention's keys), from a widened copy (fp32 or i32) made by
    blocks of contiguous loads transposed in registers (transposed_pack; exact both ways),
    instead of a gather per vector."""
    def bits(e, v, vl):
        return v if kind.bits == kind.elem else e.emit(tcpu.BitcastOp(v, vec_type(kind.bits, vl)))
    if _copied_for_bits(low, value, kind):
        buf = pack(low, em, value, kind.acc)

        def read(e, idx, vl):
            return bits(e, e.emit(widen(e.load_buffer(buf, idx, vl), kind.acc, kind.elem, vl)), vl)
        return read
    return lambda e, idx, vl: bits(e, e.value(value, idx, vl), vl)


def _copied_for_bits(low, value: SSAValue, kind: TileKind) -> bool:
    """_bit_reader reads `value` from a transposed copy it makes first."""
    return value not in low.buffers and bool(_transposed_lanes(low, value, kind.acc))


def _pack_bits(low, em, a: SSAValue, kind: TileKind) -> SSAValue:
    """A row-major buffer of A's bit patterns ([.., M, K] of `kind.bits`), or A's own buffer
    when A is materialized (its memory holds the same bits). For bf16 a copy of the bits,
    not of the values: a bf16 store would quiet signalling NaNs, a select per vector."""
    own = low.buffers.get(a)
    if own is not None:
        return own
    buf = low.alloc_buffer(TensorType(kind.bits, shape_of(a)))
    _copy_bits(low, em, a, kind, buf, 0)
    return buf


def _copy_bits(low, em, value: SSAValue, kind: TileKind, buf, col0: int):
    """`value`'s bit patterns into `buf` from column `col0` of its last axis."""
    shape = shape_of(value)
    vl = low.vector_length(shape, [value])
    bits = _bit_reader(low, em, value, kind)
    low.nest(em, shape, vl,
             lambda e, idx: e.store_buffer(bits(e, idx, vl), buf, idx[:-1] + (e.idx_add(idx[-1], col0),)))


def _pack_chain_bits(low, em, values: list, kind: TileKind) -> SSAValue:
    """The A rows of a chain of dots (tile_kernel) side by side along K in one buffer of
    their bit patterns ([.., M, sum of the Ks]), so that a block of C takes the products
    of the whole chain in one loop; for one dot, `_pack_bits`."""
    if len(values) == 1:
        return _pack_bits(low, em, values[0], kind)
    Ks = [shape_of(v)[-1] for v in values]
    buf = low.alloc_buffer(TensorType(kind.bits, shape_of(values[0])[:-1] + (sum(Ks),)))
    for i, v in enumerate(values):
        _copy_bits(low, em, v, kind, buf, sum(Ks[:i]))
    return buf


def _tile_move(e, op_class, tile: int, ref, idx):
    e.emit(op_class(tile, ref, [e.as_ssa_index(i) for i in idx]))


def _pack_group_panel(low, e, kind: TileKind, b: SSAValue, bits, pre, j0, width: int, panel, row0: int = 0, at=()):
    """Columns [j0, j0 + width) of B ([.., K, N], batch indices `pre`; `bits` reads its bit
    patterns, _bit_reader) into `panel` (i16 [K / g, 2 * width] from row `row0`, g =
    kind.group; in a larger buffer, at the leading indices `at`) in groups of g along K: row row0 + q holds B[g*q, j] .. B[g*q + g - 1, j]
    for each column j in turn, the operand layout of a B tile. Each chunk of columns is one
    load of each of the g rows and g - 1 interleaving shuffles (int8: rows paired by bytes,
    then the pairs by 16-bit lanes)."""
    K = shape_of(b)[-2]
    vl = gcd(low.vector_length(shape_of(b), [b]), width)
    i16 = IntegerType(16)

    def interleave(k_em, x, y, n, elem):
        mask = DenseArrayBase.from_list(i64, [v for j in range(n) for v in (j, n + j)])
        return k_em.emit(vector.ShuffleOp(x, y, mask, result_type=vector_type(elem, 2 * n)))

    def row_group(k_em, q, _):
        k = k_em.idx_mul(q, kind.group)
        for c in range(0, width, vl):
            col = k_em.idx_add(j0, c)
            rows = [bits(k_em, pre + (k_em.idx_add(k, r), col), vl) for r in range(kind.group)]
            if kind.group == 2:
                out = interleave(k_em, rows[0], rows[1], vl, i16)
            else:  # bytes: pairs of rows 0, 1 and 2, 3, then the pairs as 16-bit lanes
                pairs = [k_em.emit(tcpu.BitcastOp(interleave(k_em, rows[r], rows[r + 1], vl, kind.bits),
                                                  vector_type(i16, vl))) for r in (0, 2)]
                out = interleave(k_em, pairs[0], pairs[1], vl, i16)
            k_em.store_buffer(out, panel, at + (k_em.idx_add(q, row0), 2 * c))
        return []
    e.for_loop(0, K // kind.group, 1, [], row_group)


def _positive_zeros(value: SSAValue) -> bool:
    """`value` is a constant tensor of +0.0 (all bits zero; -0.0 would give -0.0 sums where
    every product is -0.0)."""
    op = value.owner
    if not isinstance(op, Operation) or op.name != "arith.constant":
        return False
    dense = attr(op, "value")
    if not isinstance(dense, DenseIntOrFPElementsAttr):
        return False
    first = splat_value(dense)
    return first is not None and first == 0 and copysign(1.0, first) > 0


def _accumulator(low, em, c0, acc_elem, out_elem, operands) -> SSAValue:
    """The buffer C is accumulated in: C0's own, written in place, when nothing else reads
    C0, else a copy of C0 in `acc_elem`."""
    c_buf = low.buffers.get(c0)
    if c_buf is None or len(list(c0.uses)) != 1 or acc_elem != out_elem or c_buf in operands:
        c_buf = pack(low, em, c0, acc_elem, reuse=False)  # written in place
    return c_buf


def _result(low, em, out, c_buf, acc_elem):
    """Makes `c_buf` (accumulated in `acc_elem`) the dot's result, rounded to its type."""
    out_elem = element_type(out.type)
    if acc_elem != out_elem:
        shape = shape_of(out)
        out_buf = low.alloc_buffer(out.type)
        vl = low.vector_length(shape, [])

        def narrow(e, idx):
            v = e.load_buffer(c_buf, idx, vl)
            e.store_buffer(e.emit(arith.TruncFOp(v, vec_type(out_elem, vl))), out_buf, idx)
        low.nest(em, shape, vl, narrow)
        c_buf = out_buf
    low.buffers[out] = c_buf


def _register_tile(low, acc_elem, M: int, N: int, pairs: bool = False) -> tuple[int, int, int]:
    """(MR, NR, VL): the micro-tile is MR rows by NR vectors of VL lanes. MR x NR
    accumulators, NR vectors of B and a broadcast of A stay in registers, as many
    accumulators as fit: with AVX-512's 32 registers 6 x 4 (12 x 2 where N is two vectors
    wide), with AVX2's 16 6 x 2 (4 x 2 for integers, whose multiply and add need a
    register more). MR need not divide M (micro_kernel's last row of micro-tiles is
    narrower); where M has fewer than two such rows, 8 x 2 and 4 x 2.
    The bf16 pair product (`pairs`: vdpbf16ps, 512-bit) takes 4 x 4: on a Zen 5 a C loop
    of one micro-tile over packed pairs in the L1 (K/2 = 32 steps, as BLOCK_K = 64 gives)
    ran 4 x 4 at 465 GFLOP/s per core, 6 x 4 at 442 and 8 x 4 at 410 (the instruction's
    peak: 495); tutorial 03's kernel, bf16 1024^3, 2 threads, warm: 128 x 128 x 64 743 ->
    800-826 GFLOP/s, 64 x 256 x 64 721 -> 805 (6 x 4 also leaves a 2- or 4-row edge
    there). fp32 FMAs on the same host keep 6 x 4 (427 against 415 GFLOP/s at 64 x 256 x 64).
    Measured on a 2-core Xeon (a C loop of one micro-tile over operands in the L1, 2
    threads): 8 x 2 zmm 391-399 GFLOP/s, 6 x 4 411-414, 12 x 2 398-429 (bare FMAs 466);
    4 x 2 ymm (16 registers) 210-212, 6 x 2 240-249. 8 x 2 had been ~8% faster than 4 x 2
    on Zen 5 (1024^3 fp32 and bf16)."""
    lanes = max(1, low.config.vector_bits // max(8, bits(acc_elem)))
    VL = min(lanes, N)
    wide = low.config.vector_bits >= 512
    NR = 4 if wide and N >= 4 * VL else 2 if N >= 2 * VL else 1
    if pairs and wide and NR == 4 and M >= 4:
        return 4, 4, VL
    MR = _TALL_ROWS.get((wide, NR), 0)
    if MR and M >= 2 * MR and (wide or not isinstance(acc_elem, IntegerType)):
        return MR, NR, VL
    return min(8 if wide else 4, M), min(NR, 2), VL


# Rows of the larger micro-tiles (_register_tile), by (32 vector registers, NR).
_TALL_ROWS = {(True, 4): 6, (True, 2): 12, (False, 2): 6}


def _packed_by_first_row(low, b: SSAValue, acc_elem, out_shape) -> bool:
    """Whether B is read where it is (a fused load, not a materialized tile) by the first
    row of micro-tiles, which also writes the packed copy the other rows read: each
    vector of B is then loaded once, inside a K loop that has FMAs to overlap it with,
    instead of in a copy loop of its own before the micro-kernel. Not for B tiles packed
    through transposes (transposed_pack), nor when the chunks the micro-kernel reads
    would be wider than the lanes B's own loop nest takes (vector_length)."""
    if b in low.buffers:
        return False
    _, _, VL = _register_tile(low, acc_elem, *out_shape[-2:])
    return low.vector_length(shape_of(b), [b]) >= VL and not _transposed_lanes(low, b, acc_elem)


def _bf16_pairs(low, a, b, acc_elem) -> bool:
    """Whether this dot runs on the host's bf16 dot-product instruction: bf16 operands, fp32
    accumulation, an even K, N a multiple of the fp32 lanes and A's K loop at least two
    lanes wide (see pack_row_pairs). Not where the pairs would be packed through gathers
    that the widened path avoids (transposed_pack): A whose memory runs down its columns
    (`tl.trans(x)` as A), or B whose memory does (`tl.trans(k)`, attention's scores) unless
    its pair rows fill whole blocks (_pair_lanes)."""
    bf16 = BFloat16Type()
    if not low.config.bf16_dot or element_type(a.type) != bf16 or element_type(b.type) != bf16 \
            or acc_elem != Float32Type():
        return False
    K, N = shape_of(a)[-1], shape_of(b)[-1]
    lanes = low.config.vector_bits // 32
    if not (K % 2 == 0 and N % lanes == 0 and low.vector_length(shape_of(a), [a]) % 2 == 0):
        return False
    if _transposed_lanes(low, a, acc_elem):
        return False
    return not _transposed_lanes(low, b, acc_elem) or bool(_pair_lanes(low, b))


def _pair_lanes(low, b: SSAValue) -> int:
    """T (the i32 lanes) when B [.., K, N] of bf16 packs to pairs through T x T blocks:
    its memory runs down its columns for 2T elements (T pairs), and K/2 and N are
    multiples of T; else 0."""
    shape = shape_of(b)
    T = low.config.vector_bits // 32
    if len(shape) < 2 or shape[-2] % (2 * T) or shape[-1] % T:
        return 0
    return T if runs_down_columns(low, b, 2 * T) else 0


def pack_row_pairs(low, em, a: SSAValue) -> SSAValue:
    """A [.., M, K] of bf16 as an i32 buffer [.., M, K/2]: element (m, k) holds the bf16
    bits of A[m, 2k] (low half) and A[m, 2k + 1] (high half), as they lie in memory."""
    shape = shape_of(a)
    buf = low.alloc_buffer(TensorType(i32, shape[:-1] + (shape[-1] // 2,)))
    vl = low.vector_length(shape, [a])

    def body(e, idx):
        pairs = e.emit(tcpu.BitcastOp(e.value(a, idx, vl), vector_type(i32, vl // 2)))
        e.store_buffer(pairs, buf, idx[:-1] + (e.idx_div_rem(idx[-1], 2, 0),))
    low.nest(em, shape, vl, body)
    return buf


def pack_column_pairs(low, em, b: SSAValue, into=None) -> SSAValue:
    """B [.., K, N] of bf16 as an i32 buffer [.., K/2, N]: element (k, n) holds the bf16
    bits of B[2k, n] (low half) and B[2k + 1, n] (high half), the operand layout of
    vdpbf16ps for a row of N outputs. `into`: (memref, index prefix) to write it to
    instead of a new buffer (a slot of the panel cache)."""
    shape = shape_of(b)
    out_shape = shape[:-2] + (shape[-2] // 2, shape[-1])
    buf, at = into if into is not None else (low.alloc_buffer(TensorType(i32, out_shape)), ())
    T = _pair_lanes(low, b)
    if T:
        _pack_column_pairs_transposed(low, em, b, T, buf, at)
        return buf
    vl = low.vector_length(shape, [b])
    i16v, i32v = vector_type(IntegerType(16), vl), vector_type(i32, vl)

    def body(e, idx):
        k = e.idx_mul(idx[-2], 2)
        halves = []
        for row in (k, e.idx_add(k, 1)):
            bits16 = e.emit(tcpu.BitcastOp(e.value(b, idx[:-2] + (row, idx[-1]), vl), i16v))
            halves.append(e.emit(arith.ExtUIOp(bits16, i32v)))
        sixteen = e.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(i32v, [16])))
        high = e.emit(arith.ShLIOp(halves[1], sixteen))
        e.store_buffer(e.emit(arith.OrIOp(halves[0], high)), buf, at + idx)
    low.nest(em, out_shape, vl, body)
    return buf


def _pack_column_pairs_transposed(low, em, b: SSAValue, T: int, buf, at):
    """pack_column_pairs for B whose memory runs down its columns (_pair_lanes): each T x
    T block of pairs is read as T column vectors of 2T bf16 (contiguous in memory: rows
    2p and 2p + 1 of a column are adjacent, the lower one first, the pair's low half),
    each viewed as T i32 pairs, then transposed in registers into T rows of the buffer
    (transposed_pack.fill_by_blocks)."""
    shape = shape_of(b)
    rank = len(shape)

    def column(e, pre, p0, c):
        col = e.value(b, pre + (e.idx_mul(p0, 2), c), 2 * T, rank - 2)
        return e.emit(tcpu.BitcastOp(col, vector_type(i32, T)))
    fill_by_blocks(low, em, shape[:-2] + (shape[-2] // 2, shape[-1]), T, column, buf, at)


def micro_kernel(low, em, op: Operation, a_buf, b_buf, acc_elem, combine=None, b_src=None, b_pre=()):
    """C = A @ B + C0 for `op` (operand 2 is C0), from A and B packed row-major in
    `acc_elem` (or in pairs along K, with `combine(emitter, a, b, acc)` the pair
    product; B at index prefix `b_pre` of `b_buf`: a slot of the panel cache); C goes to
    a buffer (C0's, in place, when nothing else reads it).
    With `b_src` (B's value), `b_buf` is None: the micro-tiles of the first row read B
    from `b_src` and fill a buffer that the later rows read (both micro-tile orders below
    visit a column's first row before its others)."""
    c0 = op.operands[2]
    out = op.results[0]
    shape = shape_of(out)
    out_elem = element_type(out.type)
    batch = shape[:-2]
    M, N = shape[-2:]
    K = a_buf.type.get_shape()[-1]
    is_float = not isinstance(acc_elem, IntegerType)
    c_buf = _accumulator(low, em, c0, acc_elem, out_elem, (a_buf, b_buf))
    MR, NR, VL = _register_tile(low, acc_elem, M, N, pairs=combine is not None)
    b_elem = element_type(b_src.type) if b_src is not None else None
    prefetches = low.spread_prefetches.pop(op, [])
    column_order = bool(prefetches) and not batch
    # B packed by the first row of micro-tiles: column by column, one column's panel (K x
    # NR*VL) is all the later rows read, so one panel's buffer serves every column and
    # leaves L1 to C and A (2048^3, 128 x 128 x 64 on the Xeon, best of 30: 66.6-67.1 ->
    # 63.8-64.9 ms); in row order, the whole of B.
    panel = b_src is not None and column_order
    if panel:
        b_buf = low.alloc_buffer(TensorType(acc_elem, (K, NR * VL)))
    elif b_src is not None:
        b_buf = low.alloc_buffer(TensorType(acc_elem, shape_of(b_src)))

    def b_at(pre, k, n, c):
        return (k, n * VL) if panel else b_pre + pre + (k, c)

    # In column order each micro-tile issues its share of the prefetches (see below), spread
    # over its K loop, one line every S steps, when every micro-tile has a share and the K
    # loop a step per line (`shares`); else all before its K loop. S is a power of two:
    # 10-step groups (3 lines in 32 steps) were 9% slower than one burst of 3 before the
    # loop (1024^3, 64 x 128 x 32, 256-bit vectors), 8-step ones as fast.
    tiles = -(-M // MR) * (N // (NR * VL))
    shares = _prefetch_shares(prefetches, tiles, K) if column_order else None
    if shares is not None:
        S = 1 << ((K // sum(share[2] for share in shares)).bit_length() - 1)

    def tile(e, idx, mr):
        pre = idx[:-2]
        i0, j0 = idx[-2], idx[-1]
        rows = [e.idx_add(i0, m) for m in range(mr)]
        cols = [e.idx_add(j0, n * VL) for n in range(NR)]
        accs = [e.load_buffer(c_buf, pre + (r, c), VL) for r in rows for c in cols]
        if prefetches:
            # Numbered in row order while they run in column order (below): consecutive
            # micro-tiles prefetch lines of rows far apart. Numbered in column order, they
            # fetched a row's lines one after the other: 15% slower (2048^3, Zen 3).
            t = e.idx_add(e.idx_mul(e.idx_div_rem(i0, MR, 0), N // (NR * VL)), e.idx_div_rem(j0, NR * VL, 0))
            if shares is None:
                _spread_prefetches(e, prefetches, t, tiles)

        def b_from_source(k_em, k):
            bs = []
            for n, c in enumerate(cols):
                v = k_em.value(b_src, pre + (k, c), VL)
                if b_elem != acc_elem:
                    v = k_em.emit(widen(v, b_elem, acc_elem, VL))
                if M > MR:  # a single row of micro-tiles has no later reader
                    k_em.store_buffer(v, b_buf, b_at(pre, k, n, c))
                bs.append(v)
            return bs

        def step(k_em, k, accs, first_row=False):
            if first_row:
                bs = b_from_source(k_em, k)
            else:
                bs = [k_em.load_buffer(b_buf, b_at(pre, k, n, c), VL) for n, c in enumerate(cols)]
            new = []
            for mi, r in enumerate(rows):
                av = k_em.load_buffer(a_buf, pre + (r, k), 1)
                if VL > 1:
                    av = k_em.emit(vector.BroadcastOp(av, vector_type(av.type, VL)))
                for ni in range(NR):
                    acc = accs[mi * NR + ni]
                    if combine is not None:
                        new.append(combine(k_em, av, bs[ni], acc))
                    elif is_float:
                        new.append(k_em.emit(math.FmaOp(av, bs[ni], acc)))
                    else:
                        new.append(k_em.emit(arith.AddiOp(acc, k_em.emit(arith.MuliOp(av, bs[ni])))))
            return new

        def k_loop(le, first_row=False):
            if shares is None:
                return le.for_loop(0, K, 1, accs, lambda k_em, k, a: step(k_em, k, a, first_row))
            # One prefetched line every S steps of the K loop (S above): a loop over the
            # lines of each share, each line followed by S steps, then the steps left.
            carried, k0 = accs, 0
            for ptr, pstep, per, lines in shares:
                def group(q_em, q, a, ptr=ptr, pstep=pstep, per=per, lines=lines, k0=k0):
                    _prefetch_line(q_em, ptr, pstep, per, lines, tiles, t, q)
                    base = q_em.idx_add(q_em.idx_mul(q, S), k0)
                    return q_em.for_loop(0, S, 1, a, lambda k_em, s, b: step(k_em, k_em.idx_add(base, s), b, first_row))
                carried = le.for_loop(0, per, 1, carried, group)
                k0 += per * S
            if k0 < K:
                carried = le.for_loop(k0, K, 1, carried, lambda k_em, k, a: step(k_em, k, a, first_row))
            return carried

        # The first row of micro-tiles is emitted apart from the loop over the others
        # (row_tiles), so its index is the constant 0.
        accs = k_loop(e, b_src is not None and isinstance(i0, int) and i0 == 0)
        for (r, c), v in zip([(r, c) for r in rows for c in cols], accs):
            e.store_buffer(v, c_buf, pre + (r, c))

    # The next iteration's tiles of A and B (prefetch-next-program), a few lines per
    # micro-tile: all at once, they stall on the cache's miss buffers. Within a micro-tile
    # they are spread over its K loop too, about one line every K / lines steps (a burst of
    # them before the K loop stalled there: tutorial matmul on a 2-core Xeon, best of
    # 200 calls, 1024^3 64 x 128 x 32 7.6 -> 7.3-7.5 ms, 128 x 128 x 64 8.1-8.3 -> 7.6-7.9;
    # 2048^3 128 x 128 x 64 67.9-68.9 -> 64.9-66.1 ms). The micro-tiles
    # then run column by column: a prefetched line evicts the least recently used one,
    # which is then a finished column's panel of B or its C rather than B's panel that
    # every row of micro-tiles reads again (2048^3 fp32 on Zen 3, 64 x 128 x 32 tiles:
    # 106-108 -> 103-106 ms; the prefetches in row order were 15% slower).
    # (hints.py hands only 2-D tiles to a dot, so a batched dot has none.)
    full = M - M % MR

    def row_tiles(e, body):
        """body(emitter, i0, rows) for each row of micro-tiles: the first MR rows (i0 the
        constant 0), the other MR-row ones in a loop, then the last M % MR rows. The first
        row stays out of the loop: with B packed by it, a branch on i0 == 0 whose two K
        loops both carry the accumulators made LLVM spill 7 of 24 of them in the other
        rows' loop (64 x 64 x 32 tiles, 6 x 4: 31% slower than 8 x 2 with the branch)."""
        body(e, 0, MR)
        if full > MR:
            e.for_loop(MR, full, MR, [], lambda r_em, i0, _: body(r_em, i0, MR) or [])
        if M % MR:
            body(e, full, M % MR)

    def column_tiles(e, body):
        """body(emitter, j0) for each column of micro-tiles (N is a multiple of NR * VL)."""
        if N == NR * VL:
            body(e, 0)
        else:
            e.for_loop(0, N, NR * VL, [], lambda c_em, j0, _: body(c_em, j0) or [])

    if column_order:
        column_tiles(em, lambda e, j0: row_tiles(e, lambda r_em, i0, mr: tile(r_em, (i0, j0), mr)))
    else:
        for ptr, step in prefetches:  # all at once (a batched dot's: hints.py hands it none)
            hints.issue_all(low, em, ptr, step)
        prefetches = []
        low.nest_steps(em, batch, [1] * len(batch), lambda e, pre: row_tiles(
            e, lambda r_em, i0, mr: column_tiles(r_em, lambda c_em, j0: tile(c_em, pre + (i0, j0), mr))))
    _result(low, em, out, c_buf, acc_elem)


def _lines(ptr, step: int) -> int:
    """Cache lines of a 2-D tile of pointers, `step` lanes per line, row by row."""
    rows, cols = shape_of(ptr)
    return rows * -(-cols // step)


def _prefetch_shares(prefetches, tiles: int, K: int):
    """[(ptr, lanes per line, lines per micro-tile, lines)] when every micro-tile has a
    share of each prefetch (_spread_prefetches) and the K loop has a step per line."""
    out = []
    for ptr, step in prefetches:
        lines = _lines(ptr, step)
        if lines < tiles:
            return None
        out.append((ptr, step, -(-lines // tiles), lines))
    return out if sum(x[2] for x in out) <= K else None


def _prefetch_line(e, ptr, step, per, lines, tiles, t, q, locality=3):
    """Line q of micro-tile t's share (per lines) of a tile of pointers."""
    line = e.idx_add(e.idx_mul(t, per), q)
    if per * tiles > lines:  # the last micro-tiles repeat the tile's last line
        line = e.emit(arith.MinUIOp(e.as_ssa_index(line), e.const_index(lines - 1)))
    _issue_line(e, ptr, step, line, locality)


def _issue_line(e, ptr, step, line, locality=3):
    """A prefetch of line `line` of a 2-D tile of pointers, counted row by row (`step`
    lanes per line), into the caches `locality` names (tcpu.prefetch)."""
    per_row = -(-shape_of(ptr)[1] // step)
    idx = (e.idx_div_rem(line, per_row, 0), e.idx_mul(e.idx_div_rem(line, 1, per_row), step))
    e.emit(tcpu.PrefetchOp(e.value(ptr, idx, 1), locality=locality))


def _spread_prefetches(e, prefetches, t, tiles: int, locality=3):
    """Micro-tile `t` (of `tiles`)'s share of the prefetches: each 2-D tile of pointers
    of `prefetches` (pointers, lanes per line) is cut into its lines, row by row, and
    the lines dealt out in order, ceil(lines / tiles) per micro-tile (the last ones
    repeat the tile's last line), or one per micro-tile when there are fewer lines
    (neighbouring micro-tiles then repeat a line)."""
    for ptr, step in prefetches:
        lines = _lines(ptr, step)
        if lines >= tiles:
            per = -(-lines // tiles)
            for u in range(per):
                _prefetch_line(e, ptr, step, per, lines, tiles, t, u, locality)
        else:
            _issue_line(e, ptr, step, e.idx_div_rem(e.idx_mul(t, lines), tiles, 0), locality)


_F32 = Float32Type()
_SCALED_TYPES = {tt.ScaleDotElemType.E4M3, tt.ScaleDotElemType.E5M2, tt.ScaleDotElemType.E2M1,
                 tt.ScaleDotElemType.BF16, tt.ScaleDotElemType.FP16}


def lower_dot_scaled(low, op: Operation):
    kinds = [tt.ScaleDotElemType(op.a_elem_type.value.data), tt.ScaleDotElemType(op.b_elem_type.value.data)]
    for kind in kinds:
        if kind not in _SCALED_TYPES:
            raise low.unsupported(op, f"tt.dot_scaled with {kind.name.lower()} operands")
    if element_type(op.results[0].type) != _F32:
        raise low.unsupported(op, "tt.dot_scaled with a non-fp32 result")
    bf16_compute = tt.ScaleDotElemType.FP16 not in kinds
    em = low.emitter_before(op)
    shape = shape_of(op.results[0])
    batch, (M, N) = shape[:-2], shape[-2:]
    K = shape_of(op.a)[-1] * (2 if kinds[0] == tt.ScaleDotElemType.E2M1 and op.lhs_k_pack.value.data else 1)
    a_buf = _pack_scaled(low, em, op.a, op.a_scale, kinds[0], bool(op.lhs_k_pack.value.data), batch + (M, K),
                         False, bf16_compute)
    b_buf = _pack_scaled(low, em, op.b, op.b_scale, kinds[1], bool(op.rhs_k_pack.value.data), batch + (K, N),
                         True, bf16_compute)
    micro_kernel(low, em, op, a_buf, b_buf, _F32)


def _pack_scaled(low, em, value, scale, kind, k_pack, shape, is_rhs, bf16_compute):
    """A row-major fp32 buffer of the logical operand (`shape`: [.., M, K] or [.., K, N])."""
    buf = low.alloc_buffer(TensorType(_F32, shape))
    k_axis = -2 if is_rhs else -1
    # e2m1 packs two values per byte along K, or along the other matrix axis.
    pack_axis = (k_axis if k_pack else (-1 if is_rhs else -2)) if kind == tt.ScaleDotElemType.E2M1 else None
    group = shape[k_axis] // shape_of(scale)[-1] if scale is not None else 0

    def body(e, idx):
        if pack_axis is None:
            v = e.value(value, idx, 1)
            x = v if element_type(value.type) == _F32 else e.emit(arith.ExtFOp(v, _F32))
        else:
            d = len(idx) + pack_axis
            byte = e.value(value, idx[:d] + (e.idx_div_rem(idx[d], 2, 0),) + idx[d + 1:], 1)
            x = _e2m1_nibble(e, byte, e.idx_div_rem(idx[d], 1, 2))
        if scale is not None:
            k, other = idx[k_axis], idx[-1 if is_rhs else -2]
            s = e.value(scale, idx[:-2] + (other, e.idx_div_rem(k, group, 0)), 1)
            x = e.emit(arith.MulfOp(x, _e8m0(e, s, bf16_compute)))
        e.store_buffer(x, buf, idx)
    low.nest(em, shape, 1, body)
    return buf


def _const(e, v, t):
    return e.emit(arith.ConstantOp(FloatAttr(v, t) if t == _F32 else IntegerAttr(v, t)))


def _e2m1_nibble(e, byte, which):
    """The fp32 value of nibble `which` (0: low, 1: high; an index) of an i8 byte.
    Codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 is the sign."""
    b = e.emit(arith.ExtUIOp(byte, i32))
    shift = e.emit(arith.MuliOp(e.emit(arith.IndexCastOp(e.as_ssa_index(which), i32)), _const(e, 4, i32)))
    n = e.emit(arith.ShRUIOp(b, shift))
    code = e.emit(arith.AndIOp(n, _const(e, 7, i32)))
    ex = e.emit(arith.ShRUIOp(code, _const(e, 1, i32)))
    m = e.emit(arith.AndIOp(code, _const(e, 1, i32)))
    normal = e.emit(arith.MulfOp(e.emit(arith.UIToFPOp(e.emit(arith.ShLIOp(
        e.emit(arith.AddiOp(m, _const(e, 2, i32))), ex)), _F32)), _const(e, 0.25, _F32)))
    subnormal = e.emit(arith.MulfOp(e.emit(arith.UIToFPOp(m, _F32)), _const(e, 0.5, _F32)))
    v = e.emit(arith.SelectOp(e.emit(arith.CmpiOp(ex, _const(e, 0, i32), "eq")), subnormal, normal))
    negative = e.emit(arith.CmpiOp(e.emit(arith.AndIOp(n, _const(e, 8, i32))), _const(e, 0, i32), "ne"))
    return e.emit(arith.SelectOp(negative, e.emit(arith.NegfOp(v)), v))


def _e8m0(e, s, bf16_compute):
    """2^(s - 127) for an E8M0 scale byte; 255 is NaN."""
    if not isinstance(s.type, IntegerType):  # a scale given as a float tensor
        return s if s.type == _F32 else e.emit(arith.ExtFOp(s, _F32))
    bits = e.emit(arith.ShLIOp(e.emit(arith.ExtUIOp(s, i32)), _const(e, 23, i32)))
    if bf16_compute:  # byte 0: 2^-127 (an fp32 subnormal), not 0
        bits = e.emit(arith.MaxUIOp(bits, _const(e, 0x00400000, i32)))
    scale = e.emit(tcpu.BitcastOp(bits, _F32))
    nan = _const(e, float("nan"), _F32)
    return e.emit(arith.SelectOp(e.emit(arith.CmpiOp(s, _const(e, -1, s.type), "eq")), nan, scale))
