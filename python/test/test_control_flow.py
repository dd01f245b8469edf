"""Tensors carried by loops and yielded by ifs, against torch and the interpreter."""
import re

import pytest
import torch
import triton
import triton.language as tl



@triton.jit
def accumulate_kernel(x_ptr, out_ptr, K, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    acc = tl.zeros((M, N), dtype=tl.float32)
    ptrs = x_ptr + rows * N + cols
    for k in range(K):
        acc += tl.load(ptrs) * (k + 1)
        ptrs += M * N  # a loop-carried tensor of pointers
    tl.store(out_ptr + rows * N + cols, acc)


def test_loop_carried_accumulator_and_pointers():
    K, M, N = 5, 8, 32
    x = torch.randn(K, M, N)
    out = torch.empty(M, N)
    accumulate_kernel[(1,)](x, out, K, M=M, N=N)
    ref = sum(x[k] * (k + 1) for k in range(K))
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


@triton.jit
def swap_kernel(x_ptr, y_ptr, out_ptr, K, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(x_ptr + offs)
    b = tl.load(y_ptr + offs)
    for _ in range(K):
        a, b = b, a + b  # each new value reads the other carried tensor
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + N + offs, b)


@pytest.mark.parametrize("K", [0, 1, 5])
def test_loop_carried_tensors_that_read_each_other(K, interp):
    x = torch.randint(0, 5, (16,), dtype=torch.int32)
    y = torch.randint(0, 5, (16,), dtype=torch.int32)
    out, ref = torch.empty(32, dtype=torch.int32), torch.empty(32, dtype=torch.int32)
    swap_kernel[(1,)](x, y, out, K, N=16)
    interp(swap_kernel)[(1,)](x, y, ref, K, N=16)
    assert torch.equal(out, ref)


@triton.jit
def shift_kernel(x_ptr, out_ptr, K, N: tl.constexpr):
    offs = tl.arange(0, N)
    v = tl.load(x_ptr + offs)
    for _ in range(K):
        # Reads its own carried value at other indices: needs a temporary.
        v = tl.reshape(tl.trans(tl.reshape(v, (2, N // 2))), (N,)) + 1
    tl.store(out_ptr + offs, v)


def test_loop_carried_tensor_read_at_other_indices():
    x = torch.arange(16, dtype=torch.int32)
    out = torch.empty(16, dtype=torch.int32)
    shift_kernel[(1,)](x, out, 3, N=16)
    v = x.clone()
    for _ in range(3):
        v = v.reshape(2, 8).t().reshape(16) + 1
    assert torch.equal(out, v)


@triton.jit
def if_tensor_kernel(x_ptr, out_ptr, flag, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if flag > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    tl.store(out_ptr + offs, y + 0.5)


@pytest.mark.parametrize("flag", [1, 0])
def test_if_yielding_tensors(flag):
    x = torch.randn(32)
    out = torch.empty(32)
    if_tensor_kernel[(1,)](x, out, flag, N=32)
    assert torch.equal(out, (x * 2.0 if flag else x - 1.0) + 0.5)


@triton.jit
def running_max_kernel(x_ptr, out_ptr, K, M: tl.constexpr, N: tl.constexpr):
    # Online-softmax style: a carried row max and sum, with reductions in the loop.
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    m = tl.full((M,), -float("inf"), tl.float32)
    s = tl.zeros((M,), tl.float32)
    for k in range(K):
        x = tl.load(x_ptr + k * M * N + rows[:, None] * N + cols[None, :])
        m_new = tl.maximum(m, tl.max(x, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    tl.store(out_ptr + rows, m + tl.log(s))


def test_online_logsumexp():
    K, M, N = 4, 8, 16
    x = torch.randn(K, M, N)
    out = torch.empty(M)
    running_max_kernel[(1,)](x, out, K, M=M, N=N)
    ref = torch.logsumexp(x.permute(1, 0, 2).reshape(M, K * N), dim=1)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


@triton.jit
def early_return_kernel(x_ptr, out_ptr, n_valid, N: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= n_valid:
        return
    offs = tl.arange(0, N)
    tl.store(out_ptr + pid * N + offs, tl.load(x_ptr + offs) + pid)


def test_early_return():
    x = torch.randn(16)
    out = torch.zeros(4, 16)
    early_return_kernel[(4,)](x, out, 2, N=16)
    assert torch.equal(out[:2], torch.stack([x, x + 1]))
    assert (out[2:] == 0).all()


@triton.jit
def while_tensor_kernel(x_ptr, out_ptr, limit, N: tl.constexpr):
    # Doubles the vector until its sum passes `limit`: a tensor carried by a while loop.
    offs = tl.arange(0, N)
    v = tl.load(x_ptr + offs)
    steps = 0
    while tl.sum(v, axis=0) < limit:
        v = v * 2.0
        steps += 1
    tl.store(out_ptr + offs, v)
    tl.store(out_ptr + N, steps.to(tl.float32))


@pytest.mark.parametrize("limit", [0.5, 100.0, 1e6])
def test_while_loop_carrying_a_tensor(limit):
    x = torch.rand(16) + 0.1
    out = torch.empty(17)
    while_tensor_kernel[(1,)](x, out, limit, N=16)
    v, steps = x.clone(), 0
    while v.sum() < limit:
        v, steps = v * 2.0, steps + 1
    assert torch.equal(out[:16], v) and out[16].item() == steps


@triton.jit(noinline=True)
def _scale_rows(p, factor, n):
    offs = tl.arange(0, 16)
    tl.store(p + offs, tl.load(p + offs) * factor, mask=offs < n)
    return factor + 1.0


@triton.jit
def noinline_kernel(out_ptr, N: tl.constexpr):
    r = _scale_rows(out_ptr + tl.program_id(0) * N, 2.0, 8)
    tl.store(out_ptr + tl.program_id(0) * N + N - 1, r)


def test_noinline_helper_with_scalar_arguments():
    out = torch.ones(2, 16)
    noinline_kernel[(2,)](out, N=16)
    expected = torch.ones(2, 16)
    expected[:, :8] = 2.0
    expected[:, 15] = 3.0
    assert torch.equal(out, expected)


@triton.jit
def reuse_after_store_kernel(p_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(p_ptr + offs)
    tl.store(p_ptr + offs, x * 2)
    tl.store(out_ptr + offs, x)  # must see the value loaded before the store above


@triton.jit
def reuse_across_iterations_kernel(p_ptr, out_ptr, K, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(p_ptr + offs)
    for k in range(K):
        tl.store(out_ptr + k * N + offs, x)
        tl.store(p_ptr + offs, x + k + 1)  # a later iteration must not re-read this


def test_loads_are_not_reevaluated_after_a_store():
    p = torch.arange(16.0)
    orig = p.clone()
    out = torch.empty(16)
    reuse_after_store_kernel[(1,)](p, out, N=16)
    assert torch.equal(out, orig) and torch.equal(p, orig * 2)
    p = orig.clone()
    out = torch.empty(3, 16)
    reuse_across_iterations_kernel[(1,)](p, out, 3, N=16)
    assert torch.equal(out, orig.expand(3, 16))


@triton.jit
def static_range_kernel(x_ptr, out_ptr, N: tl.constexpr, STEPS: tl.constexpr):
    tl.static_assert(N % 16 == 0, "N must be a multiple of 16")
    offs = tl.arange(0, N)
    acc = tl.zeros((N,), tl.float32)
    for k in tl.static_range(STEPS):  # unrolled by the frontend
        acc += tl.load(x_ptr + k * N + offs) * (k + 1)
    for k in tl.range(0, STEPS, 2):  # a runtime loop with a step
        acc += tl.load(x_ptr + k * N + offs)
    tl.store(out_ptr + offs, acc)


def test_static_range_tl_range_and_static_assert():
    x = torch.randn(4, 32)
    out = torch.empty(32)
    static_range_kernel[(1,)](x, out, N=32, STEPS=4)
    ref = sum(x[k] * (k + 1) for k in range(4)) + x[0] + x[2]
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(triton.CompilationError, match="multiple of 16"):
        static_range_kernel[(1,)](x, out, N=8, STEPS=1)


@triton.jit
def exit_early_kernel(flag_ptr, out_ptr):
    # Canonicalizes to one conditional branch whose two edges reach the same block.
    if tl.load(flag_ptr):
        tl.store(out_ptr, 0)
        return
    tl.store(out_ptr, 1)


@pytest.mark.parametrize("flag", [1, 0])
def test_return_from_if_with_both_edges_to_one_block(flag):
    out = torch.full((1,), -1, dtype=torch.int32)
    exit_early_kernel[(1,)](torch.tensor([flag], dtype=torch.int32), out)
    assert out.item() == (0 if flag else 1)


@triton.jit
def consecutive_loops_kernel(x_ptr, out_ptr, N: tl.constexpr):
    """A tensor carried by one loop, then by a second one (the second loop's init is the
    first loop's result)."""
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    for i in tl.range(0, 4, loop_unroll_factor=1):
        x = x + 1
    x = x * 3
    for i in tl.range(0, 3, num_stages=1):
        x = x * 2
    tl.store(out_ptr + offs, x)


def test_consecutive_loops_carrying_one_tensor():
    x = torch.randn(32)
    out = torch.empty(32)
    consecutive_loops_kernel[(1,)](x, out, N=32)
    torch.testing.assert_close(out, (x + 4) * 3 * 8)


@triton.jit
def _sign_of_difference(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def _divmod_pair(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def map_elementwise_kernel(x_ptr, y_ptr, s_ptr, q_ptr, r_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(s_ptr + offs, tl.map_elementwise(_sign_of_difference, x, y))
    q, r = tl.map_elementwise(_divmod_pair, x, tl.abs(y) + 1, pack=2)
    tl.store(q_ptr + offs, q)
    tl.store(r_ptr + offs, r)


def test_map_elementwise_with_branches_and_pack():
    x = torch.randint(0, 50, (4, 16), dtype=torch.int32)
    y = torch.randint(-5, 5, (4, 16), dtype=torch.int32)
    s, q, r = (torch.empty(4, 16, dtype=torch.int32) for _ in range(3))
    map_elementwise_kernel[(1,)](x, y, s, q, r, M=4, N=16)
    assert torch.equal(s, torch.sign(x - y).int())
    assert torch.equal(q, x // (y.abs() + 1))
    assert torch.equal(r, x % (y.abs() + 1))


@triton.jit(noinline=True)
def _noinline_scaled_block(ptr, scale, N: tl.constexpr):
    return tl.load(ptr + tl.arange(0, N)) * scale


@triton.jit
def tensor_call_kernel(x_ptr, y_ptr, out_ptr, flag_ptr, N: tl.constexpr):
    total = _noinline_scaled_block(x_ptr, 2.0, N) + _noinline_scaled_block(y_ptr, 3.0, N)
    first = tl.sum(total, 0)[None]  # a one-element tensor
    if first > 0:  # unsplat: its one element as the condition
        tl.store(flag_ptr, first.item())
    tl.store(out_ptr + tl.arange(0, N), total)


def test_noinline_returning_tensor_and_unsplat():
    x, y = torch.rand(32), torch.rand(32)
    out, flag = torch.empty(32), torch.zeros(1)
    tensor_call_kernel[(1,)](x, y, out, flag, N=32)
    torch.testing.assert_close(out, x * 2 + y * 3)
    torch.testing.assert_close(flag, (x * 2 + y * 3).sum().reshape(1))


@triton.jit
def nested_loops_kernel(x_ptr, o_ptr, M, N, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, M):
        for j in range(0, N):
            acc += tl.load(x_ptr + (i * N + j) * BLOCK + tl.arange(0, BLOCK))
    tl.store(o_ptr + tl.arange(0, BLOCK), acc)


def test_nested_loops_carrying_one_tensor():
    """Found in FlagGems' batch norm: the inner loop's init is the outer loop's carried value."""
    x = torch.randn(2, 3, 16)
    out = torch.empty(16)
    nested_loops_kernel[(1,)](x, out, 2, 3, BLOCK=16)
    torch.testing.assert_close(out, x.sum((0, 1)))


@triton.jit
def licm_kernel(x_ptr, out_ptr, n, NO_LICM: tl.constexpr):
    acc = 0.0
    for i in tl.range(0, n, disable_licm=NO_LICM):
        acc += tl.load(x_ptr + i)
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("no_licm", [False, True])
def test_disable_licm_reaches_llvm(no_licm):
    x = torch.arange(10, dtype=torch.float32)
    out = torch.empty(1)
    k = licm_kernel[(1,)](x, out, 10, NO_LICM=no_licm)
    assert out.item() == 45.0
    assert ("llvm.licm.disable" in k.asm["llir"]) == no_licm


@triton.jit
def _masked_rows_kernel(x_ptr, out_ptr, n, rows, NO_LICM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in tl.range(0, rows, disable_licm=NO_LICM):
        acc += tl.exp(tl.load(x_ptr + i * n + offs, mask=offs < n, other=0.0))
    tl.store(out_ptr + offs, acc, mask=offs < n)


def _loop_properties(llir):
    """The property sets of the loop IDs in LLVM IR text: {"licm", "unroll"} and the like."""
    names = dict(re.findall(r'^(![0-9]+) = !\{ ?!"llvm\.(?:loop\.)?(\w+)\.disable" ?\}', llir, re.M))
    ids = re.findall(r"^(![0-9]+) = (?:distinct )?!\{ ?\1, ([^}]*)\}", llir, re.M)
    return [frozenset(names[x.strip()] for x in rest.split(",") if x.strip() in names) for _, rest in ids]


@pytest.mark.parametrize("no_licm", [False, True])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_branching_loops_are_not_unrolled(no_licm, vector_bits):
    """A loop whose body branches (a masked chunk, exp's two paths) keeps
    `llvm.loop.unroll.disable` through LLVM's optimizer, in the same loop ID as
    `disable_licm` when both apply (test/Codegen/emit-llvm-loop-unroll.mlir checks that a
    straight-line loop gets no metadata)."""
    n, rows, block = 1000, 5, 1024
    x = torch.randn(rows, n)
    out = torch.empty(n)
    k = _masked_rows_kernel[(1,)](x, out, n, rows, NO_LICM=no_licm, BLOCK=block, vector_bits=vector_bits)
    torch.testing.assert_close(out, x.exp().sum(0), rtol=1e-5, atol=1e-5)
    props = _loop_properties(k.asm["llir"])
    assert frozenset({"unroll"}) in props or frozenset({"unroll", "licm"}) in props
    if no_licm:
        assert frozenset({"unroll", "licm"}) in props


@triton.jit
def _hoistable_load_kernel(a_ptr, b_ptr, out_ptr, trips, HAS_OTHER: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    c = tl.load(a_ptr + cols)
    for _ in range(trips):  # Triton's LICM hoists the load: mask & (0 < trips)
        if HAS_OTHER:
            c = tl.load(b_ptr + cols, mask=cols < 4, other=2)
        else:
            c = tl.load(b_ptr + cols, mask=cols < 4)
    tl.store(out_ptr + cols, c)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.bfloat16, torch.int8, torch.float64])
@pytest.mark.parametrize("has_other", [True, False])
@pytest.mark.parametrize("trips", [0, 2, 3])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_masked_load_hoisted_out_of_a_loop(dtype, has_other, trips, vector_bits):
    """A loop-invariant masked load that Triton's LICM moves before the loop gets the guard
    `& (0 < trips)` on its mask; the lanes outside the mask must be `other` (0 without it),
    whatever the vector width (LLVM 22 read memory there on AVX2, see core._load)."""
    block = 64
    a = (torch.arange(block) + 100).to(dtype)
    b = (torch.arange(block) + 1000 % 127).to(dtype)
    out = torch.empty(block, dtype=dtype)
    _hoistable_load_kernel[(1,)](a, b, out, trips, HAS_OTHER=has_other, BLOCK=block, vector_bits=vector_bits)
    cols = torch.arange(block)
    fill = torch.tensor(2 if has_other else 0, dtype=dtype)
    ref = a if trips == 0 else torch.where(cols < 4, b, fill)
    assert torch.equal(out, ref), (out.tolist(), ref.tolist())
