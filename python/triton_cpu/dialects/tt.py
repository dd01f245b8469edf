"""The Triton (`tt`) dialect as stock Triton 3.9 prints it, declared in xDSL.

Every op parses and prints the exact text `triton` 3.9 writes for TTIR (checked against its
own parser and printer), so a dumped `.ttir` file round-trips through this dialect. Ops that
Triton prints in generic form (`tt.reduce`, `tt.scan`, `tt.map_elementwise`) have no custom
format here either.

Enum-valued properties (`sem`, `scope`, `atomic_rmw_op`, `axis` of get_program_id, ...) are
stored as i32 `IntegerAttr`s with Triton's C++ enum values, as MLIR stores them, so the generic
form of an op is the same text MLIR would print; the Python enums below name those values
(`MemSemantic(op.sem.value.data)`), and the custom formats print their keywords.
"""
from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DictionaryAttr,
    FlatSymbolRefAttrConstr,
    FunctionType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i1,
    i32,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    OptOperandDef,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    CallableOpInterface,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryReadEffect,
    MemoryWriteEffect,
    NoMemoryEffect,
    Pure,
    RecursiveMemoryEffect,
    ReturnLike,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

# --------------------------------------------------------------------------------------------
# Enums: values are Triton's C++ enum values (what MLIR stores), names are the printed keywords.
# --------------------------------------------------------------------------------------------


class _KeywordEnum(IntEnum):
    @property
    def keyword(self) -> str:
        return self.name.lower()

    @classmethod
    def from_keyword(cls, keyword: str):
        return cls[keyword.upper()]

    def attr(self) -> IntegerAttr:
        return IntegerAttr(int(self), i32)


class ProgramIDDim(_KeywordEnum):
    X = 0
    Y = 1
    Z = 2


class RMWOp(_KeywordEnum):
    AND = 1
    OR = 2
    XOR = 3
    ADD = 4
    FADD = 5
    MAX = 6
    MIN = 7
    UMAX = 8
    UMIN = 9
    EXCH = 10


class MemSemantic(_KeywordEnum):
    RELAXED = 1
    ACQUIRE = 2
    RELEASE = 3
    ACQ_REL = 4


class MemSyncScope(_KeywordEnum):
    GPU = 1
    CTA = 2
    SYS = 3


class CacheModifier(_KeywordEnum):
    NONE = 1
    CA = 2
    CG = 3
    WB = 4
    CS = 5
    WT = 6
    CV = 7


class EvictionPolicy(_KeywordEnum):
    EVICT_NORMAL = 1
    EVICT_FIRST = 2
    EVICT_LAST = 3


class PaddingOption(_KeywordEnum):
    ZERO = 1
    NAN = 2


class PropagateNan(_KeywordEnum):
    NONE = 0
    ALL = 0xFFFF


class RoundingMode(_KeywordEnum):
    RTZ = 0
    RTNE = 1


class InputPrecision(_KeywordEnum):
    TF32 = 0
    TF32X3 = 1
    IEEE = 2
    BF16X3 = 3
    BF16X6 = 4


class ScaleDotElemType(_KeywordEnum):
    E4M3 = 0
    E5M2 = 1
    E2M3 = 2
    E3M2 = 3
    E2M1 = 4
    BF16 = 5
    FP16 = 6


class DescriptorReduceKind(_KeywordEnum):
    ADD = 1
    MIN = 2
    MAX = 3
    INC = 4
    DEC = 5
    AND = 6
    OR = 7
    XOR = 8


def _parse_enum(parser: Parser, enum: type[_KeywordEnum]) -> IntegerAttr:
    pos = parser.pos
    word = parser.parse_identifier(f" ({enum.__name__} keyword)")
    try:
        return enum.from_keyword(word).attr()
    except KeyError:
        keywords = ", ".join(e.keyword for e in enum)
        parser.raise_error(f"expected one of {keywords}, got '{word}'", pos, parser.pos)


def _print_enum(printer: Printer, enum: type[_KeywordEnum], attr: IntegerAttr) -> None:
    printer.print_string(enum(attr.value.data).keyword)


def _i32(value: int) -> IntegerAttr:
    return IntegerAttr(value, i32)


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------


@irdl_attr_definition
class PointerType(ParametrizedAttribute, TypeAttribute):
    """`!tt.ptr<T>`; Triton 3.9 prints a non-global address space as a string
    (`!tt.ptr<f32, "constant">`), older releases as an integer: both are kept as written."""

    name = "tt.ptr"

    pointee_type: Attribute
    address_space: StringAttr | IntAttr | NoneAttr

    def __init__(self, pointee_type: Attribute, address_space: StringAttr | IntAttr | NoneAttr = NoneAttr()):
        super().__init__(pointee_type, address_space)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.pointee_type)
            if isinstance(self.address_space, StringAttr):
                printer.print_string(", ")
                printer.print_string_literal(self.address_space.data)
            elif isinstance(self.address_space, IntAttr):
                printer.print_string(f", {self.address_space.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute, StringAttr | IntAttr | NoneAttr]:
        with parser.in_angle_brackets():
            pointee = parser.parse_type()
            space: StringAttr | IntAttr | NoneAttr = NoneAttr()
            if parser.parse_optional_punctuation(","):
                if (text := parser.parse_optional_str_literal()) is not None:
                    # "global" is the default: MLIR never prints it.
                    space = NoneAttr() if text == "global" else StringAttr(text)
                else:
                    space = IntAttr(parser.parse_integer(allow_negative=False, allow_boolean=False))
        return pointee, space


@irdl_attr_definition
class TensorDescType(ParametrizedAttribute, TypeAttribute):
    """`!tt.tensordesc<16x32xf32>` (optionally `, layout`): a TMA-style descriptor of one block."""

    name = "tt.tensordesc"

    block_type: TensorType
    layout: Attribute

    def __init__(self, block_type: TensorType, layout: Attribute = NoneAttr()):
        super().__init__(block_type, layout)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_dimension_list(self.block_type.get_shape())
            printer.print_string("x")
            printer.print_attribute(self.block_type.element_type)
            if not isinstance(self.layout, NoneAttr):
                printer.print_string(", ")
                printer.print_attribute(self.layout)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[TensorType, Attribute]:
        with parser.in_angle_brackets():
            layout: Attribute = NoneAttr()
            if parser.parse_optional_characters("tensor") is not None:
                # Pre-3.4 spelling, `!tt.tensordesc<tensor<16x32xf32>>`.
                with parser.in_angle_brackets():
                    shape, element = _parse_shape_and_element(parser)
            else:
                shape, element = _parse_shape_and_element(parser)
            if parser.parse_optional_punctuation(","):
                layout = parser.parse_attribute()
        return TensorType(element, shape), layout


def _parse_shape_and_element(parser: AttrParser) -> tuple[list[int], Attribute]:
    shape, element = parser.parse_ranked_shape()
    return list(shape), element


def pointee(ptr_like: Attribute) -> Attribute:
    """`!tt.ptr<T>` -> T; `tensor<NxM x !tt.ptr<T>>` -> `tensor<NxMxT>`."""
    if isinstance(ptr_like, PointerType):
        return ptr_like.pointee_type
    if isinstance(ptr_like, TensorType) and isinstance(ptr_like.element_type, PointerType):
        return TensorType(ptr_like.element_type.pointee_type, ptr_like.get_shape(), ptr_like.encoding)
    raise VerifyException(f"expected a pointer or a tensor of pointers, got {ptr_like}")


def pointer_like(value_like: Attribute, address_space: Attribute = NoneAttr()) -> Attribute:
    """Inverse of `pointee`."""
    if isinstance(value_like, TensorType):
        ptr = PointerType(value_like.element_type, address_space)
        return TensorType(ptr, value_like.get_shape(), value_like.encoding)
    return PointerType(value_like, address_space)


def i1_like(shaped_like: Attribute) -> Attribute:
    """i1 with the shape of `shaped_like` (the type of a mask)."""
    if isinstance(shaped_like, TensorType):
        return TensorType(i1, shaped_like.get_shape(), shaped_like.encoding)
    return i1


def element_type(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, TensorType) else t


# --------------------------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------------------------


@irdl_attr_definition
class CachePolicyAttr(ParametrizedAttribute):
    """`#tt.cache_policy<cache_modifier = cg, eviction_policy = evict_last>` on loads/stores."""

    name = "tt.cache_policy"

    cache_modifier: StringAttr
    eviction_policy: StringAttr

    def __init__(self, cache_modifier: CacheModifier | str = CacheModifier.NONE,
                 eviction_policy: EvictionPolicy | str = EvictionPolicy.EVICT_NORMAL):
        if isinstance(cache_modifier, CacheModifier):
            cache_modifier = cache_modifier.keyword
        if isinstance(eviction_policy, EvictionPolicy):
            eviction_policy = eviction_policy.keyword
        super().__init__(StringAttr(cache_modifier), StringAttr(eviction_policy))

    @property
    def cache(self) -> CacheModifier:
        return CacheModifier.from_keyword(self.cache_modifier.data)

    @property
    def evict(self) -> EvictionPolicy:
        return EvictionPolicy.from_keyword(self.eviction_policy.data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(
            f"<cache_modifier = {self.cache_modifier.data}, eviction_policy = {self.eviction_policy.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr, StringAttr]:
        values = {"cache_modifier": CacheModifier.NONE.keyword, "eviction_policy": EvictionPolicy.EVICT_NORMAL.keyword}
        enums = {"cache_modifier": CacheModifier, "eviction_policy": EvictionPolicy}

        def parse_entry():
            key = parser.parse_keyword_in(tuple(enums), " in #tt.cache_policy")
            parser.parse_punctuation("=")
            pos = parser.pos
            word = parser.parse_identifier()
            if word.upper() not in enums[key].__members__:
                parser.raise_error(f"invalid {key} '{word}'", pos, parser.pos)
            values[key] = word

        parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parse_entry)
        return StringAttr(values["cache_modifier"]), StringAttr(values["eviction_policy"])


DEFAULT_CACHE_POLICY = CachePolicyAttr()

# --------------------------------------------------------------------------------------------
# Format helpers shared by the ops below.
# --------------------------------------------------------------------------------------------

_SEGMENTS = AttrSizedOperandSegments.attribute_name


def _parse_attr_dict(parser: Parser, op_cls: type[IRDLOperation]) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """An `attr-dict`: inherent attributes become properties, the rest stay attributes."""
    entries = parser.parse_optional_attr_dict()
    names = op_cls.get_irdl_definition().properties.keys()
    props = {k: v for k, v in entries.items() if k in names}
    attrs = {k: v for k, v in entries.items() if k not in names}
    return props, attrs


def _print_attr_dict(printer: Printer, op: IRDLOperation, elided: Sequence[str] = (), keyword: bool = False) -> None:
    """An `attr-dict` as MLIR prints it: properties and attributes together, sorted by name,
    without what the format prints elsewhere and without properties at their default value."""
    prop_defs = type(op).get_irdl_definition().properties
    merged = {**op.properties, **op.attributes}
    shown: dict[str, Attribute] = {}
    for name in sorted(merged):
        if name in elided or name == _SEGMENTS:
            continue
        d = prop_defs.get(name)
        if d is not None and d.default_value is not None and merged[name] == d.default_value:
            continue
        shown[name] = merged[name]
    printer.print_op_attributes(shown, print_keyword=keyword)


def _parse_operands(parser: Parser) -> list[UnresolvedOperand]:
    """A possibly empty comma-separated list of SSA uses, without delimiters."""
    first = parser.parse_optional_unresolved_operand()
    if first is None:
        return []
    operands = [first]
    while parser.parse_optional_punctuation(","):
        operands.append(parser.parse_unresolved_operand())
    return operands


def _parse_types(parser: Parser) -> list[Attribute]:
    types = [parser.parse_type()]
    while parser.parse_optional_punctuation(","):
        types.append(parser.parse_type())
    return types


def _parse_functional_type(parser: Parser) -> tuple[list[Attribute], list[Attribute]]:
    pos = parser.pos
    ftype = parser.parse_type()
    if not isinstance(ftype, FunctionType):
        parser.raise_error("expected a function type", pos, parser.pos)
    return list(ftype.inputs.data), list(ftype.outputs.data)


def _print_operands(printer: Printer, values: Sequence[SSAValue]) -> None:
    printer.print_list(values, printer.print_operand)


def _print_types(printer: Printer, types: Sequence[Attribute]) -> None:
    printer.print_list(types, printer.print_attribute)


def _resolve(parser: Parser, operands: Sequence[UnresolvedOperand], types: Sequence[Attribute]) -> list[SSAValue]:
    if len(operands) != len(types):
        parser.raise_error(f"expected {len(operands)} types, got {len(types)}")
    return [parser.resolve_operand(o, t) for o, t in zip(operands, types)]


# --------------------------------------------------------------------------------------------
# Casts and shape ops with the format `$src attr-dict : type($src) -> type($result)`.
# --------------------------------------------------------------------------------------------


class _UnaryTypeToType(IRDLOperation):
    src = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    def __init__(self, src: SSAValue | Operation, result_type: Attribute, **props: Attribute):
        super().__init__(operands=[src], result_types=[result_type], properties=props)

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(src, src_type)], result_types=[result_type],
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.src)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class IntToPtrOp(_UnaryTypeToType):
    name = "tt.int_to_ptr"


@irdl_op_definition
class PtrToIntOp(_UnaryTypeToType):
    name = "tt.ptr_to_int"


@irdl_op_definition
class BitcastOp(_UnaryTypeToType):
    name = "tt.bitcast"


@irdl_op_definition
class SplatOp(_UnaryTypeToType):
    name = "tt.splat"


@irdl_op_definition
class BroadcastOp(_UnaryTypeToType):
    name = "tt.broadcast"


@irdl_op_definition
class ExpandDimsOp(_UnaryTypeToType):
    name = "tt.expand_dims"

    axis = prop_def(IntegerAttr)


@irdl_op_definition
class TransOp(_UnaryTypeToType):
    name = "tt.trans"

    order = prop_def(DenseArrayBase)


@irdl_op_definition
class ReshapeOp(_UnaryTypeToType):
    """`tt.reshape %x [allow_reorder] [efficient_layout] : T -> U`"""

    name = "tt.reshape"

    allow_reorder = opt_prop_def(UnitAttr)
    efficient_layout = opt_prop_def(UnitAttr)

    _FLAGS: ClassVar[tuple[str, ...]] = ("allow_reorder", "efficient_layout")

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        flags = {f: UnitAttr() for f in cls._FLAGS if parser.parse_optional_keyword(f)}
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(src, src_type)], result_types=[result_type],
                         properties=props | flags, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.src)
        for f in self._FLAGS:
            if f in self.properties:
                printer.print_string(f" {f}")
        _print_attr_dict(printer, self, self._FLAGS)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class FpToFpOp(_UnaryTypeToType):
    """`tt.fp_to_fp %x [attr-dict][, rounding = rtne] : T -> U`"""

    name = "tt.fp_to_fp"

    rounding = opt_prop_def(IntegerAttr)

    def get_rounding(self) -> RoundingMode | None:
        return None if self.rounding is None else RoundingMode(self.rounding.value.data)

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        props, attrs = _parse_attr_dict(parser, cls)
        if parser.parse_optional_punctuation(","):
            parser.parse_keyword("rounding")
            parser.parse_punctuation("=")
            props["rounding"] = _parse_enum(parser, RoundingMode)
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(src, src_type)], result_types=[result_type],
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.src)
        _print_attr_dict(printer, self, ("rounding",))
        if self.rounding is not None:
            printer.print_string(", rounding = ")
            _print_enum(printer, RoundingMode, self.rounding)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class UnsplatOp(IRDLOperation):
    """`tt.unsplat %t : tensor<1x1xf32>`: the one element of a tensor, as a scalar."""

    name = "tt.unsplat"

    src = operand_def(TensorType)
    result = result_def()

    traits = traits_def(Pure())

    def __init__(self, src: SSAValue | Operation):
        src = SSAValue.get(src)
        super().__init__(operands=[src], result_types=[element_type(src.type)])

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(src, src_type)], result_types=[element_type(src_type)],
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.src)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)


class _BinaryTypeToType(IRDLOperation):
    """`$lhs, $rhs attr-dict : type($lhs) -> type($result)`"""

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    @classmethod
    def parse(cls, parser: Parser):
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        t = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        return cls.build(operands=_resolve(parser, [lhs, rhs], [t, t]), result_types=[result_type],
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_operands(printer, (self.lhs, self.rhs))
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class CatOp(_BinaryTypeToType):
    name = "tt.cat"

    traits = traits_def(NoMemoryEffect())


@irdl_op_definition
class JoinOp(_BinaryTypeToType):
    name = "tt.join"

    traits = traits_def(NoMemoryEffect())


@irdl_op_definition
class SplitOp(IRDLOperation):
    """`%lo, %hi = tt.split %x : tensor<4x2xf32> -> tensor<4xf32>`"""

    name = "tt.split"

    src = operand_def(TensorType)
    out_lhs = result_def(TensorType)
    out_rhs = result_def(TensorType)

    traits = traits_def(NoMemoryEffect())

    def __init__(self, src: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[src], result_types=[result_type, result_type])

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(src, src_type)], result_types=[result_type, result_type],
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.src)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.out_lhs.type)


@irdl_op_definition
class HistogramOp(IRDLOperation):
    """`tt.histogram %x[, %mask] : tensor<Nxi32> -> tensor<Bxi32>`"""

    name = "tt.histogram"

    src = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        mask = parser.parse_unresolved_operand() if parser.parse_optional_punctuation(",") else None
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        operands = [parser.resolve_operand(src, src_type),
                    [] if mask is None else [parser.resolve_operand(mask, i1_like(src_type))]]
        return cls.build(operands=operands, result_types=[result_type], properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_operands(printer, self.operands)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


# --------------------------------------------------------------------------------------------
# Elementwise arithmetic: `$x[, $y[, $z]] attr-dict : type($x)`.
# --------------------------------------------------------------------------------------------


class _SameTypeOp(IRDLOperation):
    """Elementwise op whose operands and result share one type, printed once at the end."""

    result = result_def()

    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser: Parser):
        operands = _parse_operands(parser)
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.build(operands=_resolve(parser, operands, [t] * len(operands)), result_types=[t],
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_operands(printer, self.operands)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class PreciseSqrtOp(_SameTypeOp):
    name = "tt.precise_sqrt"

    x = operand_def()

    def __init__(self, x: SSAValue | Operation):
        super().__init__(operands=[x], result_types=[SSAValue.get(x).type])


class _SameTypeBinary(_SameTypeOp):
    x = operand_def()
    y = operand_def()

    def __init__(self, x: SSAValue | Operation, y: SSAValue | Operation):
        super().__init__(operands=[x, y], result_types=[SSAValue.get(x).type])


@irdl_op_definition
class PreciseDivFOp(_SameTypeBinary):
    name = "tt.precise_divf"


@irdl_op_definition
class ApproxDivFOp(_SameTypeBinary):
    name = "tt.approx_divf"


@irdl_op_definition
class MulhiUIOp(_SameTypeBinary):
    name = "tt.mulhiui"


@irdl_op_definition
class ClampFOp(IRDLOperation):
    """`tt.clampf %x, %lo, %hi, propagateNan = none : tensor<64xf32>`"""

    name = "tt.clampf"

    x = operand_def()
    min = operand_def()
    max = operand_def()
    propagateNan = prop_def(IntegerAttr)
    result = result_def()

    traits = traits_def(Pure())

    def get_propagate_nan(self) -> PropagateNan:
        return PropagateNan(self.propagateNan.value.data)

    @classmethod
    def parse(cls, parser: Parser):
        operands = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        parser.parse_punctuation(",")
        parser.parse_keyword("propagateNan")
        parser.parse_punctuation("=")
        nan = _parse_enum(parser, PropagateNan)
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.build(operands=_resolve(parser, operands, [t] * 3), result_types=[t],
                         properties=props | {"propagateNan": nan}, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_operands(printer, self.operands)
        printer.print_string(", propagateNan = ")
        _print_enum(printer, PropagateNan, self.propagateNan)
        _print_attr_dict(printer, self, ("propagateNan",))
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class AddPtrOp(IRDLOperation):
    """`tt.addptr %p, %off : tensor<64x!tt.ptr<f32>>, tensor<64xi32>`"""

    name = "tt.addptr"

    ptr = operand_def()
    offset = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    def __init__(self, ptr: SSAValue | Operation, offset: SSAValue | Operation):
        super().__init__(operands=[ptr, offset], result_types=[SSAValue.get(ptr).type])

    def verify_(self) -> None:
        ptr_type, offset_type = self.ptr.type, self.offset.type
        if not isinstance(element_type(ptr_type), PointerType) or self.result.type != ptr_type:
            raise VerifyException(f"'tt.addptr' op needs pointer operand and result of one type, got {ptr_type}")
        shape = lambda t: t.get_shape() if isinstance(t, TensorType) else ()
        if not isinstance(element_type(offset_type), IntegerType) or shape(offset_type) != shape(ptr_type):
            raise VerifyException(f"'tt.addptr' op offset {offset_type} must be integers shaped like {ptr_type}")

    @classmethod
    def parse(cls, parser: Parser):
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        offset = parser.parse_unresolved_operand()
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation(",")
        offset_type = parser.parse_type()
        return cls.build(operands=_resolve(parser, [ptr, offset], [ptr_type, offset_type]), result_types=[ptr_type],
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_operands(printer, self.operands)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)
        printer.print_string(", ")
        printer.print_attribute(self.offset.type)


# --------------------------------------------------------------------------------------------
# Program ids and ranges.
# --------------------------------------------------------------------------------------------


class _ProgramAxisOp(IRDLOperation):
    axis = prop_def(IntegerAttr)
    result = result_def(IntegerType)

    traits = traits_def(Pure())

    def __init__(self, axis: int | ProgramIDDim):
        super().__init__(properties={"axis": _i32(int(axis))}, result_types=[i32])

    def get_axis(self) -> int:
        return self.axis.value.data

    @classmethod
    def parse(cls, parser: Parser):
        axis = _parse_enum(parser, ProgramIDDim)
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.build(result_types=[t], properties=props | {"axis": axis}, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_enum(printer, ProgramIDDim, self.axis)
        _print_attr_dict(printer, self, ("axis",))
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class GetProgramIdOp(_ProgramAxisOp):
    name = "tt.get_program_id"


@irdl_op_definition
class GetNumProgramsOp(_ProgramAxisOp):
    name = "tt.get_num_programs"


@irdl_op_definition
class MakeRangeOp(IRDLOperation):
    """`tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>`"""

    name = "tt.make_range"

    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, start: int, end: int):
        super().__init__(properties={"start": _i32(start), "end": _i32(end)},
                         result_types=[TensorType(i32, [end - start])])

    @classmethod
    def parse(cls, parser: Parser):
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.build(result_types=[t], properties=props, attributes=attrs)

    def print(self, printer: Printer):
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


# --------------------------------------------------------------------------------------------
# Memory.
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`tt.load %ptr[, %mask[, %other]] {cachePolicy = ..., isVolatile = true} : type(ptr)`"""

    name = "tt.load"

    ptr = operand_def()
    mask = opt_operand_def()
    other = opt_operand_def()
    cachePolicy = prop_def(CachePolicyAttr, default_value=DEFAULT_CACHE_POLICY)
    isVolatile = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    result = result_def()

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect())

    def __init__(self, ptr: SSAValue | Operation, mask: SSAValue | Operation | None = None,
                 other: SSAValue | Operation | None = None, cache_policy: CachePolicyAttr = DEFAULT_CACHE_POLICY,
                 is_volatile: bool = False):
        ptr = SSAValue.get(ptr)
        super().__init__(operands=[ptr, [] if mask is None else [mask], [] if other is None else [other]],
                         result_types=[pointee(ptr.type)],
                         properties={"cachePolicy": cache_policy, "isVolatile": BoolAttr.from_bool(is_volatile)})

    @classmethod
    def parse(cls, parser: Parser):
        ptr = parser.parse_unresolved_operand()
        rest: list[UnresolvedOperand] = []
        while len(rest) < 2 and parser.parse_optional_punctuation(","):
            rest.append(parser.parse_unresolved_operand())
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        value_type = pointee(ptr_type)
        mask = [parser.resolve_operand(rest[0], i1_like(value_type))] if len(rest) > 0 else []
        other = [parser.resolve_operand(rest[1], value_type)] if len(rest) > 1 else []
        return cls.build(operands=[parser.resolve_operand(ptr, ptr_type), mask, other], result_types=[value_type],
                         properties=props, attributes=attrs)

    def verify_(self) -> None:
        _verify_memory_types(self, self.result.type, self.mask, self.other)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_operands(printer, self.operands)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)


def _verify_memory_types(op: IRDLOperation, value_type: Attribute, mask: SSAValue | None,
                         other: SSAValue | None = None) -> None:
    ptr_type = op.operands[0].type
    if not isinstance(element_type(ptr_type), PointerType):
        raise VerifyException(f"'{op.name}' op needs a pointer or a tensor of pointers, got {ptr_type}")
    if value_type != pointee(ptr_type):
        raise VerifyException(f"'{op.name}' op value type {value_type} does not match pointer type {ptr_type}")
    if mask is not None and mask.type != i1_like(value_type):
        raise VerifyException(f"'{op.name}' op mask type {mask.type} does not match {i1_like(value_type)}")
    if other is not None and other.type != value_type:
        raise VerifyException(f"'{op.name}' op other type {other.type} does not match {value_type}")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`tt.store %ptr, %value[, %mask] {cachePolicy = ...} : type(ptr)`"""

    name = "tt.store"

    ptr = operand_def()
    value = operand_def()
    mask = opt_operand_def()
    cachePolicy = prop_def(CachePolicyAttr, default_value=DEFAULT_CACHE_POLICY)

    traits = traits_def(MemoryWriteEffect())

    def __init__(self, ptr: SSAValue | Operation, value: SSAValue | Operation, mask: SSAValue | Operation | None = None,
                 cache_policy: CachePolicyAttr = DEFAULT_CACHE_POLICY):
        super().__init__(operands=[ptr, value, [] if mask is None else [mask]],
                         properties={"cachePolicy": cache_policy})

    @classmethod
    def parse(cls, parser: Parser):
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        value = parser.parse_unresolved_operand()
        mask = parser.parse_unresolved_operand() if parser.parse_optional_punctuation(",") else None
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        value_type = pointee(ptr_type)
        operands = [parser.resolve_operand(ptr, ptr_type), parser.resolve_operand(value, value_type),
                    [] if mask is None else [parser.resolve_operand(mask, i1_like(value_type))]]
        return cls.build(operands=operands, properties=props, attributes=attrs)

    def verify_(self) -> None:
        _verify_memory_types(self, self.value.type, self.mask)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_operands(printer, self.operands)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)


class _AtomicOp(IRDLOperation):
    """Shared by the atomics: `<keywords>, $operands attr-dict : functional-type(...)`."""

    sem = prop_def(IntegerAttr)
    scope = prop_def(IntegerAttr)

    _KEYWORDS: ClassVar[tuple[tuple[str, type[_KeywordEnum]], ...]] = (("sem", MemSemantic), ("scope", MemSyncScope))

    def get_sem(self) -> MemSemantic:
        return MemSemantic(self.sem.value.data)

    def get_scope(self) -> MemSyncScope:
        return MemSyncScope(self.scope.value.data)

    @classmethod
    def _parse_keywords(cls, parser: Parser) -> dict[str, Attribute]:
        props = {}
        for name, enum in cls._KEYWORDS:
            props[name] = _parse_enum(parser, enum)
            parser.parse_punctuation(",")
        return props

    def _print_keywords(self, printer: Printer) -> None:
        for name, enum in self._KEYWORDS:
            printer.print_string(" ")
            _print_enum(printer, enum, self.properties[name])
            printer.print_string(",")

    @classmethod
    def _parse_tail(cls, parser: Parser, props: dict[str, Attribute]):
        """`$operands attr-dict :` -> (operands, props, attrs)"""
        operands = _parse_operands(parser)
        more, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        return operands, props | more, attrs

    @classmethod
    def _build(cls, values: list[SSAValue], result_types, props, attrs):
        """Groups `values` by operand definition: the trailing optional one takes what is left."""
        defs = cls.get_irdl_definition().operands
        n_fixed = sum(1 for _, d in defs if not isinstance(d, OptOperandDef))
        grouped = values[:n_fixed] + ([values[n_fixed:]] if len(defs) > n_fixed else [])
        return cls.build(operands=grouped, result_types=result_types, properties=props, attributes=attrs)

    @classmethod
    def _parse_functional(cls, parser: Parser):
        props = cls._parse_keywords(parser)
        operands, props, attrs = cls._parse_tail(parser, props)
        inputs, outputs = _parse_functional_type(parser)
        return cls._build(_resolve(parser, operands, inputs), outputs, props, attrs)

    def _print_functional(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_operands(printer, self.operands)
        _print_attr_dict(printer, self, tuple(n for n, _ in self._KEYWORDS))
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)

    # The functional form is the default; atomics with another format override these.
    @classmethod
    def parse(cls, parser: Parser):
        return cls._parse_functional(parser)

    def print(self, printer: Printer):
        self._print_keywords(printer)
        self._print_functional(printer)


@irdl_op_definition
class AtomicRMWOp(_AtomicOp):
    """`tt.atomic_rmw fadd, acq_rel, gpu, %ptr, %val[, %mask] : (P, V[, M]) -> V`"""

    name = "tt.atomic_rmw"

    atomic_rmw_op = prop_def(IntegerAttr)
    ptr = operand_def()
    val = operand_def()
    mask = opt_operand_def()
    result = result_def()

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    _KEYWORDS: ClassVar[tuple[tuple[str, type[_KeywordEnum]], ...]] = (
        ("atomic_rmw_op", RMWOp), ("sem", MemSemantic), ("scope", MemSyncScope))

    def get_rmw_op(self) -> RMWOp:
        return RMWOp(self.atomic_rmw_op.value.data)


@irdl_op_definition
class AtomicCASOp(_AtomicOp):
    """`tt.atomic_cas acq_rel, gpu, %ptr, %cmp, %val : (P, V, V) -> V`"""

    name = "tt.atomic_cas"

    ptr = operand_def()
    cmp = operand_def()
    val = operand_def()
    result = result_def()

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())


@irdl_op_definition
class AtomicLoadOp(_AtomicOp):
    """`tt.atomic_load acquire, gpu, %ptr[, %mask] : (P[, M]) -> V`"""

    name = "tt.atomic_load"

    ptr = operand_def()
    mask = opt_operand_def()
    result = result_def()

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())


@irdl_op_definition
class AtomicStoreOp(_AtomicOp):
    """`tt.atomic_store release, gpu, %ptr, %val[, %mask] : type(ptr)`"""

    name = "tt.atomic_store"

    ptr = operand_def()
    val = operand_def()
    mask = opt_operand_def()

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    @classmethod
    def parse(cls, parser: Parser):
        operands, props, attrs = cls._parse_tail(parser, cls._parse_keywords(parser))
        ptr_type = parser.parse_type()
        value_type = pointee(ptr_type)
        types = [ptr_type, value_type, i1_like(value_type)][: len(operands)]
        return cls._build(_resolve(parser, operands, types), [], props, attrs)

    def print(self, printer: Printer):
        self._print_keywords(printer)
        printer.print_string(" ")
        _print_operands(printer, self.operands)
        _print_attr_dict(printer, self, ("sem", "scope"))
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)


@irdl_op_definition
class AtomicPollOp(_AtomicOp):
    """`tt.atomic_poll acquire, gpu, %ptr, %expected [timeout %ns] : !tt.ptr<i32>, i32 -> i1`
    (spins until *ptr == expected; the result is false when the i64 timeout ran out)"""

    name = "tt.atomic_poll"

    ptr = operand_def()
    expected = operand_def()
    timeout = opt_operand_def(IntegerType)
    result = result_def()

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    @classmethod
    def parse(cls, parser: Parser):
        props = cls._parse_keywords(parser)
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        expected = parser.parse_unresolved_operand()
        timeout = parser.parse_unresolved_operand() if parser.parse_optional_keyword("timeout") else None
        more, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation(",")
        expected_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        operands = [parser.resolve_operand(ptr, ptr_type), parser.resolve_operand(expected, expected_type),
                    [] if timeout is None else [parser.resolve_operand(timeout, IntegerType(64))]]
        return cls.build(operands=operands, result_types=[result_type], properties=props | more, attributes=attrs)

    def print(self, printer: Printer):
        self._print_keywords(printer)
        printer.print_string(" ")
        _print_operands(printer, (self.ptr, self.expected))
        if self.timeout is not None:
            printer.print_string(" timeout ")
            printer.print_operand(self.timeout)
        _print_attr_dict(printer, self, ("sem", "scope"))
        printer.print_string(" : ")
        _print_types(printer, (self.ptr.type, self.expected.type))
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


# --------------------------------------------------------------------------------------------
# Dot products.
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class DotOp(IRDLOperation):
    """`tt.dot %a, %b, %c[, inputPrecision = tf32] : A * B -> C` (d = a @ b + c)"""

    name = "tt.dot"

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(TensorType)
    inputPrecision = prop_def(IntegerAttr, default_value=InputPrecision.IEEE.attr())
    maxNumImpreciseAcc = prop_def(IntegerAttr, default_value=_i32(0))
    d = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation, c: SSAValue | Operation,
                 input_precision: InputPrecision = InputPrecision.IEEE):
        super().__init__(operands=[a, b, c], result_types=[SSAValue.get(c).type],
                         properties={"inputPrecision": input_precision.attr()})

    def get_input_precision(self) -> InputPrecision:
        return InputPrecision(self.inputPrecision.value.data)

    @classmethod
    def parse(cls, parser: Parser):
        operands = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        props: dict[str, Attribute] = {}
        if parser.parse_optional_punctuation(","):
            parser.parse_keyword("inputPrecision")
            parser.parse_punctuation("=")
            props["inputPrecision"] = _parse_enum(parser, InputPrecision)
        more, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        a_type = parser.parse_type()
        parser.parse_punctuation("*")
        b_type = parser.parse_type()
        parser.parse_punctuation("->")
        d_type = parser.parse_type()
        return cls.build(operands=_resolve(parser, operands, [a_type, b_type, d_type]), result_types=[d_type],
                         properties=props | more, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_operands(printer, self.operands)
        if self.inputPrecision != InputPrecision.IEEE.attr():
            printer.print_string(", inputPrecision = ")
            _print_enum(printer, InputPrecision, self.inputPrecision)
        _print_attr_dict(printer, self, ("inputPrecision",))
        printer.print_string(" : ")
        printer.print_attribute(self.a.type)
        printer.print_string(" * ")
        printer.print_attribute(self.b.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.d.type)


@irdl_op_definition
class DotScaledOp(IRDLOperation):
    """`tt.dot_scaled %a [scale %sa], %b [scale %sb], %c lhs = e5m2 rhs = e5m2 {fastMath = false}
    : A[, SA] * B[, SB] -> C`"""

    name = "tt.dot_scaled"

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(TensorType)
    a_scale = opt_operand_def(TensorType)
    b_scale = opt_operand_def(TensorType)
    a_elem_type = prop_def(IntegerAttr)
    b_elem_type = prop_def(IntegerAttr)
    fastMath = prop_def(BoolAttr)
    lhs_k_pack = prop_def(BoolAttr, default_value=BoolAttr.from_bool(True))
    rhs_k_pack = prop_def(BoolAttr, default_value=BoolAttr.from_bool(True))
    d = result_def(TensorType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser: Parser):
        a = parser.parse_unresolved_operand()
        sa = parser.parse_unresolved_operand() if parser.parse_optional_keyword("scale") else None
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        sb = parser.parse_unresolved_operand() if parser.parse_optional_keyword("scale") else None
        parser.parse_punctuation(",")
        c = parser.parse_unresolved_operand()
        parser.parse_keyword("lhs")
        parser.parse_punctuation("=")
        lhs = _parse_enum(parser, ScaleDotElemType)
        parser.parse_keyword("rhs")
        parser.parse_punctuation("=")
        rhs = _parse_enum(parser, ScaleDotElemType)
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        a_type = parser.parse_type()
        sa_type = parser.parse_type() if parser.parse_optional_punctuation(",") else None
        parser.parse_punctuation("*")
        b_type = parser.parse_type()
        sb_type = parser.parse_type() if parser.parse_optional_punctuation(",") else None
        parser.parse_punctuation("->")
        d_type = parser.parse_type()
        if (sa is None) != (sa_type is None) or (sb is None) != (sb_type is None):
            parser.raise_error("tt.dot_scaled: a scale operand needs its type and the other way round")
        operands = [parser.resolve_operand(a, a_type), parser.resolve_operand(b, b_type),
                    parser.resolve_operand(c, d_type),
                    [] if sa is None else [parser.resolve_operand(sa, sa_type)],
                    [] if sb is None else [parser.resolve_operand(sb, sb_type)]]
        return cls.build(operands=operands, result_types=[d_type], attributes=attrs,
                         properties=props | {"a_elem_type": lhs, "b_elem_type": rhs})

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.a)
        if self.a_scale is not None:
            printer.print_string(" scale ")
            printer.print_operand(self.a_scale)
        printer.print_string(", ")
        printer.print_operand(self.b)
        if self.b_scale is not None:
            printer.print_string(" scale ")
            printer.print_operand(self.b_scale)
        printer.print_string(", ")
        printer.print_operand(self.c)
        printer.print_string(" lhs = ")
        _print_enum(printer, ScaleDotElemType, self.a_elem_type)
        printer.print_string(" rhs = ")
        _print_enum(printer, ScaleDotElemType, self.b_elem_type)
        _print_attr_dict(printer, self, ("a_elem_type", "b_elem_type"))
        printer.print_string(" : ")
        printer.print_attribute(self.a.type)
        if self.a_scale is not None:
            printer.print_string(", ")
            printer.print_attribute(self.a_scale.type)
        printer.print_string(" * ")
        printer.print_attribute(self.b.type)
        if self.b_scale is not None:
            printer.print_string(", ")
            printer.print_attribute(self.b_scale.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.d.type)


# --------------------------------------------------------------------------------------------
# Ops with a combine region; Triton prints these in generic form, and so do we.
# --------------------------------------------------------------------------------------------


class _RegionReturn(IRDLOperation):
    """`tt.reduce.return %a, %b : f32, i32`"""

    srcs = var_operand_def()

    traits = traits_def(IsTerminator(), ReturnLike(), Pure())

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])

    @classmethod
    def parse(cls, parser: Parser):
        operands = _parse_operands(parser)
        props, attrs = _parse_attr_dict(parser, cls)
        types = []
        if operands:
            parser.parse_punctuation(":")
            types = _parse_types(parser)
        return cls.build(operands=[_resolve(parser, operands, types)], properties=props, attributes=attrs)

    def print(self, printer: Printer):
        if self.srcs:
            printer.print_string(" ")
            _print_operands(printer, self.srcs)
        _print_attr_dict(printer, self)
        if self.srcs:
            printer.print_string(" : ")
            _print_types(printer, self.srcs.types)


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Reduces `srcs` along `axis` with the combiner in `combineOp` (argument pairs: acc, next)."""

    name = "tt.reduce"

    srcs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = var_result_def()
    combineOp = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def get_axis(self) -> int:
        return self.axis.value.data


@irdl_op_definition
class ReduceReturnOp(_RegionReturn):
    name = "tt.reduce.return"

    traits = traits_def(IsTerminator(), ReturnLike(), Pure(), HasParent(ReduceOp))


@irdl_op_definition
class ScanOp(IRDLOperation):
    """Inclusive scan of `srcs` along `axis` (backwards when `reverse`)."""

    name = "tt.scan"

    srcs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    reverse = prop_def(BoolAttr)
    result = var_result_def(TensorType)
    combineOp = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def get_axis(self) -> int:
        return self.axis.value.data

    def is_reverse(self) -> bool:
        return bool(self.reverse.value.data)


@irdl_op_definition
class ScanReturnOp(_RegionReturn):
    name = "tt.scan.return"

    traits = traits_def(IsTerminator(), ReturnLike(), Pure(), HasParent(ScanOp))


@irdl_op_definition
class MapElementwiseOp(IRDLOperation):
    """Applies the scalar region to each element (`pack` elements per call) of `srcs`."""

    name = "tt.map_elementwise"

    srcs = var_operand_def(TensorType)
    pack = prop_def(IntegerAttr)
    result = var_result_def(TensorType)
    scalarOp = region_def()

    traits = traits_def(RecursiveMemoryEffect())


@irdl_op_definition
class MapElementwiseReturnOp(_RegionReturn):
    name = "tt.map_elementwise.return"

    traits = traits_def(IsTerminator(), ReturnLike(), Pure(), HasParent(MapElementwiseOp))


# --------------------------------------------------------------------------------------------
# Calls into code outside the kernel.
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class ExternElementwiseOp(IRDLOperation):
    """`tt.extern_elementwise %x {libname = "", libpath = "", pure = true, symbol = "f"} : (T) -> T`"""

    name = "tt.extern_elementwise"

    srcs = var_operand_def()
    libname = prop_def(StringAttr)
    libpath = prop_def(StringAttr)
    symbol = prop_def(StringAttr)
    pure = prop_def(BoolAttr)
    result = result_def()

    @classmethod
    def parse(cls, parser: Parser):
        operands = _parse_operands(parser)
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        inputs, outputs = _parse_functional_type(parser)
        return cls.build(operands=[_resolve(parser, operands, inputs)], result_types=outputs,
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        _print_operands(printer, self.srcs)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)


@irdl_op_definition
class ElementwiseInlineAsmOp(IRDLOperation):
    """`tt.elementwise_inline_asm "asm" {constraints = ..., packed_element = 1 : i32, pure = true}
    %a, %b : A, B -> R1, R2` (parsed so that the error naming it is ours, not the parser's)."""

    name = "tt.elementwise_inline_asm"

    asm_string = prop_def(StringAttr)
    constraints = prop_def(StringAttr)
    pure = prop_def(BoolAttr)
    packed_element = prop_def(IntegerAttr)
    args = var_operand_def()
    result = var_result_def()

    @classmethod
    def parse(cls, parser: Parser):
        asm = parser.parse_str_literal()
        props, attrs = _parse_attr_dict(parser, cls)
        operands = _parse_operands(parser)
        types: list[Attribute] = []
        if operands:
            parser.parse_punctuation(":")
            types = _parse_types(parser)
        parser.parse_punctuation("->")
        result_types = _parse_types(parser)
        return cls.build(operands=[_resolve(parser, operands, types)], result_types=[result_types],
                         properties=props | {"asm_string": StringAttr(asm)}, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_string_literal(self.asm_string.data)
        _print_attr_dict(printer, self, ("asm_string",))
        if self.args:
            printer.print_string(" ")
            _print_operands(printer, self.args)
            printer.print_string(" : ")
            _print_types(printer, self.args.types)
        printer.print_string(" -> ")
        _print_types(printer, self.result_types)


# --------------------------------------------------------------------------------------------
# Data movement within a block.
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class GatherOp(IRDLOperation):
    """`tt.gather %src[%idx] {axis = 1 : i32} : (S, I) -> R`"""

    name = "tt.gather"

    src = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    efficient_layout = opt_prop_def(UnitAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser: Parser):
        src = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        idx = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        inputs, outputs = _parse_functional_type(parser)
        return cls.build(operands=_resolve(parser, [src, idx], inputs), result_types=outputs,
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.src)
        printer.print_string("[")
        printer.print_operand(self.indices)
        printer.print_string("]")
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)


# --------------------------------------------------------------------------------------------
# Debugging.
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class PrintOp(IRDLOperation):
    """`tt.print " x: " {hex = false, isSigned = array<i32: 0>} : %x : tensor<64xf32>`"""

    name = "tt.print"

    prefix = prop_def(StringAttr)
    hex = prop_def(BoolAttr)
    isSigned = prop_def(DenseArrayBase)
    args = var_operand_def()

    traits = traits_def(MemoryWriteEffect())

    @classmethod
    def parse(cls, parser: Parser):
        prefix = parser.parse_str_literal()
        props, attrs = _parse_attr_dict(parser, cls)
        operands: list[SSAValue] = []
        if parser.parse_optional_punctuation(":"):
            unresolved = _parse_operands(parser)
            parser.parse_punctuation(":")
            operands = _resolve(parser, unresolved, _parse_types(parser))
        return cls.build(operands=[operands], properties=props | {"prefix": StringAttr(prefix)}, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_string_literal(self.prefix.data)
        _print_attr_dict(printer, self, ("prefix",))
        if self.args:
            printer.print_string(" : ")
            _print_operands(printer, self.args)
            printer.print_string(" : ")
            _print_types(printer, self.args.types)


@irdl_op_definition
class AssertOp(IRDLOperation):
    """`tt.assert %cond, "message" : tensor<64xi1>`"""

    name = "tt.assert"

    condition = operand_def()
    message = prop_def(StringAttr)

    traits = traits_def(MemoryWriteEffect())

    @classmethod
    def parse(cls, parser: Parser):
        cond = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        message = parser.parse_str_literal()
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(cond, t)],
                         properties=props | {"message": StringAttr(message)}, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.condition)
        printer.print_string(", ")
        printer.print_string_literal(self.message.data)
        _print_attr_dict(printer, self, ("message",))
        printer.print_string(" : ")
        printer.print_attribute(self.condition.type)


# --------------------------------------------------------------------------------------------
# Tensor descriptors. `make_tensor_descriptor` prints its types without the `!tt.ptr` /
# `!tt.tensordesc` prefix (`: <f32>, <16x32xf32>`), because ODS elides the dialect of a type
# whose constraint already names it.
# --------------------------------------------------------------------------------------------


def _parse_bare_or_full(parser: Parser, cls: type[ParametrizedAttribute]) -> Attribute:
    if (t := parser.parse_optional_type()) is not None:
        return t
    return cls.new(cls.parse_parameters(parser))


@irdl_op_definition
class MakeTensorDescOp(IRDLOperation):
    """`tt.make_tensor_descriptor %base, [%s0, %s1], [%st0, %st1] : <f32>, <16x32xf32>`"""

    name = "tt.make_tensor_descriptor"

    base = operand_def(PointerType)
    shape = var_operand_def()
    strides = var_operand_def()
    result = result_def(TensorDescType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser: Parser):
        base = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        shape = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        parser.parse_punctuation(",")
        strides = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        base_type = _parse_bare_or_full(parser, PointerType)
        parser.parse_punctuation(",")
        desc_type = _parse_bare_or_full(parser, TensorDescType)
        # The frontend passes shapes as i32 and strides as i64.
        operands = [parser.resolve_operand(base, base_type),
                    [parser.resolve_operand(s, i32) for s in shape],
                    [parser.resolve_operand(s, IntegerType(64)) for s in strides]]
        return cls.build(operands=operands, result_types=[desc_type], properties=props, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.base)
        printer.print_string(", [")
        _print_operands(printer, self.shape)
        printer.print_string("], [")
        _print_operands(printer, self.strides)
        printer.print_string("]")
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        self.base.type.print_parameters(printer)
        printer.print_string(", ")
        self.result.type.print_parameters(printer)


def _parse_desc_indices(parser: Parser) -> tuple[UnresolvedOperand, list[UnresolvedOperand]]:
    desc = parser.parse_unresolved_operand()
    indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
    return desc, indices


def _print_desc_indices(printer: Printer, desc: SSAValue, indices: Sequence[SSAValue]) -> None:
    printer.print_string(" ")
    printer.print_operand(desc)
    printer.print_string("[")
    _print_operands(printer, indices)
    printer.print_string("]")


@irdl_op_definition
class DescriptorLoadOp(IRDLOperation):
    """`tt.descriptor_load %desc[%i, %j] : !tt.tensordesc<16x32xf32> -> tensor<16x32xf32>`"""

    name = "tt.descriptor_load"

    desc = operand_def(TensorDescType)
    indices = var_operand_def()
    cachePolicy = prop_def(CachePolicyAttr, default_value=DEFAULT_CACHE_POLICY)
    result = result_def(TensorType)

    traits = traits_def(MemoryReadEffect())

    @classmethod
    def parse(cls, parser: Parser):
        desc, indices = _parse_desc_indices(parser)
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        desc_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        operands = [parser.resolve_operand(desc, desc_type), [parser.resolve_operand(i, i32) for i in indices]]
        return cls.build(operands=operands, result_types=[result_type], properties=props, attributes=attrs)

    def print(self, printer: Printer):
        _print_desc_indices(printer, self.desc, self.indices)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.desc.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


class _DescriptorWrite(IRDLOperation):
    """`[kind,] %desc[%i, %j], %src : !tt.tensordesc<16x32xf32>, tensor<16x32xf32>`"""

    desc = operand_def(TensorDescType)
    src = operand_def(TensorType)
    indices = var_operand_def()

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    _KIND: ClassVar[str | None] = None

    @classmethod
    def parse(cls, parser: Parser):
        props: dict[str, Attribute] = {}
        if cls._KIND is not None:
            props[cls._KIND] = _parse_enum(parser, DescriptorReduceKind)
            parser.parse_punctuation(",")
        desc, indices = _parse_desc_indices(parser)
        parser.parse_punctuation(",")
        src = parser.parse_unresolved_operand()
        more, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        desc_type = parser.parse_type()
        parser.parse_punctuation(",")
        src_type = parser.parse_type()
        operands = [parser.resolve_operand(desc, desc_type), parser.resolve_operand(src, src_type),
                    [parser.resolve_operand(i, i32) for i in indices]]
        return cls.build(operands=operands, properties=props | more, attributes=attrs)

    def print(self, printer: Printer):
        if self._KIND is not None:
            printer.print_string(" ")
            _print_enum(printer, DescriptorReduceKind, self.properties[self._KIND])
            printer.print_string(",")
        _print_desc_indices(printer, self.desc, self.indices)
        printer.print_string(", ")
        printer.print_operand(self.src)
        _print_attr_dict(printer, self, () if self._KIND is None else (self._KIND,))
        printer.print_string(" : ")
        printer.print_attribute(self.desc.type)
        printer.print_string(", ")
        printer.print_attribute(self.src.type)


@irdl_op_definition
class DescriptorStoreOp(_DescriptorWrite):
    """`tt.descriptor_store %desc[%i, %j], %src : !tt.tensordesc<16x32xf32>, tensor<16x32xf32>`"""

    name = "tt.descriptor_store"


@irdl_op_definition
class DescriptorReduceOp(_DescriptorWrite):
    """`tt.descriptor_reduce add, %desc[%i, %j], %src : !tt.tensordesc<...>, tensor<...>`"""

    name = "tt.descriptor_reduce"

    kind = prop_def(IntegerAttr)

    _KIND: ClassVar[str | None] = "kind"

    def get_kind(self) -> DescriptorReduceKind:
        return DescriptorReduceKind(self.kind.value.data)


@irdl_op_definition
class DescriptorGatherOp(IRDLOperation):
    """`tt.descriptor_gather %desc[%xs, %y] : (!tt.tensordesc<1x32xf32>, tensor<8xi32>, i32) -> tensor<8x32xf32>`"""

    name = "tt.descriptor_gather"

    desc = operand_def(TensorDescType)
    x_offsets = operand_def(TensorType)
    y_offset = operand_def()
    result = result_def(TensorType)

    traits = traits_def(MemoryReadEffect())

    @classmethod
    def parse(cls, parser: Parser):
        desc, indices = _parse_desc_indices(parser)
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        inputs, outputs = _parse_functional_type(parser)
        return cls.build(operands=_resolve(parser, [desc, *indices], inputs), result_types=outputs,
                         properties=props, attributes=attrs)

    def print(self, printer: Printer):
        _print_desc_indices(printer, self.desc, (self.x_offsets, self.y_offset))
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)


@irdl_op_definition
class DescriptorScatterOp(IRDLOperation):
    """`tt.descriptor_scatter %desc[%xs, %y], %src : !tt.tensordesc<1x32xf32>, tensor<8xi32>, i32, tensor<8x32xf32>`"""

    name = "tt.descriptor_scatter"

    desc = operand_def(TensorDescType)
    x_offsets = operand_def(TensorType)
    y_offset = operand_def()
    src = operand_def(TensorType)

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    @classmethod
    def parse(cls, parser: Parser):
        desc, indices = _parse_desc_indices(parser)
        parser.parse_punctuation(",")
        src = parser.parse_unresolved_operand()
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        types = _parse_types(parser)
        return cls.build(operands=_resolve(parser, [desc, *indices, src], types), properties=props, attributes=attrs)

    def print(self, printer: Printer):
        _print_desc_indices(printer, self.desc, (self.x_offsets, self.y_offset))
        printer.print_string(", ")
        printer.print_operand(self.src)
        _print_attr_dict(printer, self)
        printer.print_string(" : ")
        _print_types(printer, self.operand_types)


# --------------------------------------------------------------------------------------------
# Functions.
# --------------------------------------------------------------------------------------------


class _FuncCallable(CallableOpInterface):
    @classmethod
    def get_callable_region(cls, op: Operation) -> Region:
        assert isinstance(op, FuncOp)
        return op.body

    @classmethod
    def get_argument_types(cls, op: Operation) -> tuple[Attribute, ...]:
        assert isinstance(op, FuncOp)
        return op.function_type.inputs.data

    @classmethod
    def get_result_types(cls, op: Operation) -> tuple[Attribute, ...]:
        assert isinstance(op, FuncOp)
        return op.function_type.outputs.data


@irdl_op_definition
class FuncOp(IRDLOperation):
    """`tt.func public @k(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc(...)) attributes {noinline = false}`"""

    name = "tt.func"

    body = region_def()
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    sym_visibility = opt_prop_def(StringAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), _FuncCallable())

    def __init__(self, name: str, function_type: FunctionType, region: Region | None = None,
                 visibility: str | None = None, *, arg_attrs: ArrayAttr | None = None,
                 res_attrs: ArrayAttr | None = None):
        if region is None:
            region = Region(Block(arg_types=function_type.inputs))
        props: dict[str, Attribute | None] = {
            "sym_name": StringAttr(name), "function_type": function_type,
            "sym_visibility": None if visibility is None else StringAttr(visibility),
            "arg_attrs": arg_attrs, "res_attrs": res_attrs}
        super().__init__(properties=props, regions=[region])

    @property
    def args(self) -> tuple[BlockArgument, ...]:
        entry = self.body.blocks.first
        return () if entry is None else entry.args

    @property
    def is_declaration(self) -> bool:
        return not self.body.blocks

    def arg_attr(self, index: int, name: str) -> Attribute | None:
        """The argument attribute `name` (e.g. `tt.divisibility`) of argument `index`, if set."""
        if self.arg_attrs is None:
            return None
        return self.arg_attrs.data[index].data.get(name)

    def verify_(self) -> None:
        entry = self.body.blocks.first
        if entry is not None and self.function_type.inputs.data != entry.arg_types:
            raise VerifyException("tt.func: entry block arguments differ from the function type inputs")

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        visibility = parser.parse_optional_visibility_keyword()
        name, inputs, outputs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "sym_visibility"))
        func = FuncOp(name, FunctionType.from_lists(inputs, outputs), region,
                      None if visibility is None else visibility.data, arg_attrs=arg_attrs, res_attrs=res_attrs)
        if extra is not None:
            func.attributes |= extra.data
        return func

    def print(self, printer: Printer):
        if self.sym_visibility is not None:
            printer.print_string(f" {self.sym_visibility.data}")
        print_func_op_like(printer, self.sym_name, self.function_type, self.body, self.attributes,
                           arg_attrs=self.arg_attrs, res_attrs=self.res_attrs,
                           reserved_attr_names=("sym_name", "function_type", "sym_visibility", "arg_attrs",
                                                "res_attrs"))


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """`tt.return [%a, %b : f32, i32]`"""

    name = "tt.return"

    srcs = var_operand_def()

    traits = traits_def(IsTerminator(), ReturnLike(), Pure(), HasParent(FuncOp))

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])

    @classmethod
    def parse(cls, parser: Parser):
        props, attrs = _parse_attr_dict(parser, cls)
        operands = _parse_operands(parser)
        types = []
        if operands:
            parser.parse_punctuation(":")
            types = _parse_types(parser)
        return cls.build(operands=[_resolve(parser, operands, types)], properties=props, attributes=attrs)

    def print(self, printer: Printer):
        _print_attr_dict(printer, self)
        if self.srcs:
            printer.print_string(" ")
            _print_operands(printer, self.srcs)
            printer.print_string(" : ")
            _print_types(printer, self.srcs.types)


@irdl_op_definition
class CallOp(IRDLOperation):
    """`%r = tt.call @f(%a, %b) : (f32, f32) -> f32`"""

    name = "tt.call"

    callee = prop_def(FlatSymbolRefAttrConstr)
    args = var_operand_def()
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res = var_result_def()

    def __init__(self, callee: str | SymbolRefAttr, args: Sequence[SSAValue | Operation],
                 result_types: Sequence[Attribute]):
        if isinstance(callee, str):
            callee = SymbolRefAttr(callee)
        super().__init__(operands=[args], result_types=[result_types], properties={"callee": callee})

    @classmethod
    def parse(cls, parser: Parser):
        callee = SymbolRefAttr(parser.parse_symbol_name())
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        props, attrs = _parse_attr_dict(parser, cls)
        parser.parse_punctuation(":")
        inputs, outputs = _parse_functional_type(parser)
        return cls.build(operands=[_resolve(parser, operands, inputs)], result_types=[outputs],
                         properties=props | {"callee": callee}, attributes=attrs)

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_symbol_name(self.callee.root_reference.data)
        printer.print_string("(")
        _print_operands(printer, self.args)
        printer.print_string(")")
        _print_attr_dict(printer, self, ("callee",))
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)


TT = Dialect(
    "tt",
    [
        IntToPtrOp, PtrToIntOp, BitcastOp, FpToFpOp,
        ClampFOp, PreciseSqrtOp, PreciseDivFOp, ApproxDivFOp, MulhiUIOp,
        AddPtrOp,
        LoadOp, StoreOp,
        AtomicRMWOp, AtomicCASOp, AtomicLoadOp, AtomicStoreOp, AtomicPollOp,
        SplatOp, UnsplatOp, ExpandDimsOp, ReshapeOp, BroadcastOp, CatOp, JoinOp, SplitOp, TransOp,
        GetProgramIdOp, GetNumProgramsOp, MakeRangeOp,
        DotOp, DotScaledOp,
        ReduceOp, ReduceReturnOp, ScanOp, ScanReturnOp, MapElementwiseOp, MapElementwiseReturnOp,
        ExternElementwiseOp, ElementwiseInlineAsmOp,
        HistogramOp, GatherOp,
        PrintOp, AssertOp,
        MakeTensorDescOp, DescriptorLoadOp, DescriptorStoreOp, DescriptorReduceOp, DescriptorGatherOp,
        DescriptorScatterOp,
        FuncOp, ReturnOp, CallOp,
    ],
    [PointerType, TensorDescType, CachePolicyAttr],
)
