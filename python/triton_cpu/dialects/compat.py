"""Where xDSL 0.74 differs from upstream MLIR on IR that stock Triton prints: the one place for
workarounds, each with the reason it exists. Importing this module applies the parser and
printer fixes; `Arith` is the `arith` dialect with the ops below swapped in, and it is what
`ttir.make_context` loads.

Gaps found, and what is done about each:

- A hex literal inside `dense<...>` of a float type is the bit pattern of the float in MLIR
  (how MLIR prints -inf and NaN splats: `dense<0xFF800000> : tensor<64xf32>`); xDSL reads it
  as an integer and converts its value (-inf becomes 4.28e9). xDSL's own printer writes such
  literals too (`dense<0xff800000>`), so the fix is in the parser, where it also covers our
  printed IR read back by `triton-cpu-opt`: `_fix_dense_hex_floats`.
- A dense NaN splat is not recognized as a splat when printing (NaN != NaN), so it prints as
  a list of every element: `_fix_nan_splats` compares the bytes instead. A splat keeps
  every element, which `get_values()[0]` unpacks: `splat_value` reads one.
- arith's casts (extsi, extui, trunci, sitofp, uitofp, fptosi, fptoui, index_cast) accept
  scalars only; cmpi and cmpf always produce a scalar i1; select only takes a scalar
  condition (and cannot parse `: tensor<4xi1>, tensor<4xf32>`). TTIR applies all of them to
  tensors, and the lowering applies them to vectors: these ops are redefined below for
  scalars, vectors and tensors, with the same class names, formats and constructors as xDSL's.
  Code that builds arith ops should import `arith` from this module instead of xDSL's
  (same names, fixed classes), so built and parsed ops have the same classes.
- arith.remf is missing: defined below.
- vector.extract and vector.insert accept integer, index and float elements only; the
  lowering also extracts from and inserts into vectors of pointers (a gather's addresses).
  Built ops are not verified, but their printed form did not parse back, so a kernel's
  TritonCPU IR could not be read again (triton-cpu-opt, an IR override, the LLVM worker's
  retry with the next pipeline after an abort: fuzz seed 376437). `Vector` is xDSL's vector
  dialect with the two redefined for any element type (the compiler still builds xDSL's
  classes; the emitter reads both by name and properties).
- xDSL prints the bits of inf/NaN in lower case; MLIR in upper case (`_fix_hex_float_case`).
- scf.while, printed with locations, puts its location in the middle of the op
  (`_fix_while_location`).
"""
from __future__ import annotations

import math
import types
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import arith as _xarith
from xdsl.dialects import scf as _xscf
from xdsl.dialects import vector as _xvector
from xdsl.dialects.arith import FastMathFlagsAttr, FloatingPointLikeBinaryOperation
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ShapedType,
    TensorType,
    VectorType,
    container_of,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

# --------------------------------------------------------------------------------------------
# Parser and printer fixes.
# --------------------------------------------------------------------------------------------

_TensorLiteralElement = AttrParser._TensorLiteralElement  # pyright: ignore[reportPrivateUsage]


def _fix_dense_hex_floats() -> None:
    original = _TensorLiteralElement.to_type
    if getattr(original, "_triton_cpu_fix", False):
        return

    def to_type(self, parser, type):
        text = self.span.text
        if isinstance(type, AnyFloat) and text[:2] in ("0x", "0X"):
            size = type.compile_time_size
            bits = int(text, 16)
            if bits >= 1 << (8 * size):
                parser.raise_error(f"hex float literal {text} does not fit {type}", at_position=self.span)
            return type.unpack(bits.to_bytes(size, "little"), 1)[0]
        return original(self, parser, type)

    to_type._triton_cpu_fix = True
    _TensorLiteralElement.to_type = to_type


def _fix_nan_splats() -> None:
    if getattr(DenseIntOrFPElementsAttr.is_splat, "_triton_cpu_fix", False):
        return

    def is_splat(self) -> bool:
        n = len(self)
        data = self.data.data
        if n == 0 or len(data) % n:
            return False
        size = len(data) // n
        return data == data[:size] * n

    is_splat._triton_cpu_fix = True
    DenseIntOrFPElementsAttr.is_splat = is_splat


def splat_value(attr: DenseIntOrFPElementsAttr) -> int | float | None:
    """The value every element of a dense attribute holds, bit for bit, else None. Unpacks
    one element: `attr.get_values()[0]` unpacks them all (xDSL keeps a splat's every
    element), ~0.5 ms for a tensor<65536xf32>, paid by each chunk of a tile that reads it."""
    if not attr.is_splat():
        return None
    size = len(attr.data.data) // len(attr)
    return attr.get_element_type().unpack(attr.data.data[:size], 1)[0]


def _fix_while_location() -> None:
    # WhileOp.print writes its types with Printer.print_operation_type, which also writes the
    # op's location when locations are printed: `scf.while (...) : (...) -> (...) loc(...) {`
    # does not parse. Same text otherwise, with the bare function type.
    if getattr(_xscf.WhileOp.print, "_triton_cpu_fix", False):
        return

    def print(self, printer: Printer):
        printer.print_string(" (")
        printer.print_list(zip(self.before_region.block.args, self.arguments, strict=True),
                           lambda pair: self._print_pair(printer, pair))
        printer.print_string(") : ")
        printer.print_function_type(self.arguments.types, self.res.types)
        printer.print_string(" ")
        printer.print_region(self.before_region, print_entry_block_args=False)
        printer.print_string(" do ")
        printer.print_region(self.after_region)
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)

    print._triton_cpu_fix = True
    _xscf.WhileOp.print = print

    # MLIR omits the `(...)` assignment list of a while without loop-carried values
    # (`scf.while : () -> () {`); xDSL's parser requires it.
    original_parse = _xscf.WhileOp.parse.__func__

    @classmethod
    def parse(cls, parser):
        if parser.parse_optional_punctuation(":") is None:
            return original_parse(cls, parser)
        function_type = parser.parse_function_type()
        if function_type.inputs.data:
            parser.raise_error("scf.while with operands needs its (%arg = %init) list")
        before_region = parser.parse_region()
        parser.parse_characters("do")
        after_region = parser.parse_region()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls([], function_type.outputs.data, before_region, after_region)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    _xscf.WhileOp.parse = parse


def _fix_hex_float_case() -> None:
    # MLIR writes the bits of inf/NaN in upper case (0xFF800000); xDSL in lower case. Both
    # parse; upper case keeps our text identical to Triton's.
    if getattr(Printer.print_float, "_triton_cpu_fix", False):
        return
    original = Printer.print_float

    def print_float(self, value: float, type: AnyFloat):
        if math.isnan(value) or math.isinf(value):
            self.print_string("0x" + type.pack((value,))[::-1].hex().upper())
        else:
            original(self, value, type)

    print_float._triton_cpu_fix = True
    Printer.print_float = print_float


def _fix_dense_type_check_cost() -> None:
    # AttrParser._parse_dense_literal_type rebuilds an IRDL constraint (for "a ranked
    # container of integer, index, float or complex") on every dense<...> it parses: with
    # it built once, a small kernel's TTIR (4 dense literals) parses in 19.6 instead of
    # 22.8 ms. Same check.
    original = AttrParser._parse_dense_literal_type  # pyright: ignore[reportPrivateUsage]
    if getattr(original, "_triton_cpu_fix", False):
        return
    from xdsl.dialects.builtin import DYNAMIC_INDEX, ComplexType, RankedStructure
    from xdsl.irdl import base
    constraint = base(RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType])

    def _parse_dense_literal_type(self):
        type = self.expect(self.parse_optional_type, "Dense attribute must be typed!")
        if not constraint.verifies(type):
            self.raise_error("Expected memref, vector or tensor type of integer, index, float, or complex type")
        if any(dim == DYNAMIC_INDEX for dim in list(type.get_shape())):
            self.raise_error("Dense literal attribute should have a static shape.")
        return type

    _parse_dense_literal_type._triton_cpu_fix = True
    AttrParser._parse_dense_literal_type = _parse_dense_literal_type  # pyright: ignore[reportPrivateUsage]


_fix_dense_hex_floats()
_fix_nan_splats()
_fix_dense_type_check_cost()
_fix_while_location()
_fix_hex_float_case()

# --------------------------------------------------------------------------------------------
# arith ops on scalars, vectors and tensors.
# --------------------------------------------------------------------------------------------

_int_like = container_of(IntegerType)
_index_or_int_like = container_of(IntegerType | IndexType)
_float_like = container_of(AnyFloat)
_bool_like = container_of(IntegerType(1))


def _shape(t: Attribute) -> tuple[int, ...] | None:
    return tuple(t.get_shape()) if isinstance(t, ShapedType) else None


def _element(t: Attribute) -> Attribute:
    return t.get_element_type() if isinstance(t, ShapedType) else t


def i1_like(t: Attribute) -> Attribute:
    """i1, or a vector / tensor of i1 with the shape of `t`."""
    if isinstance(t, VectorType):
        return VectorType(i1, t.get_shape(), t.scalable_dims)
    if isinstance(t, TensorType):
        return TensorType(i1, t.get_shape(), t.encoding)
    return i1


class _Cast(IRDLOperation):
    """`arith.<cast> %x : T to U`, elementwise on scalars, vectors and tensors."""

    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    traits = traits_def(Pure())

    # Element width relation the cast requires: ">" (extend), "<" (truncate) or None.
    _WIDTH: ClassVar[str | None] = None

    def __init__(self, op: SSAValue | Operation, target_type: Attribute):
        super().__init__(operands=[op], result_types=[target_type])

    def verify_(self) -> None:
        src, dst = self.input.type, self.result.type
        shaped = isinstance(src, ShapedType) or isinstance(dst, ShapedType)
        if _shape(src) != _shape(dst) or (shaped and type(src) is not type(dst)):
            raise VerifyException(f"'{self.name}' op operand {src} and result {dst} must have the same shape")
        if self._WIDTH is not None:
            ws, wd = _element(src).width.data, _element(dst).width.data
            if (self._WIDTH == ">" and not wd > ws) or (self._WIDTH == "<" and not wd < ws):
                raise VerifyException(f"'{self.name}' op result bit-width must be {self._WIDTH} the operand's")


class _IntToInt(_Cast):
    input = operand_def(_int_like)
    result = result_def(_int_like)


@irdl_op_definition
class ExtSIOp(_IntToInt):
    name = "arith.extsi"
    _WIDTH: ClassVar[str | None] = ">"


@irdl_op_definition
class ExtUIOp(_IntToInt):
    name = "arith.extui"
    _WIDTH: ClassVar[str | None] = ">"


@irdl_op_definition
class TruncIOp(_IntToInt):
    name = "arith.trunci"
    _WIDTH: ClassVar[str | None] = "<"


class _IntToFloat(_Cast):
    input = operand_def(_int_like)
    result = result_def(_float_like)


@irdl_op_definition
class SIToFPOp(_IntToFloat):
    name = "arith.sitofp"


@irdl_op_definition
class UIToFPOp(_IntToFloat):
    name = "arith.uitofp"


class _FloatToInt(_Cast):
    input = operand_def(_float_like)
    result = result_def(_int_like)


@irdl_op_definition
class FPToSIOp(_FloatToInt):
    name = "arith.fptosi"


@irdl_op_definition
class FPToUIOp(_FloatToInt):
    name = "arith.fptoui"


@irdl_op_definition
class IndexCastOp(_Cast):
    name = "arith.index_cast"

    input = operand_def(_index_or_int_like)
    result = result_def(_index_or_int_like)

    def verify_(self) -> None:
        super().verify_()
        if isinstance(_element(self.input.type), IndexType) == isinstance(_element(self.result.type), IndexType):
            raise VerifyException("'arith.index_cast' op exactly one of operand and result must be index-typed")


class _Compare(IRDLOperation):
    """`arith.cmp<i|f> <predicate>, %a, %b : T` with an i1-like result of T's shape."""

    predicate = prop_def(IntegerAttr)
    result = result_def(_bool_like)

    traits = traits_def(Pure())

    _PREDICATES: ClassVar[Sequence[str]] = ()

    def _init(self, lhs, rhs, predicate: int | str, props: dict[str, Attribute]):
        lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
        if lhs.type != rhs.type:
            raise TypeError(f"comparison operands must have the same type, got {lhs.type} and {rhs.type}")
        if isinstance(predicate, str):
            if predicate not in self._PREDICATES:
                raise VerifyException(f"unknown comparison predicate: {predicate}")
            predicate = self._PREDICATES.index(predicate)
        super().__init__(operands=[lhs, rhs], result_types=[i1_like(lhs.type)],
                         properties={"predicate": IntegerAttr(predicate, 64), **props})

    def verify_(self) -> None:
        if self.result.type != i1_like(self.lhs.type):
            raise VerifyException(f"'{self.name}' op result must be {i1_like(self.lhs.type)}, got {self.result.type}")

    @classmethod
    def _parse_common(cls, parser: Parser):
        pos = parser.pos
        predicate = parser.parse_identifier()
        if predicate not in cls._PREDICATES:
            parser.raise_error(f"unknown comparison predicate '{predicate}'", pos, parser.pos)
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        return predicate, lhs, rhs

    @staticmethod
    def _parse_type_and_resolve(parser: Parser, lhs, rhs):
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return parser.resolve_operand(lhs, t), parser.resolve_operand(rhs, t), attrs

    def _print_common(self, printer: Printer) -> None:
        printer.print_string(f" {self._PREDICATES[self.predicate.value.data]}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)

    def _print_tail(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)


@irdl_op_definition
class CmpiOp(_Compare):
    name = "arith.cmpi"

    lhs = operand_def(_index_or_int_like)
    rhs = operand_def(_index_or_int_like)

    _PREDICATES: ClassVar[Sequence[str]] = tuple(_xarith.CMPI_COMPARISON_OPERATIONS)

    def __init__(self, operand1: Operation | SSAValue, operand2: Operation | SSAValue, arg: int | str):
        self._init(operand1, operand2, arg, {})

    @classmethod
    def parse(cls, parser: Parser):
        predicate, lhs, rhs = cls._parse_common(parser)
        lhs, rhs, attrs = cls._parse_type_and_resolve(parser, lhs, rhs)
        op = cls(lhs, rhs, predicate)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer):
        self._print_common(printer)
        self._print_tail(printer)


@irdl_op_definition
class CmpfOp(_Compare):
    name = "arith.cmpf"

    lhs = operand_def(_float_like)
    rhs = operand_def(_float_like)
    fastmath = prop_def(FastMathFlagsAttr, default_value=FastMathFlagsAttr("none"))

    _PREDICATES: ClassVar[Sequence[str]] = tuple(_xarith.CMPF_COMPARISON_OPERATIONS)

    def __init__(self, operand1: SSAValue | Operation, operand2: SSAValue | Operation, arg: int | str,
                 fastmath: FastMathFlagsAttr = FastMathFlagsAttr("none")):
        self._init(operand1, operand2, arg, {"fastmath": fastmath})

    @classmethod
    def parse(cls, parser: Parser):
        predicate, lhs, rhs = cls._parse_common(parser)
        fastmath = FastMathFlagsAttr("none")
        if parser.parse_optional_keyword("fastmath"):
            fastmath = FastMathFlagsAttr(FastMathFlagsAttr.parse_parameter(parser))
        lhs, rhs, attrs = cls._parse_type_and_resolve(parser, lhs, rhs)
        op = cls(lhs, rhs, predicate, fastmath)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer):
        self._print_common(printer)
        if self.fastmath != FastMathFlagsAttr("none"):
            printer.print_string(" fastmath")
            self.fastmath.print_parameter(printer)
        self._print_tail(printer)


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`arith.select %c, %a, %b : T` (scalar condition) or `: C, T` (shaped condition)."""

    name = "arith.select"

    _T: ClassVar = VarConstraint("_T", AnyAttr())
    cond = operand_def(_bool_like)
    lhs = operand_def(_T)
    rhs = operand_def(_T)
    result = result_def(_T)

    traits = traits_def(Pure())

    def __init__(self, operand1: Operation | SSAValue, operand2: Operation | SSAValue,
                 operand3: Operation | SSAValue):
        operand2 = SSAValue.get(operand2)
        super().__init__(operands=[operand1, operand2, operand3], result_types=[operand2.type])

    def verify_(self) -> None:
        cond = self.cond.type
        if isinstance(cond, ShapedType) and _shape(cond) != _shape(self.result.type):
            raise VerifyException(f"'arith.select' op condition {cond} and result {self.result.type} differ in shape")

    @classmethod
    def parse(cls, parser: Parser):
        operands = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        cond_type: Attribute = i1
        if parser.parse_optional_punctuation(","):
            cond_type, t = t, parser.parse_type()
        c, a, b = (parser.resolve_operand(o, ty) for o, ty in zip(operands, (cond_type, t, t)))
        op = cls(c, a, b)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if isinstance(self.cond.type, ShapedType):
            printer.print_attribute(self.cond.type)
            printer.print_string(", ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class RemFOp(FloatingPointLikeBinaryOperation):
    name = "arith.remf"


@irdl_op_definition
class VectorExtractOp(IRDLOperation):
    """xDSL's vector.extract (same name, fields and format), of any element type."""

    name = "vector.extract"

    _T: ClassVar = VarConstraint("T", AnyAttr())
    _V: ClassVar = VarConstraint("V", VectorType.constr(_T))

    static_position = prop_def(DenseArrayBase.constr(i64))
    vector = operand_def(_V)
    dynamic_position = var_operand_def(IndexType)
    result = result_def(AnyAttr())

    traits = traits_def(Pure())
    assembly_format = ("$vector `` custom<DynamicIndexList>($dynamic_position, $static_position)"
                       " attr-dict `:` type($result) `from` type($vector)")
    custom_directives = (_xvector.DynamicIndexList,)


@irdl_op_definition
class VectorInsertOp(IRDLOperation):
    """xDSL's vector.insert (same name, fields and format), of any element type."""

    name = "vector.insert"

    _T: ClassVar = VarConstraint("T", AnyAttr())
    _V: ClassVar = VarConstraint("V", VectorType.constr(_T))

    static_position = prop_def(DenseArrayBase.constr(i64))
    source = operand_def(AnyAttr())
    dest = operand_def(_V)
    dynamic_position = var_operand_def(IndexType)
    result = result_def(_V)

    traits = traits_def(Pure())
    assembly_format = ("$source `,` $dest custom<DynamicIndexList>($dynamic_position, $static_position)"
                       "attr-dict `:` type($source) `into` type($dest)")
    custom_directives = (_xvector.DynamicIndexList,)


_REPLACEMENTS: list[type[Operation]] = [
    ExtSIOp, ExtUIOp, TruncIOp, SIToFPOp, UIToFPOp, FPToSIOp, FPToUIOp, IndexCastOp,
    CmpiOp, CmpfOp, SelectOp,
]
_ADDITIONS: list[type[Operation]] = [RemFOp]


def _patched(dialect: Dialect, replacements: Sequence[type[Operation]],
             additions: Sequence[type[Operation]]) -> Dialect:
    by_name = {op.name: op for op in replacements}
    ops = [by_name.get(op.name, op) for op in dialect.operations] + list(additions)
    interfaces = list(dialect._interfaces)  # pyright: ignore[reportPrivateUsage]
    return Dialect(dialect.name, ops, list(dialect.attributes), interfaces)


Arith = _patched(_xarith.Arith, _REPLACEMENTS, _ADDITIONS)
Vector = _patched(_xvector.Vector, [VectorExtractOp, VectorInsertOp], [])

# `from triton_cpu.dialects.compat import arith` instead of `from xdsl.dialects import arith`:
# the same names, with the fixed ops above in place of xDSL's, so ops built by the compiler
# and ops parsed from text are instances of the same classes.
arith = types.ModuleType(__name__ + ".arith", "xdsl.dialects.arith with triton_cpu's fixes.")
arith.__dict__.update({k: v for k, v in vars(_xarith).items() if not k.startswith("__")})
arith.__dict__.update({op.__name__: op for op in [*_REPLACEMENTS, *_ADDITIONS]})
arith.Arith = Arith

# Dialects, beyond the patched ones above, that TTIR needs and xDSL lacks.
DIALECTS: list[Dialect] = []
