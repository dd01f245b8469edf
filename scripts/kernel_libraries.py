#!/usr/bin/env python
"""Run the ops of seven real Triton kernel libraries, Liger-Kernel, FlagGems,
flash-linear-attention (fla-core), Mamba's Triton ops (mamba_ssm), Unsloth's kernels, vLLM's
attention, MoE, sampling, quantization and KV-cache kernels (with triton_kernels, the MoE
library it vendors) and SGLang's attention, routing, top-k, mHC and sampling kernels, on CPU
tensors through this backend and compare every result with torch.

    python scripts/kernel_libraries.py [--lib liger|flaggems|fla|mamba|unsloth|vllm|sglang|all] [-k SUBSTRING] [--list] [-v]

One line per op: PASS, FAIL (the worst output's max abs/rel error against the reference) or
ERROR (the exception's first line; for an op the backend cannot compile, the TTIR op it
names), then a count per library.  Exit status 1 when any case did not pass.

The libraries are not ours and are never committed or copied: they are pip-installed with
`--no-deps` into a git-ignored folder, by default <repo>/upstream/libs, or the folder named by
TRITON_CPU_KERNEL_LIBS.  Versions this was written against: liger_kernel 0.8.5, flag_gems 5.0.2
(the latter also needs its dependency sqlalchemy, installed into the same folder:
`pip install --no-deps --target upstream/libs sqlalchemy==2.0.48`), fla-core 0.6.0 with its
dependency einops (`pip install --no-deps --target upstream/libs fla-core==0.6.0 einops==0.8.2`),
mamba_ssm 2.3.2.post1 (its sdist builds CUDA extensions, so only its Python package is unpacked,
from PyPI: `curl -sL https://files.pythonhosted.org/packages/af/48/aa7bec0efc7453fa0512276c0069c854bf684219050294266534bfef34bb/mamba_ssm-2.3.2.post1.tar.gz
| tar xz -C upstream/libs --strip-components=1 mamba_ssm-2.3.2.post1/mamba_ssm`; it needs einops too),
unsloth 2026.10.9 with unsloth_zoo 2026.10.9 (`pip install --no-deps --target upstream/libs
unsloth==2026.10.9 unsloth_zoo==2026.10.9`), vllm 0.33.0 with psutil 7.2.2 (`pip install
--no-deps --target upstream/libs vllm==0.33.0 psutil==7.2.2`: a 340 MB wheel, of which only
the Triton kernels are used), sglang 0.5.23 with the serving-stack packages its kernel modules
import (`pip install --no-deps --target upstream/libs sglang==0.5.23 pybase64==1.5.1
starlette==1.10.0 msgspec==0.23.0 pyzmq==27.3.0 aiohttp==3.14.5 multidict==7.2.1 yarl==1.25.1
propcache==0.5.4 aiohappyeyeballs==2.7.1 aiosignal==1.4.0 frozenlist==1.8.0`; psutil as for
vLLM).

Liger, FlagGems, mamba_ssm, Unsloth and vLLM assume a GPU in their Python wrappers.
`_shim_flaggems`, `_shim_liger`, `_shim_mamba`, `_shim_unsloth` and `_shim_vllm` below are the
only adaptations; they never touch a kernel (fla needs none). Most vLLM modules import its
serving stack, which the `--no-deps` install leaves out: `_vllm_kernels` compiles only their
@triton.jit functions from the installed file, unmodified, and those cases launch them as the
module's wrapper does. `_triton_kernels` sets the block sizes of vLLM's copy of triton_kernels,
whose heuristics know only CUDA and HIP. SGLang's wrappers mostly launch Triton on any
device; the cases that need more say so (a CUDA-only fast path switched off, `is_cuda`
answering True around one call, stub modules for mHC's TileLang imports).
python/test/test_kernel_libraries.py runs the same cases under pytest.
"""

import argparse
import contextlib
import dataclasses
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import logging
import math
import os
import sys
import time
import traceback
import types
import warnings
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[1]
LIBS_ENV = "TRITON_CPU_KERNEL_LIBS"
LIBRARIES = ("liger", "flaggems", "fla", "mamba", "unsloth", "vllm", "sglang")


def libs_dir() -> Path:
    return Path(os.environ.get(LIBS_ENV) or REPO / "upstream" / "libs")


# =============================================================================================
# Library shim: the one place that adapts the libraries' Python wrappers to a CPU-only torch.
# Kernels are never changed.  Each patch says why it exists.
# =============================================================================================

class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Runs `patches[name](module)` right after module `name` has executed, before anything
    else in the library can use it.  Needed because flag_gems detects its device, picks its
    torch device module and its code generation settings while `import flag_gems` runs."""

    def __init__(self, patches):
        self.patches = patches

    def find_spec(self, name, path, target=None):
        patch = self.patches.get(name)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            patch(module)

        spec.loader.exec_module = exec_module
        return spec


class _CpuPhiloxGenerator:
    """Stand-in for a CUDA generator: flag_gems' random ops read and advance the Philox
    (seed, offset) pair as `generator.get_state().view(torch.int64)` (two int64), but CPU
    generators are mt19937 with a 5 KB state.  Seeded from torch.initial_seed(); the offset
    restarts at 0 whenever that seed changes."""

    def __init__(self):
        self._seed = None
        self._state = None

    def get_state(self):
        seed = torch.initial_seed() & (2**63 - 1)
        if seed != self._seed:
            self._seed = seed
            self._state = torch.tensor([seed, 0], dtype=torch.int64).view(torch.uint8)
        return self._state.clone()

    def set_state(self, state):
        self._state = state.clone()


class _CpuDeviceModule:
    """What flag_gems calls `torch_device_fn` (torch.cuda for NVIDIA, torch.<dev> otherwise).
    torch.cpu itself is left untouched; this forwards to it and adds what flag_gems uses."""

    def __getattr__(self, name):
        return getattr(torch.cpu, name)

    @staticmethod
    def device(device=None):
        # `with torch_device_fn.device(x.device):` guards around every launch; a no-op here.
        return contextlib.nullcontext()

    @staticmethod
    def current_device():
        # libentry indexes a tuple of per-device kernel caches with it (torch.cpu says "cpu").
        return 0

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def get_device_capability(device=None):
        return (0, 0)

    @staticmethod
    def get_device_properties(device=None):
        # Sizing heuristics (cumsum, masked_select, ...) read the SM count.
        return types.SimpleNamespace(name="cpu", major=0, minor=0,
                                     multi_processor_count=os.cpu_count() or 1)

    default_generators = (_CpuPhiloxGenerator(),)


class _TorchWithCpuAsCuda:
    cuda = _CpuDeviceModule()

    def __getattr__(self, name):
        return getattr(torch, name)


def _shim_flaggems():
    # flag_gems ships a CPU vendor (runtime/backend/_arm, device_name "cpu", CPU-sized tuning
    # configs), but 5.0.2 dropped it from its `vendors` enum, so neither GEMS_VENDOR=arm nor
    # auto-detection can select it ("No device were detected on your machine").  Accept it.
    def patch_common(mod):
        all_vendors = mod.vendors.get_all_vendors
        mod.vendors.get_all_vendors = lambda: {**all_vendors(), "arm": "arm"}

    # torch_device_fn: see _CpuDeviceModule (cached here before the library first asks for it).
    def patch_backend(mod):
        mod.torch_device_object = _CpuDeviceModule()

    # An unknown vendor gets NVIDIA's pointwise code generation settings, which emit
    # tl.make_block_ptr; Triton 3.9 removed block pointers (a compile error on any target).
    # Use flag_gems' own plain-pointer variant, with NVIDIA's other settings.
    def patch_codegen(mod):
        mod.CODEGEN_COFIGS["arm"] = mod.CodeGenConfig(
            512, (65536, 65536, 65536), 32, prefer_block_pointer=False, prefer_1d_tile=False)

    # Ops the arm vendor has no heuristics for (mean, argmax, ...) use NVIDIA's, some of which
    # call torch.cuda.get_device_properties(torch.cuda.current_device()) for the SM count.
    # That module (imported as `_nvidia.heuristics_config_utils`) gets a torch whose .cuda is
    # the CPU device module above; the real torch.cuda is left alone.
    def patch_nvidia_heuristics(mod):
        mod.torch = _TorchWithCpuAsCuda()

    os.environ["GEMS_VENDOR"] = "arm"          # accepted thanks to patch_common
    # flag_gems takes `triton.language.extra.<vendor>.libdevice` (there is no ...extra.cpu) and
    # otherwise falls back to the attribute `triton.language.extra.libdevice`, which exists only
    # once that module was imported (else it silently ends up with triton.language.math, which
    # lacks pow/isnan/...).  The backend maps that dispatching libdevice to its CPU libdevice.
    importlib.import_module("triton.language.extra.libdevice")
    hook = _PatchAfterImport({
        "flag_gems.runtime.common": patch_common,
        "flag_gems.runtime.backend": patch_backend,
        "flag_gems.utils.codegen_config_utils": patch_codegen,
        "_nvidia.heuristics_config_utils": patch_nvidia_heuristics,
    })
    sys.meta_path.insert(0, hook)
    try:
        # The import prints vendor notes and warns about the missing device; keep output clean.
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import flag_gems
    finally:
        sys.meta_path.remove(hook)
    if flag_gems.device != "cpu":
        raise RuntimeError(f"flag_gems was imported before the shim (device {flag_gems.device!r})")
    return flag_gems


def _shim_liger():
    import liger_kernel.ops  # noqa: F401  (infer_device() is "cpu": no vendor replacement)
    # Its op registry warns once per op that the CUDA-only alternatives (CuTe DSL, cuTile,
    # Ascend) cannot be imported; expected here, and the default Triton kernels are used.
    logging.getLogger("liger_kernel.backends.registry").setLevel(logging.ERROR)
    import liger_kernel.ops.dyt as dyt
    # DyT's backward sizes its per-SM partial sums only for cuda/xpu/npu (NUM_SMS is unbound
    # on "cpu"); take the NPU branch, whose core-count query falls back to a constant.
    dyt.infer_device = lambda: "npu"
    return liger_kernel


def _shim_fla():
    # fla-core runs on a Triton "cpu" backend as it is (its device is the target's backend
    # name); nothing to adapt.
    import fla
    return fla


def _package_without_init(name):
    """Registers package `name` (found on sys.path, or in its parent package once that is
    registered) without running its __init__.py, so that its submodules import on their own."""
    package = types.ModuleType(name)
    package.__path__ = list(importlib.util.find_spec(name).submodule_search_locations)
    sys.modules[name] = package
    return package


def _shim_mamba():
    # mamba_ssm/__init__.py imports the package's CUDA extensions (selective_scan_cuda) for
    # its modules; the Triton ops need none of it. The package is registered without running
    # that file, so `mamba_ssm.ops.triton.*` import on their own.
    package = _package_without_init("mamba_ssm")
    if not torch.backends.cuda.is_built():
        # The wrappers enter `torch.cuda.device(x.device.index)`, None for a CPU tensor: a no-op
        # by torch's documentation, a TypeError in a CPU-only build (`_exchange_device(None)`).
        exchange, maybe_exchange = torch.cuda._exchange_device, torch.cuda._maybe_exchange_device
        torch.cuda._exchange_device = lambda d: -1 if d is None else exchange(d)
        torch.cuda._maybe_exchange_device = lambda d: -1 if d is None else maybe_exchange(d)
        # The backward passes size their per-SM partial sums by
        # `torch.cuda.get_device_properties(x.device).multi_processor_count`: for a CPU
        # tensor, the CPU driver's count (one per launcher thread).
        properties = torch.cuda.get_device_properties

        def cpu_properties(device=None):
            if isinstance(device, torch.device) and device.type == "cpu":
                from triton.runtime import driver
                count = driver.active.utils.get_device_properties(0)["multiprocessor_count"]
                return types.SimpleNamespace(multi_processor_count=count, name="cpu")
            return properties(device)
        torch.cuda.get_device_properties = cpu_properties
    return package


def _shim_unsloth():
    # unsloth/__init__.py patches transformers and requires an accelerator, unsloth_zoo's
    # likewise; the kernels (unsloth.kernels.*) need neither. Both packages are registered
    # without running those files.
    # UNSLOTH_ALLOW_CPU=1 is the library's own test-only CPU fallback: its device detection
    # then reports "cuda", so every wrapper takes the branch it takes on an NVIDIA GPU.
    os.environ["UNSLOTH_ALLOW_CPU"] = "1"
    # unsloth_zoo copies one of its modules into a cache folder, by default
    # ./unsloth_compiled_cache in whatever directory the tests run from: kept with the libraries.
    os.environ.setdefault("UNSLOTH_COMPILE_LOCATION", str(libs_dir() / "unsloth_compiled_cache"))
    unsloth = _package_without_init("unsloth")
    _package_without_init("unsloth.kernels")
    zoo = _package_without_init("unsloth_zoo")
    zoo.DEVICE_TYPE = "cuda"  # what the zoo's __init__ exports under that fallback
    if not torch.backends.cuda.is_built():
        # A CPU tensor's device index is None, and the wrappers then ask CUDA for the current
        # device to choose per-architecture load hints (cross-entropy's eviction policy); a
        # CPU-only torch raises there. 0 is what a machine with one device answers.
        torch.cuda.current_device = lambda: 0
    return unsloth


def _shim_vllm():
    # vllm.triton_utils decides at import whether Triton may be used: a backend named "cpu"
    # (this one) counts only in vLLM's CPU build, whose version carries "+cpu"; the wheel
    # from PyPI is the CUDA build, which then finds no active driver and replaces `triton`
    # with a placeholder. The check is made to answer as the CPU build does.
    import vllm.platforms
    if "vllm.triton_utils" in sys.modules:
        raise ImportError("vllm.triton_utils was imported before the shim")
    vllm.platforms.vllm_version_matches_substr = lambda substr: substr == "cpu"
    import vllm.triton_utils
    if not vllm.triton_utils.HAS_TRITON:
        raise ImportError("vllm.triton_utils still finds no Triton")
    return vllm


def _shim_sglang():
    # Nothing to adapt for the whole library: the cases' modules import with the few
    # serving-stack packages installed beside sglang (see the module docstring); what single
    # cases need, they set up themselves.
    import sglang
    return sglang


_LOADED = {}
_PACKAGES = {"liger": "liger_kernel", "flaggems": "flag_gems", "fla": "fla", "mamba": "mamba_ssm",
             "unsloth": "unsloth", "vllm": "vllm", "sglang": "sglang"}


def _add_libs_dir():
    folder = libs_dir()
    if folder.is_dir() and str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def library_installed(lib):
    """Whether the library's package can be found (cheap: nothing is imported)."""
    _add_libs_dir()
    return importlib.util.find_spec(_PACKAGES[lib]) is not None


def load_library(lib):
    """Imports a library with its shim once; returns (module, None) or (None, reason)."""
    if lib not in _LOADED:
        try:
            if not library_installed(lib):
                raise ImportError(f"no {_PACKAGES[lib]} in {libs_dir()} (set {LIBS_ENV}) or sys.path")
            _LOADED[lib] = ({"liger": _shim_liger, "flaggems": _shim_flaggems, "fla": _shim_fla,
                             "mamba": _shim_mamba, "unsloth": _shim_unsloth, "vllm": _shim_vllm,
                             "sglang": _shim_sglang}[lib](), None)
        except Exception as e:  # noqa: BLE001 - reported as the skip reason
            _LOADED[lib] = (None, f"{lib} not importable: {type(e).__name__}: {_first_line(e)}")
    return _LOADED[lib]


# =============================================================================================
# Comparisons
# =============================================================================================

class Checker:
    """Collects comparisons of one case; every check runs, the failures are reported together."""

    def __init__(self):
        self.failures = []

    def with_grads(self, y, ref, dy, grads, tag=""):
        """`y` against `ref`, then both backward from `dy` and each gradient: `grads` lists
        (name, our leaf, the reference's leaf[, rtol])."""
        self.close("y" + tag, y, ref)
        y.backward(dy)
        ref.backward(dy)
        for name, ours, theirs, *rtol in grads:
            self.close(name + tag, ours.grad, theirs.grad, **({"rtol": rtol[0]} if rtol else {}))

    def close(self, name, got, ref, atol=1e-5, rtol=1e-5):
        if not self._same_meta(name, got, ref):
            return
        g, r = got.detach().double(), ref.detach().double()
        both_nan = g.isnan() & r.isnan()
        diff = torch.where(both_nan, 0.0, (g - r).abs())
        diff = torch.where(diff.isnan(), math.inf, diff)
        same_inf = (g == r) & r.isinf()
        diff = torch.where(same_inf, 0.0, diff)
        bad = diff > atol + rtol * r.abs()
        if bad.any():
            big = r.abs() > atol
            rel = (diff[big] / r.abs()[big]).max().item() if big.any() else 0.0
            self.failures.append(f"{name}: max abs {diff.max().item():.3g}, max rel {rel:.3g} "
                                 f"({int(bad.sum())}/{bad.numel()} off; atol {atol:g}, rtol {rtol:g})")

    def close_to_scale(self, name, got, ref, tol):
        """`got` within `tol` of `ref` relative to each element and to ref's largest magnitude
        (for outputs whose small elements carry the larger elements' rounding)."""
        self.close(name, got.double(), ref.double(), atol=tol * ref.abs().max().item(), rtol=tol)

    def equal(self, name, got, ref):
        if not self._same_meta(name, got, ref):
            return
        g, r = got.detach(), ref.detach()
        if g.is_floating_point():
            bad = ~((g == r) | (g.isnan() & r.isnan()))
        else:
            bad = g != r
        if bad.any():
            first = tuple(i.item() for i in bad.nonzero()[0])
            self.failures.append(f"{name}: {int(bad.sum())}/{bad.numel()} differ (exact), first at "
                                 f"{first}: {g[first].item()} vs {r[first].item()}")

    def true(self, name, ok, detail=""):
        if not ok:
            self.failures.append(f"{name}: {detail}")

    def _same_meta(self, name, got, ref):
        if not isinstance(got, torch.Tensor):
            self.failures.append(f"{name}: got {type(got).__name__}, not a tensor")
            return False
        if got.shape != ref.shape or got.dtype != ref.dtype:
            self.failures.append(f"{name}: got {tuple(got.shape)} {got.dtype}, "
                                 f"expected {tuple(ref.shape)} {ref.dtype}")
            return False
        return True


# =============================================================================================
# Cases
# =============================================================================================

@dataclasses.dataclass(frozen=True)
class Case:
    id: str                         # "<lib>.<op>", e.g. "flaggems.topk"
    fn: Callable                    # fn(module, chk)

    @property
    def lib(self):
        return self.id.split(".", 1)[0]


CASES = []


def case(case_id):
    def register(fn):
        assert all(c.id != case_id for c in CASES), case_id
        CASES.append(Case(case_id, fn))
        return fn
    return register


def _grad(x):
    return x.detach().clone().requires_grad_(True)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


def _out0(out):
    return out[0] if isinstance(out, (tuple, list)) else out


# ------------------------------------------------------------------------------ Liger-Kernel
# Forward outputs and input/weight gradients against torch reference implementations.

def _ref_rms_norm(x, w, eps, offset=0.0):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (offset + w)


@case("liger.cross_entropy")
def _(L, chk):
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    logits, target = randn(8, 130), torch.randint(0, 130, (8,))
    target[2] = -100                                   # ignore_index
    x, xr = _grad(logits), _grad(logits)
    loss = LigerCrossEntropyFunction.apply(x, target, None, -100, 0.0, 0.0, "mean")[0]
    ref = F.cross_entropy(xr, target, ignore_index=-100)
    chk.close("loss", loss, ref)
    loss.backward(), ref.backward()
    chk.close("dx", x.grad, xr.grad)
    # the nn.Module wrapper, with label smoothing
    from liger_kernel.transformers import LigerCrossEntropyLoss
    x2, xr2 = _grad(logits), _grad(logits)
    loss2 = LigerCrossEntropyLoss(label_smoothing=0.1)(x2, target)
    ref2 = F.cross_entropy(xr2, target, label_smoothing=0.1)
    chk.close("loss(label_smoothing)", loss2, ref2)
    loss2.backward(), ref2.backward()
    chk.close("dx(label_smoothing)", x2.grad, xr2.grad)


@case("liger.fused_linear_cross_entropy")
def _(L, chk):
    from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction
    h, w, b = randn(12, 32), randn(70, 32) * 0.2, randn(70) * 0.1
    target = torch.randint(0, 70, (12,))
    target[5] = -100
    (x, wg, bg), (xr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h, w, b))
    loss = _out0(LigerFusedLinearCrossEntropyFunction.apply(x, wg, target, bg))
    ref = F.cross_entropy(xr @ wr.t() + br, target, ignore_index=-100)
    chk.close("loss", loss, ref)
    loss.backward(), ref.backward()
    chk.close("dx", x.grad, xr.grad, atol=1e-5, rtol=1e-4)
    chk.close("dw", wg.grad, wr.grad, atol=1e-5, rtol=1e-4)
    chk.close("db", bg.grad, br.grad, atol=1e-5, rtol=1e-4)


@case("liger.rms_norm")
def _(L, chk):
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    h, w, dy = randn(2, 5, 48), randn(48), randn(2, 5, 48)
    (x, wg), (xr, wr) = map(_grad, (h, w)), map(_grad, (h, w))
    y = LigerRMSNormFunction.apply(x, wg, 1e-6, 0.0, "llama", False)
    ref = _ref_rms_norm(xr, wr, 1e-6)
    chk.with_grads(y, ref, dy, [("dx", x, xr), ("dw", wg, wr, 1e-4)])
    # Gemma: offset 1 and fp32 casting
    (x, wg), (xr, wr) = map(_grad, (h, w)), map(_grad, (h, w))
    y = LigerRMSNormFunction.apply(x, wg, 1e-6, 1.0, "gemma", False)
    ref = _ref_rms_norm(xr, wr, 1e-6, offset=1.0)
    chk.with_grads(y, ref, dy, [("dx", x, xr), ("dw", wg, wr, 1e-4)], tag="(gemma)")


@case("liger.layer_norm")
def _(L, chk):
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    h, w, b, dy = randn(10, 40), randn(40), randn(40), randn(10, 40)
    (x, wg, bg), (xr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h, w, b))
    y = LigerLayerNormFunction.apply(x, wg, bg, 1e-5)
    ref = F.layer_norm(xr, (40,), wr, br, 1e-5)
    chk.with_grads(y, ref, dy, [("dx", x, xr), ("dw", wg, wr, 1e-4), ("db", bg, br, 1e-4)])


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


@case("liger.rope")
def _(L, chk):
    from liger_kernel.ops.rope import LigerRopeFunction
    bsz, n_q, n_kv, seq, hd = 2, 4, 2, 6, 16
    q, k = randn(bsz, n_q, seq, hd), randn(bsz, n_kv, seq, hd)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)[None]           # (1, seq, hd)
    cos, sin = emb.cos(), emb.sin()
    dq, dk = randn(bsz, n_q, seq, hd), randn(bsz, n_kv, seq, hd)
    (qg, kg), (qr, kr) = map(_grad, (q, k)), map(_grad, (q, k))
    qo, ko = LigerRopeFunction.apply(qg, kg, cos, sin)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    _check_q_k(chk, (qo, ko), (qr * c + _rotate_half(qr) * s, kr * c + _rotate_half(kr) * s), (qg, kg), (qr, kr), (dq, dk))


def _check_q_k(chk, outs, refs, leaves, ref_leaves, grads):
    """A rotary embedding's rotated q and k against the reference, then both backward from
    `grads` and the gradients of q and k."""
    for name, out, ref in zip("qk", outs, refs):
        chk.close(name, out, ref)
    torch.autograd.backward(outs, grads)
    torch.autograd.backward(refs, grads)
    for name, leaf, ref_leaf in zip("qk", leaves, ref_leaves):
        chk.close("d" + name, leaf.grad, ref_leaf.grad)


def _glu_case(chk, fn, act):
    a, b, dc = randn(3, 7, 40), randn(3, 7, 40), randn(3, 7, 40)
    (ag, bg), (ar, br) = map(_grad, (a, b)), map(_grad, (a, b))
    c = fn(ag, bg)
    ref = act(ar) * br
    chk.close("c", c, ref)
    c.backward(dc), ref.backward(dc)
    chk.close("da", ag.grad, ar.grad)
    chk.close("db", bg.grad, br.grad)


@case("liger.swiglu")
def _(L, chk):
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    _glu_case(chk, LigerSiLUMulFunction.apply, F.silu)


@case("liger.geglu")
def _(L, chk):
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    _glu_case(chk, LigerGELUMulFunction.apply, lambda x: F.gelu(x, approximate="tanh"))


@case("liger.softmax")
def _(L, chk):
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    h, dy = randn(6, 77), randn(6, 77)
    x, xr = _grad(h), _grad(h)
    y = LigerSoftmaxFunction.apply(x)
    ref = torch.softmax(xr, dim=-1)
    chk.with_grads(y, ref, dy, [("dx", x, xr)])


@case("liger.kl_div")
def _(L, chk):
    from liger_kernel.ops.kl_div import LigerKLDivLossFunction
    pred = torch.log_softmax(randn(8, 50), -1)
    true = torch.softmax(randn(8, 50), -1)
    for reduction in ("batchmean", "sum", "none"):
        x, xr = _grad(pred), _grad(pred)
        loss = LigerKLDivLossFunction.apply(x, true, reduction, False)
        ref = F.kl_div(xr, true, reduction=reduction, log_target=False)
        chk.close(f"loss({reduction})", loss, ref)
        g = torch.randn(ref.shape)
        loss.backward(g), ref.backward(g)
        chk.close(f"dx({reduction})", x.grad, xr.grad)


@case("liger.jsd")
def _(L, chk):
    from liger_kernel.ops.jsd import LigerJSDFunction
    logq = torch.log_softmax(randn(8, 60), -1)              # input: log Q
    logp = torch.log_softmax(randn(8, 60), -1)              # target: log P
    for beta in (0.5, 0.0, 1.0):
        x, xr = _grad(logq), _grad(logq)
        loss = LigerJSDFunction.apply(x, logp, None, beta)
        q, p = xr.exp(), logp.exp()
        if beta == 0.0:
            terms = p * (logp - xr)                         # forward KL(P || Q)
        elif beta == 1.0:
            terms = q * (xr - logp)                         # reverse KL(Q || P)
        else:
            log_m = torch.log(beta * p + (1 - beta) * q)
            terms = beta * p * (logp - log_m) + (1 - beta) * q * (xr - log_m)
        ref = terms.sum() / logq.shape[0]
        chk.close(f"loss(beta={beta})", loss, ref)
        loss.backward(), ref.backward()
        chk.close(f"dx(beta={beta})", x.grad, xr.grad)


@case("liger.dyt")
def _(L, chk):
    from liger_kernel.ops.dyt import LigerDyTFunction
    h, dy = randn(6, 96), randn(6, 96)
    alpha, gamma, beta = torch.tensor([0.7]), randn(96), randn(96)
    (x, ag, gg, bg), (xr, ar, gr, br) = map(_grad, (h, alpha, gamma, beta)), map(_grad, (h, alpha, gamma, beta))
    y = LigerDyTFunction.apply(x, ag, gg, bg)
    ref = gr * torch.tanh(ar * xr) + br
    chk.with_grads(y, ref, dy, [("dx", x, xr), ("dalpha", ag, ar, 1e-4), ("dgamma", gg, gr, 1e-4),
                                ("dbeta", bg, br, 1e-4)])


@case("liger.group_norm")
def _(L, chk):
    from liger_kernel.ops.group_norm import LigerGroupNormFunction
    h, w, b = randn(2, 6, 20), randn(6), randn(6)
    dy = randn(2, 6, 20)
    (x, wg, bg), (xr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h, w, b))
    y = LigerGroupNormFunction.apply(x, wg, bg, 6, 3, 1e-6)
    ref = F.group_norm(xr, 3, wr, br, 1e-6)
    chk.with_grads(y, ref, dy, [("dx", x, xr, 1e-4), ("dw", wg, wr, 1e-4), ("db", bg, br, 1e-4)])


@case("liger.fused_add_rms_norm")
def _(L, chk):
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    h, r, w = randn(2, 5, 48), randn(2, 5, 48), randn(48)
    dy, ds = randn(2, 5, 48), randn(2, 5, 48)
    (x, rg, wg), (xr, rr, wr) = map(_grad, (h, r, w)), map(_grad, (h, r, w))
    y, s = LigerFusedAddRMSNormFunction.apply(x, rg, wg, 1e-6)
    sref = xr + rr
    yref = _ref_rms_norm(sref, wr, 1e-6)
    chk.close("y", y, yref)
    chk.close("residual", s, sref)
    torch.autograd.backward((y, s), (dy, ds))
    torch.autograd.backward((yref, sref), (dy, ds))
    chk.close("dx", x.grad, xr.grad)
    chk.close("dr", rg.grad, rr.grad)
    chk.close("dw", wg.grad, wr.grad, rtol=1e-4)


def _sparsemax_ref(x):
    """Sparsemax over the last dim (Martins & Astudillo): max(x - tau, 0), tau from the sorted row."""
    z = x.sort(-1, descending=True).values
    k = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    cumulative = z.cumsum(-1)
    support = ((1 + k * z) > cumulative).sum(-1, keepdim=True)
    tau = (cumulative.gather(-1, support - 1) - 1) / support.to(x.dtype)
    return (x - tau).clamp(min=0)


@case("liger.sparsemax")
def _(L, chk):
    from liger_kernel.transformers.functional import liger_sparsemax
    h, dy = randn(37, 1000) * 3, randn(37, 1000)
    x, xr = _grad(h), _grad(h)
    chk.with_grads(liger_sparsemax(x), _sparsemax_ref(xr), dy, [("dx", x, xr)])


@case("liger.poly_norm")
def _(L, chk):
    """y = w0 norm(x^3) + w1 norm(x^2) + w2 norm(x) + b, norm(u) = u / rms(u); fp32 and bf16."""
    from liger_kernel.transformers.functional import liger_poly_norm
    for dtype, tol in ((torch.float32, 1e-4), (torch.bfloat16, 2e-2)):
        h, w, b, dy = randn(37, 512, dtype=dtype), randn(3), randn(()), randn(37, 512, dtype=dtype)
        (x, wg, bg), (xr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h.float(), w, b))
        y = liger_poly_norm(x, wg, bg, 1e-6, False)
        norm = lambda u: u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + 1e-6)
        ref = wr[0] * norm(xr ** 3) + wr[1] * norm(xr ** 2) + wr[2] * norm(xr) + br
        chk.close_to_scale(f"y {dtype}", y.float(), ref, tol)
        y.backward(dy)
        ref.backward(dy.float())
        for name, ours, theirs in (("dx", x, xr), ("dw", wg, wr), ("db", bg, br)):
            chk.close_to_scale(f"{name} {dtype}", ours.grad.float(), theirs.grad, tol)


@case("liger.modulated_rms_norm")
def _(L, chk):
    """RMSNorm times (1 + scale) plus shift, modulated per token or per sequence (the latter's
    backward sums the scale and shift gradients with atomics), with and without a shift."""
    from liger_kernel.transformers.functional import liger_modulated_rms_norm
    B, T, H = 3, 11, 256
    for per_token, has_shift in ((True, True), (False, True), (False, False)):
        mod_shape = (B, T, H) if per_token else (B, H)
        h, w, sc, sh, dy = randn(B, T, H), randn(H), randn(*mod_shape), randn(*mod_shape), randn(B, T, H)
        (x, wg, scg, shg), (xr, wr, scr, shr) = map(_grad, (h, w, sc, sh)), map(_grad, (h, w, sc, sh))
        y = liger_modulated_rms_norm(x, wg, scg, shg if has_shift else None, 1e-6, 0.0, "llama", False)
        expand = (lambda t: t) if per_token else (lambda t: t[:, None])
        ref = _ref_rms_norm(xr, wr, 1e-6) * (1 + expand(scr)) + (expand(shr) if has_shift else 0)
        grads = [("dx", x, xr, 1e-4), ("dw", wg, wr, 1e-4), ("dscale", scg, scr, 1e-4)]
        chk.with_grads(y, ref, dy, grads + ([("dshift", shg, shr, 1e-4)] if has_shift else []),
                       tag=f" (per token {per_token}, shift {has_shift})")


@case("liger.tvd")
def _(L, chk):
    """Total variation distance between two distributions per row, each reduction."""
    from liger_kernel.transformers.functional import liger_tvd
    p, q = randn(37, 1000).softmax(-1), randn(37, 1000).softmax(-1)
    for reduction, reduce in (("batchmean", lambda t: t.sum(-1).mean()), ("mean", torch.mean), ("sum", torch.sum)):
        x, xr = _grad(p), _grad(p)
        chk.with_grads(liger_tvd(x, q, reduction=reduction), reduce(0.5 * (xr - q).abs()), torch.tensor(1.7),
                       [("dp", x, xr)], tag=f" ({reduction})")


@case("liger.qwen2vl_mrope")
def _(L, chk):
    """Qwen2-VL's multimodal RoPE: sections of the rotary dims take their angle from the
    temporal, height or width position; grouped-query heads."""
    from liger_kernel.transformers.functional import liger_qwen2vl_mrope
    B, H, KH, T, D, sections = 2, 4, 2, 13, 64, [8, 12, 12]
    angles = torch.rand(3, B, T, D // 2) * 6
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    hq, hk, dq, dk = randn(B, H, T, D), randn(B, KH, T, D), randn(B, H, T, D), randn(B, KH, T, D)
    (q, k), (qr, kr) = map(_grad, (hq, hk)), map(_grad, (hq, hk))
    qo, ko = liger_qwen2vl_mrope(q, k, cos, sin, sections)
    pick = lambda t: torch.cat([part[i % 3] for i, part in enumerate(t.split(sections * 2, -1))], -1).unsqueeze(1)
    c, s = pick(cos), pick(sin)
    _check_q_k(chk, (qo, ko), (qr * c + _rotate_half(qr) * s, kr * c + _rotate_half(kr) * s), (q, k), (qr, kr), (dq, dk))


@case("liger.multi_token_attention")
def _(L, chk):
    """Multi-token attention: causally masked scores through softmax or sparsemax, then a 2D
    convolution over the (query, key) plane, masked again."""
    from liger_kernel.transformers.functional import liger_multi_token_attention
    B, C, T, K = 2, 4, 16, 3
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for sparse in (False, True):
        h, w, b, dy = randn(B, C, T, T), randn(C, C, K, K) * 0.3, randn(C), randn(B, C, T, T)
        (s, wg, bg), (sr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h, w, b))
        y = liger_multi_token_attention(s, wg, bg, 1, 1, 1, 1, sparse)
        masked = sr.masked_fill(~causal, float("-inf"))
        probs = _sparsemax_ref(masked) if sparse else masked.softmax(-1)
        ref = F.conv2d(probs, wr, br, 1, 1, 1, 1).masked_fill(~causal, 0.0)
        chk.with_grads(y, ref, dy, [("dscores", s, sr, 1e-4), ("dweight", wg, wr, 1e-4), ("dbias", bg, br, 1e-4)],
                       tag=f" (sparsemax {sparse})")


@case("liger.neighborhood_attention")
def _(L, chk):
    """Fused neighborhood attention: each query attends to the keys within 3 positions."""
    from liger_kernel.transformers.functional import liger_fused_neighborhood_attention
    B, H, T, D, window = 2, 2, 37, 32, 7
    hq, hk, hv, dy = randn(B, H, T, D), randn(B, H, T, D), randn(B, H, T, D), randn(B, H, T, D)
    (q, k, v), (qr, kr, vr) = map(_grad, (hq, hk, hv)), map(_grad, (hq, hk, hv))
    near = (torch.arange(T)[None] - torch.arange(T)[:, None]).abs() <= window // 2
    ref = (qr @ kr.transpose(-1, -2) / D ** 0.5).masked_fill(~near, float("-inf")).softmax(-1) @ vr
    chk.with_grads(liger_fused_neighborhood_attention(q, k, v, window, 1), ref, dy,
                   [("dq", q, qr, 1e-4), ("dk", k, kr, 1e-4), ("dv", v, vr, 1e-4)])


@case("liger.fused_linear_jsd")
def _(L, chk):
    """Jensen-Shannon divergence (beta 0.5) between a student's and a teacher's softmax over a
    1000-word vocabulary, the student's linear layer fused into the loss."""
    from liger_kernel.transformers.functional import liger_fused_linear_jsd
    h, w = randn(64, 128), randn(1000, 128) * 0.1
    teacher_h, teacher_w = randn(64, 128), randn(1000, 128) * 0.1
    (x, wg), (xr, wr) = map(_grad, (h, w)), map(_grad, (h, w))
    y = liger_fused_linear_jsd(x, wg, teacher_h, teacher_w, None, 0.5, -100, 1.0)
    log_p, log_q = (xr @ wr.T).log_softmax(-1), (teacher_h @ teacher_w.T).log_softmax(-1)
    log_m = ((log_p.exp() + log_q.exp()) / 2).log()
    ref = 0.5 * ((log_q.exp() * (log_q - log_m)).sum() + (log_p.exp() * (log_p - log_m)).sum()) / h.shape[0]
    chk.with_grads(y, ref, torch.tensor(1.3), [("dx", x, xr, 1e-4), ("dw", wg, wr, 1e-4)])


# ---------------------------------------------------------------------------------- FlagGems
# flag_gems' op functions are called directly (flag_gems.ops.* / flag_gems.fused.*); the
# global torch override (flag_gems.enable()) is never used.

def _unary(case_id, op, ref, make=lambda: randn(7, 33), **tol):
    @case(case_id)
    def _(G, chk):
        x = make()
        chk.close("out", op(G)(x), ref(x), **tol)


def _exact_unary(case_id, op, ref, make):
    @case(case_id)
    def _(G, chk):
        x = make()
        chk.equal("out", op(G)(x), ref(x))


def _with_specials(x):
    x = x.clone()
    x.view(-1)[::5] = float("nan")
    x.view(-1)[1::7] = float("inf")
    x.view(-1)[2::11] = float("-inf")
    return x


def _positive():
    return torch.rand(7, 33) * 4 + 0.05


# elementwise ops whose kernels go through flag_gems' libdevice shim (tl_extra_shim) or its
# triton_lang_extension wrappers (div_rn, div_rz, fmod, trunc)
_unary("flaggems.gelu", lambda G: G.ops.gelu, F.gelu)
_unary("flaggems.gelu_tanh", lambda G: lambda x: G.ops.gelu(x, approximate="tanh"),
       lambda x: F.gelu(x, approximate="tanh"))
_unary("flaggems.tanh", lambda G: G.ops.tanh, torch.tanh)
_unary("flaggems.sigmoid", lambda G: G.ops.sigmoid, torch.sigmoid)
_unary("flaggems.silu", lambda G: G.ops.silu, F.silu)
_unary("flaggems.pow_tensor_scalar", lambda G: lambda x: G.ops.pow_tensor_scalar(x, 2.5),
       lambda x: torch.pow(x, 2.5), make=_positive)
_unary("flaggems.pow_tensor_scalar_int", lambda G: lambda x: G.ops.pow_tensor_scalar(x, 3),
       lambda x: torch.pow(x, 3))
_unary("flaggems.pow_scalar", lambda G: lambda x: G.ops.pow_scalar(1.7, x), lambda x: torch.pow(1.7, x))
_unary("flaggems.acos", lambda G: G.ops.acos, torch.acos, make=lambda: torch.rand(7, 33) * 2 - 1)
_unary("flaggems.atan", lambda G: G.ops.atan, torch.atan)
_unary("flaggems.tan", lambda G: G.ops.tan, torch.tan, make=lambda: torch.rand(7, 33) * 2.8 - 1.4)
_unary("flaggems.angle", lambda G: G.ops.angle, torch.angle)
_unary("flaggems.glu", lambda G: G.ops.glu, F.glu, make=lambda: randn(7, 34))
_unary("flaggems.nan_to_num", lambda G: G.ops.nan_to_num, torch.nan_to_num,
       make=lambda: _with_specials(randn(7, 33)))
_exact_unary("flaggems.isnan", lambda G: G.ops.isnan, torch.isnan, lambda: _with_specials(randn(7, 33)))
_exact_unary("flaggems.isinf", lambda G: G.ops.isinf, torch.isinf, lambda: _with_specials(randn(7, 33)))
_exact_unary("flaggems.isfinite", lambda G: G.ops.isfinite, torch.isfinite,
             lambda: _with_specials(randn(7, 33)))


@case("flaggems.gelu_backward")
def _(G, chk):
    x, dy = randn(7, 33), randn(7, 33)
    for approx in ("none", "tanh"):
        chk.close(f"dx({approx})", G.ops.gelu_backward(dy, x, approximate=approx),
                  torch.ops.aten.gelu_backward(dy, x, approximate=approx))


@case("flaggems.tanh_backward")
def _(G, chk):
    y, dy = torch.tanh(randn(7, 33)), randn(7, 33)
    chk.close("dx", G.ops.tanh_backward(dy, y), torch.ops.aten.tanh_backward(dy, y))


@case("flaggems.sigmoid_backward")
def _(G, chk):
    y, dy = torch.sigmoid(randn(7, 33)), randn(7, 33)
    chk.close("dx", G.ops.sigmoid_backward(dy, y), torch.ops.aten.sigmoid_backward(dy, y))


@case("flaggems.pow_tensor_tensor")
def _(G, chk):
    a, e = _positive(), randn(7, 33)
    chk.close("out", G.ops.pow_tensor_tensor(a, e), torch.pow(a, e))


@case("flaggems.atan2")
def _(G, chk):
    a, b = randn(7, 33), randn(7, 33)
    chk.close("out", G.ops.atan2(a, b), torch.atan2(a, b))


@case("flaggems.isclose")
def _(G, chk):
    a = _with_specials(randn(7, 33))
    b = a + torch.randn(7, 33) * 1e-5 * torch.randint(0, 2, (7, 33))
    chk.equal("out", G.ops.isclose(a, b, rtol=1e-5, atol=1e-6),
              torch.isclose(a, b, rtol=1e-5, atol=1e-6))
    chk.equal("out(equal_nan)", G.ops.isclose(a, b, equal_nan=True), torch.isclose(a, b, equal_nan=True))


@case("flaggems.div")
def _(G, chk):
    a, b = randn(7, 33) * 10, randn(7, 33)
    chk.close("true_divide", G.ops.true_divide(a, b), torch.true_divide(a, b))
    chk.close("div(trunc)", G.ops.div_mode(a, b, rounding_mode="trunc"), torch.div(a, b, rounding_mode="trunc"))
    chk.close("div(floor)", G.ops.div_mode(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="floor"))
    chk.close("floor_divide", G.ops.floor_divide(a, b), torch.floor_divide(a, b))
    chk.close("remainder", G.ops.remainder(a, b), torch.remainder(a, b))


@case("flaggems.div_int")
def _(G, chk):
    a = torch.randint(-100, 100, (7, 33), dtype=torch.int32)
    b = torch.randint(1, 9, (7, 33), dtype=torch.int32) * (torch.randint(0, 2, (7, 33), dtype=torch.int32) * 2 - 1)
    chk.equal("floor_divide", G.ops.floor_divide(a, b), torch.floor_divide(a, b))
    chk.equal("div(trunc)", G.ops.div_mode(a, b, rounding_mode="trunc"), torch.div(a, b, rounding_mode="trunc"))
    chk.equal("remainder", G.ops.remainder(a, b), torch.remainder(a, b))


def _fused_glu_refs(act):
    x, dy = randn(5, 2 * 24), randn(5, 24)
    xr = _grad(x)
    a, b = xr.chunk(2, dim=-1)
    y = act(a) * b
    y.backward(dy)
    return x, dy, y.detach(), xr.grad


@case("flaggems.geglu")
def _(G, chk):
    x, dy, y, dx = _fused_glu_refs(lambda a: F.gelu(a, approximate="tanh"))
    chk.close("out", G.fused.geglu(x), y)
    chk.close("dgeglu", G.fused.dgeglu(dy, x), dx)


@case("flaggems.swiglu")
def _(G, chk):
    x, dy, y, dx = _fused_glu_refs(F.silu)
    # The swiglu() wrapper rejects non-CUDA tensors (`if not input_tensor.is_cuda: raise`), so
    # launch its kernel exactly as the wrapper does after that check.
    from flag_gems.fused.swiglu import swiglu_kernel
    import triton
    M, H = x.shape[0], x.shape[1] // 2
    out = torch.empty(M, H)
    swiglu_kernel[(triton.cdiv(M, 64), triton.cdiv(H, 64))](
        x, out, M, H, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
        BLOCK_SIZE_M=64, BLOCK_SIZE_H=64)
    chk.close("out", out, y)
    chk.close("dswiglu", G.fused.dswiglu(dy, x), dx)


@case("flaggems.gelu_and_mul")
def _(G, chk):
    a, b = randn(5, 24), randn(5, 24)
    for approx in ("none", "tanh"):
        chk.close(f"out({approx})", G.fused.gelu_and_mul(a, b, approx), F.gelu(a, approximate=approx) * b)


@case("flaggems.silu_and_mul")
def _(G, chk):
    a, b, dc = randn(5, 24), randn(5, 24), randn(5, 24)
    (ag, bg), (ar, br) = map(_grad, (a, b)), map(_grad, (a, b))
    c, ref = G.fused.silu_and_mul(ag, bg), F.silu(ar) * br
    chk.close("out", c, ref)
    c.backward(dc), ref.backward(dc)
    chk.close("da", ag.grad, ar.grad)
    chk.close("db", bg.grad, br.grad)


@case("flaggems.vector_norm")
def _(G, chk):
    x = randn(6, 37)
    for ord_ in (2, 3, float("inf"), 1):
        chk.close(f"norm(ord={ord_},dim=1)", G.ops.vector_norm(x, ord_, dim=[1]),
                  torch.linalg.vector_norm(x, ord_, dim=1))
    chk.close("norm(ord=3,all)", G.ops.vector_norm(x, 3), torch.linalg.vector_norm(x, 3))


@case("flaggems.weight_norm")
def _(G, chk):
    v, g = randn(6, 10), torch.rand(6, 1) + 0.5
    w, norm = G.ops.weight_norm_interface(v, g, 0)
    wr, normr = torch._weight_norm_interface(v, g, 0)
    chk.close("w", w, wr)
    chk.close("norm", norm, normr)


@case("flaggems.quantile")
def _(G, chk):
    x = randn(6, 37)
    q = torch.tensor([0.1, 0.5, 0.75])
    chk.close("q(dim=1)", G.ops.quantile(x, q, dim=1), torch.quantile(x, q, dim=1))
    chk.close("q(all)", G.ops.quantile(x, 0.3), torch.quantile(x, 0.3))


# plain elementwise (core tl math, no libdevice)
_unary("flaggems.erf", lambda G: G.ops.erf, torch.erf)
_unary("flaggems.exp2", lambda G: G.ops.exp2, torch.exp2)
_unary("flaggems.rsqrt", lambda G: G.ops.rsqrt, torch.rsqrt, make=_positive)
_unary("flaggems.exp", lambda G: G.ops.exp, torch.exp)
_unary("flaggems.log", lambda G: G.ops.log, torch.log, make=_positive)
_unary("flaggems.sqrt", lambda G: G.ops.sqrt, torch.sqrt, make=_positive)
_unary("flaggems.abs", lambda G: G.ops.abs, torch.abs)
_unary("flaggems.neg", lambda G: G.ops.neg, torch.neg)
_unary("flaggems.relu", lambda G: G.ops.relu, torch.relu)
_unary("flaggems.sin", lambda G: G.ops.sin, torch.sin)
_unary("flaggems.cos", lambda G: G.ops.cos, torch.cos)
_unary("flaggems.reciprocal", lambda G: G.ops.reciprocal, torch.reciprocal, make=_positive)


@case("flaggems.add")
def _(G, chk):
    a, b = randn(7, 33), randn(33)
    chk.close("add(broadcast,alpha)", G.ops.add(a, b, alpha=0.5), torch.add(a, b, alpha=0.5))
    at = randn(33, 7).t()                              # non-contiguous operand
    chk.close("add(strided)", G.ops.add(at, a), at + a)
    chk.close("add(scalar)", G.ops.add(a, 1.5), a + 1.5)
    ai, bi = torch.randint(-50, 50, (7, 33)), torch.randint(-50, 50, (7, 33))
    chk.equal("add(int64)", G.ops.add(ai, bi), ai + bi)


@case("flaggems.mul_sub")
def _(G, chk):
    a, b = randn(4, 7, 33), randn(4, 1, 33)
    chk.close("mul", G.ops.mul(a, b), a * b)
    chk.close("sub", G.ops.sub(a, b, alpha=2), torch.sub(a, b, alpha=2))


@case("flaggems.clamp")
def _(G, chk):
    x = randn(7, 33)
    chk.close("clamp", G.ops.clamp(x, -0.5, 0.7), torch.clamp(x, -0.5, 0.7))


@case("flaggems.fp16_bf16")
def _(G, chk):
    # a few elementwise ops on half types (computed in fp32 inside the kernels)
    for dt, tol in ((torch.float16, 1e-3), (torch.bfloat16, 8e-3)):
        x, y = randn(7, 33).to(dt), randn(7, 33).to(dt)
        chk.close(f"add({dt})", G.ops.add(x, y), x + y, atol=tol, rtol=tol)
        chk.close(f"gelu({dt})", G.ops.gelu(x), F.gelu(x), atol=tol, rtol=tol)
        chk.close(f"sigmoid({dt})", G.ops.sigmoid(x), torch.sigmoid(x), atol=tol, rtol=tol)


@case("flaggems.relaunch")
def _(G, chk):
    # The same op twice with the same shapes: the second call takes flag_gems' libentry fast
    # path, which re-launches the cached CompiledKernel without its constexpr arguments.
    a, b = randn(7, 33), randn(7, 33)
    chk.close("mul#1", G.ops.mul(a, b), a * b)
    chk.close("mul#2", G.ops.mul(b, a), a * b)


# reductions
@case("flaggems.sum")
def _(G, chk):
    x = randn(6, 37, 5)
    chk.close("sum", G.ops.sum(x), x.sum(), rtol=1e-5, atol=1e-4)
    chk.close("sum(dim=1)", G.ops.sum_dim(x, [1]), x.sum(1))
    chk.close("sum(dim=-1,keepdim)", G.ops.sum_dim(x, [-1], keepdim=True), x.sum(-1, keepdim=True))
    chk.close("sum(dims=0,2)", G.ops.sum_dim(x, [0, 2]), x.sum((0, 2)), atol=1e-4)
    xi = torch.randint(-9, 9, (6, 37))
    chk.equal("sum(int64)", G.ops.sum(xi), xi.sum())


@case("flaggems.mean")
def _(G, chk):
    x = randn(6, 37, 5)
    chk.close("mean", G.ops.mean(x), x.mean())
    chk.close("mean(dim=1)", G.ops.mean_dim(x, [1]), x.mean(1))
    chk.close("mean(dim=0,2)", G.ops.mean_dim(x, [0, 2], keepdim=True), x.mean((0, 2), keepdim=True))


def _minmax_case(name, full, dim_fn, tfull, tdim):
    @case(f"flaggems.{name}")
    def _(G, chk):
        x = randn(6, 37)
        chk.equal(name, getattr(G.ops, full)(x), tfull(x))
        for d in (0, 1):
            v, i = getattr(G.ops, dim_fn)(x, d)
            rv, ri = tdim(x, d)
            chk.equal(f"{name}(dim={d}).values", v, rv)
            chk.equal(f"{name}(dim={d}).indices", i, ri)


_minmax_case("max", "max", "max_dim", torch.max, torch.max)
_minmax_case("min", "min", "min_dim", torch.min, torch.min)


@case("flaggems.amax")
def _(G, chk):
    x = randn(6, 37, 3)
    chk.equal("amax(dim=1)", G.ops.amax(x, [1]), torch.amax(x, 1))
    chk.equal("amax(dim=0,2)", G.ops.amax(x, [0, 2]), torch.amax(x, (0, 2)))


@case("flaggems.argmax")
def _(G, chk):
    # 8 rows: for dim=0 flag_gems' NVIDIA heuristic (argmax_heur_tile_n_non_inner) returns
    # TILE_N = N when N <= 128, which must then be a power of 2 for tl.arange (any target).
    x = randn(8, 37)
    chk.equal("argmax", G.ops.argmax(x), torch.argmax(x))
    chk.equal("argmax(dim=1)", G.ops.argmax(x, 1), torch.argmax(x, 1))
    chk.equal("argmax(dim=0,keepdim)", G.ops.argmax(x, 0, keepdim=True), torch.argmax(x, 0, keepdim=True))


@case("flaggems.argmin")
def _(G, chk):
    # 8 x 36: argmin_kernel_opt_k1 (the dim=-1 path) loads and stores with mask=True, i.e. it
    # needs rows % BLOCK_M == 0 and cols % BLOCK_N == 0 (4 and 4 here) or it writes past the
    # output (harmless in a GPU caching allocator's padding, heap corruption on the CPU).
    x = randn(8, 36)
    chk.equal("argmin(dim=1)", G.ops.argmin(x, 1), torch.argmin(x, 1))
    chk.equal("argmin(dim=0)", G.ops.argmin(x, 0), torch.argmin(x, 0))


@case("flaggems.prod")
def _(G, chk):
    x = torch.rand(6, 13) + 0.5
    chk.close("prod", G.ops.prod(x), x.prod(), rtol=1e-4)
    chk.close("prod(dim=1)", G.ops.prod_dim(x, 1), x.prod(1), rtol=1e-5)


@case("flaggems.var_std")
def _(G, chk):
    x = randn(6, 37)
    v, m = G.ops.var_mean(x, [1])
    rv, rm = torch.var_mean(x, 1)
    chk.close("var_mean(dim=1).var", v, rv)
    chk.close("var_mean(dim=1).mean", m, rm)
    v, m = G.ops.var_mean(x, correction=0)
    rv, rm = torch.var_mean(x, correction=0)
    chk.close("var_mean(all,correction=0).var", v, rv)
    chk.close("var_mean(all,correction=0).mean", m, rm)
    chk.close("std(dim=1)", G.ops.std(x, [1]), torch.std(x, 1))
    chk.close("std(all)", G.ops.std(x), torch.std(x))


@case("flaggems.all_any")
def _(G, chk):
    x = torch.rand(6, 37) > 0.1
    chk.equal("all", G.ops.all(x), torch.all(x))
    chk.equal("any(dim=1)", G.ops.any_dim(x, 1), torch.any(x, 1))
    chk.equal("count_nonzero(dim=1)", G.ops.count_nonzero(x.float(), 1), torch.count_nonzero(x.float(), 1))


# softmax and norms
@case("flaggems.softmax")
def _(G, chk):
    x = randn(6, 37, 5)
    for d in (-1, 1, 0):
        y = G.ops.softmax(x, d)
        chk.close(f"softmax(dim={d})", y, torch.softmax(x, d))


@case("flaggems.softmax_backward")
def _(G, chk):
    y, dy = torch.softmax(randn(6, 37, 5), -1), randn(6, 37, 5)
    chk.close("softmax_backward", G.ops.softmax_backward(dy, y, -1, torch.float32),
              torch.ops.aten._softmax_backward_data(dy, y, -1, torch.float32))


@case("flaggems.log_softmax")
def _(G, chk):
    x = randn(6, 37)
    for d in (-1, 0):
        chk.close(f"log_softmax(dim={d})", G.ops.log_softmax(x, d), torch.log_softmax(x, d))


@case("flaggems.layer_norm")
def _(G, chk):
    x, w, b = randn(6, 40), randn(40), randn(40)
    y, mean, rstd = G.ops.layer_norm(x, [40], w, b, 1e-5)
    chk.close("y", y, F.layer_norm(x, (40,), w, b, 1e-5))
    chk.close("mean", mean.view(-1), x.mean(-1))
    chk.close("rstd", rstd.view(-1), torch.rsqrt(x.var(-1, unbiased=False) + 1e-5), rtol=1e-4)


@case("flaggems.rms_norm")
def _(G, chk):
    h, w, dy = randn(6, 40), randn(40), randn(6, 40)
    (x, wg), (xr, wr) = map(_grad, (h, w)), map(_grad, (h, w))
    y = G.ops.rms_norm(x, [40], wg, 1e-5)
    ref = F.rms_norm(xr, (40,), wr, 1e-5)
    chk.with_grads(y, ref, dy, [("dx", x, xr), ("dw", wg, wr, 1e-4)])


@case("flaggems.group_norm")
def _(G, chk):
    N, C, HW, groups = 2, 6, 10, 3
    x, w, b = randn(N, C, HW), randn(C), randn(C)
    y, mean, rstd = G.ops.group_norm(x, w, b, N, C, HW, groups, 1e-5)
    chk.close("y", y, F.group_norm(x, groups, w, b, 1e-5))
    xg = x.view(N, groups, -1)
    chk.close("mean", mean.view(-1), xg.mean(-1).view(-1))
    chk.close("rstd", rstd.view(-1), torch.rsqrt(xg.var(-1, unbiased=False) + 1e-5).view(-1), rtol=1e-4)


@case("flaggems.batch_norm")
def _(G, chk):
    x, w, b = randn(4, 3, 5, 5), randn(3), randn(3)
    rm, rv = torch.zeros(3), torch.ones(3)
    rm2, rv2 = rm.clone(), rv.clone()
    y = _out0(G.ops.batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5))
    ref = F.batch_norm(x, rm2, rv2, w, b, True, 0.1, 1e-5)
    chk.close("y(train)", y, ref)
    chk.close("running_mean", rm, rm2)
    chk.close("running_var", rv, rv2)
    y = _out0(G.ops.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5))
    chk.close("y(eval)", y, F.batch_norm(x, rm2, rv2, w, b, False, 0.1, 1e-5))


# matmul
@case("flaggems.mm")
def _(G, chk):
    a, b = randn(16, 24), randn(24, 20)
    chk.close("mm", G.ops.mm(a, b), a @ b, atol=1e-4, rtol=1e-4)
    a, b = randn(33, 17), randn(20, 17).t()             # odd sizes, transposed operand
    chk.close("mm(odd,strided)", G.ops.mm(a, b), a @ b, atol=1e-4, rtol=1e-4)


@case("flaggems.bmm")
def _(G, chk):
    a, b = randn(3, 8, 12), randn(3, 12, 10)
    chk.close("bmm", G.ops.bmm(a, b), torch.bmm(a, b), atol=1e-4, rtol=1e-4)


@case("flaggems.addmm")
def _(G, chk):
    bias, a, b = randn(20), randn(16, 24), randn(24, 20)
    chk.close("addmm", G.ops.addmm(bias, a, b, beta=0.5, alpha=2.0),
              torch.addmm(bias, a, b, beta=0.5, alpha=2.0), atol=1e-4, rtol=1e-4)


@case("flaggems.mv")
def _(G, chk):
    a, v = randn(17, 24), randn(24)
    chk.close("mv", G.ops.mv(a, v), a @ v, atol=1e-4, rtol=1e-4)


# topk, sort, scans
@case("flaggems.topk")
def _(G, chk):
    x = randn(16, 33)
    v, i = G.ops.topk(x, 4, dim=1)
    rv, ri = torch.topk(x, 4, dim=1)
    chk.equal("values", v, rv)
    chk.equal("indices", i, ri)
    v, i = G.ops.topk(x, 3, dim=1, largest=False)
    rv, ri = torch.topk(x, 3, dim=1, largest=False)
    chk.equal("values(smallest)", v, rv)
    chk.equal("indices(smallest)", i, ri)


@case("flaggems.sort")
def _(G, chk):
    x = randn(8, 37)
    for desc in (False, True):
        v, i = G.ops.sort(x, dim=-1, descending=desc)
        rv, ri = torch.sort(x, dim=-1, descending=desc)
        chk.equal(f"values(descending={desc})", v, rv)
        chk.equal(f"indices(descending={desc})", i, ri)
    xi = torch.randperm(8 * 37).view(8, 37).to(torch.int32)
    v, i = G.ops.sort(xi, dim=1)
    rv, ri = torch.sort(xi, dim=1)
    chk.equal("values(int32)", v, rv)
    chk.equal("indices(int32)", i, ri)


@case("flaggems.cumsum")
def _(G, chk):
    x = randn(8, 37)
    chk.close("cumsum(dim=1)", G.ops.cumsum(x, 1), torch.cumsum(x, 1), atol=1e-5)
    chk.close("cumsum(dim=0)", G.ops.cumsum(x, 0), torch.cumsum(x, 0), atol=1e-5)
    xi = torch.randint(-5, 5, (8, 37))
    chk.equal("cumsum(int64)", G.ops.cumsum(xi, 1), torch.cumsum(xi, 1))


@case("flaggems.cummax")
def _(G, chk):
    x = randn(8, 37)
    v, i = G.ops.cummax(x, 1)
    rv, ri = torch.cummax(x, 1)
    chk.equal("values", v, rv)
    chk.equal("indices", i, ri)


# index ops
@case("flaggems.index_select")
def _(G, chk):
    x, idx = randn(10, 33), torch.tensor([3, 0, 9, 3, 5])
    chk.equal("dim=0", G.ops.index_select(x, 0, idx), torch.index_select(x, 0, idx))
    chk.equal("dim=1", G.ops.index_select(x, 1, idx), torch.index_select(x, 1, idx))


@case("flaggems.gather")
def _(G, chk):
    x = randn(6, 33)
    idx = torch.randint(0, 33, (6, 20))
    chk.equal("dim=1", G.ops.gather(x, 1, idx), torch.gather(x, 1, idx))
    idx0 = torch.randint(0, 6, (4, 33))
    chk.equal("dim=0", G.ops.gather(x, 0, idx0), torch.gather(x, 0, idx0))


@case("flaggems.scatter")
def _(G, chk):
    inp, src = randn(6, 33), randn(6, 20)
    idx = torch.stack([torch.randperm(33)[:20] for _ in range(6)])   # unique per row
    chk.equal("scatter(src)", G.ops.scatter(inp, 1, idx, src), torch.scatter(inp, 1, idx, src))
    idx_dup = torch.randint(0, 33, (6, 20))
    chk.close("scatter(reduce=add)", G.ops.scatter(inp, 1, idx_dup, src, reduce="add"),
              torch.scatter_add(inp, 1, idx_dup, src))


@case("flaggems.index_add")
def _(G, chk):
    x, src, idx = randn(10, 7), randn(5, 7), torch.tensor([1, 4, 1, 9, 0])
    chk.close("index_add", G.ops.index_add(x, 0, idx, src, alpha=2), torch.index_add(x, 0, idx, src, alpha=2))


@case("flaggems.index_put")
def _(G, chk):
    x, v = randn(10, 7), randn(3, 7)
    idx = (torch.tensor([2, 5, 8]),)
    chk.equal("index_put", G.ops.index_put(x, idx, v), torch.index_put(x, idx, v))


@case("flaggems.where")
def _(G, chk):
    c, a, b = torch.rand(7, 33) > 0.5, randn(7, 33), randn(33)
    # where_self() asserts that some operand is not on the CPU ("CPU only. There seems a
    # mistake to dispatch to here."); call its pointwise kernel as where_self does after that.
    from flag_gems.ops.where import where_inner
    chk.equal("where", where_inner(c, a, b), torch.where(c, a, b))


@case("flaggems.masked_fill")
def _(G, chk):
    x, m = randn(7, 33), torch.rand(7, 33) > 0.5
    chk.equal("masked_fill", G.ops.masked_fill(x, m, -3.5), x.masked_fill(m, -3.5))
    chk.equal("masked_fill(broadcast mask)", G.ops.masked_fill(x, m[0], 2.0), x.masked_fill(m[0], 2.0))


@case("flaggems.masked_select")
def _(G, chk):
    x, m = randn(7, 33), torch.rand(7, 33) > 0.5
    chk.equal("masked_select", G.ops.masked_select(x, m), torch.masked_select(x, m))


@case("flaggems.nonzero")
def _(G, chk):
    x = (torch.rand(7, 33) > 0.6).float()
    chk.equal("nonzero", G.ops.nonzero(x), torch.nonzero(x))


@case("flaggems.embedding")
def _(G, chk):
    w, idx = randn(20, 16), torch.randint(0, 20, (3, 5))
    chk.equal("embedding", G.ops.embedding(w, idx), F.embedding(idx, w))


@case("flaggems.cat_stack")
def _(G, chk):
    a, b = randn(3, 7), randn(5, 7)
    chk.equal("cat", G.ops.cat([a, b], 0), torch.cat([a, b], 0))
    chk.equal("stack", G.ops.stack([a, a], 1), torch.stack([a, a], 1))


# convolutions
@case("flaggems.conv2d")
def _(G, chk):
    x, w, b = randn(2, 3, 10, 9), randn(4, 3, 3, 3), randn(4)
    chk.close("conv2d(pad=1)", G.ops.conv2d(x, w, b, 1, 1), F.conv2d(x, w, b, 1, 1), atol=1e-4, rtol=1e-4)
    chk.close("conv2d(stride=2)", G.ops.conv2d(x, w, None, 2, 0), F.conv2d(x, w, None, 2, 0),
              atol=1e-4, rtol=1e-4)


@case("flaggems.conv1d")
def _(G, chk):
    x, w, b = randn(2, 3, 20), randn(4, 3, 5), randn(4)
    chk.close("conv1d", G.ops.conv1d(x, w, b, 1, 2), F.conv1d(x, w, b, 1, 2), atol=1e-4, rtol=1e-4)


# random ops: statistics and shapes, not values
def _stats(chk, name, t, mean, std, lo=None, hi=None, n_sigma=6):
    n = t.numel()
    m, s = t.mean().item(), t.std().item()
    chk.true(f"{name}.mean", abs(m - mean) <= n_sigma * std / math.sqrt(n), f"{m:.4f}, expected ~{mean}")
    chk.true(f"{name}.std", abs(s - std) <= 0.05 * std, f"{s:.4f}, expected ~{std}")
    if lo is not None:
        chk.true(f"{name}.range", t.min().item() >= lo and t.max().item() < hi,
                 f"[{t.min().item():.4f}, {t.max().item():.4f}] not in [{lo}, {hi})")
    chk.true(f"{name}.distinct", t.unique().numel() > 0.9 * n, f"only {t.unique().numel()} distinct of {n}")


@case("flaggems.rand")
def _(G, chk):
    a, b = G.ops.rand((64, 65), device="cpu"), G.ops.rand((64, 65), device="cpu")
    chk.true("shape/dtype", a.shape == (64, 65) and a.dtype == torch.float32, f"{a.shape} {a.dtype}")
    _stats(chk, "rand", a, 0.5, 1 / math.sqrt(12), 0.0, 1.0)
    chk.true("fresh offsets", not torch.equal(a, b), "two calls returned the same numbers")


@case("flaggems.randn")
def _(G, chk):
    a = G.ops.randn((64, 65), device="cpu")
    chk.true("shape/dtype", a.shape == (64, 65) and a.dtype == torch.float32, f"{a.shape} {a.dtype}")
    _stats(chk, "randn", a, 0.0, 1.0)
    chk.true("randn.finite", bool(a.isfinite().all()), "non-finite values")


@case("flaggems.uniform_")
def _(G, chk):
    t = torch.empty(64, 65)
    G.ops.uniform_(t, -2.0, 3.0)
    _stats(chk, "uniform_", t, 0.5, 5 / math.sqrt(12), -2.0, 3.0)


@case("flaggems.normal_")
def _(G, chk):
    t = torch.empty(64, 65)
    G.ops.normal_(t, 2.0, 3.0)
    _stats(chk, "normal_", t, 2.0, 3.0)


@case("flaggems.dropout")
def _(G, chk):
    x, p = torch.rand(64, 65) + 1.0, 0.3
    out, mask = G.ops.dropout(x, p, True)
    kept = out != 0
    frac = 1 - kept.float().mean().item()
    chk.true("drop fraction", abs(frac - p) < 0.03, f"{frac:.4f}, expected ~{p}")
    chk.close("kept values", out[kept], x[kept] / (1 - p))
    chk.equal("mask", mask.bool(), kept)


# ------------------------------------------------------------------------------ flash-linear-attention
# fla-core's chunked and recurrent linear-attention kernels (autotuned; masked 2-D pointer
# tiles, tl.dot on transposed tiles in loops, exp2 gates, the state carried across chunks or
# time steps), forward and input gradients, against the library's own naive torch
# implementations (fla/ops/*/naive.py: recurrences in torch ops, computed in fp32) on fp64
# inputs; its norms against torch.  fp32 results agree to ~2e-6 relative; the tolerance
# (1e-4 of each output's largest magnitude) leaves 50x room.

def _fla_inputs(B=2, T=128, H=2, K=32, V=32):
    """{name: tensor}: q, k (unit rows, as the delta rules expect), v, a scalar log-gate per
    head and step (g), a per-channel log-gate (gk), and beta in (0, 1)."""
    q, v = randn(B, T, H, K), randn(B, T, H, V)
    k = F.normalize(randn(B, T, H, K), p=2, dim=-1)
    g, gk = F.logsigmoid(randn(B, T, H)), F.logsigmoid(randn(B, T, H, K))
    return {"q": q, "k": k, "v": v, "g": g, "gk": gk, "beta": torch.rand(B, T, H).sigmoid()}


def _fla_check(chk, fn, ref_fn, inputs, grad=True, tol=1e-4):
    """fn(*inputs) against ref_fn on fp64 copies: output, then each input's gradient."""
    ours = [_grad(x) if grad else x for x in inputs]
    theirs = [_grad(x.double()) if grad else x.double() for x in inputs]
    y, ref = _out0(fn(*ours)), _out0(ref_fn(*theirs)).to(torch.float64)
    chk.close_to_scale("o", y, ref, tol)
    if not grad:
        return
    dy = randn(*y.shape)
    y.backward(dy)
    ref.backward(dy.double())
    for i, (a, b) in enumerate(zip(ours, theirs)):
        chk.close_to_scale(f"d{i}", a.grad, b.grad, tol)


def _heads_first(fn):
    """A naive reference taking [B, H, T, D] called on [B, T, H, D] tensors."""
    def call(*xs):
        return _out0(fn(*(x.transpose(1, 2) for x in xs))).transpose(1, 2)
    return call


def _fla_case(name, op, ref, inputs, op_call=None, ref_call=None, T=128, dtype=None, **check):
    """Registers case fla.<name>: the library function `op` ("module:function", imported when
    the case runs) against its naive reference `ref`, on the _fla_inputs named in `inputs`
    (in that order; cast to `dtype`), each function adapted by `op_call` / `ref_call` (a
    function of it) when its signature or layout differs; `check`: _fla_check's options."""
    def resolve(path):
        module, attr = path.split(":")
        return getattr(importlib.import_module(module), attr)

    @case("fla." + name)
    def _(M, chk):
        xs = _fla_inputs(T=T)
        args = [xs[n] if dtype is None else xs[n].to(dtype) for n in inputs.split()]
        fn, ref_fn = resolve(op), resolve(ref)
        _fla_check(chk, op_call(fn) if op_call else fn, ref_call(ref_fn) if ref_call else ref_fn, args, **check)


def _without_normalize(fn):
    return lambda *x: fn(*x, normalize=False)


def _gated_delta_reference(fn):
    return lambda q, k, v, g, beta: fn(q, k, v, beta, g)  # its beta comes before g


_SIMPLE_GLA_REF = "fla.ops.simple_gla.naive:naive_chunk_simple_gla"
_GLA_REF = "fla.ops.gla.naive:naive_recurrent_gla"
_DELTA_REF = "fla.ops.delta_rule.naive:delta_rule_recurrence"
_GATED_DELTA_REF = "fla.ops.gated_delta_rule.naive:naive_recurrent_gated_delta_rule"
_fla_case("simple_gla_chunk", "fla.ops.simple_gla:chunk_simple_gla", _SIMPLE_GLA_REF, "q k v g",
          T=100)  # not a multiple of the chunk size
_fla_case("simple_gla_fused_recurrent", "fla.ops.simple_gla:fused_recurrent_simple_gla", _SIMPLE_GLA_REF, "q k v g")
_fla_case("gla_chunk", "fla.ops.gla:chunk_gla", _GLA_REF, "q k v gk")
_fla_case("gla_fused_recurrent", "fla.ops.gla:fused_recurrent_gla", _GLA_REF, "q k v gk")
_fla_case("retention_chunk", "fla.ops.retention:chunk_retention", "fla.ops.retention.naive:naive_retention",
          "q k v", ref_call=_heads_first, grad=False)
_fla_case("linear_attn_chunk", "fla.ops.linear_attn:chunk_linear_attn",
          "fla.ops.linear_attn.naive:naive_chunk_linear_attn", "q k v",
          op_call=_without_normalize, ref_call=_without_normalize)
_fla_case("delta_rule_fused_recurrent", "fla.ops.delta_rule:fused_recurrent_delta_rule", _DELTA_REF, "q k v beta",
          ref_call=_heads_first)
# The chunked delta rule refuses fp32; it keeps its intermediate states in bf16, so the
# result is compared, on the same bf16 inputs, within a few bf16 steps of the output's scale.
_fla_case("delta_rule_chunk_bf16", "fla.ops.delta_rule:chunk_delta_rule", _DELTA_REF, "q k v beta",
          op_call=lambda fn: lambda *x: fn(*x)[0].float(), ref_call=_heads_first, dtype=torch.bfloat16,
          grad=False, tol=2e-2)
_fla_case("gated_delta_rule_chunk", "fla.ops.gated_delta_rule:chunk_gated_delta_rule", _GATED_DELTA_REF,
          "q k v g beta", ref_call=_gated_delta_reference)
# Forward only: the library has no backward for it.
_fla_case("gated_delta_rule_fused_recurrent", "fla.ops.gated_delta_rule:fused_recurrent_gated_delta_rule",
          _GATED_DELTA_REF, "q k v g beta", op_call=lambda fn: lambda q, k, v, g, beta: fn(q, k, v, g=g, beta=beta),
          ref_call=_gated_delta_reference, grad=False)


@case("fla.norms")
def _(M, chk):
    from fla.modules.norm.fused_norm_gate import rms_norm_gated
    from fla.modules.norm.l2norm import l2norm
    from fla.modules.norm.layernorm import layer_norm, rms_norm
    x, w, b, gate = randn(64, 300), randn(300), randn(300), randn(64, 300)
    n = (300,)
    for name, fn, ref, args in [
            ("l2norm", l2norm, lambda x: F.normalize(x, p=2, dim=-1, eps=0), [x]),
            ("layer_norm", layer_norm, lambda x, w, b: F.layer_norm(x, n, w, b, 1e-5), [x, w, b]),
            ("rms_norm", lambda x, w: rms_norm(x, w, None), lambda x, w: F.rms_norm(x, n, w, 1e-5), [x, w]),
            ("rms_norm_gated", lambda x, g, w: rms_norm_gated(x, g, w, None),
             lambda x, g, w: F.rms_norm(x, n, w, 1e-6) * F.silu(g), [x, gate, w])]:
        sub = Checker()
        _fla_check(sub, fn, ref, args)
        chk.failures += [f"{name} {f}" for f in sub.failures]


# ------------------------------------------------------------------------------ mamba_ssm
# Mamba-2's Triton ops (mamba_ssm.ops.triton), each against the library's own torch reference
# (`*_ref`) run on fp64 copies of the inputs: the SSD chunked scan (five kernels forward,
# more backward, autotuned), its chunk-state / state-passing / chunk-scan steps on their own,
# the decoding step (selective_state_update), the gated and the residual-add norms, SwiGLU.
# Inputs are drawn so that exp(dA) stays in (0, 1] as in a trained model: A < 0, dt > 0.

def _mamba_check(chk, name, y, ref, tol=1e-5):
    chk.close_to_scale(name, y, ref, tol)


def _mamba_grads(chk, y, ref, ours, theirs):
    """Output, then the gradients of both from the same random cotangent."""
    _mamba_check(chk, "y", y, ref)
    dy = randn(*y.shape)
    y.backward(dy)
    ref.backward(dy.double())
    for name, a, b in zip(ours, ours.values(), theirs.values()):
        _mamba_check(chk, "d" + name, a.grad, b.grad)


def _mamba_ssd_inputs(b=2, l=256, h=4, p=32, n=16, g=2):
    return {"x": randn(b, l, h, p), "dt": torch.rand(b, l, h) * 0.5 + 0.01, "A": -torch.rand(h) - 0.1,
            "B": randn(b, l, g, n), "C": randn(b, l, g, n), "D": randn(h), "dt_bias": randn(h) * 0.1}


@case("mamba.ssd_chunk_scan_combined")
def _(M, chk):
    from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined, ssd_chunk_scan_combined_ref
    xs = _mamba_ssd_inputs(l=200)  # not a multiple of the chunk size
    ours = {k: _grad(v) for k, v in xs.items()}
    theirs = {k: _grad(v.double()) for k, v in xs.items()}
    y = mamba_chunk_scan_combined(**ours, chunk_size=64, dt_softplus=True)
    # The reference takes whole chunks only: its inputs are zero-padded along the sequence to
    # 256 and its output cut back (the scan is causal: the padding changes no earlier output).
    padded = {k: F.pad(v, (0, 0) * (v.dim() - 2) + (0, 56)) if k in ("x", "dt", "B", "C") else v
              for k, v in theirs.items()}
    ref = ssd_chunk_scan_combined_ref(**padded, chunk_size=64, dt_softplus=True)[:, :200]
    _mamba_grads(chk, y, ref, ours, theirs)


@case("mamba.ssd_initial_states")
def _(M, chk):
    """A sequence scanned in two calls, the second starting from the state the first returns
    (return_final_states / initial_states), against the reference over the whole sequence."""
    from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined, ssd_chunk_scan_combined_ref
    xs = _mamba_ssd_inputs()
    first = {k: v[:, :128] if k in ("x", "dt", "B", "C") else v for k, v in xs.items()}
    second = {k: v[:, 128:] if k in ("x", "dt", "B", "C") else v for k, v in xs.items()}
    y1, state = mamba_chunk_scan_combined(**first, chunk_size=64, dt_softplus=True, return_final_states=True)
    y2 = mamba_chunk_scan_combined(**second, chunk_size=64, dt_softplus=True, initial_states=state)
    ref = ssd_chunk_scan_combined_ref(**{k: v.double() for k, v in xs.items()}, chunk_size=64, dt_softplus=True)
    _mamba_check(chk, "y", torch.cat([y1, y2], dim=1), ref)


@case("mamba.ssd_steps")
def _(M, chk):
    """The SSD pipeline one step at a time, each step on the reference's own inputs."""
    from einops import rearrange
    from mamba_ssm.ops.triton.ssd_chunk_scan import chunk_scan, chunk_scan_ref
    from mamba_ssm.ops.triton.ssd_chunk_state import chunk_state, chunk_state_ref
    from mamba_ssm.ops.triton.ssd_state_passing import state_passing, state_passing_ref
    xs = _mamba_ssd_inputs()
    cs = 64
    dt = rearrange(xs["dt"], "b (c l) h -> b h c l", l=cs)
    dA_cumsum = torch.cumsum(dt * rearrange(xs["A"], "h -> h 1 1"), dim=-1)
    args = (xs["B"], xs["x"], dt, dA_cumsum)
    states = chunk_state(*args)
    _mamba_check(chk, "chunk_state", states, chunk_state_ref(*(t.double() for t in args)))
    flat = rearrange(states, "... p n -> ... (p n)")
    passed, final = state_passing(flat, dA_cumsum[:, :, :, -1])
    passed_ref, final_ref = state_passing_ref(flat.double(), dA_cumsum[:, :, :, -1].double())
    _mamba_check(chk, "state_passing", passed, passed_ref)
    _mamba_check(chk, "state_passing_final", final, final_ref)
    prev = rearrange(passed, "... (p n) -> ... p n", n=states.shape[-1])
    args = (xs["B"], xs["C"], xs["x"], dt, dA_cumsum, prev, xs["D"])
    _mamba_check(chk, "chunk_scan", chunk_scan(*args), chunk_scan_ref(*(t.double() for t in args)))


@case("mamba.selective_state_update")
def _(M, chk):
    from mamba_ssm.ops.triton.selective_state_update import selective_state_update, selective_state_update_ref
    b, h, p, n, g = 3, 4, 64, 16, 2
    state = randn(b, h, p, n)
    args = (randn(b, h, p), randn(b, h, p), -torch.rand(h, p, n), randn(b, g, n), randn(b, g, n),
            randn(h, p), randn(b, h, p), randn(h, p))
    ours, theirs = state.clone(), state.double()
    y = selective_state_update(ours, *args, dt_softplus=True)
    ref = selective_state_update_ref(theirs, *(t.double() for t in args), dt_softplus=True)
    _mamba_check(chk, "y", y, ref)
    _mamba_check(chk, "state", ours, theirs)  # updated in place by both


@case("mamba.rmsnorm_gated")
def _(M, chk):
    from mamba_ssm.ops.triton.layernorm_gated import rms_norm_ref, rmsnorm_fn
    xs = {"x": randn(64, 256), "z": randn(64, 256), "weight": randn(256), "bias": randn(256)}
    for before in (True, False):
        sub = Checker()
        ours = {k: _grad(v) for k, v in xs.items()}
        theirs = {k: _grad(v.double()) for k, v in xs.items()}
        y = rmsnorm_fn(**ours, group_size=64, norm_before_gate=before)
        ref = rms_norm_ref(**theirs, group_size=64, norm_before_gate=before)
        _mamba_grads(sub, y, ref, ours, theirs)
        chk.failures += [f"norm_before_gate={before} {f}" for f in sub.failures]


@case("mamba.add_norm")
def _(M, chk):
    """The fused residual add + LayerNorm / RMSNorm of Mamba's blocks (prenorm: the sum is
    returned too), forward and backward."""
    from mamba_ssm.ops.triton.layer_norm import layer_norm_fn, layer_norm_ref, rms_norm_fn, rms_norm_ref
    xs = {"x": randn(64, 384), "residual": randn(64, 384), "weight": randn(384), "bias": randn(384)}
    for name, fn, ref_fn in (("layer_norm", layer_norm_fn, layer_norm_ref), ("rms_norm", rms_norm_fn, rms_norm_ref)):
        sub = Checker()
        ours = {k: _grad(v) for k, v in xs.items()}
        theirs = {k: _grad(v.double()) for k, v in xs.items()}
        y, total = fn(**ours, eps=1e-5, prenorm=True)
        ref, ref_total = ref_fn(**theirs, eps=1e-5, prenorm=True)
        _mamba_check(sub, "residual_out", total, ref_total)
        # one cotangent for both outputs: y + total backward as a single sum
        _mamba_grads(sub, torch.cat([y, total]), torch.cat([ref, ref_total]), ours, theirs)
        chk.failures += [f"{name} {f}" for f in sub.failures]


@case("mamba.swiglu")
def _(M, chk):
    from mamba_ssm.ops.triton.k_activations import _swiglu_bwd, _swiglu_fwd
    xy, dout = randn(32, 512), randn(32, 256)
    ref_in = _grad(xy.double())
    x, y = ref_in.chunk(2, dim=-1)
    ref = F.silu(x) * y
    ref.backward(dout.double())
    _mamba_check(chk, "y", _swiglu_fwd(xy), ref)
    _mamba_check(chk, "dxy", _swiglu_bwd(xy, dout), ref_in.grad)


# Mamba-3 (mamba_ssm.ops.triton.mamba3): its kernels call the GPU's approximations through inline
# PTX (tanh/sin/cos.approx.f32), which the inline-ptx-math pass runs as the math functions.
# The package has no torch reference for them; `_mamba3_step_ref` is one, written from the
# recurrence the step kernel documents (fp64; the kernels round the state and the query to
# bf16 for their dot, hence the tolerance of 2e-2 of each output's scale).

def _mamba3_inputs(b=1, l=96, h=2, hq=1, dqk=32, dv=32, da=8):
    dt = torch.rand(b, h, l) * 0.5 + 0.01
    return {"Q": randn(b, l, hq, dqk), "K": randn(b, l, hq, dqk), "V": randn(b, l, h, dv),
            "ADT": -dt * (torch.rand(h, 1) + 0.5), "DT": dt, "Trap": randn(b, h, l), "Q_bias": randn(h, dqk),
            "K_bias": randn(h, dqk), "Angles": randn(b, l, h, da), "D": randn(h), "Z": randn(b, l, h, dv)}


def _mamba3_step_ref(Q, K, V, ADT, DT, Trap, Q_bias, K_bias, Angles, D, Z, states):
    """One token: Q, K [b, hq, dqk]; V, Z [b, h, dv]; ADT, DT, Trap [b, h]; Angles [b, h, da];
    states (angle [b, h, da], ssm [b, h, dv, dqk], k [b, h, dqk], v [b, h, dv])."""
    angle_state, ssm, k_prev, v_prev = states
    h, dqk = V.shape[1], Q.shape[-1]
    q = Q.repeat_interleave(h // Q.shape[1], dim=1) + Q_bias
    k = K.repeat_interleave(h // K.shape[1], dim=1) + K_bias
    angle = torch.tanh(Angles) * math.pi * DT[..., None] + angle_state
    angle = torch.remainder(angle, 2 * math.pi)
    theta = F.pad(angle, (0, dqk // 2 - angle.shape[-1]))  # the dimensions past Angles are not rotated

    def rotate(x):  # pairs (x[2i], x[2i + 1]) rotated by theta[i]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        c, s = torch.cos(theta), torch.sin(theta)
        return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2)
    q, k = rotate(q), rotate(k)
    alpha = torch.exp(ADT)[..., None, None]
    trap = torch.sigmoid(Trap)[..., None, None]
    dt = DT[..., None, None]
    ssm = ssm * alpha + alpha * dt * (1 - trap) * v_prev[..., :, None] * k_prev[..., None, :] \
        + trap * dt * V[..., :, None] * k[..., None, :]
    out = (ssm @ q[..., None])[..., 0] + D[:, None] * V
    return out * F.silu(Z), (angle, ssm, k, V)


def _mamba3_zero_states(xs):
    b, _, h, dv = xs["V"].shape
    dqk, da = xs["Q"].shape[-1], xs["Angles"].shape[-1]
    return (torch.zeros(b, h, da), torch.zeros(b, h, dv, dqk), torch.zeros(b, h, dqk), torch.zeros(b, h, dv))


def _mamba3_token(xs, t):
    """Token t of the sequence-shaped inputs, as the step kernel takes them."""
    per_token = {"Q", "K", "V", "Angles", "Z"}
    return {k: v[:, t] if k in per_token else v[:, :, t] if k in ("ADT", "DT", "Trap") else v for k, v in xs.items()}


@case("mamba.mamba3_angle_dt")
def _(M, chk):
    """cumsum(tanh(angle) * pi * dt) mod 2 pi along the sequence, in chunks of 64."""
    from mamba_ssm.ops.triton.mamba3.angle_dt import angle_dt_fwd
    angle, dt = randn(2, 200, 4, 8), torch.rand(2, 4, 200)
    out = angle_dt_fwd(angle, dt)
    ref = torch.cumsum(torch.tanh(angle.double()) * math.pi * dt.double().transpose(1, 2)[..., None], dim=1)
    # compared on the circle: angles near 0 and near 2 pi are close
    gap = torch.remainder(out.double() - ref, 2 * math.pi)
    distance = torch.minimum(gap, 2 * math.pi - gap)
    chk.close("angle (distance on the circle)", distance, torch.zeros_like(distance), atol=1e-5 * 2 * math.pi, rtol=0)


@case("mamba.mamba3_siso_step")
def _(M, chk):
    """Mamba-3's decoding step from random states, against _mamba3_step_ref."""
    from mamba_ssm.ops.triton.mamba3.mamba3_siso_step import mamba3_siso_step
    xs = _mamba3_token(_mamba3_inputs(b=2), 5)
    states = tuple(randn(*s.shape) for s in _mamba3_zero_states(_mamba3_inputs(b=2)))
    out, new = mamba3_siso_step(**xs, Input_States=states)
    ref, ref_new = _mamba3_step_ref(**{k: v.double() for k, v in xs.items()}, states=[s.double() for s in states])
    _mamba_check(chk, "out", out, ref, tol=2e-2)
    for name, a, b in zip(("angle", "ssm", "k", "v"), new, ref_new):
        _mamba_check(chk, name + "_state", a, b, tol=2e-2)


@case("mamba.mamba3_siso_chunked")
def _(M, chk):
    """Mamba-3's chunked forward (mamba3_siso_combined: rotary, trapezoidal discretization,
    gating, skip) over a sequence of two and a half chunks, against _mamba3_step_ref stepped
    token by token from zero states."""
    from mamba_ssm.ops.triton.mamba3.mamba3_siso_combined import mamba3_siso_combined
    xs = _mamba3_inputs(l=160)
    out = mamba3_siso_combined(**xs, chunk_size=64)
    states, ref = [s.double() for s in _mamba3_zero_states(xs)], []
    for t in range(xs["V"].shape[1]):
        y, states = _mamba3_step_ref(**{k: v.double() for k, v in _mamba3_token(xs, t).items()}, states=states)
        ref.append(y)
    _mamba_check(chk, "out", out.float(), torch.stack(ref, dim=1), tol=2e-2)


# ------------------------------------------------------------------------------ Unsloth
# unsloth.kernels: its norms, gated activations, rotary embedding and cross-entropy through
# the library's own wrappers, forward and backward, against torch in fp64; its MoE grouped
# GEMM kernels (unsloth.kernels.moe.grouped_gemm) launched as its wrappers launch them, whose
# first line asserts CUDA tensors.

def _unsloth(name):
    return importlib.import_module("unsloth.kernels." + name)


@case("unsloth.rms_layernorm")
def _(U, chk):
    m = _unsloth("rms_layernorm")
    for gemma in (False, True):                       # Gemma scales by (1 + w)
        for n in (1000, 4096):
            x, w = randn(3, 37, n), randn(n)
            xs, ws = _grad(x), _grad(w)
            xr, wr = _grad(x.double()), _grad(w.double())
            y = m.fast_rms_layernorm(types.SimpleNamespace(weight=ws, variance_epsilon=1e-6), xs, gemma=gemma)
            ref = _ref_rms_norm(xr, wr, 1e-6, offset=1.0 if gemma else 0.0)
            tag = f"[gemma={gemma}, n={n}]"
            chk.close("y" + tag, y.double(), ref)
            dy = randn(*y.shape)
            y.backward(dy), ref.backward(dy.double())
            chk.close("dx" + tag, xs.grad.double(), xr.grad, atol=1e-4, rtol=1e-4)
            chk.close("dw" + tag, ws.grad.double(), wr.grad, atol=1e-3, rtol=1e-4)


@case("unsloth.layernorm")
def _(U, chk):
    m = _unsloth("layernorm")
    for n in (1000, 2048):
        x = randn(4, 33, n)
        ln = torch.nn.LayerNorm(n, eps=1e-5)
        with torch.no_grad():
            ln.weight.copy_(randn(n)), ln.bias.copy_(randn(n))
        xs, xr = _grad(x), _grad(x.double())
        y = m.fast_layernorm(ln, xs)
        ref = F.layer_norm(xr, (n,), ln.weight.detach().double(), ln.bias.detach().double(), 1e-5)
        chk.close(f"y[n={n}]", y.double(), ref)
        dy = randn(*y.shape)
        y.backward(dy), ref.backward(dy.double())
        chk.close(f"dx[n={n}]", xs.grad.double(), xr.grad, atol=1e-4, rtol=1e-4)


def _glu_grads(act, e, g, dh):
    """h = act(e) * g and the gradients of e and g for the cotangent dh, in fp64."""
    e, g = _grad(e.double()), _grad(g.double())
    h = act(e) * g
    h.backward(dh.double())
    return h.detach(), e.grad, g.grad


@case("unsloth.swiglu")
def _(U, chk):
    m = _unsloth("swiglu")
    e, g = randn(2, 17, 1000), randn(2, 17, 1000)
    chk.close("h", m.swiglu_fg_kernel(e, g).double(), F.silu(e.double()) * g.double())
    # The backward kernel overwrites its three inputs with h, dg and de (2-D, rows of hd).
    dh, e2, g2 = randn(34, 1000), e.reshape(34, 1000).clone(), g.reshape(34, 1000).clone()
    h, de, dg = _glu_grads(F.silu, e2, g2, dh)
    out = m.swiglu_DWf_DW_dfg_kernel(dh.clone(), e2, g2)
    for name, got, ref in zip(("h", "dg", "de"), out, (h, dg, de)):
        chk.close("backward " + name, got.double(), ref, atol=1e-5, rtol=1e-5)


@case("unsloth.geglu")
def _(U, chk):
    m = _unsloth("geglu")
    e, g = randn(2, 17, 1000), randn(2, 17, 1000)
    for approx, fwd, bwd in ((False, m.geglu_exact_forward_kernel, m.geglu_exact_backward_kernel),
                             (True, m.geglu_approx_forward_kernel, m.geglu_approx_backward_kernel)):
        act = (lambda x: F.gelu(x, approximate="tanh")) if approx else F.gelu
        chk.close(f"h[approx={approx}]", fwd(e, g).double(), act(e.double()) * g.double(), atol=1e-5, rtol=1e-5)
        dh, e2, g2 = randn(34, 1000), e.reshape(34, 1000).clone(), g.reshape(34, 1000).clone()
        h, de, dg = _glu_grads(act, e2, g2, dh)
        out = bwd(dh.clone(), e2, g2)
        for name, got, ref in zip(("h", "dg", "de"), out, (h, dg, de)):
            chk.close(f"backward {name}[approx={approx}]", got.double(), ref, atol=1e-5, rtol=1e-5)


@case("unsloth.rope")
def _(U, chk):
    m = _unsloth("rope_embedding")
    b, s, d = 2, 9, 64
    q, k = randn(b, 4, s, d), randn(b, 2, s, d)        # grouped-query: fewer K heads
    freqs = torch.outer(torch.arange(s).double(), 1.0 / 10000 ** (torch.arange(0, d, 2).double() / d))
    angles = torch.cat([freqs, freqs], -1)
    cos, sin = angles.cos(), angles.sin()
    qs, ks, qr, kr = _grad(q), _grad(k), _grad(q.double()), _grad(k.double())
    q_out, k_out = m.fast_rope_embedding(qs, ks, cos.float(), sin.float())

    def rotate(x):
        return x * cos + torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1) * sin
    q_ref, k_ref = rotate(qr), rotate(kr)
    chk.close("q", q_out.double(), q_ref)
    chk.close("k", k_out.double(), k_ref)
    dq, dk = randn(*q.shape), randn(*k.shape)
    ((q_out * dq).sum() + (k_out * dk).sum()).backward()
    ((q_ref * dq.double()).sum() + (k_ref * dk.double()).sum()).backward()
    chk.close("dq", qs.grad.double(), qr.grad)
    chk.close("dk", ks.grad.double(), kr.grad)


@case("unsloth.cross_entropy")
def _(U, chk):
    """Vocabularies under and over 65536 (one block per row, or the chunked kernels), with
    Gemma-style logit soft-capping and Cohere-style scaling; ignored labels (-100)."""
    m = _unsloth("cross_entropy_loss")
    for vocab, softcap, scale in ((1000, 0, 0), (32000, 0, 0), (70000, 0, 0), (32000, 30.0, 0),
                                  (5000, 0, 0.5), (70000, 20.0, 0)):
        logits = randn(2, 13, vocab) * 3
        labels = torch.randint(0, vocab, (2, 13))
        labels[0, 3] = labels[1, 0] = -100
        xs, xr = _grad(logits), _grad(logits.double())
        loss = m.fast_cross_entropy_loss(xs, labels, logit_softcapping=softcap, logit_scaling=scale)
        z = xr * scale if scale else xr
        z = softcap * torch.tanh(z / softcap) if softcap else z
        ref = F.cross_entropy(z.reshape(-1, vocab), labels.reshape(-1), ignore_index=-100, reduction="sum") \
            / (labels != -100).sum()
        tag = f"[vocab={vocab}, softcap={softcap}, scale={scale}]"
        chk.close("loss" + tag, loss.double(), ref)
        loss.backward(), ref.backward()
        chk.close("dlogits" + tag, xs.grad.double(), xr.grad, atol=1e-7, rtol=1e-4)


@case("unsloth.fp8_block")
def _(U, chk):
    """DeepSeek-V3's block fp8 kernels as Unsloth ships them: activations quantized per
    128-element block to e4m3 (scale = amax / 448; exact bytes against torch's conversion),
    a weight dequantized per 128 x 128 block (masked edges), and the w8a8 block-scaled
    matmul (SGLang's kernel) against the dequantized product."""
    m = _unsloth("fp8")
    x = randn(8, 512) * 5
    x[1, :128] = 0                                    # an all-zero block keeps scale 1
    y, s = m.act_quant(x, 128)
    blocks = x.reshape(8, 4, 128).double()
    s_ref = blocks.abs().amax(-1) / 448.0
    s_ref = torch.where(s_ref == 0, torch.ones_like(s_ref), s_ref)
    chk.close("act scale", s.double(), s_ref, atol=0, rtol=1e-6)
    y_ref = (x.reshape(8, 4, 128) / s_ref.float()[..., None]).to(torch.float8_e4m3fn).reshape(8, 512)
    chk.equal("act e4m3 bytes", y.view(torch.uint8), y_ref.view(torch.uint8))

    w, ws = (randn(300, 260) * 100).to(torch.float8_e4m3fn), torch.rand(3, 3) + 0.5
    out = torch.empty(300, 260, dtype=torch.bfloat16)
    m.weight_dequant_kernel[(3, 3)](w, ws, out, 300, 260, BLOCK_SIZE=128)
    per_element = ws.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:300, :260]
    chk.equal("weight dequant", out, (w.double() * per_element).to(torch.bfloat16))

    M, N, K = 50, 384, 512
    a, a_s = randn(M, K).to(torch.float8_e4m3fn), torch.rand(M, K // 128) + 0.5
    b, b_s = randn(N, K).to(torch.float8_e4m3fn), torch.rand(N // 128, K // 128) + 0.5
    c = m.w8a8_block_fp8_matmul_triton(a, b, a_s, b_s, [128, 128], torch.float32)
    a_ref = a.double() * a_s.double().repeat_interleave(128, 1)
    b_ref = b.double() * b_s.double().repeat_interleave(128, 0).repeat_interleave(128, 1)
    chk.close_to_scale("w8a8 matmul", c, a_ref @ b_ref.T, 1e-5)


def _unsloth_routing(experts=4, tokens=37, topk=2):
    """Each token's top-k experts; the (token, slot) pairs in expert order (the index
    token * topk + slot of each, as `gather_indices`); tokens per expert (`m_sizes`)."""
    chosen = torch.stack([torch.randperm(experts)[:topk] for _ in range(tokens)]).reshape(-1)
    order = torch.sort(chosen, stable=True).indices
    return chosen, order.to(torch.int32), torch.bincount(chosen, minlength=experts).to(torch.int32)


@case("unsloth.moe_grouped_gemm")
def _(U, chk):
    """The MoE grouped GEMM forward (X in expert order, or gathered from token order: permute_x;
    Y in expert order, or scattered back to token order: permute_y; W through a tensor
    descriptor: use_tma_load_w) in fp32 and bf16, then its dX and dW kernels, against
    per-pair products in fp64. Persistent kernels (a grid of NUM_SMS programs) looping over
    the experts' tiles."""
    import triton
    fwd = _unsloth("moe.grouped_gemm.kernels.forward")
    bwd = _unsloth("moe.grouped_gemm.kernels.backward")
    # Device-side tensor descriptors take their scratch from Triton's allocator.
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8))
    experts, tokens, topk, K, N = 4, 37, 2, 128, 96
    chosen, gather, m_sizes = _unsloth_routing(experts, tokens, topk)
    pair = gather.long()
    token, expert = pair // topk, chosen[pair]
    blocks = dict(NUM_SMS=2, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32)
    shape = dict(NUM_EXPERTS=experts, NUM_TOKENS=tokens, TOPK=topk, N=N, K=K)

    def to_tokens(rows):                               # expert order -> token * topk + slot order
        out = torch.empty_like(rows)
        out[pair] = rows
        return out

    for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2)):
        x, w = randn(tokens, K, dtype=dtype), (randn(experts, N, K) / 8).to(dtype)
        ref = torch.stack([x[t].double() @ w[e].double().T for t, e in zip(token, expert)])
        for permute_x, permute_y, tma_w in ((False, False, False), (True, False, False), (False, True, False),
                                            (True, False, True)):
            y = torch.empty(tokens * topk, N, dtype=dtype)
            fwd._grouped_gemm_forward_kernel[(2,)](
                x_ptr=x if permute_x else x[token].contiguous(), w_ptr=w, y_ptr=y, m_sizes_ptr=m_sizes,
                gather_indices_ptr=gather, topk_weights_ptr=None, PERMUTE_X=permute_x, PERMUTE_Y=permute_y,
                USE_TMA_LOAD_W=tma_w, **shape, **blocks)
            chk.close_to_scale(f"y[{dtype}, permute_x={permute_x}, permute_y={permute_y}, tma_w={tma_w}]",
                               y, to_tokens(ref) if permute_y else ref, tol)

    x, w, dy = randn(tokens, K), randn(experts, N, K) / 8, randn(tokens * topk, N)
    dx_ref = torch.stack([dy[i].double() @ w[e].double() for i, e in enumerate(expert)])
    for permute_x, permute_y in ((False, False), (False, True), (True, False)):
        dx = torch.zeros(tokens * topk, K)
        bwd._grouped_gemm_dX_kernel[(2,)](dY_ptr=to_tokens(dy) if permute_y else dy, w_ptr=w, dX_ptr=dx,
                                          gather_indices_ptr=gather, m_sizes_ptr=m_sizes, PERMUTE_X=permute_x,
                                          PERMUTE_Y=permute_y, **shape, **blocks)
        chk.close_to_scale(f"dX[permute_x={permute_x}, permute_y={permute_y}]", dx,
                           to_tokens(dx_ref) if permute_x else dx_ref, 1e-5)
    dw_ref = torch.zeros(experts, N, K, dtype=torch.float64)
    for i, e in enumerate(expert):
        dw_ref[e] += torch.outer(dy[i].double(), x[token[i]].double())
    for permute_x, permute_y in ((False, False), (True, False), (False, True)):
        dw = torch.zeros(experts, N, K)
        bwd._grouped_gemm_dW_kernel[(2,)](x_ptr=x if permute_x else x[token].contiguous(),
                                          dY_ptr=to_tokens(dy) if permute_y else dy, dW_ptr=dw, m_sizes_ptr=m_sizes,
                                          gather_indices_ptr=gather, PERMUTE_X=permute_x, PERMUTE_Y=permute_y,
                                          **shape, **blocks)
        chk.close_to_scale(f"dW[permute_x={permute_x}, permute_y={permute_y}]", dw, dw_ref, 1e-5)


# ------------------------------------------------------------------------------ vLLM
# vLLM's Triton attention ops (vllm.v1.attention.ops), through their own Python functions:
# the unified attention of its V1 engine (variable-length queries over a paged KV cache) and
# the split-KV decode attention, against softmax attention in fp64 over the same pages.

def _paged_kv(pages, page_size, kv_heads, head_dim, lens, dtype=torch.float32):
    """A paged K and V cache, and for each sequence its pages in a random order."""
    k = randn(pages, page_size, kv_heads, head_dim, dtype=dtype)
    v = randn(pages, page_size, kv_heads, head_dim, dtype=dtype)
    per_seq = max(-(-n // page_size) for n in lens)
    table = torch.stack([torch.randperm(pages)[:per_seq] for _ in lens]).to(torch.int32)
    return k, v, table


def _attention_ref(q, k, v, scale, offset=None, window=-1, softcap=0.0, sink=None):
    """Attention of `q` [q_len, heads, dim] over keys `k`, `v` [kv_len, kv_heads, dim] in
    fp64 (grouped-query: query head h reads K/V head h // (heads / kv heads)); with `offset`,
    causal: query i sees the keys up to i + offset, and with `window` >= 0 only the last
    window + 1 of them; without, every key; `sink`, a per-head logit that takes probability
    only."""
    heads, kv_heads = q.shape[1], k.shape[1]
    keys = k.double().repeat_interleave(heads // kv_heads, 1)
    values = v.double().repeat_interleave(heads // kv_heads, 1)
    s = torch.einsum("qhd,khd->hqk", q.double(), keys) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if offset is not None:
        pos = torch.arange(q.shape[0])[:, None] + offset
        key_pos = torch.arange(k.shape[0])[None]
        hidden = key_pos > pos
        if window >= 0:
            hidden |= pos - key_pos > window
        s = s.masked_fill(hidden, float("-inf"))
    if sink is not None:
        s = torch.cat([s, sink.double()[:, None, None].expand(heads, q.shape[0], 1)], -1)
        return torch.einsum("hqk,khd->qhd", s.softmax(-1)[..., :-1], values)
    return torch.einsum("hqk,khd->qhd", s.softmax(-1), values)


def _paged_attention_ref(q, k, v, table, seq, kv_len, scale, window=-1, softcap=0.0, sink=None, causal=True):
    """_attention_ref of the queries `q`, the last q_len positions of a sequence of kv_len
    tokens, over that sequence's pages of `k`, `v` [pages, page_size, kv_heads, dim]
    (row `seq` of `table`); causal, or with causal=False over every key."""
    pages = table[seq, :-(-kv_len // k.shape[1])].long()
    keys, values = (t[pages].reshape(-1, *t.shape[2:])[:kv_len] for t in (k, v))
    return _attention_ref(q, keys, values, scale, kv_len - q.shape[0] if causal else None, window, softcap, sink)


@case("vllm.unified_attention")
def _(V, chk):
    """A decode step, a short and a long prefill chunk in one batch; grouped-query heads;
    fp32, bf16, fp16; a sliding window, soft-capping, attention sinks; head size 128 with
    64-token pages."""
    from vllm.v1.attention.ops.triton_unified_attention import unified_attention
    variants = [dict(dtype=torch.float32), dict(dtype=torch.bfloat16), dict(dtype=torch.float16),
                dict(window=7), dict(softcap=20.0), dict(sinks=True),
                dict(heads=4, kv_heads=4, dim=128, page=32, q_lens=(3, 64), kv_lens=(100, 64))]
    for variant in variants:
        o = dict(dtype=torch.float32, heads=8, kv_heads=2, dim=64, page=16, q_lens=(1, 5, 17), kv_lens=(30, 20, 17),
                 window=-1, softcap=0.0, sinks=False)
        o.update(variant)
        k, v, table = _paged_kv(40, o["page"], o["kv_heads"], o["dim"], o["kv_lens"], o["dtype"])
        starts = torch.tensor((0,) + o["q_lens"]).cumsum(0).to(torch.int32)
        q = randn(int(starts[-1]), o["heads"], o["dim"], dtype=o["dtype"])
        out, scale = torch.empty_like(q), o["dim"] ** -0.5
        sink = randn(o["heads"]) if o["sinks"] else None
        unified_attention(q=q, k=k, v=v, out=out, cu_seqlens_q=starts, max_seqlen_q=max(o["q_lens"]),
                          seqused_k=torch.tensor(o["kv_lens"], dtype=torch.int32), max_seqlen_k=max(o["kv_lens"]),
                          softmax_scale=scale, causal=True, window_size=(o["window"], -1), block_table=table,
                          softcap=o["softcap"], q_descale=None, k_descale=None, v_descale=None, sinks=sink)
        ref = torch.cat([_paged_attention_ref(q[starts[i]:starts[i + 1]], k, v, table, i, n, scale, o["window"],
                                              o["softcap"], sink) for i, n in enumerate(o["kv_lens"])])
        tol = 1e-5 if o["dtype"] == torch.float32 else 1e-2
        chk.close_to_scale(str(variant), out.double(), ref, tol)


@case("vllm.decode_attention")
def _(V, chk):
    """The split-KV decode kernels (a stage per KV split, then their merge): one query token
    per sequence, multi-head and grouped-query (the grouped kernel), soft-capping, bf16."""
    from vllm.v1.attention.ops.triton_decode_attention import decode_attention_fwd
    lens, splits, dim, page = (30, 7, 64), 4, 64, 16
    for heads, kv_heads, softcap, dtype in ((8, 8, 0.0, torch.float32), (8, 2, 0.0, torch.float32),
                                            (16, 1, 30.0, torch.float32), (8, 2, 0.0, torch.bfloat16)):
        k, v, table = _paged_kv(40, page, kv_heads, dim, lens, dtype)
        q = randn(len(lens), heads, dim, dtype=dtype)
        out, lse = torch.empty_like(q), torch.empty(len(lens), heads)
        logits = torch.empty(len(lens), heads, splits, dim + 1)
        decode_attention_fwd(q, k, v, out, lse, table, torch.tensor(lens, dtype=torch.int32), logits, splits,
                             dim ** -0.5, page, softcap)
        ref = torch.cat([_paged_attention_ref(q[i:i + 1], k, v, table, i, n, dim ** -0.5, softcap=softcap)
                         for i, n in enumerate(lens)])
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        chk.close_to_scale(f"heads={heads}, kv_heads={kv_heads}, softcap={softcap}, {dtype}", out.double(), ref, tol)


@case("vllm.prefix_prefill")
def _(V, chk):
    """Prefill of new tokens after a cached prefix (prefix caching, chunked prefill): queries
    attend to the context in the paged cache (K [pages, heads, dim / 8, page, 8], V [pages,
    heads, dim, page], read through each sequence's block table) and causally to the new
    tokens, passed dense; sequences with 30, 0 and 20 cached tokens and 1, 5 and 17 new ones;
    grouped-query heads; fp32, bf16, fp16; a sliding window of 8 keys; attention sinks."""
    from vllm.v1.attention.ops.prefix_prefill import context_attention_fwd
    heads, kv_heads, dim, page, q_lens, ctx_lens = 8, 2, 64, 16, (1, 5, 17), (30, 0, 20)
    kv_lens = tuple(c + n for c, n in zip(ctx_lens, q_lens))
    for variant in (dict(dtype=torch.float32), dict(dtype=torch.bfloat16), dict(dtype=torch.float16),
                    dict(sliding_window=8), dict(sinks=True)):
        dtype = variant.get("dtype", torch.float32)
        k_pages, v_pages, table = _paged_kv(20, page, kv_heads, dim, kv_lens, dtype)
        starts = torch.tensor((0, ) + q_lens).cumsum(0).to(torch.int32)
        q = randn(int(starts[-1]), heads, dim, dtype=dtype)
        k_new, v_new = randn(int(starts[-1]), kv_heads, dim, dtype=dtype), randn(int(starts[-1]), kv_heads, dim, dtype=dtype)
        for i, c in enumerate(ctx_lens):               # the new tokens in the cache too, for the reference
            for j in range(q_lens[i]):
                pos = c + j
                k_pages[table[i, pos // page], pos % page] = k_new[starts[i] + j]
                v_pages[table[i, pos // page], pos % page] = v_new[starts[i] + j]
        k_cache = k_pages.reshape(20, page, kv_heads, dim // 8, 8).permute(0, 2, 3, 1, 4).contiguous()
        v_cache = v_pages.permute(0, 2, 3, 1).contiguous()
        sink = randn(heads) if variant.get("sinks") else None
        out, one = torch.empty_like(q), torch.tensor(1.0)
        context_attention_fwd(q, k_new, v_new, out, "auto", k_cache, v_cache, table, starts,
                              torch.tensor(kv_lens, dtype=torch.int32), max(kv_lens), max(q_lens), one, one,
                              sliding_window=variant.get("sliding_window"), sinks=sink)
        window = variant.get("sliding_window", 0) - 1    # vLLM's window counts the query's own key
        ref = torch.cat([_paged_attention_ref(q[starts[i]:starts[i + 1]], k_pages, v_pages, table, i, n, dim ** -0.5,
                                              window=window, sink=sink) for i, n in enumerate(kv_lens)])
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        chk.close_to_scale(str(variant), out.double(), ref, tol)


@case("vllm.prefill_attention")
def _(V, chk):
    """The prefill attention over packed variable-length sequences (lengths 17, 1, 64, 33),
    causal and not, grouped-query heads, head sizes 64, 80 (padded) and 128, fp32/bf16/fp16,
    against fp64 softmax attention per sequence. Output rows start as NaN."""
    from vllm.v1.attention.ops.triton_prefill_attention import context_attention_fwd
    lens = torch.tensor([17, 1, 64, 33], dtype=torch.int32)
    starts = torch.cat([torch.zeros(1, dtype=torch.int32), lens.cumsum(0)[:-1].to(torch.int32)])
    for dtype, causal, heads, kv_heads, dim in ((torch.float32, True, 8, 2, 64), (torch.float32, False, 4, 4, 80),
                                                (torch.bfloat16, True, 8, 8, 128), (torch.float16, True, 6, 2, 64)):
        n = int(lens.sum())
        q = randn(n, heads, dim, dtype=dtype)
        k, v = randn(n, kv_heads, dim, dtype=dtype), randn(n, kv_heads, dim, dtype=dtype)
        out = torch.full_like(q, float("nan"))
        context_attention_fwd(q, k, v, out, starts, lens, int(lens.max()), is_causal=causal)
        one_page = torch.zeros(1, 1, dtype=torch.int32)      # each sequence as a single page
        ref = torch.cat([_paged_attention_ref(q[s:s + length], k[None, s:s + length], v[None, s:s + length], one_page,
                                              0, length, dim ** -0.5, causal=causal)
                         for s, length in zip(starts.tolist(), lens.tolist())])
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        chk.close_to_scale(f"{dtype}, causal={causal}, heads={heads}/{kv_heads}, dim={dim}", out.double(), ref, tol)


# vLLM's other kernels: the fused MoE GEMM, the merge of two partial attention results, the
# speculative-decoding rejection sampler and the combined top-k/top-p mask. The modules of the
# first, third and fourth import vLLM's serving stack (zmq, openai, msgspec, ...), which the
# `--no-deps` install leaves out; `_vllm_kernels` loads their @triton.jit functions from the
# installed file's own text instead, and each case launches them as the module's wrapper does.

def _vllm_kernels(relpath):
    """The @triton.jit functions and upper-case constants of a vLLM source file, by name.
    The file's top-level `triton.jit`-decorated functions and NAME = ... constants are
    compiled from the installed file, at its own path and line numbers (Triton reads a
    kernel's source back through them), in a namespace holding torch, triton and tl; the
    rest of the module (its imports, its Python wrappers) is not run."""
    import ast
    import triton
    import triton.language as tl
    path = Path(importlib.util.find_spec("vllm").origin).parent / relpath
    tree = ast.parse(path.read_text())
    keep = [node for node in tree.body
            if (isinstance(node, ast.FunctionDef)
                and any(ast.unparse(d).startswith("triton.jit") for d in node.decorator_list))
            or (isinstance(node, ast.Assign)
                and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets))]
    namespace = {"torch": torch, "triton": triton, "tl": tl, "__name__": "vllm_kernels." + relpath}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def _moe_blocks(topk_ids, block_m, experts):
    """What vLLM's moe_align_block_size computes: token slots (token * top_k + k) grouped by
    expert, each group padded to block_m with the sentinel numel, the expert of each block,
    and the padded length; two padding blocks of expert -1 follow, past that length."""
    flat = topk_ids.reshape(-1)
    ids, block_experts = [], []
    for e in range(experts):
        slots = (flat == e).nonzero().reshape(-1).tolist()
        slots += [flat.numel()] * (-len(slots) % block_m)
        ids += slots
        block_experts += [e] * (len(slots) // block_m)
    padded = len(ids)
    ids += [flat.numel()] * 2 * block_m
    block_experts += [-1, -1]
    return (torch.tensor(ids, dtype=torch.int32), torch.tensor(block_experts, dtype=torch.int32),
            torch.tensor([padded], dtype=torch.int32))


def _launch_fused_moe(kernel, a, w, c, router, ids, compute, *, bias=None, a_scale=None, w_scale=None,
                      scale_strides=(0, 0, 0, 0, 0), group=(0, 0), weighted=True, naive=False, td=False,
                      swap=False, quant="none", bm=16, bn=32, bk=32):
    """Launches vLLM's fused_moe_kernel with the arguments its `invoke_fused_moe_triton_kernel`
    passes: the token slots sorted into blocks by expert (`_moe_blocks`), or with `naive` one
    block per token slot; `quant` is "none", "fp8 block", "int8 w8a16" or "int8 w8a8" (the
    last with per-channel scales)."""
    import triton
    if naive:
        slots, block_experts = None, ids.reshape(-1)
        em = ids.numel() * bm
        padded = torch.tensor([em], dtype=torch.int32)
    else:
        slots, block_experts, padded = _moe_blocks(ids, bm, w.shape[0])
        em = slots.numel()
    n, k = w.shape[1], w.shape[2]
    grid = (triton.cdiv(em, bm) * triton.cdiv(n, bn), )
    kernel[grid](a, w, c, bias, a_scale, w_scale, router, slots, block_experts, padded, n, k, em, ids.numel(),
                 a.stride(0), a.stride(1), w.stride(0), w.stride(2), w.stride(1), c.stride(1), c.stride(2),
                 *scale_strides, bias.stride(0) if bias is not None else 0, bias.stride(1) if bias is not None else 0,
                 *group, MUL_ROUTED_WEIGHT=weighted, top_k=ids.shape[1], compute_type=compute,
                 use_fp8_w8a8=quant == "fp8 block", use_int8_w8a8=quant == "int8 w8a8",
                 use_int8_w8a16=quant == "int8 w8a16", per_channel_quant=quant == "int8 w8a8",
                 naive_block_assignment=naive, HAS_BIAS=bias is not None, BLOCK_SIZE_K=bk, SWAP_AB=swap, USE_TD=td,
                 BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, GROUP_SIZE_M=1, SPLIT_K=1)


@case("vllm.fused_moe")
def _(V, chk):
    """The fused MoE kernel (unquantized): each token's hidden state times the weights of its
    top-k experts, through expert-sorted token blocks and through the naive one-block-per-
    slot assignment; the router weight applied or not, a bias, the tensor-descriptor path;
    fp32, bf16, fp16; K and N not multiples of the blocks; then quantized operands
    (`_vllm_fused_moe_quantized`). Output rows the kernel must not write start as NaN."""
    import triton.language as tl
    kernel = _vllm_kernels("model_executor/layers/fused_moe/fused_moe.py")["fused_moe_kernel"]
    compute = {torch.float32: tl.float32, torch.bfloat16: tl.bfloat16, torch.float16: tl.float16}
    variants = [dict(), dict(naive=True, tokens=3, experts=16), dict(k=100, n=70, weighted=False),
                dict(bias=True), dict(td=True, k=100), dict(dtype=torch.bfloat16),
                dict(dtype=torch.float16, naive=True)]
    for variant in variants:
        o = dict(tokens=33, k=128, n=96, experts=4, top_k=2, dtype=torch.float32, naive=False, weighted=True,
                 bias=False, td=False)
        o.update(variant)
        a = randn(o["tokens"], o["k"], dtype=o["dtype"])
        w = (randn(o["experts"], o["n"], o["k"]) / o["k"] ** 0.5).to(o["dtype"])
        bias = randn(o["experts"], o["n"], dtype=o["dtype"]) if o["bias"] else None
        c = torch.full((o["tokens"], o["top_k"], o["n"]), float("nan"), dtype=o["dtype"])
        router, ids = torch.topk(torch.softmax(randn(o["tokens"], o["experts"]), -1), o["top_k"])
        ids = ids.to(torch.int32)
        _launch_fused_moe(kernel, a, w, c, router, ids, compute[o["dtype"]], bias=bias,
                          weighted=o["weighted"], naive=o["naive"], td=o["td"])
        ref = torch.einsum("mk,mtnk->mtn", a.double(), w.double()[ids.long()])
        if bias is not None:
            ref = ref + bias.double()[ids.long()]
        if o["weighted"]:
            ref = ref * router.double()[..., None]
        tol = 1e-5 if o["dtype"] == torch.float32 else 1e-2
        chk.close_to_scale(str(variant), c.double(), ref, tol)
    _vllm_fused_moe_quantized(kernel, chk)


def _vllm_fused_moe_quantized(kernel, chk):
    """The same kernel on quantized operands, bf16 out: fp8 e4m3 activations and weights with
    64 x 64 block scales (plain and SWAP_AB, the transposed dot), int8 weights with a scale
    per output channel on bf16 activations (w8a16), int8 activations and weights with
    per-token and per-channel scales (w8a8). The reference multiplies the dequantized
    operands in fp64."""
    import triton.language as tl
    tokens, k, n, experts, top_k, group = 33, 256, 192, 4, 2, 64
    a, w = randn(tokens, k), randn(experts, n, k) / k ** 0.5
    router, ids = torch.topk(torch.softmax(randn(tokens, experts), -1), top_k)
    ids = ids.to(torch.int32)
    for mode, swap in (("fp8 block", False), ("fp8 block", True), ("int8 w8a16", False), ("int8 w8a8", False)):
        if mode == "fp8 block":
            a_blocks = a.view(tokens, k // group, group)
            w_blocks = w.view(experts, n // group, group, k // group, group)
            a_scale = a_blocks.abs().amax(-1) / 448
            w_scale = w_blocks.abs().amax((2, 4)) / 448
            aq = (a_blocks / a_scale[..., None]).to(torch.float8_e4m3fn).view(tokens, k)
            wq = (w_blocks / w_scale[:, :, None, :, None]).to(torch.float8_e4m3fn).view(experts, n, k)
            a_ref = (aq.double().view(tokens, k // group, group) * a_scale[..., None].double()).view(tokens, k)
            w_ref = (wq.double().view(experts, n // group, group, k // group, group)
                     * w_scale[:, :, None, :, None].double()).view(experts, n, k)
            strides, groups = (a_scale.stride(0), a_scale.stride(1), w_scale.stride(0), w_scale.stride(2),
                               w_scale.stride(1)), (group, group)
        elif mode == "int8 w8a16":
            w_scale = (w.abs().amax(-1) / 127).to(torch.bfloat16)
            wq = torch.round(w / w_scale.float()[..., None]).to(torch.int8)
            aq, a_scale = a.to(torch.bfloat16), None
            a_ref, w_ref = aq.double(), wq.double() * w_scale.double()[..., None]
            strides, groups = (0, 0, w_scale.stride(0), 0, w_scale.stride(1)), (0, 0)
        else:
            a_scale, w_scale = a.abs().amax(-1, keepdim=True) / 127, w.abs().amax(-1, keepdim=True) / 127
            aq, wq = torch.round(a / a_scale).to(torch.int8), torch.round(w / w_scale).to(torch.int8)
            a_ref, w_ref = aq.double() * a_scale.double(), wq.double() * w_scale.double()
            strides, groups = (a_scale.stride(0), a_scale.stride(1), w_scale.stride(0), w_scale.stride(2),
                               w_scale.stride(1)), (0, 0)
        c = torch.full((tokens, top_k, n), float("nan"), dtype=torch.bfloat16)
        _launch_fused_moe(kernel, aq, wq, c, router, ids, tl.bfloat16, a_scale=a_scale, w_scale=w_scale,
                          scale_strides=strides, group=groups, swap=swap, quant=mode, bn=64, bk=64)
        ref = torch.einsum("mk,mtnk->mtn", a_ref, w_ref[ids.long()]) * router.double()[..., None]
        chk.close_to_scale(f"{mode}, SWAP_AB={swap}", c.double(), ref, 1e-2)


def _merged_states_ref(prefix, prefix_lse, suffix, suffix_lse):
    """Two partial attention results [tokens, heads, dim] merged by their log-sum-exps
    [tokens, heads], in fp64: (the output, its LSE); an infinite LSE counts as an empty part."""
    p, s = (torch.where(torch.isinf(t), float("-inf"), t).double() for t in (prefix_lse, suffix_lse))
    m = torch.maximum(p, s)
    wp, ws = torch.exp(p - m), torch.exp(s - m)
    out = (prefix.double() * wp[..., None] + suffix.double() * ws[..., None]) / (wp + ws)[..., None]
    return out, torch.log(wp + ws) + m


@case("vllm.merge_attn_states")
def _(V, chk):
    """Two partial attention results (a prefix and a suffix over disjoint keys) merged by
    their log-sum-exps, as chunked prefill does; an infinite LSE counts as an empty part;
    the LSE tensors strided views; fp32, bf16, fp16, head sizes 64, 80 (padded) and 128."""
    from vllm.v1.attention.ops.triton_merge_attn_states import merge_attn_states
    for tokens, heads, dim, dtype in ((7, 4, 64, torch.float32), (5, 3, 80, torch.bfloat16),
                                      (9, 2, 128, torch.float16)):
        prefix, suffix = randn(tokens, heads, dim, dtype=dtype), randn(tokens, heads, dim, dtype=dtype)
        prefix_lse = randn(tokens, heads).T * 3                 # [heads, tokens], a transposed view
        suffix_lse = randn(heads, tokens) * 3
        prefix_lse[0, 0], suffix_lse[1, 1] = float("inf"), float("-inf")
        out, out_lse = torch.empty(tokens, heads, dim, dtype=dtype), torch.empty(heads, tokens)
        merge_attn_states(out, prefix, prefix_lse, suffix, suffix_lse, out_lse)
        ref, ref_lse = _merged_states_ref(prefix, prefix_lse.T, suffix, suffix_lse.T)
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        chk.close_to_scale(f"out {dtype}", out.double(), ref, tol)
        chk.close(f"lse {dtype}", out_lse.double(), ref_lse.T, atol=1e-5, rtol=1e-5)


@case("vllm.rejection_sampler")
def _(V, chk):
    """Speculative decoding's rejection sampling: the greedy kernel (a draft token kept while
    it equals the target's argmax), the random kernel (kept while target/draft probability
    >= a uniform draw; a padded -1 draft rejected), both appending the bonus token when all
    drafts are kept, and the recovered-token kernel (argmax of max(target - draft, 0) or of
    the target without the draft token, times exponential noise) over a 1000-token
    vocabulary in tiles of 256; requests with 0 to 4 draft tokens."""
    k = _vllm_kernels("v1/sample/rejection_sampler.py")
    drafts_per_req, max_spec, vocab = torch.tensor([4, 0, 2, 4, 1, 3]), 4, 1000
    reqs, ends = len(drafts_per_req), drafts_per_req.cumsum(0).to(torch.int32)
    n = int(ends[-1])
    greedy = torch.tensor([True, False, True, False, True, False])
    # Greedy: request 0 rejects its second draft, request 4 its only one, request 2 keeps both.
    # Random: request 3 keeps all four (uniform draws of 0), request 5 a padded -1 second
    # draft (its first decided by a uniform draw), request 1 has no draft: the bonus only.
    draft = torch.randint(0, vocab, (n, ), dtype=torch.int32)
    draft[12] = -1
    argmax = draft.long().clone()
    argmax[[1, 10]] += 1
    bonus = torch.randint(0, vocab, (reqs, ), dtype=torch.int32)
    target_p, draft_p = torch.softmax(randn(n, vocab) * 3, -1), torch.softmax(randn(n, vocab) * 3, -1)
    uniform, recovered = torch.rand(n), torch.randint(0, vocab, (n, ), dtype=torch.int32)
    uniform[6:10] = 0
    out = torch.full((reqs, max_spec + 1), -7, dtype=torch.int32)
    k["rejection_greedy_sample_kernel"][(reqs, )](out, ends, draft, argmax, bonus, greedy, max_spec, None, None,
                                                  SYNTHETIC_MODE=False)
    k["rejection_random_sample_kernel"][(reqs, )](out, ends, draft, draft_p, target_p, bonus, recovered, uniform,
                                                  greedy, max_spec, vocab, None, NO_DRAFT_PROBS=False,
                                                  SYNTHETIC_MODE=False)
    ref, start = torch.full_like(out, -7), 0
    for r in range(reqs):
        count, rejected = int(drafts_per_req[r]), False
        for pos in range(count):
            t, d = start + pos, int(draft[start + pos])
            if greedy[r]:
                token, rejected = int(argmax[t]), d != int(argmax[t])
            else:
                kept = d >= 0 and float(target_p[t, d]) / float(draft_p[t, d]) >= float(uniform[t])
                token, rejected = (d if kept else int(recovered[t])), not kept
            ref[r, pos] = token
            if rejected:
                break
        if not rejected:
            ref[r, count] = bonus[r]
        start += count
    chk.equal("accepted tokens", out, ref)
    inv_q = 1 / torch.empty(reqs, vocab).exponential_()
    for no_draft_probs in (False, True):
        got = torch.full((n, ), -1, dtype=torch.int32)
        k["sample_recovered_tokens_kernel"][(reqs, max_spec)](got, ends, draft, None if no_draft_probs else draft_p,
                                                              target_p, inv_q, vocab, BLOCK_SIZE=256,
                                                              NO_DRAFT_PROBS=no_draft_probs, USE_FP64_GUMBEL=False)
        want = []
        for t in range(n):
            r = int(torch.searchsorted(ends, t, right=True))
            if no_draft_probs:
                prob = target_p[t].clone()
                if draft[t] >= 0:
                    prob[draft[t]] = 0
            else:
                prob = (target_p[t] - draft_p[t]).clamp(min=0)
            want.append(int(torch.argmax(prob * inv_q[r])))
        chk.equal(f"recovered tokens (no draft probs: {no_draft_probs})", got, torch.tensor(want, dtype=torch.int32))


@case("vllm.top_k_top_p")
def _(V, chk):
    """The sampler's combined top-k / top-p mask (pivot search over the vocabulary in tiles,
    as vLLM launches it on CPU: tiles of 256, one program per row up to the core count):
    top-k alone, top-p alone and both, vocabularies of 1000 to 50257, one row whose k covers
    the vocabulary; the kept set must equal a sort-based mask's and keep its logits exactly."""
    import os
    k = _vllm_kernels("v1/sample/ops/topk_topp_triton.py")
    tables = (torch.tensor(k["_PERCENTILE_TO_STD_TABLE"]), torch.tensor(k["_NORMAL_CDF_TO_SIGMA_TABLE"]))
    for batch, vocab, use_k, use_p in ((4, 1000, True, False), (4, 1000, False, True), (8, 5000, True, True),
                                       (2, 50257, True, True)):
        logits = randn(batch, vocab) * 3
        top_k = torch.randint(1, 200, (batch, ), dtype=torch.int32) if use_k else None
        if use_k:
            top_k[0] = vocab
        top_p = torch.rand(batch) * 0.9 + 0.05 if use_p else None
        programs = min(os.cpu_count() or 1, batch)
        got = logits.clone()
        k["_topk_topp_kernel"][(programs, )](got, got.stride(0), torch.empty(programs, vocab), *tables,
                                             top_k if use_k else got, top_p if use_p else got, batch,
                                             VOCAB_SIZE=vocab, MASK_VALUE=float("-inf"), BLOCK_SIZE=256,
                                             BLOCK_SIZE_TRUNC=128, TOPK_ENABLED=use_k, TOPP_ENABLED=use_p,
                                             SPLIT_COVERS_PONLY=False)
        ordered, order = logits.sort(-1)                 # the sort-based mask, ascending
        if use_k:
            ordered = ordered.masked_fill(ordered < ordered.gather(1, (vocab - top_k.long())[:, None]), float("-inf"))
        if use_p:
            drop = ordered.softmax(-1).cumsum(-1) <= 1 - top_p[:, None]
            drop[:, -1] = False
            ordered = ordered.masked_fill(drop, float("-inf"))
        ref = torch.empty_like(logits).scatter_(-1, order, ordered)
        tag = f"batch={batch}, vocab={vocab}, k={use_k}, p={use_p}"
        chk.equal(f"kept set, {tag}", torch.isfinite(got), torch.isfinite(ref))
        chk.equal(f"kept logits, {tag}", got[torch.isfinite(ref)], logits[torch.isfinite(ref)])


# vLLM's quantized GEMMs and quantizers: AWQ's int4 weights, fp8 per-token-group quantization
# with its block-scaled GEMM, and compressed-tensors' scaled int8/fp8 GEMM. Their modules sit
# in packages whose __init__ imports the serving stack, so the kernels come from
# `_vllm_kernels` and are launched with the arguments of the module's own wrapper.

_AWQ_ORDER = (0, 4, 1, 5, 2, 6, 3, 7)          # nibble i of a packed word holds column _AWQ_ORDER[i]


def _awq_unpack(packed):
    """AWQ's int32 words [rows, cols / 8] as their 4-bit values [rows, cols], in column order."""
    nibbles = [(packed >> (4 * _AWQ_ORDER[i])) & 0xF for i in range(8)]
    return torch.stack(nibbles, -1).reshape(packed.shape[0], -1)


@case("vllm.awq")
def _(V, chk):
    """AWQ 4-bit weights (8 nibbles per int32 word in AWQ's interleaved order, unpacked with
    `tl.interleave` and per-column shifts): the dequantize kernel and the GEMM with split-K 1
    and 4 (partial sums added by the wrapper), groups of 64 and 128 rows, fp16 scales."""
    k = _vllm_kernels("model_executor/layers/quantization/awq_triton.py")
    import triton
    for K, N, group in ((256, 512, 128), (128, 256, 64)):
        qweight = torch.randint(-2**31, 2**31 - 1, (K, N // 8), dtype=torch.int32)
        qzeros = torch.randint(-2**31, 2**31 - 1, (K // group, N // 8), dtype=torch.int32)
        scales = torch.rand(K // group, N, dtype=torch.float16) * 0.1
        weight = ((_awq_unpack(qweight) - _awq_unpack(qzeros).repeat_interleave(group, 0)).double()
                  * scales.double().repeat_interleave(group, 0))
        out = torch.empty(K, N, dtype=torch.float16)
        k["awq_dequantize_kernel"][(triton.cdiv(N // 8, 32), triton.cdiv(K, 32))](
            qweight, scales, qzeros, group, out, N // 8, K, BLOCK_SIZE_X=32, BLOCK_SIZE_Y=32)
        chk.close_to_scale(f"dequantize K={K} N={N} group={group}", out.double(), weight, 1e-3)
        M = 33
        x = randn(M, K, dtype=torch.float16)
        for split in (1, 4):
            partial = torch.zeros(split, M, N, dtype=torch.float16)
            k["awq_gemm_kernel"][(triton.cdiv(M, 32) * triton.cdiv(N, 32), split)](
                x, qweight, partial, qzeros, scales, M, N, K, group, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32,
                BLOCK_SIZE_K=32, SPLIT_K=split)
            chk.close_to_scale(f"gemm K={K} N={N} group={group} split_k={split}", partial.sum(0).double(),
                               x.double() @ weight, 1e-2)


@case("vllm.fp8_quant")
def _(V, chk):
    """fp8 e4m3 activations: per-token-group quantization (groups of 128, scales rounded up to
    a power of two or not; quantized values must match torch's conversion bit for bit), the
    GEMM of fp8 activations and weights with 128x128 block scales into fp16 and bf16, and
    compressed-tensors' scaled GEMM over int8 and fp8 with per-tensor or per-row/column scales,
    a bias, and its weight as a transposed view (B_T)."""
    import triton
    import triton.language as tl
    e4m3 = torch.float8_e4m3fn
    quant = _vllm_kernels("model_executor/layers/quantization/utils/fp8_utils.py")
    rows, cols, group = 37, 512, 128
    x = randn(rows, cols, dtype=torch.bfloat16) * 3
    for ue8m0 in (False, True):
        q, scales = torch.empty(rows, cols, dtype=e4m3), torch.empty(rows, cols // group)
        quant["_per_token_group_quant_fp8"][(rows * cols // group, )](
            x, q, scales, group, cols, x.stride(0), 1e-10, fp8_min=-448.0, fp8_max=448.0, use_ue8m0=ue8m0, BLOCK=group)
        g = x.float().reshape(rows, -1, group)
        ref_scales = g.abs().amax(-1).clamp_min(1e-10) * torch.tensor(1 / 448.0)   # the kernel's fp32 product
        if ue8m0:
            ref_scales = torch.exp2(torch.ceil(torch.log2(ref_scales)))
        chk.equal(f"group scales (ue8m0={ue8m0})", scales, ref_scales)
        ref_q = (g / ref_scales[..., None]).clamp(-448, 448).to(e4m3).reshape(rows, cols)
        chk.equal(f"quantized values (ue8m0={ue8m0})", q.view(torch.uint8), ref_q.view(torch.uint8))
    M, N, K = 45, 384, 512
    a, b = randn(M, K).to(e4m3), randn(N, K).to(e4m3)
    a_scales, b_scales = torch.rand(M, K // 128) + 0.5, torch.rand(N // 128, K // 128) + 0.5
    ref = ((a.double() * a_scales.double().repeat_interleave(128, 1))
           @ (b.double() * b_scales.double().repeat_interleave(128, 0).repeat_interleave(128, 1)).T)
    for out_dtype in (torch.float16, torch.bfloat16):
        c = torch.empty(M, N, dtype=out_dtype)
        quant["_w8a8_triton_block_scaled_mm"][(triton.cdiv(M, 64) * triton.cdiv(N, 128), )](
            a, b, c, a_scales, b_scales, M, N, K, 128, 128, a.stride(-2), a.stride(-1), b.stride(1), b.stride(0),
            c.stride(-2), c.stride(-1), a_scales.stride(-2), a_scales.stride(-1), b_scales.stride(1), b_scales.stride(0),
            BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=32)
        chk.close_to_scale(f"block-scaled GEMM into {out_dtype}", c.double(), ref, 1e-2)
    scaled_mm = _vllm_kernels("model_executor/layers/quantization/compressed_tensors/triton_scaled_mm.py")["scaled_mm_kernel"]
    M, K, N = 40, 256, 192
    for dtype, per_row, transposed in ((torch.int8, False, False), (torch.int8, True, True), (e4m3, False, True),
                                       (e4m3, True, False)):
        if dtype == torch.int8:
            a, b = torch.randint(-128, 128, (M, K), dtype=dtype), torch.randint(-128, 128, (K, N), dtype=dtype)
        else:
            a, b = randn(M, K).to(dtype), randn(K, N).to(dtype)
        if transposed:                                  # a checkpoint's [N, K] weight seen as [K, N]
            b = b.T.contiguous().T
        scale_a = torch.rand(M if per_row else 1, 1) * 1e-3
        scale_b = torch.rand(N if per_row else 1, 1) * 1e-2
        bias = randn(N) if per_row else None
        c = torch.empty(M, N)
        scaled_mm[(triton.cdiv(M, 32) * triton.cdiv(N, 64), )](
            a, b, scale_a, scale_b, c, bias, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1), tl.int32 if dtype == torch.int8 else tl.float32, BLOCK_SIZE_M=32,
            BLOCK_SIZE_N=64, BLOCK_SIZE_K=64, BLOCK_SIZE_SCALE_A=32 if per_row else 1,
            BLOCK_SIZE_SCALE_B=64 if per_row else 1, USE_TD=False, B_T=transposed)
        ref = (a.double() @ b.double()) * scale_a.double() * scale_b.double().T + (bias.double() if per_row else 0)
        chk.close_to_scale(f"scaled GEMM {dtype}, per-row scales {per_row}, transposed weight {transposed}",
                           c.double(), ref, 1e-5)


@case("vllm.reshape_and_cache")
def _(V, chk):
    """The KV-cache write of each step: every token's K and V rows stored at its slot of a
    paged cache (a slot of -1, a padding token, writes nothing), in the flash layout
    [pages, page size, heads, dim] and the head-major one (K [pages, heads, dim / 8, page
    size, 8], V [pages, heads, dim, page size]); fp32 and bf16 inputs into a cache of the
    same type, or divided by a scale and stored into an fp8 e4m3 cache (the store converts)."""
    import triton
    kernel = _vllm_kernels("v1/attention/ops/triton_reshape_and_cache_flash.py")["reshape_and_cache_kernel_flash"]
    tokens, heads, dim, pages, page = 13, 4, 64, 6, 16
    for dtype in (torch.float32, torch.bfloat16):
        for fp8 in (False, True):
            for head_major in (False, True):
                k, v = randn(tokens, heads, dim, dtype=dtype), randn(tokens, heads, dim, dtype=dtype)
                slots = torch.randperm(pages * page)[:tokens]
                slots[3] = -1
                cache_dtype = torch.float8_e4m3fn if fp8 else dtype
                if head_major:
                    k_cache = torch.zeros(pages, heads, dim // 8, page, 8, dtype=cache_dtype)
                    v_cache = torch.zeros(pages, heads, dim, page, dtype=cache_dtype)
                    strides = dict(head_stride=k_cache.stride(1), dim_stride_k=k_cache.stride(2),
                                   dim_stride_v=v_cache.stride(2), x=8)
                else:
                    k_cache = torch.zeros(pages, page, heads, dim, dtype=cache_dtype)
                    v_cache = torch.zeros_like(k_cache)
                    strides = dict(head_stride=k_cache.stride(2), dim_stride_k=0, dim_stride_v=0, x=1)
                k_scale, v_scale = torch.tensor([0.5]), torch.tensor([2.0])
                n = heads * dim
                kernel[(tokens, triton.cdiv(n, 128))](
                    key_ptr=k, value_ptr=v, key_cache_ptr=k_cache, value_cache_ptr=v_cache, slot_mapping_ptr=slots,
                    k_scale=k_scale, v_scale=v_scale, key_stride=k.stride(0), value_stride=v.stride(0),
                    block_stride=k_cache.stride(0), page_stride=k_cache.stride(1), num_heads=heads, head_size=dim,
                    block_size=page, USE_HEAD_MAJOR_LAYOUT=head_major, INTERLEAVED_V_PACK_FACTOR=0, FP8_KV_CACHE=fp8,
                    TILE_SIZE=128, **strides)
                want_k = torch.zeros(pages, page, heads, dim, dtype=cache_dtype)
                want_v = torch.zeros_like(want_k)
                for t, slot in enumerate(slots.tolist()):
                    if slot >= 0:
                        kk, vv = (k[t].float() / 0.5, v[t].float() / 2.0) if fp8 else (k[t], v[t])
                        want_k[slot // page, slot % page] = kk.to(cache_dtype)
                        want_v[slot // page, slot % page] = vv.to(cache_dtype)
                if head_major:
                    got_k = k_cache.permute(0, 3, 1, 2, 4).reshape(pages, page, heads, dim)
                    got_v = v_cache.permute(0, 3, 1, 2)
                else:
                    got_k, got_v = k_cache, v_cache
                tag = f"{dtype}, fp8 cache {fp8}, head-major {head_major}"
                chk.equal(f"K cache, {tag}", got_k.float(), want_k.float())
                chk.equal(f"V cache, {tag}", got_v.float(), want_v.float())


@case("vllm.triton_kernels")
def _(V, chk):
    """triton_kernels, Triton's own kernel library for MoE (vendored by vLLM for gpt-oss):
    the routing (top-k over 8 to 128 experts with the softmax after or before it, a bitmatrix
    of the choices, histograms, the gather/scatter permutations) and matmul_ogs, its grouped
    GEMM: dense, batched, and per expert with the token rows gathered and the outputs
    scattered back and summed over each token's experts. Its launch heuristics know only
    CUDA and HIP, so `_triton_kernels` fixes its block sizes (its own override, `set_opt_flags`)."""
    with _triton_kernels() as (routing, matmul_ogs):
        for tokens, experts, top_k, softmax_first in ((300, 128, 4, False), (1000, 32, 2, True), (64, 8, 1, False)):
            logits = randn(tokens, experts)
            rd, gather, scatter = routing(logits, top_k, sm_first=softmax_first)
            values, chosen = logits.topk(top_k, -1)
            probs = (logits.softmax(-1).gather(1, chosen) if softmax_first else values.softmax(-1))
            chosen, order = chosen.sort(-1)             # each token's experts in expert order
            probs = probs.gather(1, order)
            slots = gather.src_indx.long()              # slot = token * top_k + its j-th expert
            tag = f"{tokens} tokens, {experts} experts, top {top_k}, softmax first {softmax_first}"
            chk.equal(f"histogram, {tag}", rd.expt_hist.long(), torch.bincount(chosen.reshape(-1), minlength=experts))
            chk.true(f"slots by expert, {tag}", bool((chosen.reshape(-1)[slots].diff() >= 0).all()),
                     "the gathered slots are not grouped by expert")
            chk.equal(f"inverse permutation, {tag}", gather.dst_indx.long()[slots], torch.arange(tokens * top_k))
            chk.equal(f"scatter indices, {tag}", scatter.src_indx, gather.dst_indx)
            chk.close(f"gate weights, {tag}", rd.gate_scal.double(), probs.reshape(-1)[slots].double())
        for dtype in (torch.float32, torch.bfloat16):
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            x, w, b = randn(100, 256, dtype=dtype), randn(256, 192, dtype=dtype), randn(192)
            chk.close_to_scale(f"dense {dtype}", matmul_ogs(x, w, b).double(), x.double() @ w.double() + b.double(), tol)
            xb, wb = randn(3, 40, 128, dtype=dtype), randn(3, 128, 64, dtype=dtype)
            chk.close_to_scale(f"batched {dtype}", matmul_ogs(xb, wb, None).double(), xb.double() @ wb.double(), tol)
            tokens, experts, top_k = 64, 8, 2
            logits = randn(tokens, experts)
            rd, gather, scatter = routing(logits, top_k)
            x, w, b = randn(tokens, 128, dtype=dtype), randn(experts, 128, 96, dtype=dtype), randn(experts, 96)
            y = matmul_ogs(x, w, b, rd, gather_indx=gather, scatter_indx=scatter)
            chosen = logits.topk(top_k, -1).indices
            ref = sum(torch.einsum("td,tdn->tn", x.double(), w.double()[chosen[:, j]]) + b.double()[chosen[:, j]]
                      for j in range(top_k))
            chk.close_to_scale(f"experts gathered and scattered {dtype}", y.double(), ref, tol)


@contextlib.contextmanager
def _triton_kernels():
    """triton_kernels from vLLM's third_party folder, ready for CPU tensors: its SM count (a
    torch.cuda query) set to the core count, and its launch heuristics (CUDA and HIP only)
    replaced by fixed block sizes through its own `set_opt_flags`; yields (routing, matmul_ogs)."""
    folder = str(Path(importlib.util.find_spec("vllm").origin).parent / "third_party")
    sys.path.insert(0, folder)
    try:
        import triton_kernels.target_info as target_info
        from triton_kernels.matmul_ogs import matmul_ogs
        from triton_kernels.matmul_ogs_details import opt_flags
        from triton_kernels.routing import routing
        target_info.num_sms = lambda: os.cpu_count() or 1
        opt_flags.set_opt_flags(opt_flags.OptFlags(
            block_m=32, block_n=64, block_k=32, num_warps=4, num_stages=1, group_m=8, xcd_swizzle=1,
            w_cache_modifier=None, split_k=1, is_persistent=False, fused_scatter=False, idle_sms=0,
            epilogue_subtile=1, arch=None, target_kernel_kwargs={}))
        try:
            yield routing, matmul_ogs
        finally:
            opt_flags._opt_flags = None
    finally:
        sys.path.remove(folder)


# ------------------------------------------------------------------------------ SGLang
# SGLang's Triton kernels (sglang.kernels.ops and a few in sglang.srt.layers), through their own
# Python functions where those launch Triton on any device, else launched as the wrapper does.

@case("sglang.decode_attention")
def _(S, chk):
    """The split-KV decode attention over a KV pool addressed by token slots (a random
    permutation, so every row is a gather): multi-head, grouped-query and one KV head;
    page size 16's strides, soft-capping, attention sinks; a different split count per
    sequence, one sequence of length 1; fp32, bf16, fp16 with head size 80 (padded)."""
    from sglang.kernels.ops.attention.decode_attention import decode_attention_fwd
    lens, splits = (37, 1, 130), (4, 1, 3)
    variants = [dict(), dict(page=16), dict(softcap=30.0), dict(sinks=True), dict(heads=8, kv_heads=2),
                dict(heads=16, kv_heads=1, dim=128), dict(dtype=torch.bfloat16),
                dict(heads=8, kv_heads=2, dim=80, dtype=torch.float16)]
    for variant in variants:
        o = dict(heads=8, kv_heads=8, dim=64, page=1, softcap=0.0, sinks=False, dtype=torch.float32)
        o.update(variant)
        k, v = (randn(512, o["kv_heads"], o["dim"], dtype=o["dtype"]) for _ in range(2))
        slots = torch.randperm(512)[:sum(lens)].to(torch.int32)
        starts = torch.tensor((0,) + lens).cumsum(0).to(torch.int32)
        q = randn(len(lens), o["heads"], o["dim"], dtype=o["dtype"])
        out, scale = torch.empty_like(q), o["dim"] ** -0.5
        most = max(splits)
        logits, lse = torch.empty(len(lens), o["heads"], most, o["dim"]), torch.empty(len(lens), o["heads"], most)
        sink = randn(o["heads"]) if o["sinks"] else None
        decode_attention_fwd(q, k, v, out, starts, slots, logits, lse, torch.tensor(splits, dtype=torch.int32), most,
                             scale, 1.0, 1.0, logit_cap=o["softcap"], sinks=sink, page_size=o["page"])
        seq_slots = [slots[starts[i]:starts[i + 1]].long() for i in range(len(lens))]
        ref = torch.cat([_attention_ref(q[i:i + 1], k[rows], v[rows], scale, softcap=o["softcap"], sink=sink)
                         for i, rows in enumerate(seq_slots)])
        chk.close_to_scale(str(variant), out.double(), ref, 1e-5 if o["dtype"] == torch.float32 else 1e-2)


@case("sglang.extend_attention")
def _(S, chk):
    """Prefill: new tokens attending to a cached prefix (read through a slot table) and
    causally to themselves (extend_attention_fwd), grouped-query, soft-capping, a sliding
    window, non-causal, bf16; and prefill without a prefix (context_attention_fwd) over
    sequences of 33, 100 and 1 tokens, fp32 and grouped-query fp16."""
    from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd
    from sglang.kernels.ops.attention.prefill_attention import context_attention_fwd
    prefix, new = (5, 40), (17, 70)
    for variant in (dict(), dict(softcap=20.0), dict(window=8), dict(dtype=torch.bfloat16),
                    dict(kv_heads=4, causal=False)):
        o = dict(heads=4, kv_heads=2, dim=64, softcap=0.0, window=-1, causal=True, dtype=torch.float32)
        o.update(variant)
        kv = tuple(randn(256, o["kv_heads"], o["dim"], dtype=o["dtype"]) for _ in range(2))
        slots = torch.randperm(256)[:sum(prefix)].to(torch.int32)
        kv_starts = torch.tensor((0,) + prefix).cumsum(0).to(torch.int32)
        q_starts = torch.tensor((0,) + new).cumsum(0).to(torch.int32)
        q = randn(sum(new), o["heads"], o["dim"], dtype=o["dtype"])
        k, v = (randn(sum(new), o["kv_heads"], o["dim"], dtype=o["dtype"]) for _ in range(2))
        out, scale = torch.empty_like(q), o["dim"] ** -0.5
        extend_attention_fwd(q, k, v, out, *kv, q_starts, kv_starts, slots, None, o["causal"], None, max(new),
                             1.0, 1.0, sm_scale=scale, logit_cap=o["softcap"], sliding_window_size=o["window"])
        refs = []
        for i in range(len(new)):
            rows, cached = slice(q_starts[i], q_starts[i + 1]), slots[kv_starts[i]:kv_starts[i + 1]].long()
            keys, values = torch.cat([kv[0][cached], k[rows]]), torch.cat([kv[1][cached], v[rows]])
            refs.append(_attention_ref(q[rows], keys, values, scale, prefix[i] if o["causal"] else None,
                                            o["window"], o["softcap"]))
        tol = 1e-5 if o["dtype"] == torch.float32 else 1e-2
        chk.close_to_scale(f"extend {variant}", out.double(), torch.cat(refs), tol)
    lens = torch.tensor([33, 100, 1], dtype=torch.int32)
    starts = (lens.cumsum(0) - lens).to(torch.int32)
    for causal, heads, kv_heads, dtype in ((True, 4, 4, torch.float32), (False, 4, 4, torch.float32),
                                           (True, 8, 2, torch.float16)):
        q = randn(int(lens.sum()), heads, 64, dtype=dtype)
        k, v = randn(int(lens.sum()), kv_heads, 64, dtype=dtype), randn(int(lens.sum()), kv_heads, 64, dtype=dtype)
        out = torch.empty_like(q)
        context_attention_fwd(q, k, v, out, starts, lens, int(lens.max()), is_causal=causal)
        ref = torch.cat([_attention_ref(q[a:a + n], k[a:a + n], v[a:a + n], 64 ** -0.5, 0 if causal else None)
                         for a, n in zip(starts.tolist(), lens.tolist())])
        chk.close_to_scale(f"context causal={causal} {heads}/{kv_heads} heads {dtype}", out.double(), ref,
                           1e-5 if dtype == torch.float32 else 1e-2)


@case("sglang.merge_state")
def _(S, chk):
    """Two partial attention results merged by their log-sum-exps; +inf and -inf LSEs count
    as empty parts; head size 80 (padded) in fp32 and 64 in bf16."""
    from sglang.kernels.ops.attention.merge_state import merge_state_triton
    for dim, dtype in ((80, torch.float32), (64, torch.bfloat16)):
        prefix, suffix = randn(9, 5, dim, dtype=dtype), randn(9, 5, dim, dtype=dtype)
        prefix_lse, suffix_lse = randn(9, 5) * 3, randn(9, 5) * 3
        prefix_lse[0, 0], suffix_lse[1, 1] = float("inf"), float("-inf")
        out, out_lse = merge_state_triton(prefix, prefix_lse, suffix, suffix_lse)
        ref, ref_lse = _merged_states_ref(prefix, prefix_lse, suffix, suffix_lse)
        chk.close_to_scale(f"out {dtype}", out.double(), ref, 1e-5 if dtype == torch.float32 else 1e-2)
        chk.close(f"lse {dtype}", out_lse.double(), ref_lse)


@case("sglang.lora_routing")
def _(S, chk):
    """LoRA's route builders: (token, group) pairs sorted into buckets (adapter slot times
    groups per slot, plus one for invalid ids), each bucket padded to whole blocks. The
    one-program builder, and the large one (a histogram with atomics or tl.histogram, a scan,
    a binary search per block, slots claimed with atomic adds); checked against the buckets
    computed in torch: every pair once, each block holding pairs of its bucket only."""
    from sglang.kernels.ops.lora.common import routing
    for tokens, width, per_slot, loras, block, large in ((300, 1, 1, 4, 16, False), (40, 3, 2, 5, 8, False),
                                                         (5, 1, 1, 3, 16, False), (20000, 1, 1, 6, 64, True),
                                                         (9000, 2, 3, 4, 32, True)):
        slots = torch.randint(-1, loras + 1, (tokens,), dtype=torch.int32)
        groups = None
        if width > 1 or per_slot > 1:
            groups = torch.randint(-1, per_slot + 1, (tokens, width), dtype=torch.int32)
        slot = slots.repeat_interleave(width).long()
        live, bucket = (slot >= 0) & (slot < loras), slot
        if groups is not None:
            g = groups.reshape(-1).long()
            live &= (g >= 0) & ((g < per_slot) if per_slot > 1 else True)
            bucket = slot * per_slot + g if per_slot > 1 else slot
        bucket = torch.where(live, bucket, -1)
        if large:
            view = routing._build_large_route(slots, groups, groups_per_slot=per_slot, max_loras=loras,
                                              block_size=block, workspace=None, tensor_prefix="case")
        else:
            view = routing.build_route(slots, group_ids=groups, groups_per_slot=per_slot, max_loras=loras,
                                       block_size=block)
        tag = f"{tokens} tokens x {width}, {per_slot} groups per slot, {loras} adapters, blocks of {block}"
        padded = int(view.maybe_num_pairs_post_padded[0])
        want = sum(-(-int(n) // block) * block for n in torch.unique(bucket, return_counts=True)[1])
        chk.true(f"padded pairs, {tag}", padded == want, f"{padded}, expected {want}")
        if padded != want:
            continue
        placed = view.maybe_sorted_pair_ids[:padded].long().view(-1, block)
        labels = view.maybe_block_bucket_ids[:padded // block].long()
        real = placed < bucket.numel()
        chk.equal(f"every pair once, {tag}", placed[real].sort().values, torch.arange(bucket.numel()))
        chk.true(f"blocks hold their bucket's pairs, {tag}",
                 bool((bucket[placed.clamp(max=bucket.numel() - 1)] == labels[:, None])[real].all()))


@case("sglang.topk")
def _(S, chk):
    """Top-k selections: gate_topk (value and index packed in one integer key, tl.topk and
    tl.bitonic_merge over column blocks, tl.sort), row_logsumexp and row_logsumexp_topk
    (its tie order: the lowest index first), row_argmax and div_argmax (a tl.reduce over
    (value, index) pairs), and lilicorr's tiled top-k with log-sum-exp, whose wrapper runs
    Triton only for CUDA tensors (`is_cuda` answers True around that call)."""
    from sglang.kernels.ops.moe.gate_topk import gate_topk
    from sglang.kernels.ops.speculative import lilicorr, row_argmax
    from sglang.srt.layers import logsumexp
    for rows, cols, k, dtype in ((37, 64, 6, torch.float32), (70, 200, 8, torch.bfloat16), (5, 33, 1, torch.float16),
                                 (64, 256, 32, torch.float32)):
        x = randn(rows, cols).to(dtype)
        values, index = gate_topk(x, k)
        ref = torch.topk(x.float(), k, dim=-1).values
        chk.equal(f"gate_topk values {rows}x{cols} k={k} {dtype}", values.float(), ref)
        chk.equal(f"gate_topk index {rows}x{cols} k={k} {dtype}", x.float().gather(1, index.long()), ref)
    ties = torch.randint(0, 4, (6, 300)).float()
    for name, x in (("7x1000 fp32", randn(7, 1000) * 3), ("3x40000 bf16", (randn(3, 40000) * 3).bfloat16()),
                    ("4x5 fp16", (randn(4, 5) * 3).half()), ("ties", ties)):
        top, lse = logsumexp.row_logsumexp(x)
        xd = x.double()
        chk.equal(f"row max {name}", top.double(), xd.max(1).values)
        chk.close(f"row logsumexp {name}", lse.double(), torch.logsumexp(xd, 1) - xd.max(1).values)
        order = torch.sort(x.float(), dim=1, descending=True, stable=True)
        for k in sorted({1, 3, min(logsumexp.FUSED_TOPK_MAX_K, x.shape[1])}):
            top2, lse2, values, index = logsumexp.row_logsumexp_topk(x, k)
            chk.equal(f"topk values {name} k={k}", values, order.values[:, :k])
            chk.equal(f"topk index {name} k={k}", index, order.indices[:, :k])
            chk.equal(f"fused max and lse {name} k={k}", torch.stack([top2, lse2]), torch.stack([top, lse]))
    for rows, cols in ((3, 50000), (100, 9000), (2, 17)):
        x = randn(rows, cols)
        x[0, cols - 1] = x[0, 5] = x[0].max() + 1                # a tie: the first index wins
        d = torch.rand(rows, cols) + 0.5
        chk.equal(f"row_argmax {rows}x{cols}", row_argmax.row_argmax(x), x.argmax(-1))
        chk.equal(f"div_argmax {rows}x{cols}", row_argmax.div_argmax(x, d), (x / d).argmax(-1))
    is_cuda = torch.Tensor.is_cuda
    for rows, vocab, k in ((3, 32000, 8), (2, 151936, 16)):
        x = randn(rows, vocab) * 4
        torch.Tensor.is_cuda = property(lambda self: True)
        try:
            values, index, lse = lilicorr.lilicorr_topk_lse(x, k)
        finally:
            torch.Tensor.is_cuda = is_cuda
        ref = torch.topk(x, k, dim=-1)
        chk.equal(f"lilicorr values {rows}x{vocab} k={k}", values, ref.values)
        chk.equal(f"lilicorr index {rows}x{vocab} k={k}", index, ref.indices)
        chk.close(f"lilicorr lse {rows}x{vocab} k={k}", lse.double(), torch.logsumexp(x.double(), -1))


@case("sglang.moe_fused_gate")
def _(S, chk):
    """The MoE router: scoring (sigmoid, sqrt-softplus, softmax with tanh soft-capping), the
    per-expert bias for ranking only, DeepSeek-V3's grouped selection (the top-2 sum per
    group, the best groups kept), top-k by repeated argmax, renormalization, the routed
    scaling factor, a fused shared expert, padding rows, and the packed (id << 16 | bf16
    weight) output. Its CUDA radix-select path is switched off (`covered` answers False)."""
    from sglang.kernels.ops.moe import moe_fused_gate as gate
    covered = gate.moe_route_radix.covered
    gate.moe_route_radix.covered = lambda *args, **kwargs: False
    try:
        for o in (dict(M=33, N=256, k=8, func="sigmoid", groups=8, keep=4, scale=2.5, on_output=True),
                  dict(M=5, N=64, k=6, func="softmax", cap=30.0, bias=False),
                  dict(M=17, N=384, k=6, func="sqrtsoftplus", shared=1, scale=1.5),
                  dict(M=9, N=896, k=16, func="sigmoid", dtype=torch.bfloat16),
                  dict(M=64, N=160, k=6, func="softmax", renorm=False, bias=False, dtype=torch.float16),
                  dict(M=10, N=64, k=4, func="sigmoid", padded=6)):
            M, N, k, shared, scale = o["M"], o["N"], o["k"], o.get("shared", 0), o.get("scale", 1.0)
            groups, keep, cap = o.get("groups", 1), o.get("keep", 1), o.get("cap", 0.0)
            renorm, on_output = o.get("renorm", True), o.get("on_output", False)
            scores = randn(M, N).to(o.get("dtype", torch.float32))
            bias = randn(N) * 0.1 if o.get("bias", True) else None
            packed = torch.empty(M, k, dtype=torch.int32)
            live = o.get("padded", M)
            weights, ids = gate.moe_fused_gate(
                scores, bias, k, scoring_func=o["func"], num_fused_shared_experts=shared, renormalize=renorm,
                routed_scaling_factor=scale, apply_routed_scaling_factor_on_output=on_output, moe_softcapping=cap,
                num_expert_group=groups, topk_group=keep, packed_out=packed,
                num_token_non_padded=torch.tensor([live], dtype=torch.int32) if "padded" in o else None)
            s, b = scores[:live].double(), (bias.double() if bias is not None else torch.zeros(N, dtype=torch.float64))
            if o["func"] == "softmax":
                ranked = (cap * torch.tanh(s / cap) if cap else s) + b
                act = ranked.softmax(-1)
            else:
                act = torch.sigmoid(s) if o["func"] == "sigmoid" else F.softplus(s).sqrt()
                ranked = act + b
            if groups > 1:
                best = ranked.view(live, groups, -1).topk(2, -1).values.sum(-1).topk(keep, -1).indices
                kept = torch.zeros(live, groups, dtype=torch.bool).scatter_(1, best, True)
                ranked = ranked.masked_fill(~kept.repeat_interleave(N // groups, 1), float("-inf"))
            chosen = ranked.topk(k - shared, -1).indices
            w = act.gather(1, chosen)
            w = w / w.sum(-1, keepdim=True) if renorm else w
            w = w * scale if on_output else w
            if shared:
                chosen = torch.cat([chosen, (N + torch.arange(shared)).expand(live, -1)], 1)
                shared_w = torch.full((live, shared), 1.0 if on_output else 1.0 / scale, dtype=torch.float64)
                w = torch.cat([w, shared_w], 1)
            tag = ", ".join(f"{key}={val}" for key, val in o.items())
            chk.equal(f"ids {tag}", ids[:live].long(), chosen)
            chk.close(f"weights {tag}", weights[:live].double(), w)
            chk.true(f"padding rows {tag}", bool((ids[live:] == -1).all() and (weights[live:] == 0).all()))
            bits = weights.bfloat16().view(torch.int16).to(torch.int32) & 0xFFFF
            chk.equal(f"packed {tag}", packed, (ids << 16) | bits)
    finally:
        gate.moe_route_radix.covered = covered


@case("sglang.mhc")
def _(S, chk):
    """DeepSeek-V4's manifold-constrained hyper-connections: the split-K mixing projection
    with the RMS statistics (tl.dot with input_precision "tf32x3"), checked in fp64 and for
    batch invariance (a row computed alone is bitwise the row computed in a batch); its
    fusion with the Sinkhorn normalization of the 4x4 mixing matrix, and the Triton port of
    that normalization alone; the weighted combine of the streams, their broadcast and their
    mean. mhc.py imports TileLang, TVM-FFI and the serving stack's data-parallel attention
    for its CUDA paths: stub modules stand in for them while it is imported (nothing of
    theirs runs)."""
    from unittest import mock
    stubbed = ["tvm_ffi", "tilelang", "tilelang.language", "sglang.srt.layers.dp_attention",
               "sglang.srt.layers.attention.dsa.utils", "sglang.kernels.ops.communication.all_reduce"]

    class Stub(types.ModuleType):
        def __getattr__(self, name):
            return mock.MagicMock()
    added = [name for name in stubbed if name not in sys.modules]
    try:
        sys.modules.update({name: Stub(name) for name in added})
        import sglang.kernels.ops.layernorm.mhc as mhc
    finally:  # other cases and libraries must not see the stubs (a library probing for tilelang)
        for name in added:
            del sys.modules[name]
    hc, eps = 4, 1e-6
    for m, k, dtype in ((7, 2048, torch.bfloat16), (130, 4096, torch.float32), (1, 1024, torch.bfloat16)):
        x, fn = randn(m, k).to(dtype), randn(6 * hc, k) * 0.02
        mixes = mhc.hc_mix_stats(x, fn, eps)
        xd = x.double()
        ref = (xd @ fn.double().T) * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps)
        chk.close_to_scale(f"hc_mix_stats {m}x{k} {dtype}", mixes.double(), ref, 1e-5)
        every = max(1, m // 5)
        alone = torch.cat([mhc.hc_mix_stats(x[i:i + 1].contiguous(), fn, eps) for i in range(0, m, every)])
        chk.equal(f"hc_mix_stats batch-invariant {m}x{k}", alone, mixes[::every])
        scale, base = torch.rand(3) + 0.5, randn(6 * hc) * 0.1
        pre = torch.sigmoid(ref[:, :hc] * scale[0] + base[:hc]) + eps
        post = 2.0 * torch.sigmoid(ref[:, hc:2 * hc] * scale[1] + base[hc:2 * hc])
        comb = (ref[:, 2 * hc:].view(m, hc, hc) * scale[2] + base[2 * hc:].view(hc, hc)).softmax(-1) + eps
        comb = comb / (comb.sum(-2, keepdim=True) + eps)
        for _ in range(19):
            comb = comb / (comb.sum(-1, keepdim=True) + eps)
            comb = comb / (comb.sum(-2, keepdim=True) + eps)
        fused = mhc.hc_mix_stats_sinkhorn(x, fn, scale, base, hc, 20, eps, eps)
        split = mhc._hc_split_sinkhorn_triton(ref.float().view(1, m, -1), scale, base, hc, 20, eps)
        for name, got in (("fused", fused), ("split", split)):
            for part, ours, want in zip(("pre", "post", "comb"), got, (pre, post, comb)):
                chk.close(f"sinkhorn {name} {part} {m}x{k}", ours.reshape(want.shape).double(), want)
        weights = torch.rand(m, hc)
        chk.close(f"mhc_combine {m}x{k} {dtype}", mhc.mhc_combine(x, weights, hc, torch.float32).double(),
                  (weights.double()[:, :, None] * xd.view(m, hc, -1)).sum(1))
        h = k // hc
        row, streams = randn(m, h).to(dtype), torch.empty(m, hc, h, dtype=dtype)
        mhc._hc_broadcast_kernel[(m, -(-h // 1024))](row, streams, h, row.stride(0), HC=hc, BLOCK_H=1024)
        chk.equal(f"hc_broadcast {m}x{h}", streams, row[:, None].expand(m, hc, h))
        streams, mean = randn(m, hc, h).to(dtype), torch.empty(m, h, dtype=dtype)
        mhc._mhc_stream_mean_kernel[(m, -(-h // 1024))](streams, mean, h, streams.stride(0), streams.stride(1),
                                                        mean.stride(0), HC=hc, BLOCK_H=1024)
        chk.close_to_scale(f"stream mean {m}x{h} {dtype}", mean.double(), streams.double().mean(1),
                           1e-6 if dtype == torch.float32 else 1e-2)


@case("sglang.sampling")
def _(S, chk):
    """Sampling helpers: MurmurHash3 over (64-bit seed, position, column) in uint32 and
    uint64 arithmetic (against a Python implementation), the speculative decoder's selector
    walk (a softmax and an inverse-CDF draw per step, greedy rows; against the library's own
    torch version), and top-p/top-k renormalization's masking and normalizing kernels."""
    from sglang.kernels.ops.sampling import renorm_triton
    from sglang.kernels.ops.sampling.murmur_hash import murmur_hash32_kernel
    from sglang.kernels.ops.speculative import dflash, lilicorr
    full = 0xFFFFFFFF

    def murmur(words):
        def rotl(x, r):
            return ((x << r) | (x >> (32 - r))) & full
        h = 0
        for k in words:
            k = rotl((k * 0xCC9E2D51) & full, 15) * 0x1B873593 & full
            h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & full
        h ^= 16
        h = ((h ^ (h >> 16)) * 0x85EBCA6B) & full
        h = ((h ^ (h >> 13)) * 0xC2B2AE35) & full
        return h ^ (h >> 16)
    rows, cols = 5, 1500
    seed = torch.randint(0, 2 ** 62, (rows,), dtype=torch.int64)
    pos = torch.randint(0, 2 ** 31 - 1, (rows,), dtype=torch.int32)
    col = torch.randint(0, 2 ** 31 - 1, (cols,), dtype=torch.int32)
    out = torch.empty(rows, cols, dtype=torch.uint32)
    murmur_hash32_kernel[(rows, -(-cols // 1024))](seed, pos, col, out, rows, cols, BLOCK_SIZE=1024)
    ref = torch.tensor([[murmur((int(seed[r]) & full, int(seed[r]) >> 32, int(pos[r]), int(col[c]))) for c in range(cols)]
                        for r in range(rows)], dtype=torch.int64)
    chk.equal("murmur_hash32", out.to(torch.int64) & full, ref)
    batch, steps, top_k = 6, 5, 8
    walk = dict(candidate_ids=torch.randint(0, 1000, (batch, steps, top_k)), scores=randn(batch, steps, top_k, top_k),
                uniforms=torch.rand(batch, steps), temperatures=torch.rand(batch) + 0.5,
                greedy_mask=torch.tensor([True, False, False, True, False, False]))
    tokens, q = dflash.selector_walk_triton(**walk)
    ref_tokens, ref_q = lilicorr._selector_walk_torch(**walk)
    chk.equal("selector walk tokens", tokens, ref_tokens)
    chk.close("selector walk q", q, ref_q)
    probs = torch.rand(4, 3000).softmax(-1)
    pivots = probs.kthvalue(2990, dim=1).values.contiguous()
    kept = torch.where(probs >= pivots[:, None], probs, 0.0)
    chk.close("renorm", renorm_triton._renorm_from_pivots(probs, pivots), kept / kept.sum(1, keepdim=True))


# =============================================================================================
# Running
# =============================================================================================

@dataclasses.dataclass
class Result:
    case: Case
    status: str                     # PASS | FAIL | ERROR | SKIP
    detail: str = ""
    seconds: float = 0.0
    traceback: str = ""             # of an ERROR


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def describe_error(e):
    """One line: the exception's type and first line; for a construct the backend cannot
    compile, the TTIR op and kernel it names; for a Triton front-end error, its message."""
    seen, chain = set(), []
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    for x in chain:
        if getattr(x, "op_name", None) or type(x).__name__ == "UnsupportedError":
            line = f"{type(x).__name__}: {_first_line(x)}"
            if getattr(x, "op_name", None):
                line += f" [op {x.op_name} in kernel {x.kernel}]"
            return line
    top = chain[0]
    msg = getattr(top, "error_message", None)           # triton.compiler.errors.CompilationError
    kernel = _compiling_kernel(top)
    where = f" [compiling {kernel}]" if kernel else ""
    if msg:
        return f"{type(top).__name__}: {_first_line(msg)}{where}"
    return f"{type(top).__name__}: {_first_line(top)}{where}"


def _compiling_kernel(e):
    """The kernel triton.compiler.compile was working on when `e` was raised, if any."""
    tb, name = e.__traceback__, None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "compile" and code.co_filename.endswith(os.path.join("triton", "compiler", "compiler.py")):
            src = tb.tb_frame.f_locals.get("src")
            fn = getattr(src, "fn", None)
            name = getattr(fn, "__name__", None) or getattr(src, "name", None) or name
        tb = tb.tb_next
    return name


def run_case(c: Case) -> Result:
    module, reason = load_library(c.lib)
    if module is None:
        return Result(c, "SKIP", reason)
    torch.manual_seed(0)
    chk = Checker()
    start = time.perf_counter()
    try:
        c.fn(module, chk)
    except Exception as e:  # noqa: BLE001 - every failure is a result
        return Result(c, "ERROR", describe_error(e), time.perf_counter() - start, traceback.format_exc())
    seconds = time.perf_counter() - start
    if chk.failures:
        return Result(c, "FAIL", "; ".join(chk.failures), seconds)
    return Result(c, "PASS", "", seconds)


def select(lib="all", substring=None, ids=None):
    return [c for c in CASES if (lib == "all" or c.lib == lib) and (not substring or substring in c.id)
            and (ids is None or c.id in ids)]


_WORKER_TAG = "@@kernel_libraries@@ "


def _run_isolated(cases):
    """Yields the results of `cases`, run in a worker process (all cases share it) that is
    restarted after a crash; the crashing case becomes an ERROR."""
    import json
    import signal
    import subprocess
    by_id = {c.id: c for c in cases}
    todo = [c.id for c in cases]
    while todo:
        proc = subprocess.Popen([sys.executable, __file__, "--worker", ",".join(todo)],
                                stdout=subprocess.PIPE, text=True)
        current, started = None, 0.0
        for line in proc.stdout:
            if not line.startswith(_WORKER_TAG):
                sys.stdout.write(line)
                continue
            kind, payload = line[len(_WORKER_TAG):].rstrip("\n").split(" ", 1)
            if kind == "start":
                current, started = payload, time.perf_counter()
            else:
                d = json.loads(payload)
                todo.remove(d["id"])
                current = None
                yield Result(by_id[d["id"]], d["status"], d["detail"], d["seconds"], d["traceback"])
        rc = proc.wait()
        if current is None:
            if todo:
                raise RuntimeError(f"worker exited with status {rc} before running {todo[0]}")
            continue
        try:
            why = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
        except ValueError:
            why = f"signal {-rc}"
        todo.remove(current)
        yield Result(by_id[current], "ERROR", f"process crashed ({why})", time.perf_counter() - started)


def _worker(ids):
    import faulthandler
    import json
    faulthandler.enable()
    for c in select(ids=set(ids.split(","))):
        print(f"{_WORKER_TAG}start {c.id}", flush=True)
        r = run_case(c)
        d = {"id": c.id, "status": r.status, "detail": r.detail, "seconds": r.seconds,
             "traceback": r.traceback}
        print(f"{_WORKER_TAG}result {json.dumps(d)}", flush=True)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", choices=(*LIBRARIES, "all"), default="all")
    ap.add_argument("-k", dest="substring", help="only cases whose id contains this substring")
    ap.add_argument("--list", action="store_true", help="list the case ids and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of errors")
    ap.add_argument("--isolate", action="store_true",
                    help="run the cases in a worker process that is restarted when a case crashes "
                         "the interpreter (segfault); the crash is reported as an ERROR")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args.worker)
    cases = select(args.lib, args.substring)
    if args.list:
        print("\n".join(c.id for c in cases))
        return 0
    if not args.isolate:
        import faulthandler
        faulthandler.enable()          # a crash at least shows which case was running
    width = max((len(c.id) for c in cases), default=10)
    counts = {}
    results = _run_isolated(cases) if args.isolate else map(run_case, cases)
    for r in results:
        c = r.case
        counts.setdefault(c.lib, {}).setdefault(r.status, 0)
        counts[c.lib][r.status] += 1
        print(f"{c.id:<{width}}  {r.status:<5} {r.seconds:6.1f}s  {r.detail}".rstrip(), flush=True)
        if args.verbose and r.traceback:
            print(r.traceback, flush=True)
    print()
    bad = False
    for lib, n in counts.items():
        total = sum(n.values())
        rest = ", ".join(f"{n[s]} {s}" for s in ("FAIL", "ERROR", "SKIP") if n.get(s))
        print(f"{lib}: {n.get('PASS', 0)}/{total} passed" + (f" ({rest})" if rest else ""))
        bad |= bool(n.get("FAIL") or n.get("ERROR"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
