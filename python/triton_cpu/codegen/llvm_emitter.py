"""Emits LLVM IR (llvmlite) from TritonCPU IR.

Each `func.func` becomes an LLVM function. The kernel (public, without results) has the
fixed signature of include/triton_cpu/runtime.h that the generic launcher calls,
`<name>(void **args, pids..., grid...)`, and loads its arguments from that array at entry;
a device function takes its arguments, then program id x, y, z and grid x, y, z (i32).

Semantics chosen where LLVM leaves them undefined (a GPU does not trap):
  - integer division and remainder by zero give 0 for the quotient and the
    dividend for the remainder; INT_MIN / -1 gives INT_MIN, INT_MIN % -1 gives 0;
  - shifts by >= the bit width give 0 (arithmetic right shifts: the sign fill);
  - float -> int conversions saturate, NaN -> 0 (as PTX cvt.rzi does).
bf16 values live in registers as f32 rounded to bf16 precision (every op whose result is bf16
rounds it, so the low 16 bits of the f32 are zero); they are i16 in memory, the f32's high
half (`bf16_bits`).
"""
import platform
import struct
from math import frexp, isfinite, prod

import llvmlite.ir as ir
from xdsl.dialects.builtin import (
    BFloat16Type, DenseIntOrFPElementsAttr, Float16Type, Float32Type, Float64Type, FloatAttr, IndexType,
    IntegerAttr, IntegerType, VectorType,
)
from xdsl.ir import Block, Operation, SSAValue

from triton_cpu.analysis.axis_info import attr as _attr
from triton_cpu.codegen.debug_info import DebugInfo
from triton_cpu.codegen import amx_tiles, cgutils as cg, fp8, integer_division, uniform_division
from triton_cpu.analysis.loops import constant_bounds, trip_count
from triton_cpu.codegen.lane_masks import all_lanes_test, constant_splat, uniform_scalar
from triton_cpu.codegen.math_lib import INTRINSICS, MATH_OPS, VECTOR_FUNCTIONS, MathLib
from triton_cpu.dialects.compat import splat_value
from triton_cpu.dialects.tcpu import NO_CONTRACT, NO_UNROLL
from triton_cpu.errors import UnsupportedError

_CMPI = ["==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="]  # signed for 2..5, unsigned 6..9
_CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une",
         "uno", "true"]
# libm functions that are exact LLVM intrinsics (double names; the f variants map too).
_EXTERN_INTRINSICS = {
    "trunc": "llvm.trunc", "round": "llvm.round", "rint": "llvm.rint", "nearbyint": "llvm.nearbyint",
    "copysign": "llvm.copysign", "fabs": "llvm.fabs", "floor": "llvm.floor", "ceil": "llvm.ceil",
    "sqrt": "llvm.sqrt", "fma": "llvm.fma",
}
PID_ARGS = ("pid_x", "pid_y", "pid_z", "grid_x", "grid_y", "grid_z")



def _power_of_two(c) -> bool:
    """`c` is +-2^k with 2^-k a normal fp32 (LLVM's condition for x / c -> x * (1/c))."""
    if not isinstance(c, float) or c == 0 or not isfinite(c):
        return False
    m, e = frexp(abs(c))
    return m == 0.5 and -126 <= 1 - e <= 127


def is_bf16(t) -> bool:
    return isinstance(t, BFloat16Type) or (isinstance(t, VectorType) and isinstance(t.element_type, BFloat16Type))


def elem_of(t):
    return t.element_type if isinstance(t, VectorType) else t


class ModuleEmitter:
    def __init__(self, name: str, vector_bits: int, line_info: bool = False, fp_fusion: bool = True,
                 math: MathLib | None = None, reciprocal_division: bool = True):
        self.module = ir.Module(name=name)
        # enable_fp_fusion: fadd/fsub/fmul carry LLVM's `contract` flag, so that a multiply
        # feeding an add may become one fma (one rounding), as the GPU backends allow.
        self.fp_flags = ("contract", ) if fp_fusion else ()
        self.math = math or MathLib(vector_bits)
        self.vector_bits = vector_bits
        self.reciprocal_division = reciprocal_division
        self.x86 = platform.machine().lower() in ("x86_64", "amd64")
        self._strings = {}
        self.debug = DebugInfo(self.module) if line_info else None

    # -- types --------------------------------------------------------------
    def scalar_type(self, t, memory: bool = False) -> ir.Type:
        if isinstance(t, IntegerType):
            # Booleans are bytes in memory: a vector of i1 in memory would be packed bits,
            # which scalar accesses of the same buffer would not agree with.
            if memory and t.width.data == 1:
                return cg.I8
            return ir.IntType(t.width.data)
        if isinstance(t, IndexType):
            return cg.I64
        if isinstance(t, Float32Type):
            return cg.F32
        if isinstance(t, Float64Type):
            return cg.F64
        if isinstance(t, Float16Type):
            return cg.F16
        if isinstance(t, BFloat16Type):
            return cg.I16 if memory else cg.F32
        if fp8.format_of(t) is not None:
            return cg.I8  # the byte, in memory and in registers (codegen/fp8.py)
        if getattr(t, "name", "") == "tt.ptr":
            return cg.PTR
        raise UnsupportedError(f"triton-cpu: type {t} is not supported by the CPU backend yet")

    def type(self, t, memory: bool = False) -> ir.Type:
        if isinstance(t, VectorType):
            (n,) = t.get_shape()
            return ir.VectorType(self.scalar_type(t.element_type, memory), n)
        return self.scalar_type(t, memory)

    def cstring(self, text: str) -> ir.GlobalVariable:
        """A private constant NUL-terminated string (deduplicated)."""
        data = text.encode() + b"\0"
        key = ("str", data)
        g = self._strings.get(key)
        if g is None:
            t = ir.ArrayType(cg.I8, len(data))
            g = ir.GlobalVariable(self.module, t, name=f".str.{len(self._strings)}")
            g.global_constant = True
            g.linkage = "private"
            g.initializer = ir.Constant(t, bytearray(data))
            self._strings[key] = g
        return g

    def emit_global(self, op):
        """A read-only tensor constant (`memref.global`), row-major in its memory
        representation (booleans as bytes, bf16 as its 16-bit pattern)."""
        mt = op.properties["type"]
        elem_t = mt.element_type
        mem = self.scalar_type(elem_t, memory=True)
        values = op.properties["initial_value"].get_values()
        count = 1
        for d in mt.get_shape():
            count *= d
        if len(values) == 1:
            values = list(values) * count
        if isinstance(elem_t, BFloat16Type):
            elems = [ir.Constant(mem, _signed(_bf16_bits(float(x)), 16)) for x in values]
        elif isinstance(elem_t, IntegerType) and elem_t.width.data == 1:
            elems = [ir.Constant(mem, 1 if x else 0) for x in values]
        elif isinstance(mem, ir.IntType):
            elems = [ir.Constant(mem, _signed(int(x), mem.width)) for x in values]
        else:
            elems = [ir.Constant(mem, float(x)) for x in values]
        t = ir.ArrayType(mem, count)
        g = ir.GlobalVariable(self.module, t, name=op.properties["sym_name"].data)
        g.global_constant = True
        g.linkage = "private"
        g.align = 64
        g.initializer = ir.Constant(t, elems)
        g.type = cg.PTR  # llvmlite types globals as typed pointers; LLVM 22 has opaque ones

    # -- functions ----------------------------------------------------------
    def emit_module(self, module_op):
        for op in module_op.body.block.ops:
            if op.name == "memref.global":
                self.emit_global(op)
        funcs = [FunctionEmitter(self, op) for op in module_op.body.block.ops if op.name == "func.func"]
        for f in funcs:  # declare all first: a call may precede its callee
            f.declare()
        self.entries = {f.name for f in funcs if f.entry}
        for f in funcs:
            f.emit()
        return self.module


class FunctionEmitter:
    def __init__(self, me: ModuleEmitter, func_op: Operation):
        self.me = me
        self.op = func_op
        self.name = func_op.properties["sym_name"].data
        self.values: dict[SSAValue, ir.Value] = {}
        self.loop_headers: set[ir.Block] = set()  # their conditional branches are loops' own

    def declare(self):
        me = self.me
        ftype = self.op.properties["function_type"]
        self.arg_types = [me.type(t) for t in ftype.inputs.data]
        outs = [me.type(t) for t in ftype.outputs.data]
        ret = cg.VOID if not outs else outs[0] if len(outs) == 1 else ir.LiteralStructType(outs)
        vis = self.op.properties.get("sym_visibility")
        self.public = vis is None or vis.data == "public"
        # The kernel (public, returning nothing: every Triton kernel) has the launcher's fixed
        # signature (runtime.h) and loads its arguments from the array at entry: no separate
        # unpacking function, whose own trip through LLVM's per-function pipelines cost ~3 ms
        # of every compile. A public function with results (hand-written IR only) keeps the
        # direct signature.
        self.entry = self.public and not outs
        if self.entry:
            fnty = ir.FunctionType(cg.VOID, [cg.PTR] + [cg.I32] * 6)
        else:
            fnty = ir.FunctionType(ret, self.arg_types + [cg.I32] * 6)
        fn = ir.Function(me.module, fnty, self.name)
        fn.linkage = "external" if self.public else "internal"
        fn.attributes.add("nounwind")
        self.fn = fn

    def emit(self):
        me = self.me
        ftype = self.op.properties["function_type"]
        fn, arg_types = self.fn, self.arg_types
        entry = self.op.regions[0].blocks[0]
        self.builder = ir.IRBuilder(fn.append_basic_block("entry"))
        self.dbg = me.debug.subprogram(fn, self.name, self.op) if me.debug else None
        if self.dbg:
            self.builder.debug_metadata = self.dbg.entry
        if self.entry:
            fn.args[0].name = "args"
            self.pids = fn.args[1:]
            for a, value in zip(entry.args, self.unpack_arguments(fn.args[0], arg_types, ftype.inputs.data)):
                self.values[a] = value
        else:
            for a, la in zip(entry.args, fn.args):
                self.values[a] = la
            self.pids = fn.args[len(arg_types):]
        for la, n in zip(self.pids, PID_ARGS):
            la.name = n
        self.deferred = _deferred_values(self.op)
        self._remat_memo = None
        self.allocate_buffers()
        self.load_bounds_table()
        self.stream_budget = self.streaming_budget()
        # Unstructured control flow (cf.br/cf.cond_br, e.g. an early return): one basic
        # block per block, its arguments as phis.
        self.blocks = {}
        for blk in list(self.op.regions[0].blocks)[1:]:
            bb = fn.append_basic_block("bb")
            self.blocks[blk] = bb
            phis = ir.IRBuilder(bb)
            for arg in blk.args:
                self.values[arg] = phis.phi(me.type(arg.type))
        self.emit_block(entry)
        for blk, bb in self.blocks.items():
            self.builder.position_at_end(bb)
            self.emit_block(blk)

    def unpack_arguments(self, args, arg_types, ttypes):
        """The kernel's arguments, loaded at entry from the launcher's array: args[i] points
        at the i-th argument's slot (runtime.h)."""
        b = self.builder
        values = []
        for i, (t, tt) in enumerate(zip(arg_types, ttypes)):
            slot = b.load(b.gep(args, [ir.Constant(cg.I64, i)], source_etype=cg.PTR), typ=cg.PTR)
            if is_bf16(tt):
                values.append(self.bf16_to_f32(b, b.load(slot, typ=cg.I16)))
            else:
                values.append(b.load(slot, typ=t))
        return values

    # -- streaming stores (runtime.h's tcpu_streaming_bytes) -------------------
    # A launch streams when its grid size x the bytes one program's full-vector stores
    # write exceeds tcpu_streaming_bytes. Each store counts its vector's bytes times the
    # trip counts of the scf.for loops around it: loops with constant bounds (the lowering's
    # chunk loops) at compile time, the others (a persistent loop over rows) at run time,
    # from their bounds, in the loop's preheader. A store in a loop whose trip count is not
    # known (scf.while) counts once, one under an scf.if as if taken.
    def streaming_budget(self):
        """At entry (kept as `stream_budget`): tcpu_streaming_bytes / grid size as a double,
        the bytes one program must store for the launch to stream. Also sets
        `stream_static` (each may_stream store's bytes with run-time trip counts taken as
        1), `stream_total` (their sum) and `stream_loops` (the loops whose trip counts are
        counted at run time). None: no store may stream."""
        stores = [op for op in self.op.walk() if op.name == "tcpu.vstore" and "may_stream" in op.properties]
        if not stores or not self.me.x86:  # only x86's sfence orders them (launcher.c)
            return None
        self.stream_static, self.stream_loops, self.stream_trips = {}, set(), []
        for op in stores:
            vt = op.value.type
            n = _nbytes(self.me.scalar_type(vt.element_type, memory=True)) * prod(vt.get_shape())
            p = op.parent_op()
            while p is not None and p is not self.op:
                if p.name == "scf.for":
                    bounds = constant_bounds(p)
                    if bounds is None:
                        self.stream_loops.add(p)
                    else:
                        n *= trip_count(*bounds)
                p = p.parent_op()
            self.stream_static[op] = n
        self.stream_total = sum(self.stream_static.values())
        b = self.builder
        module = self.me.module
        limit = module.globals.get("tcpu_streaming_bytes")
        if limit is None:
            limit = ir.GlobalVariable(module, cg.I64, "tcpu_streaming_bytes")  # extern: the runtime's
        gx, gy, gz = (b.zext(p, cg.I64) for p in self.pids[3:6])
        grid = b.mul(b.mul(gx, gy), gz)
        return b.fdiv(b.uitofp(b.load(limit, typ=cg.I64), cg.F64), b.uitofp(grid, cg.F64))

    def push_trip_count(self, op, lb, ub, step) -> bool:
        """Before an scf.for of `stream_loops`: the product of its trip count (as a double,
        1 for a step that is not positive) and those of the run-time loops around it, for
        the stores inside. True when pushed (pop it after)."""
        if self.stream_budget is None or op not in self.stream_loops:
            return False
        b = self.builder
        lo, hi, st = (b.sitofp(v, cg.F64) for v in (lb, ub, step))
        n = cg.call_intrinsic(b, "llvm.ceil", [cg.F64], cg.F64, [b.fdiv(b.fsub(hi, lo), st)])
        n = cg.call_intrinsic(b, "llvm.maxnum", [cg.F64], cg.F64, [n, ir.Constant(cg.F64, 0.0)])
        positive = b.fcmp_ordered(">", st, ir.Constant(cg.F64, 0.0))
        n = b.select(positive, n, ir.Constant(cg.F64, 1.0))
        self.stream_trips.append(b.fmul(self.stream_trips[-1], n) if self.stream_trips else n)
        return True

    def streaming_condition(self, op):
        """Whether this store streams: the program's bytes, counted with the trip counts of
        the run-time loops around this store (the others' at 1), above the budget."""
        b = self.builder
        total = ir.Constant(cg.F64, float(self.stream_total))
        if self.stream_trips:
            extra = b.fmul(ir.Constant(cg.F64, float(self.stream_static[op])),
                           b.fsub(self.stream_trips[-1], ir.Constant(cg.F64, 1.0)))
            total = b.fadd(total, extra)
        return b.fcmp_ordered(">", total, self.stream_budget)

    def store_full(self, op, x, ptr, align: int):
        """A full vector store; non-temporal when the launch streams (`streaming_condition`)
        and the address is aligned to the vector register (movnt requires it)."""
        b = self.builder
        if self.stream_budget is None or "may_stream" not in op.properties:
            b.store(x, ptr, align=align)
            return
        need = min(_nbytes(x.type.element) * x.type.count, self.me.vector_bits // 8)

        def streaming_store():
            st = b.store(x, ptr, align=need)
            st.set_metadata("nontemporal", self.me.module.add_metadata([ir.Constant(cg.I32, 1)]))

        # The condition (loop-invariant, hoisted by LLVM) on a branch of its own, marked
        # unlikely (huge outputs only): LLVM unswitches loops on it, and the weights keep
        # the cached version of a loop first in the code, where gdb puts a breakpoint on
        # one of its lines.
        with b.if_else(self.streaming_condition(op), likely=False) as (streaming, cached):
            with streaming:
                if align >= need:
                    streaming_store()
                else:
                    low_bits = b.and_(b.ptrtoint(ptr, cg.I64), ir.Constant(cg.I64, need - 1))
                    with b.if_else(b.icmp_unsigned("==", low_bits, ir.Constant(cg.I64, 0))) as (aligned, other):
                        with aligned:
                            streaming_store()
                        with other:
                            b.store(x, ptr, align=align)
            with cached:
                b.store(x, ptr, align=align)

    # -- buffers (materialized tensors) ---------------------------------------
    STACK_LIMIT = 64 * 1024  # bytes of buffers kept on the stack; the rest goes to scratch

    def allocate_buffers(self):
        """Every memref.alloca gets its storage once, at function entry: small buffers on
        the stack, large ones in the runtime's per-thread scratch arena (one call)."""
        b = self.builder
        allocas = [op for op in self.op.walk() if op.name == "memref.alloca"]
        stack, scratch, offset = 0, [], 0
        for op in allocas:
            size = self._buffer_bytes(op.results[0].type)
            if stack + size <= self.STACK_LIMIT:
                stack += size
                slot = b.alloca(ir.ArrayType(cg.I8, size))
                slot.align = 64
                slot.type = cg.PTR  # llvmlite gives allocas a typed pointer; LLVM 22 has opaque ones
                self.values[op.results[0]] = slot
            else:
                scratch.append((op, offset))
                offset += size
        self._place_panel_caches()
        if scratch:
            fn = cg.declare(self.me.module, "tcpu_scratch", cg.PTR, [cg.I64])
            base = b.call(fn, [ir.Constant(cg.I64, offset)])
            for op, off in scratch:
                self.values[op.results[0]] = b.gep(base, [ir.Constant(cg.I64, off)], source_etype=cg.I8)

    def _buffer_bytes(self, mt) -> int:
        """Bytes of a static memref, rounded up to 64."""
        size = _nbytes(self.me.scalar_type(mt.element_type, memory=True))
        for d in mt.get_shape():
            size *= d
        return (size + 63) & ~63

    def _place_panel_caches(self):
        """The tcpu.panel_cache ops of the function share one per-thread cache
        (tcpu_panel_cache, one call at entry): all their tags first (zeroed at each
        launch), then all their data, each at its own offset."""
        ops = [op for op in self.op.walk() if op.name == "tcpu.panel_cache"]
        if not ops:
            return
        sizes = [(self._buffer_bytes(op.tags.type), self._buffer_bytes(op.data.type)) for op in ops]
        tag_bytes = sum(t for t, _ in sizes)
        total = tag_bytes + sum(d for _, d in sizes)
        b = self.builder
        fn = cg.declare(self.me.module, "tcpu_panel_cache", cg.PTR, [cg.I64, cg.I64])
        base = b.call(fn, [ir.Constant(cg.I64, tag_bytes), ir.Constant(cg.I64, total)])
        tag_off, data_off = 0, tag_bytes
        for op, (t, d) in zip(ops, sizes):
            self.values[op.tags] = b.gep(base, [ir.Constant(cg.I64, tag_off)], source_etype=cg.I8)
            self.values[op.data] = b.gep(base, [ir.Constant(cg.I64, data_off)], source_etype=cg.I8)
            tag_off += t
            data_off += d

    # -- bounds-checked mode (transforms/insert_bounds_checks.py) ----------------
    _ACCESS_KINDS = {"load": 0, "store": 1, "atomic": 2}  # TCPU_ACCESS_* of runtime.h
    MAX_CHECKED_ARGS = 1024  # the runtime's permissive table is this long (runtime.c)

    def load_bounds_table(self):
        """Once per program: [lo, hi) of each kernel argument that a check refers to,
        from the launch's table (tcpu_bounds_ranges)."""
        self.bounds = {}
        args = sorted({int(a) for op in self.op.walk() if op.name == "tcpu.bounds_check"
                       for a in op.args.get_values()})
        if not args:
            return
        if args[-1] >= self.MAX_CHECKED_ARGS:
            raise UnsupportedError.at(self.op, self.name, f"bounds checks on more than {self.MAX_CHECKED_ARGS} "
                                      "kernel arguments")
        b = self.builder
        fn = cg.declare(self.me.module, "tcpu_bounds_ranges", cg.PTR, [cg.I32])
        table = b.call(fn, [ir.Constant(cg.I32, args[-1] + 1)])
        for a in args:
            lo = b.load(b.gep(table, [ir.Constant(cg.I64, 2 * a)], source_etype=cg.I64), typ=cg.I64)
            hi = b.load(b.gep(table, [ir.Constant(cg.I64, 2 * a + 1)], source_etype=cg.I64), typ=cg.I64)
            self.bounds[a] = (lo, hi)

    def _inside(self, addrs, args, nbytes: int, n: int):
        """Per lane: [addr, addr + nbytes) lies in the storage of one of `args`."""
        b = self.builder
        t = ir.VectorType(cg.I64, n) if n > 1 else cg.I64
        ok = None
        for a in args:
            lo, hi = self.bounds[a]
            if n > 1:
                lo, hi = cg.splat(b, lo, n), cg.splat(b, hi, n)
            # addr >= lo, addr <= hi and hi - addr >= nbytes (no overflow at either end).
            inside = b.and_(b.and_(b.icmp_unsigned(">=", addrs, lo), b.icmp_unsigned("<=", addrs, hi)),
                            b.icmp_unsigned(">=", b.sub(hi, addrs), cg.const(t, nbytes)))
            ok = inside if ok is None else b.or_(ok, inside)
        return ok

    def op_tcpu_bounds_check(self, op):
        """The active lanes whose [address, address + elem_bytes) lies in the storage of one
        of the op's arguments; the others are reported (count, first address) to the launch."""
        b = self.builder
        lanes, eb = op.lanes.value.data, op.elem_bytes.value.data
        args = [int(a) for a in op.args.get_values()]
        ptr = self.v(op.ptr)
        active = self.v(op.mask) if op.mask is not None else None
        if isinstance(ptr.type, ir.VectorType):
            n = ptr.type.count
            addrs = b.ptrtoint(ptr, ir.VectorType(cg.I64, n))
            ok = self._inside(addrs, args, eb, n)
            self._report(op, ok, active, addrs, n)
        else:
            n = lanes
            addr0 = b.ptrtoint(ptr, cg.I64)
            if n == 1:
                ok = self._inside(addr0, args, eb, 1)
                self._report(op, ok, active, addr0, 1)
            else:
                # Contiguous lanes: when the whole run [addr0, addr0 + n * eb) is inside,
                # which is almost always, one scalar test decides for every lane.
                whole = self._inside(addr0, args, n * eb, 1)
                with b.if_else(whole, likely=True) as (fast, slow):
                    with fast:
                        fast_bb = b.block
                    with slow:
                        step = ir.Constant(ir.VectorType(cg.I64, n), [k * eb for k in range(n)])
                        addrs = b.add(cg.splat(b, addr0, n), step)
                        per_lane = self._inside(addrs, args, eb, n)
                        self._report(op, per_lane, active, addrs, n)
                        slow_bb = b.block
                ok = b.phi(ir.VectorType(cg.I1, n))
                ok.add_incoming(self._all_true(n), fast_bb)
                ok.add_incoming(per_lane, slow_bb)
        return ok if active is None else b.and_(active, ok)

    def _report(self, op, ok, active, addrs, n: int):
        """Calls tcpu_bounds_fail when an active lane is not `ok` (the first one's address,
        the number of such lanes)."""
        b = self.builder
        bad = b.not_(ok) if active is None else b.and_(active, b.not_(ok))
        any_bad = cg.call_intrinsic(b, "llvm.vector.reduce.or", [bad.type], cg.I1, [bad]) if n > 1 else bad
        with b.if_then(any_bad, likely=False):
            if n > 1:
                bits = b.bitcast(bad, ir.IntType(n))
                count = cg.call_intrinsic(b, "llvm.ctpop", [bits.type], bits.type, [bits])
                first = cg.call_intrinsic(b, "llvm.cttz", [bits.type], bits.type, [bits, ir.Constant(cg.I1, 1)])
                addr = b.extract_element(addrs, first)
                if n != 64:  # (wide windows of strided loads have more than 64 lanes)
                    count = b.zext(count, cg.I64) if n < 64 else b.trunc(count, cg.I64)
            else:
                count, addr = ir.Constant(cg.I64, 1), addrs
            fail = cg.declare(self.me.module, "tcpu_bounds_fail", cg.VOID,
                              [cg.I32, cg.I32, cg.I64, cg.I32, cg.I64, cg.PTR, cg.I32, cg.I32, cg.I32, cg.I32])
            b.call(fail, [ir.Constant(cg.I32, self._ACCESS_KINDS[op.kind.data]),
                          ir.Constant(cg.I32, int(op.args.get_values()[0])), addr,
                          ir.Constant(cg.I32, op.elem_bytes.value.data), count, self.me.cstring(op.file.data),
                          ir.Constant(cg.I32, op.line.value.data), *self.pids[:3]])

    def op_memref_alloca(self, op):
        return self.values[op.results[0]]

    def op_memref_get_global(self, op):
        return self.me.module.get_global(op.name_.string_value())

    def _element_address(self, ref: SSAValue, indices):
        """Row-major address of ref[indices]."""
        b = self.builder
        mt = ref.type
        shape = mt.get_shape()
        elem = self.me.scalar_type(mt.element_type, memory=True)
        lin = None
        stride = 1
        for d, i in reversed(list(zip(shape, indices))):
            term = self.v(i)
            if stride != 1:
                term = b.mul(term, ir.Constant(cg.I64, stride))
            lin = term if lin is None else b.add(lin, term)
            stride *= d
        if lin is None:
            lin = ir.Constant(cg.I64, 0)
        return b.gep(self.v(ref), [lin], source_etype=elem)

    def op_memref_load(self, op):
        ref = op.operands[0]
        vt = op.results[0].type
        mem_t = self.me.scalar_type(ref.type.element_type, memory=True)
        raw = self.builder.load(self._element_address(ref, op.operands[1:]), typ=mem_t, align=_nbytes(mem_t))
        return self._load_value(raw, vt)

    def op_memref_store(self, op):
        value, ref = op.operands[0], op.operands[1]
        x = self._store_value(self.v(value), value.type)
        self.builder.store(x, self._element_address(ref, op.operands[2:]), align=_nbytes(x.type))

    def op_vector_load(self, op):
        ref = op.operands[0]
        vt = op.results[0].type
        mem_t = self.me.type(vt, memory=True)
        raw = self.builder.load(self._element_address(ref, op.operands[1:]), typ=mem_t,
                                align=_nbytes(mem_t.element))
        return self._load_value(raw, vt)

    def op_vector_store(self, op):
        value, ref = op.operands[0], op.operands[1]
        x = self._no_masked_store(self._store_value(self.v(value), value.type))
        self.builder.store(x, self._element_address(ref, op.operands[2:]), align=_nbytes(x.type.element))

    def op_vector_extract(self, op):
        pos = op.properties["static_position"].get_values()
        return self.builder.extract_element(self.v(op.operands[0]), ir.Constant(cg.I32, pos[0]))

    def op_vector_insert(self, op):
        pos = op.properties["static_position"].get_values()
        return self.builder.insert_element(self.v(op.operands[1]), self.v(op.operands[0]),
                                           ir.Constant(cg.I32, pos[0]))

    def op_vector_shuffle(self, op):
        mask = [int(x) for x in op.properties["mask"].get_values()]
        a, c = self.v(op.operands[0]), self.v(op.operands[1])
        return self.builder.shuffle_vector(a, c, ir.Constant(ir.VectorType(cg.I32, len(mask)), mask))

    # -- blocks and control flow ---------------------------------------------
    def emit_block(self, block: Block):
        for op in block.ops:
            self.emit_op(op)

    def v(self, value: SSAValue) -> ir.Value:
        if value in self.deferred:
            return self._remat(value)
        return self.values[value]

    def emit_op(self, op: Operation):
        if op.results and op.results[0] in self.deferred:
            return  # emitted where it is used (_remat)
        if self.dbg:
            loc = self.dbg.location(op)
            if loc is not None:
                self.builder.debug_metadata = loc
        name = op.name
        handler = getattr(self, "op_" + name.replace(".", "_"), None)
        if handler is not None:
            res = handler(op)
        elif name in MATH_OPS:
            res = self.math_call(op, MATH_OPS[name])
        elif name in INTRINSICS:
            res = self.intrinsic(op, INTRINSICS[name])
        else:
            raise UnsupportedError.at(op, self.name, f"operation '{name}' (in TritonCPU IR)")
        if res is not None:
            if isinstance(res, (list, tuple)):
                for r, x in zip(op.results, res):
                    self.values[r] = x
            else:
                self.values[op.results[0]] = res

    def op_func_return(self, op):
        vals = [self.v(x) for x in op.operands]
        if not vals:
            self.builder.ret_void()
        elif len(vals) == 1:
            self.builder.ret(vals[0])
        else:
            agg = ir.Constant(self.fn.function_type.return_type, ir.Undefined)
            for k, x in enumerate(vals):
                agg = self.builder.insert_value(agg, x, k)
            self.builder.ret(agg)

    def op_func_call(self, op):
        callee = self.me.module.globals[op.properties["callee"].root_reference.data]
        if callee.name in self.me.entries:
            raise NotImplementedError(f"'{self.name}' calls the kernel '{callee.name}', whose entry has the launcher's signature")
        r = self.builder.call(callee, [self.v(x) for x in op.operands] + list(self.pids))
        if len(op.results) <= 1:
            return r if op.results else None
        return [self.builder.extract_value(r, k) for k in range(len(op.results))]

    def _branch_to(self, blk, args):
        for arg, x in zip(blk.args, args):
            self.values[arg].add_incoming(self.v(x), self.builder.block)
        return self.blocks[blk]

    def op_cf_br(self, op):
        self.builder.branch(self._branch_to(op.successor, op.arguments))

    def op_cf_cond_br(self, op):
        if op.then_block is op.else_block:
            # Both edges to one block: a phi takes one value per predecessor, so pick the
            # arguments with selects and branch once.
            b = self.builder
            cond = self.v(op.cond)
            args = [b.select(cond, self.v(t), self.v(e)) for t, e in zip(op.then_arguments, op.else_arguments)]
            blk = op.then_block
            for arg, x in zip(blk.args, args):
                self.values[arg].add_incoming(x, b.block)
            b.branch(self.blocks[blk])
            return
        then_bb = self._branch_to(op.then_block, op.then_arguments)
        else_bb = self._branch_to(op.else_block, op.else_arguments)
        self.builder.cbranch(self.v(op.cond), then_bb, else_bb)

    def op_scf_yield(self, op):
        return None  # read by the parent

    def op_scf_for(self, op):
        b = self.builder
        lb, ub, step = (self.v(x) for x in op.operands[:3])
        inits = [self.v(x) for x in op.operands[3:]]
        body = op.regions[0].blocks[0]
        pre = b.block
        first_block = len(b.function.blocks)  # the loop's own blocks and its body's follow
        header = b.append_basic_block("for.header")
        loop = b.append_basic_block("for.body")
        exit_ = b.append_basic_block("for.exit")
        self.loop_headers.add(header)
        pushed = self.push_trip_count(op, lb, ub, step)  # in the preheader: no new block
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(lb.type, "iv")
        iv.add_incoming(lb, pre)
        phis = []
        for x in inits:
            p = b.phi(x.type)
            p.add_incoming(x, pre)
            phis.append(p)
        b.cbranch(b.icmp_signed("<", iv, ub), loop, exit_)
        b.position_at_end(loop)
        self.values[body.args[0]] = iv
        for a, p in zip(body.args[1:], phis):
            self.values[a] = p
        self.emit_block(body)
        yielded = [self.v(x) for x in body.last_op.operands]
        nxt = b.add(iv, step)
        latch = b.block
        iv.add_incoming(nxt, latch)
        for p, y in zip(phis, yielded):
            p.add_incoming(y, latch)
        branches = any(isinstance(bb.terminator, (ir.ConditionalBranch, ir.SwitchInstr)) and bb not in self.loop_headers
                       for bb in b.function.blocks[first_block:])
        self._loop_hints(op, b.branch(header), no_unroll=branches or NO_UNROLL in op.attributes,
                         no_vectorize=_scalar_min_max_recurrence(body))
        b.position_at_end(exit_)
        if pushed:
            self.stream_trips.pop()
        return phis

    def _loop_hints(self, op, backedge, no_unroll=False, no_vectorize=False):
        """LLVM loop metadata on the back edge of `op`'s loop.

        `tl.range(..., disable_licm=True)` / `tl.condition(..., disable_licm=True)` arrive as
        an `llvm.loop_annotation` attribute (unregistered: its text names a `licm` alias,
        which Triton 3.9 only emits to disable LICM): `llvm.licm.disable`.

        `no_unroll` (an scf.for whose body, inner loops included, branches other than on
        a loop's own condition: a full chunk or a masked one, exp's fast or full path, an
        scf.if): `llvm.loop.unroll.disable`. Unrolling such a loop copies every branch of
        its body and removes only the loop's own increment and compare, a few
        instructions next to dozens; LLVM's O3 fully unrolls the short
        chunk loops of Inductor's kernels (XBLOCK / lanes trips), which made optimizing and
        code generation a third slower. Measured on the 39 kernels of bench_inductor's
        "mlp train step" (Xeon, 512-bit vectors): LLVM's time per kernel 36.6 -> 27.3 ms,
        its IR 26 -> 16 KB; no measured change in the run time of the tutorials' kernels,
        FlagGems' pointwise ops (exp, silu, gelu) or the tutorial matmul. A loop around
        straight-line inner loops is left to LLVM: the matmul micro-kernel's K loop is a
        loop of prefetch groups around S straight-line steps, which O3 unrolls whole;
        kept a loop, 64 x 128 x 32 at 256-bit vectors was 4% slower (15.0-15.2 ->
        15.7-15.8 ms).

        A loop the conversion marked `tcpu.no_unroll` (NO_UNROLL: its passes over a tile, a
        materialization, a store or a reduction's chunks, not a dot's loops) gets the same
        hint. Unrolled whole, the passes of a row kernel without masks (a layer norm whose row
        is its block, 1024 fp32: the mean's pass, the variance's, the output's) became
        straight-line code in which LLVM's GVN took the later passes' loads of the row from
        the first pass's: 64 vector values live across the passes, spilled to the stack, and
        the row's loads issued out of address order. Kept loops, the passes read the row
        again from the L1, in order (as masked rows, whose chunks branch, always did). Zen 4,
        2 threads, 4096 x 1024, interleaved after do_bench's flush: 0.705 -> 0.587 ms (a row
        copy 0.52); RMSNorm 0.62 -> 0.58; rows in the L1, one thread: 130 -> 123 ns per row;
        tutorials 02/05 (masked rows), Inductor's models and the matmuls within noise.

        `no_vectorize` (a scalar fp minnum/maxnum reduction, _scalar_min_max_recurrence):
        `llvm.loop.vectorize.enable` false and `llvm.loop.interleave.count` 1. LLVM 22's loop
        vectorizer turns such a loop into vector iterations that exit early on a NaN, and its
        exit block skips the scalar iterations left over when no NaN was seen
        (llvm/llvm-project#209159): `tl.max(-x)` of a [64, 1] tile, whose lanes the lowering
        keeps scalar, missed its last 12 elements (fuzz seeds 270141 and 270454)."""
        ann = op.attributes.get("llvm.loop_annotation")
        m = self.me.module
        props = []
        if ann is not None and "licm" in str(ann):
            props.append(["llvm.licm.disable"])
        if no_unroll:
            props.append(["llvm.loop.unroll.disable"])
        if no_vectorize:
            props.append(["llvm.loop.vectorize.enable", ir.Constant(ir.IntType(1), 0)])
            props.append(["llvm.loop.interleave.count", ir.Constant(ir.IntType(32), 1)])
        if not props:
            return
        # A loop ID refers to itself and is its loop's own: built outside add_metadata's
        # cache, which would hand the same node to every loop with the same properties.
        nodes = [m.add_metadata([ir.MetaDataString(m, name), *args]) for name, *args in props]
        loop = ir.values.MDValue(m, nodes, str(len(m.metadata)))
        loop.operands = (loop,) + loop.operands
        backedge.set_metadata("llvm.loop", loop)

    def op_scf_condition(self, op):
        return None  # read by scf.while

    def op_scf_while(self, op):
        b = self.builder
        inits = [self.v(x) for x in op.operands]
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        pre = b.block
        header = b.append_basic_block("while.before")
        self.loop_headers.add(header)
        body = b.append_basic_block("while.after")
        exit_ = b.append_basic_block("while.exit")
        b.branch(header)
        b.position_at_end(header)
        phis = []
        for arg, x in zip(before.args, inits):
            p = b.phi(x.type)
            p.add_incoming(x, pre)
            self.values[arg] = p
            phis.append(p)
        self.emit_block(before)
        cond_op = before.last_op
        forwarded = [self.v(x) for x in cond_op.operands[1:]]
        b.cbranch(self.v(cond_op.operands[0]), body, exit_)
        b.position_at_end(body)
        for arg, x in zip(after.args, forwarded):
            self.values[arg] = x
        self.emit_block(after)
        for p, y in zip(phis, (self.v(x) for x in after.last_op.operands)):
            p.add_incoming(y, b.block)
        self._loop_hints(op, b.branch(header))
        b.position_at_end(exit_)
        # The condition's values are defined in the header, which dominates the exit.
        return forwarded

    def op_scf_if(self, op):
        b = self.builder
        cond = self.v(op.operands[0])
        then_bb = b.append_basic_block("if.then")
        else_bb = b.append_basic_block("if.else")
        merge = b.append_basic_block("if.end")
        b.cbranch(cond, then_bb, else_bb)
        incoming = []
        for region, bb in zip(op.regions, (then_bb, else_bb)):
            b.position_at_end(bb)
            vals = []
            if region.blocks:
                blk = region.blocks[0]
                self.emit_block(blk)
                if blk.last_op is not None and blk.last_op.name == "scf.yield":
                    vals = [self.v(x) for x in blk.last_op.operands]
            incoming.append((vals, b.block))
            b.branch(merge)
        b.position_at_end(merge)
        results = []
        for i, r in enumerate(op.results):
            p = b.phi(self.me.type(r.type))
            for vals, bb in incoming:
                p.add_incoming(vals[i], bb)
            results.append(p)
        return results

    # -- constants and arith ------------------------------------------------
    def op_arith_constant(self, op):
        attr = _attr(op, "value")
        t = self.me.type(op.results[0].type)
        if isinstance(attr, IntegerAttr):
            return ir.Constant(t, attr.value.data)
        if isinstance(attr, FloatAttr):
            return ir.Constant(t, self.round_const(attr.value.data, op.results[0].type))
        if isinstance(attr, DenseIntOrFPElementsAttr):
            elem = t.element

            def lane(x):
                return ir.Constant(elem, int(x) if isinstance(elem, ir.IntType) else
                                   self.round_const(float(x), op.results[0].type))
            first = splat_value(attr)  # one value, bit for bit, in every lane (however spelled)
            if first is not None:
                return cg.splat_const(t, lane(first))
            lanes = [lane(x) for x in attr.get_values()]
            return ir.Constant(t, lanes * (t.count // len(lanes)))
        raise UnsupportedError.at(op, self.name, f"constant {attr}")

    @staticmethod
    def round_const(x: float, t) -> float:
        if is_bf16(t):
            return struct.unpack("<f", struct.pack("<I", _bf16_bits(x) << 16))[0]
        return x

    def _binary(self, op):
        return self.v(op.operands[0]), self.v(op.operands[1])

    def _fbin(method):
        def f(self, op):
            a, b = self._binary(op)
            flags = () if NO_CONTRACT in op.attributes else self.me.fp_flags
            r = getattr(self.builder, method)(a, b, flags=flags)
            return self.round_bf16(r, op)
        return f

    def _ibin(method):
        def f(self, op):
            a, b = self._binary(op)
            return getattr(self.builder, method)(a, b)
        return f

    op_arith_addf = _fbin("fadd")
    op_arith_subf = _fbin("fsub")
    op_arith_mulf = _fbin("fmul")

    def hide_divisor(self, divisor_op, divisor):
        """`divisor` (the LLVM value of the xDSL value `divisor_op`), through
        llvm.arithmetic.fence (no instruction) when it is an x86 vector that is not a splat of
        one non-zero constant. LLVM 22's instruction selection (TargetLowering's
        SimplifyDemandedVectorElts, shared by all targets; the fence is emitted on x86 only,
        the hosts this was seen and tested on) takes a lane of a vector fadd/fsub/fmul/fdiv/frem
        to be +0 when that lane is a known +0 in both operands: true for the first three, but
        0/0 is NaN. A select between that quotient and another vector then keeps those lanes wrong:
        fuzz seed 440655, `v / tl.where(tl.abs(v) < 0.25, 1.0, v)` with v loaded under
        `r < 1` (LLVM splits the division over the select, v / v in the zero lanes), and
        `tl.where(v == 0.0, v / 0.0, v)`, 0 where IEEE gives NaN. The fence hides what the
        divisor's lanes hold; a non-zero constant divisor keeps its folds (x / 2 -> x * 0.5)."""
        if not self.me.x86 or not isinstance(divisor.type, ir.VectorType):
            return divisor
        c = constant_splat(divisor_op)
        if c is not None and c != 0:
            return divisor
        return cg.call_intrinsic(self.builder, "llvm.arithmetic.fence", [divisor.type], divisor.type, [divisor])

    def _fenced_divisor(method):
        """fdiv/frem with the divisor hidden where LLVM would misjudge zero lanes
        (`hide_divisor`)."""
        def f(self, op):
            a, b = self._binary(op)
            b = self.hide_divisor(op.operands[1], b)
            flags = () if NO_CONTRACT in op.attributes else self.me.fp_flags
            return self.round_bf16(getattr(self.builder, method)(a, b, flags=flags), op)
        return f

    _fdiv = _fenced_divisor("fdiv")

    def op_arith_divf(self, op):
        t = op.results[0].type
        # Vectors narrower than a register keep the divide: it is cheaper there (FlagGems'
        # 4-lane softmax tiles: 5.4 -> 6.5 ms through the reciprocal, Emerald Rapids).
        if self.me.reciprocal_division and isinstance(t, VectorType) and isinstance(t.element_type, Float32Type) \
                and prod(t.get_shape()) * 32 >= self.me.vector_bits:
            divisor = uniform_scalar(op.operands[1], self.v)  # a broadcast or splat divisor
            # +-2^k: LLVM turns the fdiv into a multiply by the exact reciprocal, one
            # instruction where the reciprocal path takes a multiply, two FMAs and a test.
            if divisor is not None and not _power_of_two(constant_splat(op.operands[1])):
                return uniform_division.divide(self.builder, self.v(op.operands[0]), divisor,
                                               fallback=lambda: self._fdiv(op))
        return self._fdiv(op)

    op_arith_remf = _fenced_divisor("frem")
    op_arith_addi = _ibin("add")
    op_arith_subi = _ibin("sub")
    op_arith_muli = _ibin("mul")
    op_arith_andi = _ibin("and_")
    op_arith_ori = _ibin("or_")
    op_arith_xori = _ibin("xor")

    def op_arith_negf(self, op):
        return self.builder.fneg(self.v(op.operands[0]))

    def _safe_div(self, op, signed: bool, rem: bool):
        b = self.builder
        x, y = self._binary(op)
        divisor = uniform_scalar(op.operands[1], self.v) if isinstance(x.type, ir.VectorType) else None
        if integer_division.applies(x, divisor):  # a run-time divisor every lane shares
            return integer_division.divide(b, x, divisor, signed, rem, lambda: self._lane_div(x, y, signed, rem))
        return self._lane_div(x, y, signed, rem)

    def _lane_div(self, x, y, signed: bool, rem: bool):
        """x / y or x % y as LLVM divides (a vector lane by lane), with the backend's results
        where LLVM's are undefined."""
        b = self.builder
        t = x.type
        zero = cg.const(t, 0)
        is_zero = b.icmp_unsigned("==", y, zero)
        bad = is_zero
        if signed:
            width = cg.scalar_of(t).width
            int_min = cg.const(t, -(1 << (width - 1)))
            overflow = b.and_(b.icmp_signed("==", x, int_min), b.icmp_signed("==", y, cg.const(t, -1)))
            bad = b.or_(bad, overflow)
        safe_y = b.select(bad, cg.const(t, 1), y)
        if rem:
            r = b.srem(x, safe_y) if signed else b.urem(x, safe_y)
            # x % 0 = x; INT_MIN % -1 = 0 (= x % 1).
            return b.select(is_zero, x, r)
        q = b.sdiv(x, safe_y) if signed else b.udiv(x, safe_y)
        # x / 0 = 0; INT_MIN / -1 = INT_MIN (= x / 1).
        return b.select(is_zero, zero, q)

    def op_arith_divsi(self, op):
        return self._safe_div(op, True, False)

    def op_arith_divui(self, op):
        return self._safe_div(op, False, False)

    def op_arith_remsi(self, op):
        return self._safe_div(op, True, True)

    def op_arith_remui(self, op):
        return self._safe_div(op, False, True)

    def _rounded_div(self, op, up: bool):
        """Signed division rounded toward +inf (`up`) or -inf, from the truncating one."""
        b = self.builder
        x, y = self._binary(op)
        q = self._safe_div(op, True, False)
        r = self._safe_div(op, True, True)
        t = x.type
        zero = cg.const(t, 0)
        same_sign = b.icmp_signed("==", b.icmp_signed("<", x, zero), b.icmp_signed("<", y, zero))
        inexact = b.icmp_signed("!=", r, zero)
        if up:
            return b.add(q, b.zext(b.and_(inexact, same_sign), t))
        return b.sub(q, b.zext(b.and_(inexact, b.not_(same_sign)), t))

    def op_arith_ceildivsi(self, op):
        return self._rounded_div(op, up=True)

    def op_arith_floordivsi(self, op):
        return self._rounded_div(op, up=False)

    def _shift(self, op, kind):
        b = self.builder
        x, y = self._binary(op)
        t = x.type
        width = cg.scalar_of(t).width
        too_big = b.icmp_unsigned(">=", y, cg.const(t, width))
        safe = b.select(too_big, cg.const(t, 0), y)
        if kind == "shl":
            return b.select(too_big, cg.const(t, 0), b.shl(x, safe))
        if kind == "lshr":
            return b.select(too_big, cg.const(t, 0), b.lshr(x, safe))
        return b.ashr(x, b.select(too_big, cg.const(t, width - 1), y))

    def op_arith_shli(self, op):
        return self._shift(op, "shl")

    def op_arith_shrui(self, op):
        return self._shift(op, "lshr")

    def op_arith_shrsi(self, op):
        return self._shift(op, "ashr")

    def op_arith_cmpi(self, op):
        a, c = self._binary(op)
        p = _attr(op, "predicate").value.data
        if p <= 1:
            return self.builder.icmp_unsigned(_CMPI[p], a, c)
        if p <= 5:
            return self.builder.icmp_signed(_CMPI[p], a, c)
        return self.builder.icmp_unsigned(_CMPI[p], a, c)

    def op_arith_cmpf(self, op):
        a, c = self._binary(op)
        p = _CMPF[_attr(op, "predicate").value.data]
        t = cg.I1 if not isinstance(a.type, ir.VectorType) else ir.VectorType(cg.I1, a.type.count)
        if p == "false":
            return cg.const(t, 0)
        if p == "true":
            return cg.const(t, 1)
        if p.startswith("o") or p == "ord":
            return self.builder.fcmp_ordered({"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=",
                                              "one": "!=", "ord": "ord"}[p], a, c)
        return self.builder.fcmp_unordered({"ueq": "==", "ugt": ">", "uge": ">=", "ult": "<", "ule": "<=",
                                            "une": "!=", "uno": "uno"}[p], a, c)

    def op_arith_select(self, op):
        c, x, y = (self.v(o) for o in op.operands)
        return self.builder.select(c, x, y)

    def _minmax(intr):
        def f(self, op):
            a, b = self._binary(op)
            return cg.call_intrinsic(self.builder, intr, [a.type], a.type, [a, b])
        return f

    op_arith_maxsi = _minmax("llvm.smax")
    op_arith_minsi = _minmax("llvm.smin")
    op_arith_maxui = _minmax("llvm.umax")
    op_arith_minui = _minmax("llvm.umin")
    op_arith_maxnumf = _minmax("llvm.maxnum")
    op_arith_minnumf = _minmax("llvm.minnum")
    op_arith_maximumf = _minmax("llvm.maximum")
    op_arith_minimumf = _minmax("llvm.minimum")

    # -- casts --------------------------------------------------------------
    def _dst(self, op):
        return self.me.type(op.results[0].type)

    def op_arith_extsi(self, op):
        return self.builder.sext(self.v(op.operands[0]), self._dst(op))

    def op_arith_extui(self, op):
        return self.builder.zext(self.v(op.operands[0]), self._dst(op))

    def op_arith_trunci(self, op):
        return self.builder.trunc(self.v(op.operands[0]), self._dst(op))

    def op_arith_index_cast(self, op):
        x = self.v(op.operands[0])
        dst = self._dst(op)
        sw, dw = cg.scalar_of(x.type).width, cg.scalar_of(dst).width
        if sw == dw:
            return x
        return self.builder.trunc(x, dst) if sw > dw else self.builder.sext(x, dst)

    def _float_cast(self, x, src_t, dst_t, rtz: bool = False):
        """Float to float, with bf16 (f32 in registers) and fp8 (bytes) handled."""
        b = self.builder
        src_fmt, dst_fmt = fp8.format_of(src_t), fp8.format_of(dst_t)
        if src_fmt is not None or dst_fmt is not None:
            f32_t = VectorType(Float32Type(), [x.type.count]) if isinstance(x.type, ir.VectorType) else Float32Type()
            if src_fmt is not None:
                x, src_t = fp8.to_f32(b, x, src_fmt), f32_t
            if dst_fmt is None:
                return self._float_cast(x, src_t, dst_t, rtz)
            return fp8.from_f32(b, self._float_cast(x, src_t, f32_t), dst_fmt, rtz)
        dst = self.me.type(dst_t)
        if x.type == dst:
            return self.round_bf16_value(x) if is_bf16(dst_t) else x
        src_w = _fbits(x.type)
        dst_w = _fbits(dst)
        r = b.fpext(x, dst) if dst_w > src_w else b.fptrunc(x, dst)
        return self.round_bf16_value(r) if is_bf16(dst_t) else r

    def op_arith_extf(self, op):
        return self._float_cast(self.v(op.operands[0]), op.operands[0].type, op.results[0].type)

    def op_arith_truncf(self, op):
        return self._float_cast(self.v(op.operands[0]), op.operands[0].type, op.results[0].type)

    def op_arith_sitofp(self, op):
        r = self.builder.sitofp(self.v(op.operands[0]), self._dst(op))
        return self.round_bf16(r, op)

    def op_arith_uitofp(self, op):
        r = self.builder.uitofp(self.v(op.operands[0]), self._dst(op))
        return self.round_bf16(r, op)

    def _fptoi(self, op, signed):
        x = self.v(op.operands[0])
        dst = self._dst(op)
        name = "llvm.fptosi.sat" if signed else "llvm.fptoui.sat"
        return cg.call_intrinsic(self.builder, name, [dst, x.type], dst, [x])

    def op_arith_fptosi(self, op):
        return self._fptoi(op, True)

    def op_arith_fptoui(self, op):
        return self._fptoi(op, False)

    def op_arith_bitcast(self, op):
        return self._bitcast(op)

    def op_tcpu_bitcast(self, op):
        return self._bitcast(op)

    def _bitcast(self, op):
        b = self.builder
        x = self.v(op.operands[0])
        src_t, dst_t = op.operands[0].type, op.results[0].type
        if is_bf16(src_t):
            # (Not rounding again lets LLVM fold a load's widening away.)
            x = self.bf16_bits(b, x)
        dst = self.me.type(dst_t, memory=True)
        if isinstance(cg.scalar_of(dst), ir.PointerType) != isinstance(cg.scalar_of(x.type), ir.PointerType):
            r = b.inttoptr(x, dst) if isinstance(cg.scalar_of(dst), ir.PointerType) else b.ptrtoint(x, dst)
        elif x.type == dst:
            r = x
        else:
            r = b.bitcast(x, dst)
        if is_bf16(dst_t):
            r = self.bf16_to_f32(b, r)
        return r

    # -- bf16 helpers -------------------------------------------------------
    @staticmethod
    def bf16_to_f32(b, bits):
        t = bits.type
        wide = b.shl(b.zext(bits, cg.with_scalar(t, cg.I32)), cg.const(cg.with_scalar(t, cg.I32), 16))
        return b.bitcast(wide, cg.with_scalar(t, cg.F32))

    @staticmethod
    def bf16_bits(b, x):
        """The 16-bit pattern of a bf16 value in a register: the high half of its f32, which
        every producer of a bf16 value has rounded (the low half is zero), so no rounding
        again; a NaN keeps its bits, as a GPU's load and store of a bf16 move them."""
        wide = cg.with_scalar(x.type, cg.I32)
        return b.trunc(b.lshr(b.bitcast(x, wide), cg.const(wide, 16)), cg.with_scalar(x.type, cg.I16))

    @staticmethod
    def f32_to_bf16_bits(b, x):
        """An f32 rounded to nearest even into a bf16 pattern (a NaN stays NaN, quieted)."""
        t32 = cg.with_scalar(x.type, cg.I32)
        bits = b.bitcast(x, t32)
        lsb = b.and_(b.lshr(bits, cg.const(t32, 16)), cg.const(t32, 1))
        rounded = b.add(bits, b.add(lsb, cg.const(t32, 0x7FFF)))
        r = FunctionEmitter._nan_quieted(b, x, bits, rounded)
        return b.trunc(b.lshr(r, cg.const(t32, 16)), cg.with_scalar(x.type, cg.I16))

    @staticmethod
    def _nan_quieted(b, x, bits, otherwise):
        """The i32 pattern `bits` of f32 `x` with the quiet bit set where x is a NaN, so that
        its high half, the bf16, is a NaN too (a payload all in the low half would leave an
        infinity); `otherwise` elsewhere."""
        return b.select(b.fcmp_unordered("uno", x, x), b.or_(bits, cg.const(bits.type, 0x400000)), otherwise)

    def round_bf16_value(self, x):
        b = self.builder
        return self.bf16_to_f32(b, self.f32_to_bf16_bits(b, x))

    def round_bf16(self, r, op):
        return self.round_bf16_value(r) if is_bf16(op.results[0].type) else r

    # -- math -----------------------------------------------------------------
    def _to_compute(self, x):
        """fp16 is computed in fp32."""
        if cg.scalar_of(x.type) == cg.F16:
            return self.builder.fpext(x, cg.with_scalar(x.type, cg.F32)), True
        return x, False

    def _from_compute(self, r, narrowed, op):
        if narrowed:
            r = self.builder.fptrunc(r, self._dst(op))
        return self.round_bf16(r, op)

    def math_call(self, op, base):
        args, narrowed = [], False
        for o in op.operands:
            a, n = self._to_compute(self.v(o))
            args.append(a)
            narrowed |= n
        r = self.me.math.call(self.builder, base, args)
        return self._from_compute(r, narrowed, op)

    def intrinsic(self, op, name):
        args = [self.v(o) for o in op.operands]
        r = cg.call_intrinsic(self.builder, name, [args[0].type], args[0].type, args)
        return self.round_bf16(r, op)

    def op_math_absf(self, op):
        fmt = fp8.format_of(op.operands[0].type)
        if fmt is None:
            return self.intrinsic(op, "llvm.fabs")
        return fp8.absolute(self.builder, self.v(op.operands[0]), fmt)

    def op_math_absi(self, op):
        x = self.v(op.operands[0])
        return cg.call_intrinsic(self.builder, "llvm.abs", [x.type], x.type, [x, ir.Constant(cg.I1, 0)])

    def op_math_rsqrt(self, op):
        x, narrowed = self._to_compute(self.v(op.operands[0]))
        s = cg.call_intrinsic(self.builder, "llvm.sqrt", [x.type], x.type, [x])
        return self._from_compute(self.builder.fdiv(cg.const(x.type, 1.0), s), narrowed, op)

    def op_math_fpowi(self, op):
        return self.math_call_mixed(op, "pow")

    def math_call_mixed(self, op, base):
        b = self.builder
        x, narrowed = self._to_compute(self.v(op.operands[0]))
        y = b.sitofp(self.v(op.operands[1]), x.type)
        return self._from_compute(self.me.math.call(b, base, [x, y]), narrowed, op)

    def op_math_ctlz(self, op):
        x = self.v(op.operands[0])
        return cg.call_intrinsic(self.builder, "llvm.ctlz", [x.type], x.type, [x, ir.Constant(cg.I1, 0)])

    def op_math_cttz(self, op):
        x = self.v(op.operands[0])
        return cg.call_intrinsic(self.builder, "llvm.cttz", [x.type], x.type, [x, ir.Constant(cg.I1, 0)])

    def op_math_ctpop(self, op):
        x = self.v(op.operands[0])
        return cg.call_intrinsic(self.builder, "llvm.ctpop", [x.type], x.type, [x])

    def op_tcpu_extern_elementwise(self, op):
        symbol = op.properties["symbol"].data
        args = [self.v(o) for o in op.operands]
        ret = cg.scalar_of(self._dst(op))
        base = symbol[:-1] if symbol.endswith("f") and cg.scalar_of(args[0].type) == cg.F32 else symbol
        if base in _EXTERN_INTRINSICS and all(cg.scalar_of(a.type) == ret for a in args):
            # One instruction each; no math library is needed.
            r = cg.call_intrinsic(self.builder, _EXTERN_INTRINSICS[base], [args[0].type], args[0].type, args)
        elif base in VECTOR_FUNCTIONS and all(cg.scalar_of(a.type) in (cg.F32, cg.F64) for a in args):
            r = self.me.math.call(self.builder, base, args, ret)
        else:
            fn = cg.declare(self.builder.module, symbol, ret, [cg.scalar_of(a.type) for a in args])
            fn.attributes.add("nounwind")
            r = cg.map_lanes(self.builder, lambda *xs: self.builder.call(fn, list(xs)), args, ret)
        return self.round_bf16(r, op)

    # -- tcpu ---------------------------------------------------------------
    def op_llvm_intr_assume(self, op):
        cg.call_intrinsic(self.builder, "llvm.assume", [], cg.VOID, [self.v(op.operands[0])])

    def op_ub_poison(self, op):
        # Any value will do; a defined one (zero) keeps later passes from exploiting it.
        return ir.Constant(self.me.type(op.results[0].type), None)

    def op_tcpu_program_id(self, op):
        return self.pids[op.properties["axis"].value.data]

    def op_tcpu_num_programs(self, op):
        return self.pids[3 + op.properties["axis"].value.data]

    def op_tcpu_iota(self, op):
        t = self._dst(op)
        return ir.Constant(t, [ir.Constant(t.element, i) for i in range(t.count)])

    def op_vector_broadcast(self, op):
        x = self.v(op.operands[0])
        t = self._dst(op)
        if isinstance(x.type, ir.VectorType):
            return x
        return cg.splat(self.builder, x, t.count)

    def op_tcpu_addptr(self, op):
        p, off = (self.v(o) for o in op.operands)
        ptr_t = elem_of(op.operands[0].type)
        elem = self.me.scalar_type(ptr_t.parameters[0], memory=True)
        if isinstance(p.type, ir.VectorType) and not isinstance(off.type, ir.VectorType):
            off = cg.splat(self.builder, off, p.type.count)
        if isinstance(off.type, ir.VectorType) and not isinstance(p.type, ir.VectorType):
            p = cg.splat(self.builder, p, off.type.count)
        return self.builder.gep(p, [off], source_etype=elem)

    def op_tcpu_is_contiguous(self, op):
        b = self.builder
        ptrs = self.v(op.ptrs)
        n = ptrs.type.count
        stride = op.properties.get("stride")
        step = stride.value.data if stride is not None else 1
        if isinstance(ptrs.type.element, ir.IntType):  # element offsets
            addrs = b.sext(ptrs, ir.VectorType(cg.I64, n)) if ptrs.type.element.width < 64 else ptrs
        else:
            step *= _nbytes(self.me.scalar_type(elem_of(op.ptrs.type).parameters[0], memory=True))
            addrs = b.ptrtoint(ptrs, ir.VectorType(cg.I64, n))
        first = cg.splat(b, b.extract_element(addrs, ir.Constant(cg.I32, 0)), n)
        want = ir.Constant(ir.VectorType(cg.I64, n), [ir.Constant(cg.I64, k * step) for k in range(n)])
        same = b.icmp_unsigned("==", b.sub(addrs, first), want)
        return b.icmp_unsigned("==", b.bitcast(same, ir.IntType(n)), ir.Constant(ir.IntType(n), (1 << n) - 1))

    def op_tcpu_ptr_to_int(self, op):
        return self.builder.ptrtoint(self.v(op.operands[0]), self._dst(op))

    def op_tcpu_int_to_ptr(self, op):
        return self.builder.inttoptr(self.v(op.operands[0]), self._dst(op))

    def op_tcpu_dot_bf16_pairs(self, op):
        acc, a, b = (self.v(x) for x in op.operands)
        n = cg.lanes(acc.type)
        pairs = ir.VectorType(cg.BF16, 2 * n)
        name = f"llvm.x86.avx512bf16.dpbf16ps.{32 * n}"
        fn = cg.declare(self.builder.module, name, acc.type, [acc.type, pairs, pairs])
        return self.builder.call(fn, [acc, self.builder.bitcast(a, pairs), self.builder.bitcast(b, pairs)])

    def op_tcpu_tile_config(self, op):
        amx_tiles.config(self.builder)

    def op_tcpu_tile_release(self, op):
        amx_tiles.release(self.builder)

    def _tile_address(self, op):
        """(address, row stride in bytes) of a tile move's first element."""
        ref = op.operands[0]
        elem = self.me.scalar_type(ref.type.element_type, memory=True)
        return self._element_address(ref, op.operands[1:]), ref.type.get_shape()[-1] * _nbytes(elem)

    def op_tcpu_tile_zero(self, op):
        amx_tiles.zero(self.builder, op.tile.value.data)

    def op_tcpu_tile_load(self, op):
        amx_tiles.load(self.builder, op.tile.value.data, *self._tile_address(op))

    def op_tcpu_tile_store(self, op):
        amx_tiles.store(self.builder, op.tile.value.data, *self._tile_address(op))

    def op_tcpu_tile_dot(self, op):
        amx_tiles.dot(self.builder, op.kind.data, op.acc.value.data, op.a.value.data, op.b.value.data)

    def op_tcpu_mulhiui(self, op):
        b = self.builder
        x, y = self._binary(op)
        t = x.type
        w = cg.scalar_of(t).width
        wide = cg.with_scalar(t, ir.IntType(2 * w))
        p = b.mul(b.zext(x, wide), b.zext(y, wide))
        return b.trunc(b.lshr(p, cg.const(wide, w)), t)

    def op_tcpu_fp_to_fp(self, op):
        x = self.v(op.operands[0])
        src_t, dst_t = op.operands[0].type, op.results[0].type
        rounding = op.properties.get("rounding")
        rtz = rounding is not None and rounding.data == "rtz"
        if fp8.format_of(src_t) is not None or fp8.format_of(dst_t) is not None:
            return self._float_cast(x, src_t, dst_t, rtz)
        narrowing = is_bf16(dst_t) or _fbits(self.me.type(dst_t)) < _fbits(x.type)
        if rtz and narrowing:
            return self._truncate_rtz(x, dst_t)
        return self._float_cast(x, src_t, dst_t)

    def _truncate_rtz(self, x, dst_t):
        b = self.builder
        if is_bf16(dst_t):
            t32 = cg.with_scalar(x.type, cg.I32)
            bits = b.bitcast(x, t32)
            bits = self._nan_quieted(b, x, bits, bits)
            return b.bitcast(b.and_(bits, cg.const(t32, 0xFFFF0000)), x.type)
        # Round to nearest, then step toward zero where that rounded away from zero.
        dst = self.me.type(dst_t)
        r = b.fptrunc(x, dst)
        back = b.fpext(r, x.type)
        away = b.fcmp_ordered(">", _fabs(b, back), _fabs(b, x))
        ibits = cg.with_scalar(dst, ir.IntType(_fbits(dst)))
        stepped = b.bitcast(b.sub(b.bitcast(r, ibits), cg.const(ibits, 1)), dst)
        return b.select(away, stepped, r)

    # -- atomics ------------------------------------------------------------
    def _bf16_atomic(self, kind, ptr, val, ordering):
        """bf16 (f32 in registers, i16 in memory): a compare-exchange loop on the word."""
        b = self.builder
        pre = b.block
        loop = b.append_basic_block("bf16.atomic")
        done = b.append_basic_block("bf16.atomic.done")
        first = b.load_atomic(ptr, "monotonic", 2, typ=cg.I16)
        b.branch(loop)
        b.position_at_end(loop)
        cur = b.phi(cg.I16)
        cur.add_incoming(first, pre)
        old = self.bf16_to_f32(b, cur)
        if kind == "fadd":
            new = b.fadd(old, val)
        elif kind in ("fmax", "fmin"):
            new = cg.call_intrinsic(b, "llvm.maxnum" if kind == "fmax" else "llvm.minnum", [cg.F32], cg.F32,
                                    [old, val])
        else:  # xchg
            new = val
        failure = {"acq_rel": "acquire", "release": "monotonic"}.get(ordering, ordering)
        pair = b.cmpxchg(ptr, cur, self.f32_to_bf16_bits(b, new), ordering, failure)
        cur.add_incoming(b.extract_value(pair, 0), b.block)
        b.cbranch(b.extract_value(pair, 1), done, loop)
        b.position_at_end(done)
        return old

    def op_tcpu_atomic_rmw(self, op):
        b = self.builder
        ptr, val = self.v(op.ptr), self.v(op.val)
        kind = op.kind.data
        if not isinstance(val.type, ir.IntType) and kind in ("max", "min"):
            kind = "f" + kind
        ordering = op.ordering.data
        if is_bf16(op.val.type):
            atomic = lambda: self._bf16_atomic(kind, ptr, val, ordering)
        else:
            atomic = lambda: b.atomic_rmw(kind, ptr, val, ordering)
        return self._masked(op.mask, atomic, cg.const(val.type, 0))

    def _masked(self, mask, compute, otherwise: ir.Value) -> ir.Value:
        """`compute()` where the i1 `mask` (an SSA value, or None: always) holds, else
        `otherwise`; the instructions `compute` emits run only on that path."""
        if mask is None:
            return compute()
        b = self.builder
        with b.if_else(self.v(mask)) as (then, skipped):
            with then:
                value = compute()
                then_bb = b.block
            with skipped:
                else_bb = b.block
        r = b.phi(value.type)
        r.add_incoming(value, then_bb)
        r.add_incoming(otherwise, else_bb)
        return r

    def op_tcpu_atomic_cas(self, op):
        return self._masked(op.mask, lambda: self._atomic_cas(op), cg.const(self.me.type(op.val.type), 0))

    def _atomic_cas(self, op):
        b = self.builder
        ptr, cmp, val = self.v(op.ptr), self.v(op.cmp), self.v(op.val)
        t = val.type
        if is_bf16(op.val.type):
            cmp, val = self.bf16_bits(b, cmp), self.bf16_bits(b, val)
            pair = b.cmpxchg(ptr, cmp, val, op.ordering.data,
                             {"acq_rel": "acquire", "release": "monotonic"}.get(op.ordering.data, op.ordering.data))
            return self.bf16_to_f32(b, b.extract_value(pair, 0))
        if not isinstance(t, ir.IntType):  # cmpxchg compares bits: floats go as integers
            it = ir.IntType(_fbits(t))
            cmp, val = b.bitcast(cmp, it), b.bitcast(val, it)
        ordering = op.ordering.data
        failure = {"acq_rel": "acquire", "release": "monotonic"}.get(ordering, ordering)
        pair = b.cmpxchg(ptr, cmp, val, ordering, failure)
        old = b.extract_value(pair, 0)
        return old if old.type == t else b.bitcast(old, t)

    def op_tcpu_panel_cache(self, op):
        return [self.values[r] for r in op.results]  # placed by allocate_buffers

    def op_tcpu_clock(self, op):
        return self.builder.call(cg.declare(self.me.module, "tcpu_clock_ns", cg.I64, []), [])

    def op_tcpu_atomic_poll(self, op):
        return self._masked(op.mask, lambda: self._atomic_poll(op), ir.Constant(cg.I1, 1))

    def _atomic_poll(self, op):
        b = self.builder
        expected = self.v(op.expected)
        fn = cg.declare(self.me.module, "tcpu_atomic_poll", cg.I32, [cg.PTR, cg.I32, cg.I64, cg.I64, cg.I32])
        ok = b.call(fn, [self.v(op.ptr), ir.Constant(cg.I32, expected.type.width // 8), b.sext(expected, cg.I64)
                         if expected.type.width < 64 else expected, self.v(op.deadline),
                         ir.Constant(cg.I32, int(op.acquire.value.data))])
        return b.icmp_signed("!=", ok, ir.Constant(cg.I32, 0))

    # -- debug ops ----------------------------------------------------------
    # Type codes of tcpu_print (include/triton_cpu/runtime.h).
    _PRINT_UINT, _PRINT_SINT, _PRINT_FLOAT, _PRINT_BF16, _PRINT_PTR = range(5)

    def entry_alloca(self, t: ir.Type):
        """Stack slot in the entry block, so that loops do not grow the stack."""
        b = ir.IRBuilder(self.fn.entry_basic_block)
        b.position_at_start(self.fn.entry_basic_block)
        slot = b.alloca(t)
        slot.type = cg.PTR
        return slot

    def op_tcpu_print(self, op):
        b = self.builder
        me = self.me
        rank = len(op.indices)
        idx_ptr = ir.Constant(cg.PTR, None)
        shape_ptr = ir.Constant(cg.PTR, None)
        if rank:
            arr = ir.ArrayType(cg.I32, rank)
            idx_ptr = self.entry_alloca(arr)
            for k, i in enumerate(op.indices):
                b.store(self.v(i), b.gep(idx_ptr, [ir.Constant(cg.I64, k)], source_etype=cg.I32))
            shape = [int(x) for x in op.shape.get_values()]
            g = ir.GlobalVariable(me.module, arr, name=f".shape.{len(me._strings)}.{id(op)}")
            g.global_constant = True
            g.linkage = "private"
            g.initializer = ir.Constant(arr, shape)
            shape_ptr = g
        type_code, bits, value = self._PRINT_UINT, 32, ir.Constant(cg.I64, 0)
        if op.value is not None:
            x = self.v(op.value)
            vt = op.value.type
            t = x.type
            if is_bf16(vt):
                type_code, bits = self._PRINT_BF16, 16
                value = b.zext(self.bf16_bits(b, x), cg.I64)
            elif isinstance(t, ir.PointerType):
                type_code, bits, value = self._PRINT_PTR, 64, b.ptrtoint(x, cg.I64)
            elif isinstance(t, ir.IntType):
                signed = bool(op.is_signed.value.data)
                type_code, bits = (self._PRINT_SINT if signed else self._PRINT_UINT), t.width
                value = x if t.width == 64 else (b.sext(x, cg.I64) if signed else b.zext(x, cg.I64))
            else:
                type_code, bits = self._PRINT_FLOAT, _fbits(t)
                ibits = b.bitcast(x, ir.IntType(bits))
                value = ibits if bits == 64 else b.zext(ibits, cg.I64)
        fn = cg.declare(me.module, "tcpu_print", cg.VOID,
                        [cg.PTR, cg.I32, cg.I32, cg.I32, cg.I32, cg.PTR, cg.PTR, cg.I32, cg.I32, cg.I32, cg.I32,
                         cg.I32, cg.I64])
        i32 = lambda v: ir.Constant(cg.I32, v)
        b.call(fn, [me.cstring(op.prefix.data), *self.pids[:3], i32(rank), idx_ptr, shape_ptr,
                    i32(op.operand.value.data), i32(op.num_operands.value.data), i32(type_code), i32(bits),
                    i32(int(op.hex.value.data)), value])

    def op_tcpu_assert(self, op):
        """On a false lane: record the failure, then leave the program, as a GPU would."""
        b = self.builder
        me = self.me
        cond = self.v(op.condition)
        ok = self._all_lanes(op.condition) if isinstance(cond.type, ir.VectorType) else cond
        fn = cg.declare(me.module, "tcpu_assert_fail", cg.VOID,
                        [cg.PTR, cg.PTR, cg.I32, cg.PTR, cg.I32, cg.I32, cg.I32])
        with b.if_then(b.not_(ok), likely=False):
            b.call(fn, [me.cstring(op.message.data), me.cstring(op.file.data),
                        ir.Constant(cg.I32, op.line.value.data), me.cstring(op.function.data), *self.pids[:3]])
            b.ret_void()

    # -- memory -------------------------------------------------------------
    def _load_value(self, raw, vt):
        """Memory representation -> register representation."""
        if is_bf16(vt):
            return self.bf16_to_f32(self.builder, raw)
        if isinstance(elem_of(vt), IntegerType) and elem_of(vt).width.data == 1:
            return self.builder.trunc(raw, cg.with_scalar(raw.type, cg.I1))
        return raw

    def _store_value(self, x, vt):
        if is_bf16(vt):
            return self.bf16_bits(self.builder, x)
        if isinstance(elem_of(vt), IntegerType) and elem_of(vt).width.data == 1:
            return self.builder.zext(x, cg.with_scalar(x.type, cg.I8))
        return x

    def _no_masked_store(self, x):
        """`x`, frozen when it is a select of vectors on an x86 host without AVX-512. LLVM's
        x86 code generator turns `store(select(m, v, load(p)), p)` into a masked store, and
        AVX2 has that only as vmaskmovps, microcoded on AMD: every chunk of an Inductor
        looped reduction updates its accumulator that way (`_tmp = tl.where(rmask, new,
        _tmp)`), and its vmaskmovps took a fifth of a vocabulary softmax's time on Zen 3
        where a load, a blend and a store cost little (Intel runs either at about one per
        cycle). The freeze hides the pattern from that fold and changes no value (neither
        operand is poison); AVX-512's masked stores are fast and keep it."""
        if not self.me.x86 or self.me.math.has("avx512f") or not isinstance(x, ir.Instruction) or \
                x.opname != "select" or not isinstance(x.type, ir.VectorType):
            return x
        return cg.freeze(self.builder, x)

    def _align(self, op, default):
        a = op.properties.get("alignment")
        return a.value.data if a is not None else default

    def _other(self, op, mem_t):
        """The value of a masked load's masked-off lanes (its `other`, else zero). The
        mask itself is read where it is used (it may be deferred: _deferred_values)."""
        if op.other is not None:
            return self._store_value(self.v(op.other), op.other.type)
        return cg.const(mem_t, 0) if not isinstance(cg.scalar_of(mem_t), ir.PointerType) else \
            ir.Constant(mem_t, None)

    def op_tcpu_load(self, op):
        b = self.builder
        vt = op.results[0].type
        mem_t = self.me.type(vt, memory=True)
        ptr = self.v(op.ptr)
        align = _nbytes(mem_t)
        other = self._other(op, mem_t) if op.mask is not None else None
        raw = self._masked(op.mask, lambda: b.load(ptr, typ=mem_t, align=align), other)
        return self._load_value(raw, vt)

    def op_tcpu_prefetch(self, op):
        # llvm.prefetch(address, read, temporal locality (3: every cache level), data cache)
        locality = op.locality.value.data if op.locality is not None else 3
        cg.call_intrinsic(self.builder, "llvm.prefetch", [self.v(op.ptr).type], cg.VOID,
                          [self.v(op.ptr), cg.const(cg.I32, 0), cg.const(cg.I32, locality), cg.const(cg.I32, 1)])

    def op_tcpu_store(self, op):
        b = self.builder
        vt = op.value.type
        x = self._store_value(self.v(op.value), vt)
        ptr = self.v(op.ptr)
        align = _nbytes(x.type)
        if op.mask is None:
            b.store(x, ptr, align=align)
        else:
            with b.if_then(self.v(op.mask)):
                b.store(x, ptr, align=align)
        return None

    def op_tcpu_vload(self, op):
        b = self.builder
        vt = op.results[0].type
        mem_t = self.me.type(vt, memory=True)
        ptr = self.v(op.ptr)
        align = self._align(op, _nbytes(mem_t.element))
        if op.mask is None:
            raw = b.load(ptr, typ=mem_t, align=align)
        else:
            other = self._other(op, mem_t)
            # Masked vector moves are slow on some CPUs (microcoded on AMD Zen);
            # most chunks of a masked access are full, so test for that first.
            with b.if_else(self._all_lanes(op.mask), likely=True) as (full, partial):
                with full:
                    plain = b.load(ptr, typ=mem_t, align=align)
                    full_bb = b.block
                with partial:
                    masked = cg.call_intrinsic(b, "llvm.masked.load", [mem_t, cg.PTR], mem_t,
                                               [ptr, ir.Constant(cg.I32, align), self.v(op.mask), other])
                    partial_bb = b.block
            raw = b.phi(mem_t)
            raw.add_incoming(plain, full_bb)
            raw.add_incoming(masked, partial_bb)
        return self._load_value(raw, vt)

    def _all_lanes(self, mask: SSAValue):
        """An i1: every lane of `mask` (an xDSL i1 vector) is set; a scalar compare for
        bound checks (lane_masks)."""
        return all_lanes_test(self.builder, mask, self.v)

    def _remat(self, value: SSAValue) -> ir.Value:
        """A deferred value (_deferred_values) computed at the builder's position; its
        handler reads its operands through `v`, so deferred operands are computed there
        too, each once per outermost call (`_remat_memo`)."""
        outermost = self._remat_memo is None
        if outermost:
            self._remat_memo = {}
        try:
            if value not in self._remat_memo:
                op = value.owner
                self._remat_memo[value] = getattr(self, "op_" + op.name.replace(".", "_"))(op)
            return self._remat_memo[value]
        finally:
            if outermost:
                self._remat_memo = None

    def op_tcpu_vstore(self, op):
        b = self.builder
        x = self._no_masked_store(self._store_value(self.v(op.value), op.value.type))
        ptr = self.v(op.ptr)
        align = self._align(op, _nbytes(x.type.element))
        if op.mask is None:
            self.store_full(op, x, ptr, align)
        else:
            with b.if_else(self._all_lanes(op.mask), likely=True) as (full, partial):
                with full:
                    self.store_full(op, x, ptr, align)
                with partial:
                    mask = self.v(op.mask)
                    cg.call_intrinsic(b, "llvm.masked.store", [x.type, cg.PTR], cg.VOID,
                                      [x, ptr, ir.Constant(cg.I32, align), self._opaque_mask(mask, x.type)])
        return None

    def _opaque_mask(self, mask, stored):
        """`mask`, hidden from LLVM's constant folding on x86 when the `stored` vector has
        integer elements. LLVM 22's X86 backend turns a masked store of a truncated vector
        (i32 -> i8, i64 -> i32, ...) whose constant mask has one lane set into a scalar store
        of the untruncated element: 4 or 8 bytes written where 1 or 4 were meant (found by
        scripts/fuzz.py, seed 6528: `tl.store(p + r, x.to(tl.int8), mask=r < 1)` on
        AVX-512). An empty inline asm on the mask's bits keeps it a run-time value: a real
        masked store. (Only the partial path gets here: the full one is a plain store.)
        Only integer truncations fold into x86's truncating masked stores (vpmov*), so
        float and double stores keep a plain mask: the inline asm costs ~3 ms of LLVM's
        instruction selection per store (its constraint is matched against every register
        class), a tenth of a small kernel's code generation. bf16 and fp8 are stored as
        integers and keep it."""
        n = mask.type.count if isinstance(mask.type, ir.VectorType) else 1
        elem = stored.element if isinstance(stored, ir.VectorType) else stored
        if not self.me.x86 or n < 2 or n > 64 or not isinstance(elem, ir.IntType):
            return mask
        b = self.builder
        bits = ir.IntType(n)
        reg = ir.IntType(max(8, 1 << (n - 1).bit_length()))  # a register-sized integer for the asm
        v = b.bitcast(mask, bits)
        v = b.zext(v, reg) if reg.width > n else v
        hidden = b.asm(ir.FunctionType(reg, [reg]), "", "=r,0", [v], side_effect=False)
        hidden = b.trunc(hidden, bits) if reg.width > n else hidden
        return b.bitcast(hidden, mask.type)

    def _all_true(self, n):
        return cg.const(ir.VectorType(cg.I1, n), 1)

    def op_tcpu_gather(self, op):
        b = self.builder
        vt = op.results[0].type
        mem_t = self.me.type(vt, memory=True)
        ptrs = self.v(op.ptr)
        other = self._other(op, mem_t)
        mask = self.v(op.mask) if op.mask is not None else self._all_true(mem_t.count)
        raw = cg.call_intrinsic(b, "llvm.masked.gather", [mem_t, ptrs.type], mem_t,
                                [ptrs, ir.Constant(cg.I32, _nbytes(mem_t.element)), mask, other])
        return self._load_value(raw, vt)

    def op_tcpu_scatter(self, op):
        b = self.builder
        x = self._store_value(self.v(op.value), op.value.type)
        ptrs = self.v(op.ptr)
        mask = self.v(op.mask) if op.mask is not None else self._all_true(x.type.count)
        cg.call_intrinsic(b, "llvm.masked.scatter", [x.type, ptrs.type], cg.VOID,
                          [x, ptrs, ir.Constant(cg.I32, _nbytes(x.type.element)), mask])
        return None


# Pure integer vector ops that bound-check masks and the addresses of a gather or scatter
# are built from (_deferred_values).
_REMAT_OPS = frozenset(("arith.cmpi", "arith.addi", "arith.subi", "arith.muli", "arith.extsi", "arith.extui",
                        "arith.andi", "vector.broadcast", "tcpu.iota", "tcpu.addptr"))
# Operands read only off a loop's hot path: a masked access's mask (its full chunks test
# it on scalars, codegen/lane_masks.py; the vector is read by the partial chunk's path) and
# a gather's or scatter's addresses and mask (taken where a run-time stride is not 1).
_COLD_OPERANDS = {"tcpu.vload": ("mask", ), "tcpu.vstore": ("mask", ), "tcpu.gather": ("ptr", "mask"),
                  "tcpu.scatter": ("ptr", "mask")}


def _deferred_values(func: Operation) -> set:
    """Vector values of _REMAT_OPS read only as _COLD_OPERANDS (directly or through other
    such values). They are not emitted where they are defined but computed again at each
    use (FunctionEmitter._remat), so that nothing of them runs on the hot path: in
    FlagGems' loops over 64-bit offsets the mask and offsets were ~17 vector instructions
    per 32 lanes there, which LLVM did not sink because the load's and the store's cold
    paths both read them (and a copy made only in those paths was merged back into the
    first by LLVM's CSE). Where a use is on the hot path it is computed there, once."""
    deferred = set()
    candidates = [op for op in func.walk() if op.name in _REMAT_OPS and len(op.results) == 1
                  and isinstance(op.results[0].type, VectorType)]

    def cold_use(use) -> bool:
        user = use.operation
        names = _COLD_OPERANDS.get(user.name)
        if names is not None:
            return any(getattr(user, n, None) is user.operands[use.index] for n in names)
        return len(user.results) == 1 and user.results[0] in deferred

    for op in reversed(candidates):  # users come after their operands
        r = op.results[0]
        uses = list(r.uses)
        if uses and all(cold_use(u) for u in uses):
            deferred.add(r)
    return deferred


def _bf16_bits(x: float) -> int:
    """The bf16 pattern of `x`, rounded to nearest even (NaN stays NaN)."""
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    if (b & 0x7F800000) == 0x7F800000 and b & 0x7FFFFF:
        return 0x7FC0
    b += 0x7FFF + ((b >> 16) & 1)
    return (b >> 16) & 0xFFFF


def _signed(x: int, width: int) -> int:
    x &= (1 << width) - 1
    return x - (1 << width) if x >> (width - 1) else x


def _fbits(t) -> int:
    s = cg.scalar_of(t)
    return {"half": 16, "float": 32, "double": 64}.get(str(s), getattr(s, "width", 32))


def _nbytes(t) -> int:
    if isinstance(t, ir.PointerType):
        return 8
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    return _fbits(t) // 8


def _fabs(b, x):
    return cg.call_intrinsic(b, "llvm.fabs", [x.type], x.type, [x])


def _scalar_min_max_recurrence(body) -> bool:
    """Whether a loop body yields, for a scalar float loop-carried value, an `arith.maxnumf` /
    `arith.minnumf`, directly or as a choice of an `arith.select` (a predicated reduction):
    the recurrence LLVM's loop vectorizer miscompiles, see _loop_hints."""
    def min_max(v, depth=0):
        owner = getattr(v, "owner", None)
        name = getattr(owner, "name", None)
        if name in ("arith.maxnumf", "arith.minnumf"):
            return True
        return name == "arith.select" and depth < 4 and any(min_max(x, depth + 1) for x in owner.operands[1:])
    floats = (Float16Type, BFloat16Type, Float32Type, Float64Type)
    return any(isinstance(arg.type, floats) and min_max(y) for arg, y in zip(body.args[1:], body.last_op.operands))


def emit_llvm(module_op, name: str, vector_bits: int, line_info: bool = False, fp_fusion: bool = True,
              math: MathLib | None = None, reciprocal_division: bool = True) -> str:
    """LLVM IR text of a TritonCPU module; `line_info`: with DWARF line tables; `fp_fusion`:
    multiplies and adds may contract into fma (the `enable_fp_fusion` option); `math`: the
    math library calls (default: libmvec for the host); `reciprocal_division`: fp32 vectors
    of at least a register divided by a lane-uniform value through its reciprocal
    (uniform_division)."""
    me = ModuleEmitter(name, vector_bits, line_info, fp_fusion, math, reciprocal_division)
    me.emit_module(module_op)
    return str(me.module)
