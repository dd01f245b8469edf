"""Ops of other dialects that stock Triton's TTIR contains, declared so the TTIR parses.

  ttg.barrier <kinds>    `tl.debug_barrier()`; the kinds (`all`, `local`, ...) are kept
                         as a string. One program runs on one thread here, so the
                         lowering drops it.
  llvm.intr.assume %c    `tl.assume(cond)`; a scalar condition becomes LLVM's assume.

`ub.poison` comes from xDSL's `ub` dialect (listed with the TTIR dialects). Other
foreign ops and attributes (e.g. `#llvm.loop_annotation`) parse as unregistered: an
unregistered op is reported by the lowering as unsupported, with its name and line.
"""
from xdsl.dialects.builtin import I1, StringAttr
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """`ttg.barrier all` (kinds joined by `|` in the text)."""

    name = "ttg.barrier"

    kinds = prop_def(StringAttr)

    def __init__(self, kinds: str = "all"):
        super().__init__(properties={"kinds": StringAttr(kinds)})

    @classmethod
    def parse(cls, parser: Parser):
        kinds = [parser.parse_identifier()]
        while parser.parse_optional_punctuation("|") is not None:
            kinds.append(parser.parse_identifier())
        attrs = parser.parse_optional_attr_dict()
        op = cls("|".join(kinds))
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" " + self.kinds.data.replace("|", " | "))


@irdl_op_definition
class AssumeOp(IRDLOperation):
    """`llvm.intr.assume %cond : i1` (Triton prints it for `tl.assume`)."""

    name = "llvm.intr.assume"

    cond = operand_def(I1)

    def __init__(self, cond: SSAValue):
        super().__init__(operands=[cond])

    @classmethod
    def parse(cls, parser: Parser):
        cond = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        op = cls(parser.resolve_operand(cond, t))
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer):
        printer.print_string(" ")
        printer.print_operand(self.cond)
        printer.print_string(" : ")
        printer.print_attribute(self.cond.type)


TTG = Dialect("ttg", [BarrierOp], [])
LLVM = Dialect("llvm", [AssumeOp], [])
