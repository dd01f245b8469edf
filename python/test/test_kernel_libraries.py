"""Real kernel libraries (Liger-Kernel, FlagGems, flash-linear-attention, Mamba's Triton ops,
Unsloth's kernels, vLLM's attention, MoE, sampling, quantization and KV-cache kernels with the
triton_kernels library it vendors, SGLang's attention, routing, top-k, mHC and sampling
kernels, torchao's quantization, MX, attention-quantization and block-sparse kernels,
LMDeploy's paged-attention, KV-cache, MoE, W8A8, AWQ, fp8 and LoRA kernels, bitsandbytes'
quantization and optimizer kernels, DeepSpeed's training, MoE, inference and fp8 GEMM kernels,
Apple's Cut Cross-Entropy, GemLite's low-bit GEMM and GEMV kernels) on CPU tensors, each op
against torch (or, for fla, mamba_ssm and parts of SGLang, torchao, bitsandbytes and
DeepSpeed, the library's own torch references).

The cases live in scripts/kernel_library_cases/<lib>.py, run by scripts/kernel_libraries.py
(also a CLI that prints one line per op).  The libraries are never part of the repository:
they are pip-installed with --no-deps into the git-ignored folder upstream/libs (or the folder
named by TRITON_CPU_KERNEL_LIBS), and every test of a library that is not importable is
skipped, e.g. in CI.

    python -m pytest -n 1 python/test/test_kernel_libraries.py

Each case runs in the pytest process; run with pytest-xdist (`-n N`, N >= 1) so that a case
that crashed the process would be reported as a crashed worker and the run would go on.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "kernel_libraries.py"
_spec = importlib.util.spec_from_file_location("kernel_libraries", _SCRIPT)
kl = importlib.util.module_from_spec(_spec)
sys.modules["kernel_libraries"] = kl
_spec.loader.exec_module(kl)

pytestmark = pytest.mark.kernel_libraries

if not any(kl.library_installed(lib) for lib in kl.LIBRARIES):
    pytest.skip(f"kernel libraries not installed in {kl.libs_dir()} (set {kl.LIBS_ENV})",
                allow_module_level=True)


@pytest.mark.parametrize("case", kl.CASES, ids=[c.id for c in kl.CASES])
def test_kernel_library_op(case):
    module, reason = kl.load_library(case.lib)
    if module is None:
        pytest.skip(reason)
    result = kl.run_case(case)
    if result.status == "ERROR":
        pytest.fail(f"{result.detail}\n{result.traceback}", pytrace=False)
    if result.status == "FAIL":
        pytest.fail(result.detail, pytrace=False)
    assert result.status == "PASS", result
