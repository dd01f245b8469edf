"""The state of a PTX block being translated: its registers as SSA values, and the ops that
compute them.

Every value has the block's shape (a tensor shape, or none for scalars: the body of a
`tt.map_elementwise` region). A register holds whatever value was last written to it, of
any type of its width: an f32 written by `add.f32` stays an f32 and is bitcast only when an
instruction reads it as an integer, so a block of float arithmetic becomes float ops with no
bitcast between them. Predicates are i1.

Reads and writes follow PTX's rules for a register whose width differs from the
instruction's type: a wider source is truncated to the type; a narrower one (an 8-bit
argument passed in a 32-bit register) is extended, with its sign for a signed type; a wider
destination receives the value zero- or sign-extended.
"""
from xdsl.dialects.builtin import (
    BFloat16Type, DenseIntOrFPElementsAttr, Float16Type, Float32Type, Float64Type, FloatAttr, IntegerAttr,
    IntegerType, TensorType,
)
from xdsl.ir import Operation, SSAValue

from triton_cpu.analysis.axis_info import element_type
from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith, splat_value

from .parse import PTXError
from .ptx_literals import float_literal, int_literal

F16, BF16, F32, F64 = Float16Type(), BFloat16Type(), Float32Type(), Float64Type()
I1 = IntegerType(1)

# PTX type suffix -> (bits, kind): kind "b" (untyped), "u", "s", "f", "pred"; "f16x2" and
# "bf16x2" are two halves in 32 bits.
TYPES = {f".{k}{n}": (n, k) for k in "bus" for n in (8, 16, 32, 64)}
TYPES.update({".f16": (16, "f"), ".bf16": (16, "f"), ".f32": (32, "f"), ".f64": (64, "f"),
              ".f16x2": (32, "fx2"), ".bf16x2": (32, "fx2"), ".pred": (1, "pred")})
FLOATS = {".f16": F16, ".bf16": BF16, ".f32": F32, ".f64": F64}


def bits_of(t) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    if t.name.startswith("f8"):  # the fp8 types of quantization kernels
        return 8
    if isinstance(t, tt.PointerType):
        return 64
    return {F16: 16, BF16: 16, F32: 32, F64: 64}.get(t, 0)


def int_type(bits: int) -> IntegerType:
    return IntegerType(bits)


def integer_constant(v) -> int | None:
    """The integer `v` holds when it is an integer constant, a splat of one, or tt.splat of
    one; else None."""
    owner = getattr(v, "owner", None)
    if isinstance(owner, tt.SplatOp):
        owner = getattr(owner.operands[0], "owner", None)
    if not isinstance(owner, arith.ConstantOp):
        return None
    value = owner.value
    if isinstance(value, DenseIntOrFPElementsAttr):
        value = splat_value(value)
    elif isinstance(value, IntegerAttr):
        value = value.value.data
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Machine:
    def __init__(self, shape: tuple | None, registers: dict):
        self.shape = shape
        self.ops: list[Operation] = []  # what the block computes, in order; the caller places them
        self.regs: dict[str, SSAValue | None] = {}
        self.guard: SSAValue | None = None  # the predicate of the instruction being translated
        self.widths: dict[str, int] = {}
        for name, ptype in registers.items():
            self.declare(name, TYPES[ptype][0] if ptype in TYPES else _unknown_type(name, ptype))

    # -- building ------------------------------------------------------------
    def ty(self, elem):
        return TensorType(elem, self.shape) if self.shape is not None else elem

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def const(self, value, elem) -> SSAValue:
        if isinstance(elem, IntegerType):
            w = elem.width.data
            value = int(value) & ((1 << w) - 1)
            if w > 1 and value >= 1 << (w - 1):
                value -= 1 << w  # xDSL stores integer constants signed
            if w == 1:
                value = -value if value else 0
        if self.shape is not None:
            return self.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(self.ty(elem), [value])))
        attr = IntegerAttr(value, elem) if isinstance(elem, IntegerType) else FloatAttr(value, elem)
        return self.emit(arith.ConstantOp(attr))

    def iconst(self, value: int, bits: int) -> SSAValue:
        return self.const(value, int_type(bits))

    # -- value conversions ---------------------------------------------------
    def as_type(self, v: SSAValue, elem) -> SSAValue:
        """`v` reinterpreted as `elem` (same width): a bitcast unless it already is one."""
        src = element_type(v.type)
        if src == elem:
            return v
        if isinstance(src, tt.PointerType) or isinstance(elem, tt.PointerType):
            raise PTXError("a pointer operand used as a number")
        if bits_of(src) != bits_of(elem):
            raise AssertionError(f"bitcast {src} -> {elem}")
        return self.emit(tt.BitcastOp(v, self.ty(elem)))

    def as_int(self, v: SSAValue) -> SSAValue:
        return self.as_type(v, int_type(bits_of(element_type(v.type))))

    def resize(self, v: SSAValue, bits: int, signed: bool = False) -> SSAValue:
        """`v` as an integer of `bits`, truncated or extended."""
        have = bits_of(element_type(v.type))
        if have == bits:
            return v
        v = self.as_int(v)
        if have > bits:
            return self.emit(arith.TruncIOp(v, self.ty(int_type(bits))))
        op = arith.ExtSIOp if signed else arith.ExtUIOp
        return self.emit(op(v, self.ty(int_type(bits))))

    # -- registers -----------------------------------------------------------
    def declare(self, name: str, bits: int, value: SSAValue | None = None):
        self.widths[name] = bits
        self.regs[name] = value

    def register(self, name: str) -> SSAValue:
        if name not in self.widths:
            if name.startswith("%") and name.split(".")[0] in _SPECIAL:
                raise PTXError(f"the special register '{name}' (a GPU thread's identity)")
            raise PTXError(f"the undeclared register or symbol '{name}'")
        v = self.regs[name]
        if v is None:  # read before any write: PTX leaves it undefined; zero here
            v = self.regs[name] = self.iconst(0, self.widths[name])
        return v

    def read(self, operand, ptype: str) -> SSAValue:
        """Operand `operand` read as PTX type `ptype`: an integer of its width, or for a float
        type that float (or the register's value unchanged when it is one)."""
        bits, kind = TYPES[ptype]
        if isinstance(operand, list):
            raise PTXError(f"a vector operand {{{', '.join(operand)}}} here")
        if kind == "pred":
            v = self.register(operand)
            if bits_of(element_type(v.type)) != 1:
                raise PTXError(f"'{operand}' used as a predicate")
            return v
        if operand.startswith("["):
            raise PTXError(f"the memory operand '{operand}'")
        if operand[0].isdigit() or operand[0] in "-+.":
            return self._immediate(operand, ptype)
        v = self.register(operand)
        v = self.resize(v, bits, signed=kind == "s") if bits_of(element_type(v.type)) != bits else v
        if ptype in FLOATS:
            return self.as_type(v, FLOATS[ptype])
        return self.as_int(v)

    def constant(self, operand) -> int | None:
        """The integer an operand is known to hold at translation time: an immediate, or a
        register whose value is an integer constant (a splat), as an `n`-constraint operand
        is (Triton passes the Python int as a constant); else None."""
        if isinstance(operand, list):
            return None
        if operand[0].isdigit() or operand[0] in "-+":
            return int_literal(operand)
        return integer_constant(self.regs.get(operand))

    def _immediate(self, text: str, ptype: str) -> SSAValue:
        bits, kind = TYPES[ptype]
        if ptype in FLOATS:
            value = float_literal(text, FLOATS[ptype])
            if value is None:
                raise PTXError(f"the operand '{text}' for a {ptype[1:]} instruction")
            return self.const(value, FLOATS[ptype])
        value = int_literal(text)
        if value is None:
            raise PTXError(f"the operand '{text}' for a {ptype[1:]} instruction")
        return self.iconst(value, bits)

    def write(self, name, value: SSAValue, signed: bool = False):
        """Writes `value` to register `name` (`_` discards it), resized to its width."""
        if name == "_":
            return
        if isinstance(name, list):
            raise PTXError(f"a vector destination {{{', '.join(name)}}} here")
        if name not in self.widths:
            self.register(name)  # raises the right error
        bits = self.widths[name]
        if bits_of(element_type(value.type)) != bits:
            if bits == 1 or bits_of(element_type(value.type)) == 1:
                raise PTXError(f"a predicate written to or from the non-predicate '{name}'")
            value = self.resize(value, bits, signed)
        self.regs[name] = value

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        if element_type(a.type) != element_type(b.type):
            b = self.as_type(b, element_type(a.type))
        return self.emit(arith.SelectOp(cond, a, b))


_SPECIAL = {"%tid", "%ntid", "%laneid", "%warpid", "%nwarpid", "%ctaid", "%nctaid", "%smid", "%nsmid",
            "%gridid", "%clock", "%clock64", "%globaltimer", "%lanemask_eq", "%lanemask_lt", "%cluster_ctaid"}


def _unknown_type(name: str, ptype: str):
    raise PTXError(f"the register type '{ptype}' of '{name}'")
