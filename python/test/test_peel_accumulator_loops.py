"""peel-accumulator-loops end to end: loops that accumulate into constant-initialized
tensors, with the first iteration moved out, give the results of torch and of Triton's
interpreter, whether the loop runs no, one or several iterations."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_loops(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # upstream tutorial 05's forward kernel: three passes over the row, block by block
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=mask)


@pytest.mark.parametrize("n, block", [(1024, 1024), (1000, 1024), (3000, 1024), (700, 256)])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_layer_norm_in_loops(n, block, vector_bits):
    rows = 37
    x = torch.randn(rows, n)
    w, b = torch.rand(n), torch.randn(n)
    y, mean, rstd = torch.empty_like(x), torch.empty(rows), torch.empty(rows)
    layer_norm_loops[(rows,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK_SIZE=block, vector_bits=vector_bits)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mean, x.mean(1), rtol=1e-5, atol=1e-5)


@triton.jit
def sum_range_kernel(x_ptr, out_ptr, count_ptr, partial_ptr, lb, ub, step, BLOCK: tl.constexpr):
    """Sums blocks lb, lb + step, ... < ub of x into a tensor that starts at 7, counts the
    iterations in a scalar and stores each partial sum as it goes."""
    cols = tl.arange(0, BLOCK)
    acc = tl.full([BLOCK], 7.0, tl.float32)
    count = 0
    for i in range(lb, ub, step):
        acc += tl.load(x_ptr + i * BLOCK + cols)
        count += 1
        tl.store(partial_ptr + i * BLOCK + cols, acc)
    tl.store(out_ptr + cols, acc)
    tl.store(count_ptr, count)


@pytest.mark.parametrize("lb, ub, step", [(0, 5, 1), (2, 3, 1), (1, 9, 3), (4, 4, 1), (6, 2, 1),
                                          # no iteration, and lb + step wraps past ub in i32
                                          (2**31 - 3, 5, 4)])
def test_iteration_counts(lb, ub, step, interp):
    block, blocks = 64, 10
    x = torch.randn(blocks * block)
    outs = []
    for kernel in (sum_range_kernel, interp(sum_range_kernel)):
        out, count, partial = torch.empty(block), torch.zeros(1, dtype=torch.int32), torch.zeros(blocks * block)
        kernel[(1,)](x, out, count, partial, lb, ub, step, BLOCK=block)
        outs.append((out, count, partial))
    (out, count, partial), (r_out, r_count, r_partial) = outs
    taken = list(range(lb, ub, step))
    ref = 7.0 + sum((x[i * block:(i + 1) * block] for i in taken), torch.zeros(block))
    assert count.item() == len(taken) == r_count.item()
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out, r_out, rtol=0, atol=0)
    torch.testing.assert_close(partial, r_partial, rtol=0, atol=0)


@triton.jit
def count_positive_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """An integer accumulator (zeros of i32) and a float one carried together."""
    cols = tl.arange(0, BLOCK)
    hits = tl.zeros([BLOCK], dtype=tl.int32)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n, BLOCK):
        v = tl.load(x_ptr + off + cols, mask=off + cols < n, other=-1.0)
        hits += (v > 0).to(tl.int32)
        total += tl.where(v > 0, v, 0.0)
    tl.store(out_ptr + cols, hits.to(tl.float32) * 1000.0 + total)


@pytest.mark.parametrize("n", [0, 100, 128, 1000])
def test_integer_and_float_accumulators(n):
    block = 128
    x = torch.randn(max(n, 1))
    out = torch.empty(block)
    count_positive_kernel[(1,)](x, out, n, BLOCK=block)
    ref = torch.zeros(block)
    for j in range(block):
        v = x[j:n:block]
        ref[j] = (v > 0).sum().float() * 1000.0 + v[v > 0].sum()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-4)
