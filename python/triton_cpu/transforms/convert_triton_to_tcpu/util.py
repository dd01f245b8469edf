"""Small helpers every module of convert-triton-to-tcpu uses."""
import functools

from xdsl.dialects.builtin import IndexType, IntegerType, TensorType, VectorType
from xdsl.ir import Attribute, Operation, SSAValue

from triton_cpu.dialects.compat import arith

INDEX = IndexType()

Index = SSAValue | int  # a loop index, or a constant index (0 for broadcast dims)

# arith's integer divisions and remainders: costly per lane, and undefined (a trap on x86)
# for a zero divisor.
INTEGER_DIVISIONS = frozenset({"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
                               "arith.ceildivsi", "arith.ceildivui"})


# Elementwise ops that keep their name: cloned with vector or scalar types.
ELEMENTWISE_PREFIXES = ("arith.", "math.")
# tt ops that read their operands at the index they produce.
_ELEMENTWISE_TT = frozenset({"tt.splat", "tt.addptr", "tt.load", "tt.bitcast", "tt.int_to_ptr", "tt.ptr_to_int",
                             "tt.fp_to_fp", "tt.clampf", "tt.precise_sqrt", "tt.precise_divf", "tt.mulhiui",
                             "tt.extern_elementwise"})


def is_elementwise(op: Operation) -> bool:
    """Reads its operands at the index it produces (no data movement between indices)."""
    return op.name.startswith(ELEMENTWISE_PREFIXES) or op.name in _ELEMENTWISE_TT


def is_tensor(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType)


def is_volatile(load: Operation) -> bool:
    """A tt.load with `volatile=True`: it must read memory itself, every time it runs."""
    v = load.properties.get("isVolatile")
    return v is not None and bool(v.value.data)


def bits(t) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    return getattr(t, "bitwidth", 32)


@functools.cache
def vector_type(elem: Attribute, width: int) -> VectorType:
    """vector<width x elem>, built once per process and shared: xDSL builds and verifies
    five attributes for each VectorType (~45 us), and a lowering asks for the same few
    types hundreds of times (attributes are immutable values, so sharing one is safe)."""
    return VectorType(elem, [width])


def vec_type(elem: Attribute, width: int) -> Attribute:
    """`elem` for one lane, else vector<width x elem>."""
    return elem if width == 1 else vector_type(elem, width)


def widen(v: SSAValue, src, dst, width: int) -> Operation:
    """Converts `v` (elements of type `src`) to `dst` for the dot's accumulation."""
    rt = vec_type(dst, width)
    if isinstance(dst, IntegerType):
        return arith.ExtSIOp(v, rt) if bits(src) < bits(dst) else arith.TruncIOp(v, rt)
    if isinstance(src, IntegerType):
        return arith.SIToFPOp(v, rt)
    if bits(src) < bits(dst):
        return arith.ExtFOp(v, rt)
    return arith.TruncFOp(v, rt)
