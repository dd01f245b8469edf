"""Atomics: every RMW op, CAS and exchange, scalar and tensor, masked, every sem/scope,
truly atomic across the launcher's threads."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def rmw_kernel(out_ptr, val_ptr, old_ptr, N: tl.constexpr, SLOTS: tl.constexpr, OP: tl.constexpr,
               SEM: tl.constexpr, SCOPE: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, N)
    v = tl.load(val_ptr + pid * N + offs)
    ptrs = out_ptr + offs % SLOTS  # many lanes and programs hit each slot
    mask = offs < N - 1  # the last lane never touches memory
    if OP == "add":
        old = tl.atomic_add(ptrs, v, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "max":
        old = tl.atomic_max(ptrs, v, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "min":
        old = tl.atomic_min(ptrs, v, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "and":
        old = tl.atomic_and(ptrs, v, mask=mask, sem=SEM, scope=SCOPE)
    elif OP == "or":
        old = tl.atomic_or(ptrs, v, mask=mask, sem=SEM, scope=SCOPE)
    else:
        old = tl.atomic_xor(ptrs, v, mask=mask, sem=SEM, scope=SCOPE)
    tl.store(old_ptr + pid * N + offs, old, mask=mask)


def _reference(init, vals, op, slots):
    out = init.clone()
    n = vals.shape[1]
    for p in range(vals.shape[0]):
        for i in range(n - 1):
            s = i % slots
            a, b = out[s], vals[p, i]
            if op == "add":
                out[s] = a + b
            elif op == "max":
                out[s] = max(a, b)
            elif op == "min":
                out[s] = min(a, b)
            elif op == "and":
                out[s] = a & b
            elif op == "or":
                out[s] = a | b
            else:
                out[s] = a ^ b
    return out


@pytest.mark.parametrize("op", ["add", "max", "min", "and", "or", "xor"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint32], ids=str)
def test_integer_rmw_across_programs(op, dtype):
    P, N, SLOTS = 64, 32, 4
    if dtype == torch.uint32:
        vals = torch.randint(0, 2**31, (P, N), dtype=torch.int64).to(dtype)
        init = torch.randint(0, 2**31, (SLOTS,), dtype=torch.int64).to(dtype)
    else:
        vals = torch.randint(-1000, 1000, (P, N), dtype=dtype)
        init = torch.randint(-1000, 1000, (SLOTS,), dtype=dtype)
    if op in ("and", "or", "xor") and dtype == torch.uint32:
        pytest.skip("torch has no uint32 bitwise ops to build the reference")
    out = init.clone()
    old = torch.zeros(P, N, dtype=dtype)
    rmw_kernel[(P,)](out, vals, old, N=N, SLOTS=SLOTS, OP=op, SEM="acq_rel", SCOPE="gpu", num_threads=2)
    ref = _reference(init.to(torch.int64), vals.to(torch.int64), op, SLOTS)
    bits = torch.iinfo(dtype).bits
    wrap = lambda t: t % (1 << bits) if dtype == torch.uint32 else t  # unsigned sums wrap
    assert torch.equal(wrap(out.to(torch.int64)), wrap(ref))


@pytest.mark.parametrize("sem", ["relaxed", "acquire", "release", "acq_rel"])
@pytest.mark.parametrize("scope", ["gpu", "cta", "sys"])
def test_float_atomic_add_every_sem_and_scope(sem, scope):
    P, N, SLOTS = 16, 16, 2
    vals = torch.randint(-8, 8, (P, N)).float()  # exact in fp32: the order does not matter
    out = torch.zeros(SLOTS)
    old = torch.zeros(P, N)
    rmw_kernel[(P,)](out, vals, old, N=N, SLOTS=SLOTS, OP="add", SEM=sem, SCOPE=scope)
    assert torch.equal(out, _reference(torch.zeros(SLOTS), vals, "add", SLOTS))


@pytest.mark.parametrize("op", ["max", "min"])
def test_float_max_min(op):
    P, N, SLOTS = 8, 16, 4
    vals = torch.randn(P, N)
    out = torch.zeros(SLOTS)
    old = torch.zeros(P, N)
    rmw_kernel[(P,)](out, vals, old, N=N, SLOTS=SLOTS, OP=op, SEM="acq_rel", SCOPE="gpu")
    assert torch.equal(out, _reference(torch.zeros(SLOTS), vals, op, SLOTS))


def test_returned_old_values_are_a_permutation_of_the_sequence():
    """Each atomic add returns the value before it: with all adds of 1 on one slot, the
    returned values are exactly 0 .. total-1."""
    P, N = 32, 16
    out = torch.zeros(1, dtype=torch.int32)
    vals = torch.ones(P, N, dtype=torch.int32)
    old = torch.full((P, N), -1, dtype=torch.int32)
    rmw_kernel[(P,)](out, vals, old, N=N, SLOTS=1, OP="add", SEM="acq_rel", SCOPE="gpu", num_threads=2)
    total = P * (N - 1)
    assert out.item() == total
    got = old[:, :N - 1].flatten().sort().values
    assert torch.equal(got, torch.arange(total, dtype=torch.int32))
    assert (old[:, N - 1] == -1).all()  # masked lane: nothing stored


@triton.jit
def xchg_cas_kernel(x_ptr, old_ptr, cas_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    old = tl.atomic_xchg(x_ptr + offs, offs.to(tl.float32) * 2)
    tl.store(old_ptr + offs, old)
    # Succeeds on even slots only (they hold their index), writes 100 there.
    prev = tl.atomic_cas(cas_ptr + offs, offs, tl.full((N,), 100, tl.int32))
    tl.store(old_ptr + N + offs, prev.to(tl.float32))


def test_xchg_and_cas():
    N = 16
    x = torch.randn(N)
    orig = x.clone()
    cas = torch.arange(N, dtype=torch.int32)
    cas[1::2] += 1000
    cas_orig = cas.clone()
    old = torch.empty(2 * N)
    xchg_cas_kernel[(1,)](x, old, cas, N=N)
    assert torch.equal(old[:N], orig)
    assert torch.equal(x, torch.arange(N).float() * 2)
    assert torch.equal(old[N:], cas_orig.float())
    expected = cas_orig.clone()
    expected[0::2] = 100
    assert torch.equal(cas, expected)


@triton.jit
def scalar_atomic_kernel(counter_ptr, out_ptr):
    old = tl.atomic_add(counter_ptr, 1)
    tl.store(out_ptr + tl.program_id(0), old)


def test_scalar_atomic_counter_across_threads():
    P = 200
    counter = torch.zeros(1, dtype=torch.int32)
    out = torch.empty(P, dtype=torch.int32)
    scalar_atomic_kernel[(P,)](counter, out, num_threads=2)
    assert counter.item() == P
    assert torch.equal(out.sort().values, torch.arange(P, dtype=torch.int32))


@triton.jit
def spin_lock_kernel(lock_ptr, count_ptr, data_ptr, N: tl.constexpr):
    # The layer-norm backward pattern: a lock taken with CAS, a plain
    # read-modify-write inside, released with an exchange.
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    count = tl.load(count_ptr)
    offs = tl.arange(0, N)
    tl.store(data_ptr + offs, tl.load(data_ptr + offs) + 1.0)
    tl.store(count_ptr, count + 1)
    tl.atomic_xchg(lock_ptr, 0)


def test_spin_lock_across_threads():
    P, N = 256, 64
    lock = torch.zeros(1, dtype=torch.int32)
    count = torch.zeros(1, dtype=torch.int32)
    data = torch.zeros(N)
    spin_lock_kernel[(P,)](lock, count, data, N=N, num_threads=2)
    assert count.item() == P
    assert torch.equal(data, torch.full((N,), float(P)))
    assert lock.item() == 0


@triton.jit
def half_atomic_kernel(x_ptr, out_ptr, old_ptr, N: tl.constexpr, OP: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + tl.program_id(0) * N + offs)
    if OP == "add":
        tl.atomic_add(out_ptr + offs % 4, x)
    else:
        old = tl.atomic_cas(out_ptr + offs, x, x * 2)
        tl.store(old_ptr + offs, old)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("op", ["add", "cas"])
def test_half_precision_atomics(dtype, op):
    """(Triton's frontend offers only add and cas on fp16/bf16.)"""
    P, N = 32, 16
    # Small integers: exact in both types, so the sum does not depend on the order.
    x = torch.randint(-4, 5, (P, N)).to(dtype)
    old = torch.empty(N, dtype=dtype)
    if op == "cas":
        out = x[0].clone()
        half_atomic_kernel[(1,)](x, out, old, N=N, OP=op)
        assert torch.equal(old, x[0]) and torch.equal(out, x[0] * 2)
        return
    out = torch.zeros(4, dtype=dtype)
    half_atomic_kernel[(P,)](x, out, old, N=N, OP=op, num_threads=2)
    grouped = x.float().reshape(P, N // 4, 4).reshape(-1, 4)
    assert torch.equal(out.float(), grouped.sum(0))


@triton.jit
def poll_kernel(flag_ptr, out_ptr, N: tl.constexpr, TIMEOUT: tl.constexpr):
    offs = tl.arange(0, N)
    if TIMEOUT:
        matched = tl.atomic_poll(flag_ptr + offs, 1, timeout_ns=1000)
    else:
        matched = tl.atomic_poll(flag_ptr + offs, 1)
    tl.store(out_ptr + offs, matched)


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32, torch.int64], ids=str)
def test_atomic_poll_tensor(dtype):
    flags = torch.ones(8, dtype=dtype)
    out = torch.zeros(8, dtype=torch.bool)
    poll_kernel[(1,)](flags, out, N=8, TIMEOUT=False)
    assert out.all()
    flags[2] = 0
    flags[5] = 7
    poll_kernel[(1,)](flags, out, N=8, TIMEOUT=True)
    assert out.tolist() == [True, True, False, True, True, False, True, True]


@triton.jit
def handoff_kernel(flag_ptr, payload_ptr, out_ptr):
    """Program 1 publishes a payload with a release exchange; program 0 waits for it."""
    if tl.program_id(0) == 0:
        ok = tl.atomic_poll(flag_ptr, 1, sem="acquire", timeout_ns=20_000_000_000)
        tl.store(out_ptr, tl.where(ok, tl.load(payload_ptr), -1))
    else:
        tl.store(payload_ptr, 42)
        tl.atomic_xchg(flag_ptr, 1, sem="release")


def test_atomic_poll_waits_for_another_program():
    flag, payload, out = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    handoff_kernel[(2,)](flag, payload, out, num_threads=2)
    assert flag.item() == 1 and out.item() == 42
