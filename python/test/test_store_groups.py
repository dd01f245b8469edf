"""Store groups (convert_triton_to_tcpu/store_groups.py): adjacent tile stores run as one
loop nest when a run-time check finds that no store overlaps what the nest reads or
another store, except lane for lane (an in-place update); otherwise one store at a time,
the loads read before any store. Checked against the program's semantics computed in
torch (every load of a program, then its stores in order): outputs apart from the inputs,
updated in place, overlapping them at an offset, and in place through a permutation of
the lanes (reshape, trans), where lane for lane no longer holds; with masks and both
vector widths."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def adam_like_kernel(p_ptr, m_ptr, g_ptr, p_out, m_out, d_out, n, lr, B: tl.constexpr):
    # Three outputs from shared loads and a shared value (`m`), like Inductor's AdamW step.
    offs = tl.program_id(0) * B + tl.arange(0, B)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    m = tl.load(m_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    m = 0.9 * m + 0.1 * g
    d = tl.sqrt(g * g + 1e-3)
    tl.store(p_out + offs, p - lr * m / d, mask=mask)
    tl.store(m_out + offs, m, mask=mask)
    tl.store(d_out + offs, d, mask=mask)


def adam_like_reference(p, m, g, lr):
    m = 0.9 * m + 0.1 * g
    d = torch.sqrt(g * g + 1e-3)
    return p - lr * m / d, m, d


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("n,B", [(4096, 1024), (1000, 256), (64, 64)])
def test_outputs_apart_and_in_place(n, B, vector_bits):
    p, m, g = torch.randn(n), torch.randn(n), torch.randn(n)
    want = adam_like_reference(p, m, g, 0.01)
    outs = [torch.full((n,), 7.0) for _ in range(3)]
    grid = (triton.cdiv(n, B),)
    adam_like_kernel[grid](p, m, g, *outs, n, 0.01, B=B, vector_bits=vector_bits)
    for got, ref in zip(outs, want):  # (the kernel may contract a * b + c into an FMA)
        torch.testing.assert_close(got, ref, rtol=1e-6, atol=1e-6)
    # In place, as Inductor's optimizer kernels: the parameter and the moment updated where
    # they are read (lane for lane), the third output apart: the same values as apart.
    d = torch.empty(n)
    adam_like_kernel[grid](p, m, g, p, m, d, n, 0.01, B=B, vector_bits=vector_bits)
    for got, ref in zip((p, m, d), outs):
        assert torch.equal(got, ref)


@triton.jit
def two_outputs_kernel(x_ptr, y_ptr, a_out, b_out, B: tl.constexpr, PERMUTE: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if PERMUTE:  # interleave the two halves: lane i reads x[(i % 2) * B / 2 + i // 2]
        x = tl.reshape(tl.trans(tl.reshape(x, (2, B // 2))), (B, ))
    tl.store(a_out + offs, x * 2.0 + y)
    tl.store(b_out + offs, x - y)


def _in_order(buf, x_at, y_at, a_at, b_at, B, permute):
    """The program's semantics on one buffer: both loads, then each store in full."""
    out = buf.clone()
    x, y = buf[x_at:x_at + B].clone(), buf[y_at:y_at + B].clone()
    if permute:
        x = x.reshape(2, B // 2).t().reshape(B)
    out[a_at:a_at + B] = x * 2.0 + y
    out[b_at:b_at + B] = x - y
    return out


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("permute", [False, True])
@pytest.mark.parametrize("x_at,y_at,a_at,b_at", [
    (0, 256, 512, 768),   # all apart: one nest
    (0, 256, 0, 256),     # each output over its own input, lane for lane (in place)
    (0, 256, 16, 512),    # the first output 16 elements past x: overlaps what later chunks read
    (0, 256, 512, 520),   # the outputs overlap each other at an offset: the second must win
    (64, 256, 0, 512),    # the first output ends inside x, behind it
])
def test_overlapping_tiles_keep_program_order(x_at, y_at, a_at, b_at, permute, vector_bits):
    B = 256
    buf = torch.randn(1024)
    want = _in_order(buf, x_at, y_at, a_at, b_at, B, permute)
    two_outputs_kernel[(1,)](buf[x_at:], buf[y_at:], buf[a_at:], buf[b_at:], B=B, PERMUTE=permute,
                             vector_bits=vector_bits)
    torch.testing.assert_close(buf, want, rtol=0, atol=0)


def test_one_nest_behind_a_check():
    """Structure: the group's stores run in one nest (its two stores adjacent) under the
    overlap check; the last branch stores one at a time, each in a loop of its own."""
    B = 256
    x, y, a, b = (torch.randn(B) for _ in range(4))
    k = two_outputs_kernel[(1,)](x, y, a, b, B=B, PERMUTE=False)
    lines = [ln.strip() for ln in str(k.asm["ttcir"]).splitlines()]
    stores = [i for i, ln in enumerate(lines) if ln.startswith('"tcpu.vstore"')]
    assert any(not any(ln.startswith(("scf.for", "}")) for ln in lines[i:j])
               for i, j in zip(stores, stores[1:])), "\n".join(lines)  # two stores in one loop body
    last = max(i for i, ln in enumerate(lines) if ln == "} else {")
    separate = [i for i in stores if i > last]
    assert len(separate) == 2 and any(ln.startswith("scf.for") for ln in lines[separate[0]:separate[1]])


@pytest.mark.parametrize("b_len", [256, 200])
def test_each_store_reports_its_own_line(b_len):
    """In the bounds-checked mode, a store of a group that writes past its tensor is
    reported at its own line, not the group's first store's."""
    from conftest import source_line
    B = 256
    x, y, a, b = torch.randn(B), torch.randn(B), torch.empty(B), torch.empty(b_len)
    if b_len == B:
        two_outputs_kernel[(1,)](x, y, a, b, B=B, PERMUTE=False, bounds_check=True)
        torch.testing.assert_close(b, x - y, rtol=0, atol=0)
        return
    line = source_line(two_outputs_kernel, "tl.store(b_out + offs, x - y)")[0]
    with pytest.raises(RuntimeError, match=f"out-of-bounds store in kernel 'two_outputs_kernel' at "
                                           f"test_store_groups.py:{line},"):
        two_outputs_kernel[(1,)](x, y, a, b, B=B, PERMUTE=False, bounds_check=True)


@triton.jit
def row_two_outputs_kernel(x_ptr, e_out, d_out, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + row * N + cols)
    m = tl.max(x, 0)
    tl.store(e_out + row * N + cols, tl.exp(x - m))
    tl.store(d_out + row * N + cols, x - m)


def test_next_row_prefetched_by_the_one_nest():
    """A row kernel prefetches the next program's row (prefetch-next-program) in the loop
    nest after its reduction: with two stores there, in their one nest."""
    x = torch.randn(64, 1024)
    e, d = torch.empty_like(x), torch.empty_like(x)
    k = row_two_outputs_kernel[(64,)](x, e, d, N=1024)
    m = x.max(1, keepdim=True).values
    torch.testing.assert_close(e, torch.exp(x - m))
    assert torch.equal(d, x - m)
    ir = str(k.asm["ttcir"])
    # The group's run-time check: the scf.if around the first store (the max's own scf.if,
    # its rare second pass, comes before it).
    start = ir.rindex("scf.if", 0, ir.index('"tcpu.vstore"'))
    one_nest = ir[start:ir.index("} else {", start)]
    assert one_nest.count('"tcpu.vstore"') == 2 and '"tcpu.prefetch"' in one_nest, ir
