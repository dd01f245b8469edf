"""The `tcpu` dialect: what TritonCPU IR needs beyond scf/vector/arith/math.

Values are scalars or 1-D `vector<N x T>` of a native-sized width; a tensor
never appears here. Pointers keep Triton's `!tt.ptr<T>` type; a vector of
pointers is `vector<N x !tt.ptr<T>>` (LLVM supports vectors of pointers).

Memory ops come in three shapes, chosen by the axis analysis:
  tcpu.load / tcpu.store      one scalar element
  tcpu.vload / tcpu.vstore    N contiguous elements at one scalar pointer
  tcpu.gather / tcpu.scatter  N elements at a vector of pointers
each with an optional mask (masked-off lanes are never touched) and, for
loads, an optional `other` value for those lanes.
"""
from xdsl.dialects.builtin import (
    BoolAttr, DenseArrayBase, I32, IntegerAttr, IntegerType, StringAttr, UnitAttr, VectorType, i32,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments, IRDLOperation, irdl_op_definition, operand_def, opt_operand_def,
    opt_prop_def, prop_def, result_def, traits_def, var_operand_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure


# Unit attribute on an arith.addf/subf/mulf: the LLVM emitter gives it no `contract` flag, so
# it is never fused into an fma whatever `enable_fp_fusion` says (inline-ptx's `.rn`
# arithmetic; the attribute survives the conversion to TritonCPU IR with the op's others).
NO_CONTRACT = "tcpu.no_contract"

# Unit attribute on an scf.for the conversion emits for a pass over a tile (a materialization,
# a store, the chunks of a reduction along the last axis, a tile's prefetches issued at once):
# the LLVM emitter marks its loop `llvm.loop.unroll.disable` (see FunctionEmitter._loop_hints).
NO_UNROLL = "tcpu.no_unroll"


def _int_attr(v: int) -> IntegerAttr:
    return IntegerAttr(v, i32)


class _GridQueryOp(IRDLOperation):
    axis = prop_def(IntegerAttr[I32])
    result = result_def(IntegerType)
    traits = traits_def(Pure())

    def __init__(self, axis: int):
        super().__init__(properties={"axis": _int_attr(axis)}, result_types=[i32])


@irdl_op_definition
class ProgramIdOp(_GridQueryOp):
    """The program id along `axis` (0, 1, 2): a kernel ABI argument."""
    name = "tcpu.program_id"


@irdl_op_definition
class NumProgramsOp(_GridQueryOp):
    """The grid size along `axis`: a kernel ABI argument."""
    name = "tcpu.num_programs"


@irdl_op_definition
class IotaOp(IRDLOperation):
    """The vector [0, 1, ..., N-1]."""
    name = "tcpu.iota"
    result = result_def(VectorType)
    traits = traits_def(Pure())

    def __init__(self, result_type: VectorType):
        super().__init__(result_types=[result_type])


@irdl_op_definition
class AddPtrOp(IRDLOperation):
    """Pointer plus an element offset (scalar or per lane), like tt.addptr."""
    name = "tcpu.addptr"
    ptr = operand_def()
    offset = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, ptr: SSAValue, offset: SSAValue, result_type: Attribute):
        super().__init__(operands=[ptr, offset], result_types=[result_type])


@irdl_op_definition
class IsContiguousOp(IRDLOperation):
    """True when lane k of a vector of pointers points k elements (k * stride with the
    `stride` property) past lane 0, for every lane: a vector access at lane 0's address
    then touches what a gather or scatter would. On a vector of integers (element offsets),
    lane k must be lane 0 plus k * stride, as 64-bit values.
    Guards the vector accesses the lowering takes on an assumption it cannot prove
    (see `TileEmitter.speculative`)."""
    name = "tcpu.is_contiguous"
    ptrs = operand_def(VectorType)
    result = result_def(IntegerType)
    stride = opt_prop_def(IntegerAttr)  # lane k is k * stride elements past lane 0 (default 1)
    traits = traits_def(Pure())

    def __init__(self, ptrs: SSAValue, stride: int = 1):
        props = {"stride": IntegerAttr(stride, 64)} if stride != 1 else {}
        super().__init__(operands=[ptrs], result_types=[IntegerType(1)], properties=props)


class _CastOp(IRDLOperation):
    source = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, source: SSAValue, result_type: Attribute):
        super().__init__(operands=[source], result_types=[result_type])


@irdl_op_definition
class PtrToIntOp(_CastOp):
    """Pointer (or vector of pointers) to i64 address."""
    name = "tcpu.ptr_to_int"


@irdl_op_definition
class IntToPtrOp(_CastOp):
    """Integer address to pointer."""
    name = "tcpu.int_to_ptr"


@irdl_op_definition
class BitcastOp(_CastOp):
    """Reinterprets bits between same-width types, pointers included."""
    name = "tcpu.bitcast"


@irdl_op_definition
class FpToFpOp(_CastOp):
    """Float conversion with an explicit rounding mode (`rtne` or `rtz`), fp8 included."""
    name = "tcpu.fp_to_fp"
    rounding = opt_prop_def(StringAttr)

    def __init__(self, source: SSAValue, result_type: Attribute, rounding: str | None = None):
        IRDLOperation.__init__(self, operands=[source], result_types=[result_type],
                               properties={"rounding": StringAttr(rounding)} if rounding else {})


@irdl_op_definition
class MulhiUIOp(IRDLOperation):
    """High half of the unsigned product."""
    name = "tcpu.mulhiui"
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])


@irdl_op_definition
class DotBF16PairsOp(IRDLOperation):
    """acc[i] + a[2i] * b[2i] + a[2i+1] * b[2i+1] for n fp32 lanes, a and b holding n
    pairs of bf16 (low half first) in i32 lanes: x86's vdpbf16ps (AVX512-BF16), which
    treats denormal inputs and results as zero and rounds to nearest even."""
    name = "tcpu.dot_bf16_pairs"
    acc = operand_def()
    a = operand_def()
    b = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, acc: SSAValue, a: SSAValue, b: SSAValue):
        super().__init__(operands=[acc, a, b], result_types=[acc.type])


# x86 AMX tiles (AMX-TILE with AMX-BF16 or AMX-INT8). The tile registers are numbered
# 0..7 and configured by tcpu.tile_config as 16 rows of 64 bytes each; a tile is moved
# between registers and a row-major memref (rows one row of the memref apart) by
# tcpu.tile_load / tcpu.tile_store at the element the indices name, and tcpu.tile_dot
# accumulates into one tile the product of two others. These ops name registers, not
# values: they carry no results and have unknown effects (never merged, moved or dropped),
# and the code that emits them allocates the registers (convert_triton_to_tcpu/dot.py).


class _TileMoveOp(IRDLOperation):
    tile = prop_def(IntegerAttr)
    ref = operand_def()
    indices = var_operand_def()

    def __init__(self, tile: int, ref: SSAValue, indices):
        super().__init__(operands=[ref, list(indices)], properties={"tile": _int_attr(tile)})


@irdl_op_definition
class TileConfigOp(IRDLOperation):
    """Configures the tile registers: tiles 0..7, 16 rows of 64 bytes each (ldtilecfg)."""
    name = "tcpu.tile_config"


@irdl_op_definition
class TileReleaseOp(IRDLOperation):
    """Returns the tile registers to their initial state (tilerelease), so that the OS
    saves no tile data for this thread until the next tcpu.tile_config."""
    name = "tcpu.tile_release"


@irdl_op_definition
class TileZeroOp(IRDLOperation):
    """Tile `tile` <- zeros (tilezero)."""
    name = "tcpu.tile_zero"
    tile = prop_def(IntegerAttr)

    def __init__(self, tile: int):
        super().__init__(properties={"tile": _int_attr(tile)})


@irdl_op_definition
class TileLoadOp(_TileMoveOp):
    """Tile `tile` <- 16 rows of 64 bytes from the memref, starting at the element the
    indices name, rows one row of the memref apart (tileloadd)."""
    name = "tcpu.tile_load"


@irdl_op_definition
class TileStoreOp(_TileMoveOp):
    """Tile `tile` -> 16 rows of 64 bytes into the memref, as tcpu.tile_load reads them
    (tilestored)."""
    name = "tcpu.tile_store"


@irdl_op_definition
class TileDotOp(IRDLOperation):
    """Tile `acc` (16 x 16) += tile `a` (16 rows of 64 bytes along K) times tile `b` (16 rows,
    each 16 columns of 4 bytes along K). kind "bf16": tdpbf16ps, fp32 += pairs of bf16,
    products summed in fp32, denormal inputs and results flushed to zero, rounding to
    nearest even. kind "ss": tdpbssd, i32 += quads of signed int8, exact, wrapping."""
    name = "tcpu.tile_dot"
    kind = prop_def(StringAttr)
    acc = prop_def(IntegerAttr)
    a = prop_def(IntegerAttr)
    b = prop_def(IntegerAttr)

    def __init__(self, kind: str, acc: int, a: int, b: int):
        super().__init__(properties={"kind": StringAttr(kind), "acc": _int_attr(acc), "a": _int_attr(a),
                                     "b": _int_attr(b)})


@irdl_op_definition
class PanelKeyOp(IRDLOperation):
    """Marks the tt.dot right after it (share-dot-panels): its packed B operand is
    determined by the values of `keys` (integers or pointers) within a launch. Consumed by
    the dot's conversion."""
    name = "tcpu.panel_key"
    keys = var_operand_def()
    traits = traits_def(Pure())  # a mark: nothing between two chained dots (dot._chained_next)

    def __init__(self, keys):
        super().__init__(operands=[list(keys)])


@irdl_op_definition
class PanelCacheOp(IRDLOperation):
    """The calling thread's cache of packed dot operands for this launch
    (tcpu_panel_cache): `tags` (i64, zero at the thread's first program of each launch)
    and `data`, two memrefs of static shape, one after the other. Placed at function
    entry; its contents persist from program to program within a launch."""
    name = "tcpu.panel_cache"
    tags = result_def()
    data = result_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, tags_type: Attribute, data_type: Attribute):
        super().__init__(result_types=[tags_type, data_type])


@irdl_op_definition
class ExternElementwiseOp(IRDLOperation):
    """A call of a C library function per element (vectorized when a vector variant exists)."""
    name = "tcpu.extern_elementwise"
    args = var_operand_def()
    symbol = prop_def(StringAttr)
    pure = prop_def(BoolAttr)
    result = result_def()

    def __init__(self, args, symbol: str, pure: bool, result_type: Attribute):
        super().__init__(operands=[args], result_types=[result_type],
                         properties={"symbol": StringAttr(symbol), "pure": BoolAttr.from_bool(pure)})


class _LoadBase(IRDLOperation):
    ptr = operand_def()
    mask = opt_operand_def()
    other = opt_operand_def()
    result = result_def()
    alignment = opt_prop_def(IntegerAttr)
    volatile = opt_prop_def(BoolAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect())

    def __init__(self, ptr, result_type, mask=None, other=None, alignment: int | None = None):
        props = {}
        if alignment:
            props["alignment"] = IntegerAttr(alignment, 64)
        super().__init__(operands=[ptr, [mask] if mask else [], [other] if other else []],
                         result_types=[result_type], properties=props)


class _StoreBase(IRDLOperation):
    ptr = operand_def()
    value = operand_def()
    mask = opt_operand_def()
    alignment = opt_prop_def(IntegerAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, ptr, value, mask=None, alignment: int | None = None):
        props = {}
        if alignment:
            props["alignment"] = IntegerAttr(alignment, 64)
        super().__init__(operands=[ptr, value, [mask] if mask else []], properties=props)


@irdl_op_definition
class LoadOp(_LoadBase):
    """Loads one element (skipped, yielding `other` or 0, when the i1 mask is false)."""
    name = "tcpu.load"


@irdl_op_definition
class VLoadOp(_LoadBase):
    """Loads N contiguous elements starting at a scalar pointer."""
    name = "tcpu.vload"


@irdl_op_definition
class GatherOp(_LoadBase):
    """Loads one element per lane from a vector of pointers."""
    name = "tcpu.gather"


@irdl_op_definition
class StoreOp(_StoreBase):
    """Stores one element."""
    name = "tcpu.store"


@irdl_op_definition
class VStoreOp(_StoreBase):
    """Stores N contiguous elements starting at a scalar pointer. `may_stream`: the kernel
    may store them past the caches when its launch stores enough (the code generator counts
    the bytes; runtime.h's tcpu_streaming_bytes)."""
    name = "tcpu.vstore"
    may_stream = opt_prop_def(UnitAttr)

    def __init__(self, ptr, value, mask=None, alignment: int | None = None, may_stream: bool = False):
        super().__init__(ptr, value, mask, alignment)
        if may_stream:
            self.properties["may_stream"] = UnitAttr()


@irdl_op_definition
class ScatterOp(_StoreBase):
    """Stores one element per lane through a vector of pointers."""
    name = "tcpu.scatter"


@irdl_op_definition
class PrintOp(IRDLOperation):
    """Prints one element (or, with no value, the prefix alone) in Triton's GPU format:
    `pid (x, y, z) idx (i, j) <prefix><value>`; `indices` are the element's indices in an
    operand of shape `shape`."""
    name = "tcpu.print"
    value = opt_operand_def()
    indices = var_operand_def()
    prefix = prop_def(StringAttr)
    hex = prop_def(BoolAttr)
    is_signed = prop_def(BoolAttr)
    operand = prop_def(IntegerAttr)
    num_operands = prop_def(IntegerAttr)
    shape = prop_def(DenseArrayBase)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, value, indices, prefix: str, hex: bool, is_signed: bool, operand: int,
                 num_operands: int, shape):
        super().__init__(operands=[[value] if value is not None else [], list(indices)], properties={
            "prefix": StringAttr(prefix), "hex": BoolAttr.from_bool(hex),
            "is_signed": BoolAttr.from_bool(is_signed), "operand": _int_attr(operand),
            "num_operands": _int_attr(num_operands), "shape": DenseArrayBase.from_list(i32, list(shape))})


@irdl_op_definition
class AssertOp(IRDLOperation):
    """Device assert: when a lane of `condition` is false, records the failure
    (raised as RuntimeError by the launcher) and returns from the program."""
    name = "tcpu.assert"
    condition = operand_def()
    message = prop_def(StringAttr)
    file = prop_def(StringAttr)
    line = prop_def(IntegerAttr)
    function = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, condition, message: str, file: str, line: int, function: str):
        super().__init__(operands=[condition], properties={
            "message": StringAttr(message), "file": StringAttr(file), "line": _int_attr(line),
            "function": StringAttr(function)})


@irdl_op_definition
class AtomicRMWOp(IRDLOperation):
    """Atomic read-modify-write of one element, skipped when `mask` is false (then the
    result is 0). `kind`: and, or, xor, add, fadd, max, min, umax, umin, xchg (max/min on
    floats: fmax/fmin). `ordering`: monotonic, acquire, release, acq_rel."""
    name = "tcpu.atomic_rmw"
    ptr = operand_def()
    val = operand_def()
    mask = opt_operand_def()
    kind = prop_def(StringAttr)
    ordering = prop_def(StringAttr)
    result = result_def()
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, ptr, val, mask, kind: str, ordering: str):
        super().__init__(operands=[ptr, val, [mask] if mask is not None else []], result_types=[val.type],
                         properties={"kind": StringAttr(kind), "ordering": StringAttr(ordering)})


@irdl_op_definition
class AtomicCASOp(IRDLOperation):
    """Atomic compare-and-swap of one element; returns the old value (0 when the optional
    `mask` is false: then memory is not touched)."""
    name = "tcpu.atomic_cas"
    ptr = operand_def()
    cmp = operand_def()
    val = operand_def()
    mask = opt_operand_def()
    ordering = prop_def(StringAttr)
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, ptr, cmp, val, ordering: str, mask=None):
        super().__init__(operands=[ptr, cmp, val, [mask] if mask is not None else []], result_types=[val.type],
                         properties={"ordering": StringAttr(ordering)})


@irdl_op_definition
class ClockOp(IRDLOperation):
    """The monotonic clock in nanoseconds (i64)."""
    name = "tcpu.clock"
    result = result_def(IntegerType)
    traits = traits_def(MemoryReadEffect())

    def __init__(self):
        super().__init__(result_types=[IntegerType(64)])


@irdl_op_definition
class AtomicPollOp(IRDLOperation):
    """Spins until the integer at `ptr` equals `expected` or the clock passes `deadline`
    (i64 ns, negative: none); true on a match, then an acquire fence when `acquire`."""
    name = "tcpu.atomic_poll"
    ptr = operand_def()
    expected = operand_def()
    deadline = operand_def(IntegerType)
    mask = opt_operand_def()  # false: memory is not read, the result is true
    acquire = prop_def(BoolAttr)
    result = result_def(IntegerType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, ptr, expected, deadline, acquire: bool, mask=None):
        super().__init__(operands=[ptr, expected, deadline, [mask] if mask is not None else []],
                         result_types=[IntegerType(1)],
                         properties={"acquire": BoolAttr.from_bool(acquire)})


@irdl_op_definition
class PrefetchOp(IRDLOperation):
    """A hint that the memory at `ptr` will be read soon: one prefetch of its cache line
    (never faults, changes no value). Before convert-triton-to-tcpu `ptr` may be a tensor
    of pointers (prefetch-next-program), lowered to one prefetch per 64-byte line."""
    name = "tcpu.prefetch"
    ptr = operand_def()
    # On a tile of pointers just before a tt.dot (prefetch-next-program): its lines are
    # issued a few at a time between that dot's micro-tiles instead of all at once
    # (convert_triton_to_tcpu/dot.py).
    spread = opt_prop_def(UnitAttr)
    # Into which caches, as llvm.prefetch's locality argument: 3 (the default) all of them
    # (prefetcht0), 2 the L2 and beyond (prefetcht1).
    locality = opt_prop_def(IntegerAttr)
    # No effect trait: an op that only reads is dead when unused (DCE would drop it), and
    # one that writes would order the loads around it (convert-triton-to-tcpu's fusion).

    def __init__(self, ptr: SSAValue, spread: bool = False, locality: int = 3):
        props = {"spread": UnitAttr()} if spread else {}
        if locality != 3:
            props["locality"] = _int_attr(locality)
        super().__init__(operands=[ptr], properties=props)


@irdl_op_definition
class BoundsCheckOp(IRDLOperation):
    """Bounds-checked mode: the lanes of one access to user memory that are active (`mask`,
    all when absent) and inside the storage of one of the kernel arguments `args` the
    pointer may derive from. Violating lanes are reported to the launch (kind,
    `file`:`line`, the first lane's address, how many, and `args[0]` as the argument) and
    left out of the result, which becomes the access's mask.

    `ptr` is a pointer (one element, or `lanes` contiguous elements from it when
    `lanes` > 1) or a vector of pointers (one element per lane); each element is
    `elem_bytes` long. The result has one i1 per lane."""
    name = "tcpu.bounds_check"
    ptr = operand_def()
    mask = opt_operand_def()
    kind = prop_def(StringAttr)  # load, store, atomic
    args = prop_def(DenseArrayBase)
    lanes = prop_def(IntegerAttr)
    elem_bytes = prop_def(IntegerAttr)
    file = prop_def(StringAttr)
    line = prop_def(IntegerAttr)
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, ptr, mask, kind: str, args, lanes: int, elem_bytes: int, file: str, line: int):
        rtype = IntegerType(1) if lanes == 1 else VectorType(IntegerType(1), [lanes])
        super().__init__(operands=[ptr, [mask] if mask is not None else []], result_types=[rtype], properties={
            "kind": StringAttr(kind), "args": DenseArrayBase.from_list(i32, list(args)), "lanes": _int_attr(lanes),
            "elem_bytes": _int_attr(elem_bytes), "file": StringAttr(file), "line": _int_attr(line)})


TCPU = Dialect(
    "tcpu",
    [ProgramIdOp, NumProgramsOp, IotaOp, AddPtrOp, IsContiguousOp, PtrToIntOp, IntToPtrOp, BitcastOp, FpToFpOp,
     MulhiUIOp, DotBF16PairsOp, TileConfigOp, TileReleaseOp, TileZeroOp, TileLoadOp, TileStoreOp, TileDotOp,
     PanelKeyOp, PanelCacheOp,
     ExternElementwiseOp, LoadOp, VLoadOp, GatherOp, StoreOp, VStoreOp, ScatterOp, PrintOp,
     AssertOp, AtomicRMWOp, AtomicCASOp, ClockOp, AtomicPollOp, PrefetchOp, BoundsCheckOp],
    [],
)
