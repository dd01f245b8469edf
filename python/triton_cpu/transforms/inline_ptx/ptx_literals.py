"""PTX immediates: integers (decimal, hex `0x`, octal `0`, binary `0b`, an optional `U`) and
floats (`0fXXXXXXXX`, the bits of an f32; `0dXXXXXXXXXXXXXXXX`, of an f64; decimal
`1.0`, `15.`, `1e-3`, which PTX reads as f64 and rounds to the instruction's type)."""
import re
import struct

import numpy as np
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


def float_literal(text: str, elem) -> float | None:
    """The value of float literal `text` in the float type `elem` (rounded to nearest even),
    or None when `text` is not a float literal."""
    value = _f64(text)
    if value is None:
        return None
    if isinstance(elem, Float64Type):
        return value
    if isinstance(elem, Float32Type):
        return float(np.float32(value))
    if isinstance(elem, Float16Type):
        return float(np.float16(value))
    if isinstance(elem, BFloat16Type):
        bits = struct.unpack("<I", struct.pack("<f", np.float32(value)))[0]
        if value != value:
            return value
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return None
