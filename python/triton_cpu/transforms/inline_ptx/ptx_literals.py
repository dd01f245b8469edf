"""PTX immediates: integers (decimal, hex `0x`, octal `0`, binary `0b`, an optional `U`) and
floats (`0fXXXXXXXX`, the bits of an f32; `0dXXXXXXXXXXXXXXXX`, of an f64; decimal
`1.0`, `15.`, `1e-3`, which PTX reads as f64 and rounds to the instruction's type)."""
import math
import re
import struct

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type

_INT = re.compile(r"^([+-]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)[uU]?$")
_DEC = re.compile(r"^[+-]?(?:\d+\.\d*|\.\d+|\d+(?:\.\d*)?[eE][+-]?\d+)$")


def int_literal(text: str) -> int | None:
    m = _INT.match(text)
    if m is None:
        return None
    digits = m.group(2)
    if digits[:2] in ("0x", "0X"):
        value = int(digits[2:], 16)
    elif digits[:2] in ("0b", "0B"):
        value = int(digits[2:], 2)
    elif len(digits) > 1 and digits[0] == "0":
        value = int(digits[1:], 8)
    else:
        value = int(digits)
    return -value if m.group(1) == "-" else value


def _f64(text: str) -> float | None:
    if re.fullmatch(r"[+-]?0[fF][0-9a-fA-F]{8}", text):
        sign = -1.0 if text[0] == "-" else 1.0
        return sign * struct.unpack(">f", bytes.fromhex(text.lstrip("+-")[2:]))[0]
    if re.fullmatch(r"[+-]?0[dD][0-9a-fA-F]{16}", text):
        sign = -1.0 if text[0] == "-" else 1.0
        return sign * struct.unpack(">d", bytes.fromhex(text.lstrip("+-")[2:]))[0]
    if _DEC.match(text):
        return float(text)
    return None


def _round(value: float, fmt: str) -> float:
    """value rounded to nearest even in struct format `fmt` ("f": f32, "e": f16); past the
    largest finite value, +-inf (struct refuses to pack those)."""
    try:
        return struct.unpack("<" + fmt, struct.pack("<" + fmt, value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def float_literal(text: str, elem) -> float | None:
    """The value of float literal `text` in the float type `elem` (rounded to nearest even),
    or None when `text` is not a float literal. (No numpy here: this module is imported by the
    compiler on every first kernel, and numpy's import alone takes ~0.25 s.)"""
    value = _f64(text)
    if value is None:
        return None
    if isinstance(elem, Float64Type):
        return value
    if isinstance(elem, Float32Type):
        return _round(value, "f")
    if isinstance(elem, Float16Type):
        return _round(value, "e")
    if isinstance(elem, BFloat16Type):
        if value != value or math.isinf(value):
            return value
        bits = struct.unpack("<I", struct.pack("<f", _round(value, "f")))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return None
