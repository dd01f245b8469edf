"""The same kernels, run by the CPU backend and by Triton's interpreter: outputs must agree.

(3-D argmax and float atomic_xchg are left out: the interpreter itself fails on them; their
tests against torch are in test_reductions.py and test_atomics.py.)

One interpreter child process runs all cases (Triton's own @jit helpers are only
interpretable under TRITON_INTERPRET=1 at import)."""
import pytest
import torch

from conftest import interpret_batch
from test_control_flow import accumulate_kernel, early_return_kernel, running_max_kernel, swap_kernel
from test_control_flow import while_tensor_kernel
from test_dot import dot_kernel, matmul_kernel
from test_atomics import rmw_kernel, scalar_atomic_kernel
from test_patterns import conv2d_naive_kernel, padding_kernel, random_kernel
from test_reductions import reduce_kernel, two_operand_kernel
from test_scans import recurrence_kernel, scan_kernel
from test_shape_ops import cat_kernel, gather_kernel, histogram_kernel, join_split_kernel, permute_kernel
from test_shape_ops import sort_kernel

import triton.language as tl


def _cases():
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)
    ri = lambda lo, hi, *s: torch.randint(lo, hi, s, generator=g, dtype=torch.int32)
    return {
        "reduce_argmax": (reduce_kernel, (1,), [ri(0, 4, 8, 32).float(), torch.empty(8, dtype=torch.int32)],
                          dict(A=8, B=32, C=1, RANK=2, OP="argmax", AXIS=1, KEEP=False, SCALAR=False)),
        "reduce_3d": (reduce_kernel, (1,), [r(4, 8, 16), torch.empty(64)],
                      dict(A=4, B=8, C=16, RANK=3, OP="max", AXIS=1, KEEP=False, SCALAR=False)),
        "reduce_user": (reduce_kernel, (1,), [r(8, 32), torch.empty(8)],
                        dict(A=8, B=32, C=1, RANK=2, OP="reduce", AXIS=1, KEEP=False, SCALAR=False)),
        "reduce_two_operands": (two_operand_kernel, (1,), [r(16, 64), torch.empty(16), torch.empty(16)],
                                dict(M=16, N=64)),
        "cumsum_rev": (scan_kernel, (1,), [ri(-9, 9, 4, 8, 16), torch.empty(4, 8, 16, dtype=torch.int32)],
                       dict(A=4, B=8, C=16, RANK=3, OP="cumsum", AXIS=1, REVERSE=True)),
        "scan_max": (scan_kernel, (1,), [r(1, 8, 16), torch.empty(1, 8, 16)],
                     dict(A=1, B=8, C=16, RANK=3, OP="max", AXIS=2, REVERSE=False)),
        "recurrence": (recurrence_kernel, (1,), [torch.rand(64, generator=g), r(64), torch.empty(64)], dict(N=64)),
        "dot_int8": (dot_kernel, (1,), [ri(-128, 127, 16, 32).to(torch.int8), ri(-128, 127, 32, 16).to(torch.int8),
                                        None, torch.empty(16, 16, dtype=torch.int32)],
                     dict(M=16, N=16, K=32, ACC=False, PRECISION="ieee", OUT=tl.int32)),
        "matmul": (matmul_kernel, (8,), [r(50, 40), r(40, 60), torch.empty(50, 60), 50, 60, 40, 40, 1, 60, 1, 60, 1],
                   dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=2)),
        "permute": (permute_kernel, (1,), [r(4, 8, 16), torch.empty(16, 4, 8)], dict(A=4, B=8, C=16, O0=2, O1=0, O2=1)),
        "join_split": (join_split_kernel, (1,), [r(32), r(32), torch.empty(32, 2), torch.empty(32)], dict(N=32)),
        "cat": (cat_kernel, (1,), [r(8, 16), r(8, 16), torch.empty(16, 16)], dict(N=8, M=16)),
        "gather": (gather_kernel, (1,), [r(8, 16), ri(0, 8, 8, 16), torch.empty(8, 16)], dict(M=8, N=16, AXIS=0)),
        "histogram": (histogram_kernel, (1,), [ri(0, 16, 256), torch.empty(16, dtype=torch.int32)],
                      dict(N=256, BINS=16)),
        "sort": (sort_kernel, (1,), [r(64), torch.empty(64), torch.empty(8)], dict(N=64, K=8, DESC=True)),
        "loop_acc": (accumulate_kernel, (1,), [r(5, 8, 32), torch.empty(8, 32), 5], dict(M=8, N=32)),
        "swap": (swap_kernel, (1,), [ri(0, 5, 16), ri(0, 5, 16), torch.empty(32, dtype=torch.int32), 6], dict(N=16)),
        "online_lse": (running_max_kernel, (1,), [r(4, 8, 16), torch.empty(8), 4], dict(M=8, N=16)),
        "while_tensor": (while_tensor_kernel, (1,), [torch.rand(16, generator=g) + 0.1, torch.empty(17), 100.0],
                         dict(N=16)),
        "early_return": (early_return_kernel, (4,), [r(16), torch.zeros(4, 16), 2], dict(N=16)),
        "conv2d": (conv2d_naive_kernel, (9, 7), [r(9, 7), r(3, 3), torch.empty(9, 7), 9, 7], dict(K=3)),
        "rand": (random_kernel, (2,), [torch.empty(128), 42], dict(N=64, KIND="randint")),
        "atomic_add": (rmw_kernel, (8,), [torch.zeros(4, dtype=torch.int32), ri(-50, 50, 8, 16),
                                          torch.zeros(8, 16, dtype=torch.int32)],
                       dict(N=16, SLOTS=4, OP="add", SEM="acq_rel", SCOPE="gpu")),
        "atomic_max": (rmw_kernel, (8,), [torch.zeros(4, dtype=torch.int32), ri(-50, 50, 8, 16),
                                          torch.zeros(8, 16, dtype=torch.int32)],
                       dict(N=16, SLOTS=4, OP="max", SEM="relaxed", SCOPE="cta")),
        "atomic_counter": (scalar_atomic_kernel, (16,), [torch.zeros(1, dtype=torch.int32),
                                                         torch.zeros(16, dtype=torch.int32)], {}),
        "descriptor_padding": (padding_kernel, (1,), [r(5, 8), torch.empty(8, 16), 5, 8],
                               dict(BM=8, BN=16, NAN=True)),
    }


CASES = _cases()


@pytest.fixture(scope="module")
def interpreter_outputs():
    batch = [(k, grid, [a.clone() if isinstance(a, torch.Tensor) else a for a in args], kw)
             for k, grid, args, kw in CASES.values()]
    return dict(zip(CASES, interpret_batch(batch)))


@pytest.mark.parametrize("name", list(CASES))
def test_matches_interpreter(name, interpreter_outputs):
    kernel, grid, args, kwargs = CASES[name]
    mine = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    kernel[grid](*mine, **kwargs)
    for k, (m, ref) in enumerate(zip(mine, interpreter_outputs[name])):
        if name in ("atomic_add", "atomic_max", "atomic_counter") and k > 0:
            continue  # the old values returned depend on the order programs ran in
        if isinstance(m, torch.Tensor):
            if m.dtype.is_floating_point:
                torch.testing.assert_close(m, ref, rtol=1e-5, atol=1e-5, equal_nan=True)
            else:
                assert torch.equal(m, ref)
