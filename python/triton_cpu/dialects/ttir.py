"""Reading stock Triton's TTIR text into xDSL, and source locations for error messages.

`parse_ttir(text)` returns the `builtin.module`. What stands between Triton's text and
xDSL's parser, and what makes xDSL's parser fast enough, is handled here:

- Triton prints location aliases (`#loc3 = loc("k.py":6:19)`) *after* the module that uses
  them, and aliases refer to later aliases; xDSL 0.74 only resolves aliases defined earlier.
  `_hoist_aliases` moves every top-level alias definition before the module, ordered so each
  comes after the ones it refers to.
- Location aliases are most of the text and, parsed by xDSL, ~40% of the parse time.
  `_resolve_locations` reads their usual forms (`"file":line:col`, `"name"(#ref)`,
  `callsite(#a at #b)`, `fused[#a, ...]`, `unknown`) with regular expressions into the
  attributes xDSL would build; they are taken out of the text, given to the parser as known
  aliases, and an op's `loc(#alias)` is read by one regex match (`_TTIRParser`). When any
  alias has another form, or a file name has an escape, every alias is left to xDSL.
- Most ops are one-line repeats of a few shapes (`%r = arith.addf %a, %b : tensor<512xf32>`),
  and xDSL's parser spends ~100 us on each. An op line whose shape (its text without operand
  names, and for the ops of `_RESULT_TYPE` without types) was parsed before, in this module
  or an earlier one, is built from what xDSL built then (`_TTIRParser._replay`): a next
  10-op benchmark kernel (a new BLOCK: new types and constants) parses in 4.7-6 instead of
  8-10 ms. A line that is not a plain op line, or whose location is not an alias, goes to
  xDSL as before; `scripts/check_ttir_memo.py` compares both ways on cached TTIRs.
- Locations are chains (`loc("offsets"(#loc3))`, `loc(callsite(#a at #b))`, `fused[...]`).
  After parsing, every op's and block argument's location is normalized to a
  `FileLineColLoc`, or a `CallSiteLoc` of them when the op came from an inlined function, or
  `UnknownLoc` (`normalize_location`). `op_location(op)` gives (file, line, col).

Other xDSL gaps (hex floats in `dense<>`, missing upstream ops) live in `compat.py`.
"""
from __future__ import annotations

import functools
import io
import os
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from xdsl.context import Context
from xdsl.dialects.builtin import (
    Builtin,
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    LocationAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    UnknownLoc,
    i1,
)
from xdsl.dialects.cf import Cf
from xdsl.dialects.func import Func
from xdsl.dialects.math import Math
from xdsl.dialects.memref import MemRef
from xdsl.dialects.scf import Scf
from xdsl.dialects.ub import UB
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

from triton_cpu.dialects import compat, foreign, tcpu
from triton_cpu.dialects.tt import PointerType, TT

# Every dialect stock Triton's TTIR uses.
TTIR_DIALECTS: list[Dialect] = [Builtin, Func, compat.Arith, Math, Scf, Cf, TT, UB, foreign.TTG, foreign.LLVM,
                                 *compat.DIALECTS]
# The dialects the compiler's passes add (tcpu, vector, memref, ...): list them here, and every
# context -- so parse_ttir of a TTCIR dump and triton-cpu-opt -- reads both stages.
COMPILER_DIALECTS: list[Dialect] = [tcpu.TCPU, compat.Vector, MemRef]


def make_context(extra: Iterable[Dialect] = ()) -> Context:
    """A context with the TTIR and compiler dialects, and `extra`, loaded."""
    # Unregistered ops and attributes parse: the lowering names an unsupported op with its
    # line, which a parse error would not.
    ctx = Context(allow_unregistered=True)
    for dialect in [*TTIR_DIALECTS, *COMPILER_DIALECTS, *extra]:
        if dialect.name not in ctx.registered_dialect_names:
            ctx.load_dialect(dialect)
    return ctx


def parse_ttir(text: str, ctx: Context | None = None, name: str = "<ttir>") -> ModuleOp:
    """Parses TTIR as stock Triton prints it; locations are normalized (see module docstring)."""
    text, locations = _resolve_locations(text)
    module = _TTIRParser(ctx or make_context(), _hoist_aliases(text), name, locations).parse_module()
    # Ops share a few hundred distinct locations at most; building attributes is not cheap.
    normalized: dict[LocationAttr, LocationAttr] = {}

    def normalize(loc: LocationAttr) -> LocationAttr:
        if (result := normalized.get(loc)) is None:
            result = normalized[loc] = normalize_location(loc)
        return result

    for op in module.walk():
        op.location = normalize(op.location)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    arg.location = normalize(arg.location)
    return module


def print_ir(op: Operation, locations: bool = False) -> str:
    """The text of `op` (usually a module); with `locations`, each op ends with its `loc(...)`."""
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=locations).print_op(op)
    out.write("\n")
    return out.getvalue()


# --------------------------------------------------------------------------------------------
# Alias definitions.
# --------------------------------------------------------------------------------------------

_LOC_DEF = re.compile(r"^(#[A-Za-z_][\w.$-]*) = loc\((.*)\)$")
_LOC_REF = re.compile(r"loc\((#[A-Za-z_][\w.$-]*)\)")
_FILE_LINE_COL = re.compile(r'"([^"\\]*)":(\d+):(\d+)')
_NAME = re.compile(r'"([^"\\]*)"(?:\((#[A-Za-z_][\w.$-]*)\))?')
_CALLSITE = re.compile(r"callsite\((#[A-Za-z_][\w.$-]*) at (#[A-Za-z_][\w.$-]*)\)")
_FUSED = re.compile(r"fused\[(#[A-Za-z_][\w.$-]*(?:, #[A-Za-z_][\w.$-]*)*)\]")


def _resolve_locations(text: str) -> tuple[str, dict[str, LocationAttr]]:
    """(the text without its location alias definitions, alias -> location attribute) when
    every definition has one of the forms read here; else (text, {})."""
    raw: dict[str, str] = {}
    body: list[str] = []
    for line in text.splitlines():
        m = _LOC_DEF.match(line) if line.startswith("#") else None
        if m is not None and m.group(1) not in raw:
            raw[m.group(1)] = m.group(2)
        else:
            body.append(line)
    if not raw:
        return text, {}
    resolved: dict[str, LocationAttr] = {}

    def resolve(alias: str, depth: int = 0) -> LocationAttr | None:
        if (loc := resolved.get(alias)) is not None:
            return loc
        rhs = raw.get(alias)
        if rhs is None or depth > 100:
            return None
        loc: LocationAttr | None = None
        if rhs == "unknown":
            loc = UnknownLoc()
        elif m := _FILE_LINE_COL.fullmatch(rhs):
            loc = FileLineColLoc(StringAttr(m.group(1)), IntAttr(int(m.group(2))), IntAttr(int(m.group(3))))
        elif m := _NAME.fullmatch(rhs):
            inner = resolve(m.group(2), depth + 1) if m.group(2) else NoneAttr()
            loc = None if inner is None else NameLoc(StringAttr(m.group(1)), inner)
        elif m := _CALLSITE.fullmatch(rhs):
            callee, caller = resolve(m.group(1), depth + 1), resolve(m.group(2), depth + 1)
            loc = None if callee is None or caller is None else CallSiteLoc(callee, caller)
        elif m := _FUSED.fullmatch(rhs):
            parts = [resolve(ref, depth + 1) for ref in m.group(1).split(", ")]
            loc = None if None in parts else FusedLoc(tuple(parts), NoneAttr())
        if loc is not None:
            resolved[alias] = loc
        return loc

    for alias in raw:
        if resolve(alias) is None:
            return text, {}
    return "\n".join(body) + "\n", resolved


class _TTIRParser(Parser):
    """xDSL's parser with the location aliases of `_resolve_locations` known in advance, and
    an op's `loc(#alias)` of one of them read by a single regex match."""

    def __init__(self, ctx: Context, text: str, name: str, locations: dict[str, LocationAttr]):
        super().__init__(ctx, text, name)
        self.attribute_aliases.update(locations)
        self._locations = locations
        self._text = text

    def parse_optional_location(self) -> LocationAttr | None:
        token = self._current_token
        if self._locations and token.text == "loc":
            m = _LOC_REF.match(self._text, token.span.start)
            if m is not None and (loc := self._locations.get(m.group(1))) is not None:
                self._resume_from(m.end())
                return loc
        return super().parse_optional_location()

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        line = _OP_LINE.match(self._text, start)
        if line is None or line.group(4) not in self._locations:
            return super().parse_operation()
        shape = _shape(line.group(2), line.group(3))
        if shape is not None:
            op = self._replay(shape, line)
            if op is not None:
                return op
        op = super().parse_operation()
        if shape is not None and self._current_token.span.start >= line.end():
            self._record(shape, line, op)
        return op

    def _replay(self, shape: _Shape, line: re.Match) -> Operation | None:
        """The op of `line` built from the memo of its shape, or None (not seen yet, or an
        operand not defined before)."""
        entry = _MEMO.get(shape.exact) or (_MEMO.get(shape.abstract) if shape.abstract else None)
        if entry is None or self.ctx.get_optional_op(line.group(2)) is not entry.cls:
            return None
        operands = []
        for j in entry.perm:
            values = self.ssa_values.get(shape.names[j])
            if values is None or len(values) != 1:
                return None
            operands.append(values[0])
        if entry.result is None:
            results = []
        elif isinstance(entry.result, str):
            results = [_result_type(entry.result, [self._type_of(t) for t in shape.types])]
            if results[0] is None:
                return None
        else:
            results = [entry.result]
        op = entry.cls.create(operands=operands, result_types=results, properties=dict(entry.properties),
                              attributes=dict(entry.attributes))
        op.location = self._locations[line.group(4)]
        if line.group(1) is not None:
            self._register_ssa_definition(line.group(1), op.results,
                                          Span(start=line.start(1) - 1, end=line.end(1), input=self.lexer.input))
        self._resume_from(line.end())
        return op

    def _record(self, shape: _Shape, line: re.Match, op: Operation) -> None:
        """Remembers how to build `op` from another line of its shape, when the line alone
        determined it: an IRDL op without regions or successors, one result per bound name,
        each operand one distinct name of the line."""
        if not isinstance(op, IRDLOperation) or op.regions or op.successors \
                or len(op.results) != (line.group(1) is not None) or len(op.operands) != len(shape.names) \
                or len(set(shape.names)) != len(shape.names) or op.location != self._locations[line.group(4)]:
            return
        index = {}
        for j, name in enumerate(shape.names):
            values = self.ssa_values.get(name)
            if values is None or len(values) != 1:
                return
            index[id(values[0])] = j
        perm = tuple(index.get(id(v), -1) for v in op.operands)
        if -1 in perm:
            return
        properties, attributes = dict(op.properties), dict(op.attributes)
        if len(_MEMO) > _MEMO_LIMIT or len(_TYPES) > _MEMO_LIMIT:
            _MEMO.clear()
            _TYPES.clear()
        rtype = op.results[0].type if op.results else None
        _MEMO[shape.exact] = _MemoEntry(type(op), perm, rtype, properties, attributes)
        if shape.abstract is not None:
            rule = _RESULT_TYPE[shape.exact[0]]
            if rtype == _result_type(rule, [self._type_of(t) for t in shape.types]):
                _MEMO[shape.abstract] = _MemoEntry(type(op), perm, rule if op.results else None, properties,
                                                   attributes)

    def _type_of(self, text: str) -> Attribute | None:
        """The type spelled exactly `text`, or None."""
        if (t := _TYPES.get(text)) is None:
            parser = Parser(self.ctx, text)
            try:
                t = parser.parse_type()
            except ParseError:
                return None
            if parser._current_token.kind != MLIRTokenKind.EOF:
                return None
            _TYPES[text] = t
        return t

    def _parse_optional_builtin_parametrized_type(self):
        # A module spells the same few tensor types hundreds of times, and xDSL's type
        # parser is a third of its parse time: the text of a tensor, vector or memref
        # type, up to its matching '>', parses once per process (_TYPES).
        token = self._current_token
        if token.text not in _SHAPED_TYPES:
            return super()._parse_optional_builtin_parametrized_type()
        start = token.span.start
        end = _matching_angle(self._text, token.span.end)
        key = self._text[start:end] if end is not None else None
        hit = _TYPES.get(key)
        if hit is not None:
            self._resume_from(end)
            return hit
        result = super()._parse_optional_builtin_parametrized_type()
        if key is not None and self._current_token.span.start >= end \
                and not self._text[end:self._current_token.span.start].strip():
            _TYPES[key] = result  # parsed exactly that text
        return result


_SHAPED_TYPES = ("tensor", "vector", "memref")

# --------------------------------------------------------------------------------------------
# Op shapes: most of a kernel's ops are lines like `%r = arith.addf %a, %b : tensor<512xf32>`,
# and xDSL's parser takes ~100 us for each. `_TTIRParser` remembers, per shape (the op name
# and the rest of its line with operand names taken out), how xDSL built the op: its class,
# properties, attributes, result type and which operand of the line each operand is; the next
# line of that shape is built from the memo. A shape whose text before ` : ` is only operands
# and keywords (no numbers, attributes or brackets), of an op whose result type is one of the
# line's types by definition (_RESULT_TYPE), is also remembered with its types taken out:
# every `arith.addf` of any tensor type then shares one entry. Only arith, math, tt and
# scf.yield ops, whose properties come from their text, never from their types.
# --------------------------------------------------------------------------------------------

# An op without regions on one line: an optional result, the op name, the rest, and a
# location alias that ends the line.
_OP_LINE = re.compile(r"(?:%([\w$.-]+) = )?([a-z_]+\.[\w.]+)((?: [^\n\"#]*?)?) loc\((#[\w.$-]+)\)\n")
_OPERAND = re.compile(r"%([\w$.-]+)")
_KEYWORDS_ONLY = re.compile(r"[%a-z_, ]*")
_TYPE_SEPARATOR = re.compile(r"( -> | to |, )")
_MEMOIZED = ("arith.", "math.", "tt.", "scf.yield")


class _Shape(NamedTuple):
    exact: tuple  # (op name, the rest of the line with operand names taken out)
    abstract: tuple | None  # the same with the types taken out too, where _RESULT_TYPE allows
    names: list[str]  # the line's operand names, in order
    types: tuple[str, ...]  # the texts of the line's types (only when `abstract` is set)


class _MemoEntry(NamedTuple):
    cls: type[Operation]
    perm: tuple[int, ...]  # operand i of the op is the line's operand perm[i]
    result: Attribute | str | None  # the result type; a _RESULT_TYPE rule; None: no result
    properties: dict
    attributes: dict


_MEMO: dict[tuple, _MemoEntry] = {}
_MEMO_LIMIT = 20000  # shapes or types; both cleared when one is full (a process compiling thousands of kernels)
_TYPES: dict[str, Attribute] = {}  # type text -> type, shared by _type_of and the shaped-type parse


# Ops whose result type follows, by definition, from the types their line spells: the first
# or the last of them (`%r = arith.addf %a, %b : T`, `%r = tt.splat %s : T1 -> T2`,
# `arith.select %c, %a, %b : T1, T2`), the first with i1 elements (cmpi, cmpf), its pointee
# (`tt.load %p : tensor<4x!tt.ptr<f32>>`), or no result at all. The only ones remembered with
# their types taken out.
_RESULT_TYPE = {
    "arith.cmpi": "i1", "arith.cmpf": "i1", "tt.load": "pointee",
    **dict.fromkeys(["tt.store", "scf.yield", "tt.reduce.return", "tt.scan.return"], "none"),
    **dict.fromkeys(
        ["arith." + n for n in (
            "addf subf mulf divf remf addi subi muli divsi divui remsi remui ceildivsi floordivsi andi ori "
            "xori shli shrsi shrui maxnumf minnumf maximumf minimumf maxsi minsi maxui minui negf").split()]
        + ["math." + n for n in (
            "exp exp2 log log2 log10 log1p expm1 sqrt rsqrt absf absi floor ceil round roundeven trunc sin cos "
            "tan tanh erf erfc").split()]
        + ["tt.addptr", "tt.get_program_id", "tt.get_num_programs", "tt.mulhiui", "tt.precise_sqrt",
           "tt.precise_divf"], "first"),
    **dict.fromkeys(
        ["arith." + n for n in (
            "extsi extui trunci sitofp uitofp fptosi fptoui extf truncf bitcast index_cast index_castui "
            "select").split()]
        + ["tt.splat", "tt.broadcast", "tt.bitcast", "tt.int_to_ptr", "tt.ptr_to_int", "tt.reshape"], "last"),
}


def _result_type(rule: str, types: list[Attribute | None]) -> Attribute | None:
    """The result type `rule` (a value of _RESULT_TYPE) gives for a line spelling `types`;
    None for "none", or when the types do not have the form the rule needs."""
    if not types or None in types or rule == "none":
        return None
    if rule == "first":
        return types[0]
    if rule == "last":
        return types[-1]
    t = types[0]
    shape = None
    if isinstance(t, TensorType):
        shape, t = t.get_shape(), t.element_type
    if rule == "i1":
        t = i1
    elif isinstance(t, PointerType):  # "pointee"
        t = t.pointee_type
    else:
        return None
    return t if shape is None else TensorType(t, shape)


def _shape(name: str, rest: str) -> _Shape | None:
    if not name.startswith(_MEMOIZED):
        return None
    names = _OPERAND.findall(rest)
    text = _OPERAND.sub("%", rest)
    exact = (name, text)
    pre, sep, types = text.partition(" : ")
    if name not in _RESULT_TYPE or not sep or not _KEYWORDS_ONLY.fullmatch(pre):
        return _Shape(exact, None, names, ())
    parts = _TYPE_SEPARATOR.split(types)
    type_texts = tuple(parts[0::2])
    if any(not t or " " in t or t.count("<") != t.count(">") for t in type_texts):
        return _Shape(exact, None, names, ())
    return _Shape(exact, (name, pre, tuple(parts[1::2])), names, type_texts)


def _matching_angle(text: str, pos: int) -> int | None:
    """The index after the '>' that closes the '<' at `pos` (None: no '<' there, or no match
    within a line)."""
    if pos >= len(text) or text[pos] != "<":
        return None
    depth = 0
    for i in range(pos, min(len(text), pos + 512)):
        c = text[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == "\n" or c == '"':
            return None
    return None


_ALIAS_DEF = re.compile(r"^([#!][A-Za-z_][\w.$-]*)\s*=")
_ALIAS_REF = re.compile(r"[#!][A-Za-z_][\w.$-]*")


def _hoist_aliases(text: str) -> str:
    lines = text.splitlines()
    defs: dict[str, str] = {}
    body: list[str] = []
    for line in lines:
        m = _ALIAS_DEF.match(line)
        if m and m.group(1) not in defs:
            defs[m.group(1)] = line
        else:
            body.append(line)
    if not defs:
        return text

    ordered: list[str] = []
    state: dict[str, int] = {}  # 1: visiting, 2: done

    def visit(name: str) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise ValueError(f"TTIR alias {name} refers to itself")
        state[name] = 1
        rhs = defs[name].split("=", 1)[1]
        for ref in _ALIAS_REF.findall(_strip_strings(rhs)):
            if ref in defs:
                visit(ref)
        state[name] = 2
        ordered.append(defs[name])

    for name in defs:
        visit(name)
    return "\n".join(ordered + body) + "\n"


def _strip_strings(s: str) -> str:
    # A file name such as "/tmp/#loc1.py" must not count as a reference.
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', s)


# --------------------------------------------------------------------------------------------
# Locations.
# --------------------------------------------------------------------------------------------

Frame = tuple[str, int, int]


def location_frames(loc: LocationAttr) -> list[Frame]:
    """The (file, line, col) frames of `loc`, innermost (the op itself) first, then the call
    sites it was inlined through. Names are skipped; of a fused location, the first element
    that has frames is taken."""
    match loc:
        case FileLineColLoc():
            return [(loc.filename.data, loc.line.data, loc.column.data)]
        case NameLoc():
            return location_frames(loc.location)
        case CallSiteLoc():
            return location_frames(loc.callee) + location_frames(loc.caller)
        case FusedLoc():
            for inner in loc.locations.data:
                if frames := location_frames(inner):
                    return frames
            return []
        case _:
            return []


def normalize_location(loc: LocationAttr) -> LocationAttr:
    """`loc` reduced to FileLineColLoc, CallSiteLoc(FileLineColLoc, ...) or UnknownLoc."""
    frames = location_frames(loc)
    if not frames:
        return UnknownLoc()
    result: LocationAttr = FileLineColLoc(*_frame_attr(frames[-1]))
    for frame in reversed(frames[:-1]):
        result = CallSiteLoc(FileLineColLoc(*_frame_attr(frame)), result)
    return result


def _frame_attr(frame: Frame) -> tuple[StringAttr, IntAttr, IntAttr]:
    return StringAttr(frame[0]), IntAttr(frame[1]), IntAttr(frame[2])


def op_location(op: Operation) -> Frame | None:
    """(file, line, col) of the op: its innermost frame, inside the function it was inlined
    from if any (see `user_location`); None when Triton gave it no location (materialized
    constants get `loc(unknown)`)."""
    frames = location_frames(op.location)
    return frames[0] if frames else None


def user_location(op: Operation, library_dirs: Sequence[str] | None = None) -> Frame | None:
    """Like `op_location`, but skipping frames inside Triton's own Python sources (for
    example `triton/language/standard.py` of an inlined `tl.max`), so an error names the
    user's line. Falls back to the innermost frame."""
    if library_dirs is None:
        library_dirs = _triton_dirs()
    frames = location_frames(op.location)
    for frame in frames:
        if not any(frame[0].startswith(d) for d in library_dirs):
            return frame
    return frames[0] if frames else None


def format_location(frame: Frame | None) -> str:
    return "<unknown location>" if frame is None else f"{frame[0]}:{frame[1]}:{frame[2]}"


@functools.cache
def _triton_dirs() -> list[str]:
    """Where Triton's Python sources are, found without importing Triton (the compiler
    worker does not import it: ~0.3 s)."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    dirs = []
    for d in spec.submodule_search_locations:
        for form in (os.path.abspath(d), os.path.realpath(d)):
            if os.path.join(form, "") not in dirs:
                dirs.append(os.path.join(form, ""))
    return dirs
