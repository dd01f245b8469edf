"""The text of an inline PTX block, as statements: register declarations and instructions.

Accepted: `//` and `/* */` comments, `{ }` scopes (flattened: a name declared in two
scopes is one register, as `fla`'s one-scope-per-element blocks need), `.reg .type a, b<4>;`
declarations (`b<4>` declares b0..b3), and instructions `[@[!]pred] opcode operand, ...;`
whose operands are registers, `$k`, integer or float immediates and vectors `{a, b, ...}`.
Labels, address operands `[...]` and other directives are kept as they are written, so
that the translation can refuse them by name (inline-ptx translates straight-line code
only).
"""
import re
from dataclasses import dataclass, field


class PTXError(Exception):
    """Why a block cannot be translated; the message names the instruction."""


@dataclass
class Instr:
    opcode: str  # e.g. "cvt.rn.satfinite.e4m3x2.f32"
    operands: list  # str, or list[str] for a vector operand {a, b}
    guard: tuple[str, bool] | None = None  # (predicate register, negated)
    text: str = ""

    @property
    def parts(self) -> list[str]:
        return self.opcode.split(".")


@dataclass
class Program:
    registers: dict = field(default_factory=dict)  # name -> PTX type (".b32", ".pred", ...)
    instrs: list = field(default_factory=list)


_RANGE = re.compile(r"^([A-Za-z_%$][\w$]*)<(\d+)>$")


def _split_operands(text: str) -> list:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    result = []
    for o in out:
        if o.startswith("{") and o.endswith("}"):
            result.append([p.strip() for p in o[1:-1].split(",")])
        else:
            result.append(o)
    return result


def _statements(text: str) -> list[str]:
    """Splits at `;` and drops scope braces: a `{` that starts a statement opens a scope, any
    other opens a vector operand; a `}` that closes no vector closes a scope (and ends the
    statement before it)."""
    out, cur, depth = [], "", 0
    for ch in text:
        if ch == "{" and (depth or cur.strip()):
            depth += 1
        elif ch == "{":
            continue
        elif ch == "}" and depth:
            depth -= 1
        elif ch == "}" or (ch == ";" and not depth):
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    out.append(cur.strip())
    return [" ".join(s.split()) for s in out if s.strip()]


def parse(asm: str) -> Program:
    text = re.sub(r"/\*.*?\*/", " ", asm, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    prog = Program()
    for stmt in _statements(text):
        label = re.match(r"^([A-Za-z_$][\w$]*)\s*:(?!:)", stmt)
        if label:
            raise PTXError(f"the label '{label.group(1)}:' (only straight-line code is translated)")
        if stmt.startswith(".reg"):
            _declare(prog, stmt)
            continue
        if stmt.startswith("."):
            raise PTXError(f"the directive '{stmt.split()[0]}'")
        guard = None
        m = re.match(r"^@(!?)([%\w$]+)\s+(.*)$", stmt)
        if m:
            guard = (m.group(2), m.group(1) == "!")
            stmt = m.group(3)
        head = stmt.split(None, 1)
        operands = _split_operands(head[1]) if len(head) == 2 else []
        prog.instrs.append(Instr(head[0], operands, guard, stmt))
    return prog


def _declare(prog: Program, stmt: str):
    words = stmt.replace(",", " ").split()
    # .reg [.v2|.v4] .type names...
    types = [w for w in words[1:] if w.startswith(".")]
    names = [w for w in words[1:] if not w.startswith(".")]
    if len(types) != 1:
        raise PTXError(f"the declaration '{stmt}'")
    for n in names:
        m = _RANGE.match(n)
        if m:
            for k in range(int(m.group(2))):
                prog.registers[f"{m.group(1)}{k}"] = types[0]
        else:
            prog.registers[n] = types[0]
