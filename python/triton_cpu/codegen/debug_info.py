"""DWARF line tables for kernels: what lets gdb break on `kernel.py:31` and perf attribute
samples to kernel source lines.

The lowering stamps every TritonCPU op with the source location of the TTIR op it came
from (convert_triton_to_tcpu.core: `FuncLowering.at`); here each function gets a
DISubprogram at its `def` line and each instruction the DILocation of the op it was
emitted for: the user's frame of that location (Triton's own library frames, e.g. the
body of an inlined `tl.max`, are skipped, as in error messages). Ops without a location
keep the previous one. Locations in another file than the function's (a @jit helper
from another module, inlined) get a DILexicalBlockFile scope.

The compile unit is `emissionKind: LineTablesOnly`: line tables and function scopes,
no variables or types (kernel values live in vector registers; there is nothing useful
to describe).
"""
import os

from llvmlite import ir

from triton_cpu.dialects.ttir import location_frames, user_location


class DebugInfo:
    """Debug metadata of one LLVM module."""

    def __init__(self, module: ir.Module):
        self.module = module
        self.files: dict[str, ir.DIValue] = {}
        self.cu = None
        self._subroutine_type = None

    def file(self, path: str):
        f = self.files.get(path)
        if f is None:
            directory, name = os.path.split(path)
            f = self.module.add_debug_info("DIFile", {"filename": name, "directory": directory or "."})
            self.files[path] = f
        return f

    def _unit(self, path: str):
        if self.cu is None:
            m = self.module
            self.cu = m.add_debug_info("DICompileUnit", {
                "language": ir.DIToken("DW_LANG_Python"), "file": self.file(path), "producer": "triton-cpu",
                "isOptimized": True, "runtimeVersion": 0, "emissionKind": ir.DIToken("LineTablesOnly"),
            }, is_distinct=True)
            m.add_named_metadata("llvm.dbg.cu", self.cu)
            i32 = ir.IntType(32)
            # DWARF 4: with 5, LLVM's assembly names the root file `.file 0` and may still
            # emit `.loc 1 0 0` (line 0) without a `.file 1`, which GNU as rejects
            # (upstream test_core's test_cat_nd hit it).
            m.add_named_metadata("llvm.module.flags", [i32(7), "Dwarf Version", i32(4)])
            m.add_named_metadata("llvm.module.flags", [i32(2), "Debug Info Version", i32(3)])
            self._subroutine_type = m.add_debug_info("DISubroutineType", {"types": m.add_metadata([])})
        return self.cu

    def subprogram(self, fn: ir.Function, name: str, func_op) -> "FunctionDebugInfo | None":
        """The scope of one function, at the location of its `tt.func` (None when it has none)."""
        frame = user_location(func_op)
        if frame is None:
            return None
        path, line, _ = frame
        unit = self._unit(path)
        sp = self.module.add_debug_info("DISubprogram", {
            "name": name, "linkageName": fn.name, "scope": self.file(path), "file": self.file(path),
            "line": line, "type": self._subroutine_type, "scopeLine": line, "unit": unit,
            "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized"),
        }, is_distinct=True)
        fn.set_metadata("dbg", sp)
        return FunctionDebugInfo(self, sp, path, line)


class FunctionDebugInfo:
    def __init__(self, di: DebugInfo, sp, path: str, line: int):
        self.di = di
        self.sp = sp
        self.path = path
        self.scopes = {path: sp}
        self.cache: dict = {}
        self.entry = self._location(path, line, 0)

    def _scope(self, path: str):
        s = self.scopes.get(path)
        if s is None:
            s = self.di.module.add_debug_info("DILexicalBlockFile", {
                "scope": self.sp, "file": self.di.file(path), "discriminator": 0})
            self.scopes[path] = s
        return s

    def _location(self, path: str, line: int, col: int):
        return self.di.module.add_debug_info("DILocation", {"line": line, "column": col, "scope": self._scope(path)})

    def location(self, op):
        """The DILocation of `op`, or None when it has no source location."""
        loc = op.location
        hit = self.cache.get(loc)
        if hit is None and loc not in self.cache:
            frame = user_location(op) if location_frames(loc) else None
            hit = self._location(*frame) if frame else None
            self.cache[loc] = hit
        return hit
