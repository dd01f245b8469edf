"""tt.dot: C = A @ B + C0 with a register-blocked micro-kernel.

A and B are packed to row-major buffers in the accumulation type (fp16/bf16/fp8 widen
to fp32, int8 to int32; tf32 is computed as full fp32), so the micro-kernel reads plain
contiguous rows. For each MR x (NR*VL) tile of C, MR*NR vector accumulators stay in
registers over the whole K loop; each step loads NR vectors of a row of B and
broadcasts MR scalars of a column of A. A leading batch dimension (3-D dot) is an outer
loop. C is written in place into C0's buffer when nothing else reads C0 (a loop-carried
accumulator). fp16/bf16 results accumulate in fp32 and round once at the end, as GPU
matrix units and Triton's interpreter do.
"""
from xdsl.dialects import math, vector
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IntegerType, TensorType, VectorType
from xdsl.ir import Operation, SSAValue

from triton_cpu.analysis.axis_info import element_type, shape_of
from triton_cpu.dialects.compat import arith

from .util import bits, vec_type


def widen(v: SSAValue, src, dst, width: int) -> Operation:
    """Converts `v` (elements of type `src`) to `dst` for the dot's accumulation."""
    rt = vec_type(dst, width)
    if isinstance(dst, IntegerType):
        return arith.ExtSIOp(v, rt) if bits(src) < bits(dst) else arith.TruncIOp(v, rt)
    if isinstance(src, IntegerType):
        return arith.SIToFPOp(v, rt)
    if bits(src) < bits(dst):
        return arith.ExtFOp(v, rt)
    return arith.TruncFOp(v, rt)


def pack(low, em, value: SSAValue, elem) -> SSAValue:
    """A row-major buffer holding `value` converted to `elem`."""
    shape = shape_of(value)
    src_elem = element_type(value.type)
    buf = low.alloc_buffer(TensorType(elem, shape))
    vl = low.vector_length(shape, [value])

    def body(e, idx):
        v = e.value(value, idx, vl)
        if src_elem != elem:
            v = e.emit(widen(v, src_elem, elem, vl))
        e.store_buffer(v, buf, idx)
    low.nest(em, shape, vl, body)
    return buf


def lower_dot(low, op: Operation):
    a, b, c0 = op.operands
    out = op.results[0]
    shape = shape_of(out)
    out_elem = element_type(out.type)
    acc_elem = Float32Type() if isinstance(out_elem, (Float16Type, BFloat16Type)) else out_elem
    batch = shape[:-2]
    M, N = shape[-2:]
    K = shape_of(a)[-1]
    is_float = not isinstance(acc_elem, IntegerType)
    em = low.emitter_before(op)
    a_buf = pack(low, em, a, acc_elem)
    b_buf = pack(low, em, b, acc_elem)
    # Write C in place into C0's buffer when nothing else reads C0.
    c_buf = low.buffers.get(c0)
    if c_buf is None or len(list(c0.uses)) != 1 or acc_elem != out_elem:
        c_buf = pack(low, em, c0, acc_elem)
    lanes = max(1, low.config.vector_bits // max(8, bits(acc_elem)))
    VL = min(lanes, N)
    NR = 2 if N >= 2 * VL else 1
    MR = min(4, M)
    vt = VectorType(acc_elem, [VL]) if VL > 1 else acc_elem

    def tile(e, idx):
        pre = idx[:-2]
        i0, j0 = idx[-2], idx[-1]
        rows = [e.idx_add(i0, m) for m in range(MR)]
        cols = [e.idx_add(j0, n * VL) for n in range(NR)]
        accs = [e.load_buffer(c_buf, pre + (r, c), VL) for r in rows for c in cols]

        def step(k_em, k, accs):
            bs = [k_em.load_buffer(b_buf, pre + (k, c), VL) for c in cols]
            new = []
            for mi, r in enumerate(rows):
                av = k_em.load_buffer(a_buf, pre + (r, k), 1)
                if VL > 1:
                    av = k_em.emit(vector.BroadcastOp(av, vt))
                for ni in range(NR):
                    acc = accs[mi * NR + ni]
                    if is_float:
                        new.append(k_em.emit(math.FmaOp(av, bs[ni], acc)))
                    else:
                        new.append(k_em.emit(arith.AddiOp(acc, k_em.emit(arith.MuliOp(av, bs[ni])))))
            return new
        accs = e.for_loop(0, K, 1, accs, step)
        for (r, c), v in zip([(r, c) for r in rows for c in cols], accs):
            e.store_buffer(v, c_buf, pre + (r, c))

    low.nest_steps(em, batch + (M, N), [1] * len(batch) + [MR, NR * VL], tile)
    if acc_elem != out_elem:
        out_buf = low.alloc_buffer(out.type)
        vl = low.vector_length(shape, [])

        def narrow(e, idx):
            v = e.load_buffer(c_buf, idx, vl)
            e.store_buffer(e.emit(arith.TruncFOp(v, vec_type(out_elem, vl))), out_buf, idx)
        low.nest(em, shape, vl, narrow)
        c_buf = out_buf
    low.buffers[out] = c_buf
