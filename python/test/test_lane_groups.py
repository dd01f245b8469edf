"""Lane groups (convert_triton_to_tcpu/lane_groups.py): values whose runs along the lane
dimension are longer than a vector step are computed once per group of lanes. Checked
against torch on Inductor-style index arithmetic (`x // D`, `x % D`, a load of `idx[x // D]`)
for run lengths below, equal to and above the block, with masks, with both vector widths,
and where the runs are not proven (negative operands) so that no group may be formed."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def rows_kernel(idx, table, out, n, D: tl.constexpr, W: tl.constexpr, B: tl.constexpr):
    # out[x] = 2 * table[idx[x // D], x % D] + x // D
    x = tl.program_id(0) * B + tl.arange(0, B)
    m = x < n
    x1 = x // D
    x0 = x % D
    row = tl.load(idx + x1, mask=m, other=0)
    v = tl.load(table + (x0 + W * row), mask=m, other=0.0)
    tl.store(out + x, 2 * v + x1.to(tl.float32), mask=m)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("D,B", [(64, 512), (128, 512), (512, 512), (1024, 256), (32, 64)])
@pytest.mark.parametrize("n_rows,cut", [(7, 16), (40, 16), (7, 5)])
def test_rows(D, B, n_rows, cut, vector_bits):
    table = torch.randn(300, D + 3)
    idx = torch.randint(0, 300, (n_rows,), dtype=torch.int32)
    n = n_rows * D - cut  # a partial last block: the mask matters
    out = torch.full((n_rows * D,), 7.0)
    k = rows_kernel[(triton.cdiv(n, B),)](idx, table, out, n, D=D, W=D + 3, B=B, vector_bits=vector_bits)
    x = torch.arange(n)
    ref = 2 * table[idx[x // D].long(), x % D] + (x // D).float()
    assert torch.equal(out[:n], ref)
    assert torch.equal(out[n:], torch.full((cut,), 7.0))
    if vector_bits == 256 and n % 16 == 0 and 16 < min(D, B):
        # The row index is computed once per group, not per step: nested less deeply than
        # the store of each step (the row's load stays in the step: its mask changes there).
        # With n divisible by 16 (specialized, like Inductor's xnumel) the mask is constant
        # over the 16 lanes of a step: the row's load is a scalar load and the table's a
        # vector load; else both are gathers. (Without the prefetch of the next program's
        # rows, whose own loop nest comes first.)
        k = rows_kernel[(triton.cdiv(n, B),)](idx, table, out, n, D=D, W=D + 3, B=B, vector_bits=vector_bits,
                                              prefetch=False)
        assert _depth(k, "arith.divsi") < _depth(k, '"tcpu.vstore"'), k.asm["ttcir"]
        assert "tcpu.gather" not in str(k.asm["ttcir"])


def _depth(k, op: str) -> int:
    """Indentation of the first line of the kernel's TritonCPU IR holding `op`."""
    line = next(ln for ln in str(k.asm["ttcir"]).splitlines() if op in ln)
    return len(line) - len(line.lstrip())


@triton.jit
def shifted_kernel(x_ptr, out, shift, B: tl.constexpr):
    # x - shift is negative for the first programs: signed // and % do not form runs there,
    # so nothing may be shared across lanes (a wrong group would repeat one lane's value).
    x = tl.program_id(0) * B + tl.arange(0, B) - shift
    tl.store(out + tl.program_id(0) * B + tl.arange(0, B), tl.load(x_ptr + 300 + x // 64) + (x % 64).to(tl.float32))


@pytest.mark.parametrize("shift", [0, 40, 130])
def test_negative_operands_form_no_groups(shift):
    src = torch.randn(400)
    out = torch.empty(1024)
    shifted_kernel[(4,)](src, out, shift, B=256)
    x = torch.arange(1024) - shift
    q = torch.div(x, 64, rounding_mode="trunc")
    ref = src[300 + q] + torch.fmod(x, 64).float()
    assert torch.equal(out, ref)


@triton.jit
def tile_kernel(bias, out, N: tl.constexpr, G: tl.constexpr):
    # 2-D tile whose last dimension holds groups of G columns sharing one bias value
    r = tl.arange(0, 4)[:, None]
    c = tl.arange(0, N)[None, :]
    b = tl.load(bias + r * (N // G) + c // G)
    tl.store(out + r * N + c, b * (c % G).to(tl.float32))


@pytest.mark.parametrize("G", [32, 64, 256])
def test_groups_in_a_2d_tile(G):
    N = 256
    bias = torch.randn(4 * (N // G))
    out = torch.empty(4, N)
    tile_kernel[(1,)](bias, out, N=N, G=G)
    c = torch.arange(N)
    ref = bias.view(4, N // G)[:, c // G] * (c % G).float()
    assert torch.equal(out, ref)


@triton.jit
def compare_kernel(src, out, n, P: tl.constexpr, B: tl.constexpr):
    # A mask from each comparison of a block's offsets with n (divisible by 16): x < n and
    # x >= n flip at a multiple of 16 (a mask constant over 16 lanes), x <= n and x > n one
    # later (not constant over 16 lanes: a run boundary must not be assumed there).
    x = tl.program_id(0) * B + tl.arange(0, B)
    if P == 0:
        m = x < n
    elif P == 1:
        m = x <= n
    elif P == 2:
        m = n > x
    elif P == 3:
        m = n >= x
    elif P == 4:
        m = x >= n
    else:
        m = x > n
    v = tl.load(src + x // 4, mask=m, other=-1.0)  # constant over 4 lanes where m allows
    tl.store(out + x, v)


@pytest.mark.parametrize("pred", range(6))
def test_comparison_masks(pred):
    n = 496
    B = 256
    src = torch.randn(B * 2 // 4)
    out = torch.empty(2 * B)
    compare_kernel[(2,)](src, out, n, P=pred, B=B, bounds_check=True)
    x = torch.arange(2 * B)
    m = [x < n, x <= n, n > x, n >= x, x >= n, x > n][pred]
    ref = torch.where(m, src[x // 4], torch.tensor(-1.0))
    assert torch.equal(out, ref)


@triton.jit
def gather_rows_kernel(idx, table, out, D: tl.constexpr, B: tl.constexpr):
    # out[x] = table[(idx[x // D] + x % D) % 64]: tl.gather's lanes are evaluated one by one,
    # lane j + k of a step from the values its lane group shares (idx[x // D], x % D).
    x = tl.program_id(0) * B + tl.arange(0, B)
    row = tl.load(idx + x // D)
    t = tl.load(table + tl.arange(0, 64))
    tl.store(out + x, tl.gather(t, (row + x % D) % 64, 0))


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("D,B", [(64, 512), (128, 256), (32, 128)])
def test_lanes_of_a_step_in_a_group(D, B, vector_bits):
    n_rows = 8192 // D
    idx = torch.randint(0, 1000, (n_rows,), dtype=torch.int32)
    table = torch.randn(64)
    out = torch.empty(n_rows * D)
    gather_rows_kernel[(n_rows * D // B,)](idx, table, out, D=D, B=B, vector_bits=vector_bits)
    x = torch.arange(n_rows * D)
    assert torch.equal(out, table[(idx[x // D].long() + x % D) % 64])
