#!/usr/bin/env python
"""Run the ops of thirteen real Triton kernel libraries, Liger-Kernel, FlagGems,
flash-linear-attention (fla-core), Mamba's Triton ops (mamba_ssm), Unsloth's kernels, vLLM's
attention, MoE, sampling, quantization and KV-cache kernels (with triton_kernels, the MoE
library it vendors), SGLang's attention, routing, top-k, mHC and sampling kernels,
torchao's quantization, MX, attention-quantization and block-sparse kernels, LMDeploy's
PyTorch-engine kernels (paged attention and its KV cache, MoE, W8A8, AWQ, fp8, LoRA),
bitsandbytes' Triton backend (8-bit, NF4 and FP4 quantization, 32-bit and 8-bit optimizers),
DeepSpeed's Triton ops (training ops, MoE kernels, inference kernels, fp8 GEMM), Apple's Cut
Cross-Entropy and GemLite's low-bit GEMM and GEMV kernels, on CPU tensors through this backend
and compare every result with torch.

    python scripts/kernel_libraries.py [--lib liger|flaggems|fla|mamba|unsloth|vllm|sglang|torchao|lmdeploy|bitsandbytes|deepspeed|cce|gemlite|all]
                                       [-k SUBSTRING] [--list] [-v] [--isolate]

The cases are in scripts/kernel_library_cases/<lib>.py, one module per library; this script
holds the shims, the checker, the case registry, the references several libraries share and
the runner.

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
vLLM), torchao 0.18.0 (`pip install --no-deps --target upstream/libs torchao==0.18.0`), lmdeploy
0.18.0 (`pip install --no-deps --target upstream/libs lmdeploy==0.18.0`: a 107 MB wheel, of
which only `lmdeploy.pytorch.kernels.cuda` is used), bitsandbytes 0.50.2 (`pip install --no-deps
--target upstream/libs bitsandbytes==0.50.2`), deepspeed 0.19.8 with the packages its import
needs (`pip install --no-deps --target upstream/libs deepspeed==0.19.8 hjson==3.1.0 msgpack==1.2.4
ninja==1.13.2 py-cpuinfo==9.0.0 pydantic==2.13.4 pydantic-core==2.46.4 annotated-types==0.7.0
typing-inspection==0.4.2 einops==0.8.2 psutil==7.2.2 tqdm==4.70.1`), cut-cross-entropy 25.1.1
(`pip install --no-deps --target upstream/libs cut-cross-entropy==25.1.1`), gemlite 0.6.0.post2
with tqdm (`pip install --no-deps --target upstream/libs gemlite==0.6.0.post2 tqdm==4.70.1`).

Liger, FlagGems, mamba_ssm, Unsloth, vLLM, LMDeploy, bitsandbytes, DeepSpeed and GemLite assume
a GPU in their Python wrappers. `_shim_flaggems`, `_shim_liger`, `_shim_mamba`, `_shim_unsloth`,
`_shim_vllm`, `_shim_lmdeploy`, `_shim_bitsandbytes`, `_shim_deepspeed` and `_shim_gemlite`
below are the only adaptations; they never touch a kernel (fla and Cut Cross-Entropy need none).
Most vLLM modules import its serving stack, which the `--no-deps` install leaves out:
`_vllm_kernels` compiles only their @triton.jit functions from the installed file, unmodified,
and those cases launch them as the module's wrapper does. `_triton_kernels` sets the block
sizes of vLLM's copy of triton_kernels, whose heuristics know only CUDA and HIP. SGLang's
wrappers mostly launch Triton on any device; the cases that need more say so (a CUDA-only fast
path switched off, `is_cuda` answering True around one call, stub modules for mHC's TileLang
imports).
python/test/test_kernel_libraries.py runs the same cases under pytest.
"""

import argparse
import atexit
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
import unittest.mock
import warnings
from pathlib import Path
from typing import Callable

import torch

REPO = Path(__file__).resolve().parents[1]
LIBS_ENV = "TRITON_CPU_KERNEL_LIBS"
LIBRARIES = ("liger", "flaggems", "fla", "mamba", "unsloth", "vllm", "sglang", "torchao", "lmdeploy",
             "bitsandbytes", "deepspeed", "cce", "gemlite")


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
    # What every kernel module imports (unsloth_zoo's patches import transformers): missing
    # dependencies make the library "not importable" (its tests skip), not its cases fail.
    importlib.import_module("unsloth.kernels.utils")
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


def _shim_torchao():
    # Nothing for the whole library: torchao imports on a CPU-only torch (its CUDA extensions
    # fail to load, each with a line on stderr), and its Triton wrappers launch on the
    # tensors' device. The MXFP8 case answers the import-time Blackwell test of the one
    # module that has it.
    import torchao
    return torchao


class _ModulesUnder(dict):
    """The `patches` of a _PatchAfterImport that apply `patch` to every module under `prefix`."""

    def __init__(self, prefix, patch):
        super().__init__()
        self.prefix, self.patch = prefix, patch

    def get(self, name, default=None):
        return self.patch if name.startswith(self.prefix) else default


def _shim_lmdeploy():
    # lmdeploy/__init__.py imports its serving stack (mmengine, the TurboMind engine); its
    # Triton kernels (lmdeploy.pytorch.kernels.cuda.*) need none of it: the packages on the
    # way are registered without running their __init__.py.
    # The wrappers size grids and pick block sizes from the device: `get_device_props` reads
    # `torch.cuda.get_device_properties`, MoE's autotuner prunes its configs by
    # `torch.cuda.get_device_capability()`, which a CPU-only torch refuses. Each kernel
    # module's `torch` is a stand-in whose `cuda` is the one FlagGems' shim uses, answering
    # for the CPU (capability (0, 0): the branches for GPUs older than sm_80; one SM per
    # core). The global torch is not changed.
    package = _package_without_init("lmdeploy")
    for name in ("lmdeploy.pytorch", "lmdeploy.pytorch.kernels", "lmdeploy.pytorch.kernels.cuda",
                 "lmdeploy.pytorch.kernels.cuda.moe"):
        _package_without_init(name)

    # A module object (a kernel may read `torch` too: LoRA's compares dtypes with
    # torch.float16, and Triton lets kernels read only modules, constexprs and functions
    # among globals), forwarding what it lacks to torch (PEP 562), its own deep copy (Triton
    # keeps a deep copy of each global a kernel read and checks it is unchanged at launch).
    proxy = types.ModuleType("torch")
    proxy.__getattr__ = lambda name: getattr(torch, name)
    proxy.cuda = _CpuDeviceModule()
    proxy.__deepcopy__ = lambda memo: proxy

    def patch(module):
        if getattr(module, "torch", None) is torch:
            module.torch = proxy
    sys.meta_path.insert(0, _PatchAfterImport(_ModulesUnder("lmdeploy.pytorch.kernels.", patch)))
    # What the kernel modules import from the rest of the package (transformers, pydantic):
    # missing, the library is "not importable" and its tests skip.
    importlib.import_module("lmdeploy.utils")
    importlib.import_module("lmdeploy.messages")
    return package


def _shim_bitsandbytes():
    # bitsandbytes imports on a CPU-only torch. Its Triton backend (written for Intel GPUs,
    # bitsandbytes/backends/triton/ops.py) reads the device once at import,
    # `torch.accelerator.current_accelerator().type`, None here, and enters
    # `torch.<device>.device(...)` around each launch, which torch.cpu lacks: the import
    # sees the CPU as the accelerator, and the module's device module is FlagGems' stand-in,
    # whose `device` context does nothing. Its kernels launch on the tensors' device.
    importlib.import_module("bitsandbytes")
    with unittest.mock.patch.object(torch.accelerator, "current_accelerator",
                                    lambda *args, **kwargs: torch.device("cpu")):
        ops = importlib.import_module("bitsandbytes.backends.triton.ops")
    ops.torch_accelerator_module = _CpuDeviceModule()
    return ops


def _shim_deepspeed():
    # DeepSpeed selects its CPU accelerator by itself on a CPU-only torch (it warns at import).
    # Two of its Triton ops enter `torch.cuda.device(x.device)` around each launch (SwiGLU
    # packed, RoPE), which raises for a CPU tensor: those modules see a torch whose `cuda` is
    # FlagGems' stand-in, whose `device` context does nothing.
    package = importlib.import_module("deepspeed")
    for name in ("swiglu_triton", "fused_rotary_pos_emb"):
        importlib.import_module(f"deepspeed.ops.triton_ops.{name}").torch = _TorchWithCpuAsCuda()
    # Importing the inference Triton package registers an atexit hook that pickles the fp16
    # matmul's autotune table into TRITON_CACHE_DIR (or ~/.triton/autotune): not from a test run.
    matmul_ext = importlib.import_module("deepspeed.ops.transformer.inference.triton.matmul_ext")
    atexit.unregister(matmul_ext.matmul_ext_update_autotune_table)
    return package


def _shim_cce():
    # Cut Cross-Entropy launches on any device and needs nothing.
    return importlib.import_module("cut_cross_entropy")


def _shim_gemlite():
    # GemLite reads the GPU while its modules import (the SM count, the compute capability,
    # the device name for its tuned-config file): torch.cuda answers for the CPU during the
    # import only (capability (8, 0), the cores as SMs), the global torch untouched after.
    # Its GEMV passes `fp4_mapping[device_index]`, a list of FP4 lookup tables built at import,
    # one per CUDA device (empty here): replaced by a mapping that holds the same table under
    # the CPU tensor's device index, None.
    props = types.SimpleNamespace(name="cpu", major=8, minor=0, multi_processor_count=os.cpu_count() or 1,
                                  total_memory=1 << 34)
    with unittest.mock.patch.object(torch.cuda, "get_device_properties", lambda *args, **kwargs: props), \
            unittest.mock.patch.object(torch.cuda, "get_device_capability", lambda *args, **kwargs: (8, 0)), \
            unittest.mock.patch.object(torch.cuda, "current_device", lambda: 0):
        package = importlib.import_module("gemlite")
    gemv = importlib.import_module("gemlite.triton_kernels.gemv_kernels")
    gemv.fp4_mapping = {None: torch.tensor([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=torch.int8)}
    return package


_LOADED = {}
_PACKAGES = {"liger": "liger_kernel", "flaggems": "flag_gems", "fla": "fla", "mamba": "mamba_ssm",
             "unsloth": "unsloth", "vllm": "vllm", "sglang": "sglang", "torchao": "torchao",
             "lmdeploy": "lmdeploy", "bitsandbytes": "bitsandbytes", "deepspeed": "deepspeed",
             "cce": "cut_cross_entropy", "gemlite": "gemlite"}


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
                             "sglang": _shim_sglang, "torchao": _shim_torchao,
                             "lmdeploy": _shim_lmdeploy, "bitsandbytes": _shim_bitsandbytes,
                             "deepspeed": _shim_deepspeed, "cce": _shim_cce, "gemlite": _shim_gemlite}[lib](), None)
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


def tile_probe(fn, x, out_dtype, y=None):
    """fn (a library's @triton.jit function of one tensor) applied to the 2-D tile x, or with
    y, to the pair (x, y), by one program of kernel_library_cases/tile_probe.py."""
    spec = importlib.util.spec_from_file_location("kernel_library_cases.tile_probe",
                                                  Path(__file__).parent / "kernel_library_cases" / "tile_probe.py")
    module = sys.modules.get(spec.name)
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    out = torch.empty(x.shape, dtype=out_dtype)
    if y is None:
        module._probe[(1,)](x, out, fn, x.shape[0], x.shape[1])
    else:
        module._probe_pair[(1,)](x, y, out, fn, x.shape[0], x.shape[1])
    return out


def _out0(out):
    return out[0] if isinstance(out, (tuple, list)) else out


# ------------------------------------------------------- references shared by several libraries

def _ref_rms_norm(x, w, eps, offset=0.0):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (offset + w)


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


def _merged_states_ref(prefix, prefix_lse, suffix, suffix_lse):
    """Two partial attention results [tokens, heads, dim] merged by their log-sum-exps
    [tokens, heads], in fp64: (the output, its LSE); an infinite LSE counts as an empty part."""
    p, s = (torch.where(torch.isinf(t), float("-inf"), t).double() for t in (prefix_lse, suffix_lse))
    m = torch.maximum(p, s)
    wp, ws = torch.exp(p - m), torch.exp(s - m)
    out = (prefix.double() * wp[..., None] + suffix.double() * ws[..., None]) / (wp + ws)[..., None]
    return out, torch.log(wp + ws) + m


def _load_cases():
    """Registers the cases: one module per library, scripts/kernel_library_cases/<lib>.py, in
    LIBRARIES' order. They import what they share (case, Checker, randn, the references above)
    from this module as `kernel_libraries`, the name it has in sys.modules when run as a
    script too."""
    sys.modules.setdefault("kernel_libraries", sys.modules[__name__])
    for lib in LIBRARIES:
        name = f"kernel_library_cases.{lib}"
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "kernel_library_cases" / f"{lib}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


_load_cases()

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
