"""x86 AMX tile ops (tcpu.tile_*) as LLVM's AMX intrinsics on fixed tile registers.

LLVM offers two forms: the `.internal` intrinsics on `x86_amx` values, whose registers and
tile configuration LLVM's X86 passes choose, and the plain ones, which name a register by
an immediate and leave the configuration to the program. The dialect's ops name registers
(the dot lowering allocates them: convert_triton_to_tcpu/dot.py), so they map one to one
on the plain form:

  tcpu.tile_config   llvm.x86.ldtilecfg of a constant: palette 1, tiles 0..7 each 16 rows
                     of 64 bytes
  tcpu.tile_zero     llvm.x86.tilezero(tile)
  tcpu.tile_load     llvm.x86.tileloadd64(tile, address, row stride in bytes)
  tcpu.tile_store    llvm.x86.tilestored64(tile, address, row stride in bytes)
  tcpu.tile_dot      llvm.x86.tdpbf16ps(acc, a, b) (kind "bf16"), llvm.x86.tdpbssd (kind "ss":
                     int8 x int8 -> i32)
  tcpu.tile_release  llvm.x86.tilerelease

The intrinsics read and write memory as far as LLVM knows (no attributes), so they stay
ordered with the loads and stores around them. The process must hold the OS's permission
for the tile state before the first tile instruction runs (`triton_cpu.amx`): a module that
configures tiles defines the global `triton_cpu.amx.EXPORTED_MARK`, which the driver looks
for when it loads the kernel.
"""
from llvmlite import ir

from triton_cpu.amx import EXPORTED_MARK

from . import cgutils as cg

ROWS, COLSB, TILES = 16, 64, 8

_DOTS = {"bf16": "tdpbf16ps", "ss": "tdpbssd"}


def config_bytes() -> bytes:
    """ldtilecfg's 64-byte operand: palette 1, start row 0, then the bytes per row of the 16
    tiles (16-bit each) and their rows (8-bit each); tiles past TILES unused (0)."""
    colsb = [COLSB] * TILES + [0] * (16 - TILES)
    rows = [ROWS] * TILES + [0] * (16 - TILES)
    head = bytes([1, 0]) + bytes(14)
    return head + b"".join(c.to_bytes(2, "little") for c in colsb) + bytes(rows)


def _config_global(module: ir.Module) -> ir.GlobalVariable:
    name = ".tcpu.tile_config"
    g = module.globals.get(name)
    if g is None:
        data = config_bytes()
        t = ir.ArrayType(cg.I8, len(data))
        g = ir.GlobalVariable(module, t, name=name)
        g.global_constant = True
        g.linkage = "private"
        g.align = 64
        g.initializer = ir.Constant(t, bytearray(data))
        mark = ir.GlobalVariable(module, cg.I8, name=EXPORTED_MARK)
        mark.global_constant = True
        mark.initializer = ir.Constant(cg.I8, 1)
    return g


def _call(b: ir.IRBuilder, name: str, args):
    fn = cg.declare(b.module, name, cg.VOID, [cg.PTR if isinstance(a.type, ir.PointerType) else a.type for a in args])
    b.call(fn, args)


def _tile(n: int) -> ir.Constant:
    assert 0 <= n < TILES, n
    return ir.Constant(cg.I8, n)


def config(b: ir.IRBuilder):
    _call(b, "llvm.x86.ldtilecfg", [_config_global(b.module)])


def release(b: ir.IRBuilder):
    _call(b, "llvm.x86.tilerelease", [])


def zero(b: ir.IRBuilder, tile: int):
    _call(b, "llvm.x86.tilezero", [_tile(tile)])


def load(b: ir.IRBuilder, tile: int, address: ir.Value, stride_bytes: int):
    _call(b, "llvm.x86.tileloadd64", [_tile(tile), address, ir.Constant(cg.I64, stride_bytes)])


def store(b: ir.IRBuilder, tile: int, address: ir.Value, stride_bytes: int):
    _call(b, "llvm.x86.tilestored64", [_tile(tile), address, ir.Constant(cg.I64, stride_bytes)])


def dot(b: ir.IRBuilder, kind: str, acc: int, a: int, bt: int):
    _call(b, f"llvm.x86.{_DOTS[kind]}", [_tile(acc), _tile(a), _tile(bt)])
