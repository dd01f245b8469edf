"""The runtime half of the CPU backend: what stock Triton's `driver.active` must provide.

`CPUDriver` answers Triton's device questions for the host CPU, `CPUUtils` loads kernel
shared objects, and `CPULauncher` runs a loaded kernel over its grid. Launching goes
through one generic C extension (`launcher.c`: built with the package into
triton_cpu/_C, or, when its sources changed since, built on first use with
`triton.runtime.build` and cached in TRITON_CACHE_DIR), which reads a per-kernel argument
spec computed here.

Thread count of a launch, highest priority first: the kernel's `num_threads` option
(first item of the packed metadata), `TRITON_CPU_NUM_THREADS` (read at every launch),
OpenMP's default for the calling thread. That default starts as `OMP_NUM_THREADS`, else
the CPUs this process may use; torch shares the process's libgomp, so importing torch
(which caps it at the physical cores) and `torch.set_num_threads` change it too.
"""
import functools
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase, decompose_descriptor, expand_signature, wrap_handle_tensordesc_impl

_BACKEND_DIR = os.path.dirname(os.path.realpath(__file__))
_MODULE_NAME = "triton_cpu_launcher"


def _package_dir():
    # Lazily, so that backend discovery (which imports this module) stays cheap.
    import triton_cpu
    return os.path.dirname(os.path.realpath(triton_cpu.__file__))


def _runtime_dir():
    return os.path.join(_package_dir(), "_C")


def _native():
    from triton_cpu._C import _native
    return _native


def _include_dir():
    """The directory holding runtime.h: shipped in the package, or the source tree's."""
    pkg = _package_dir()
    candidates = [
        os.path.join(pkg, "include"),
        os.path.join(os.path.dirname(os.path.dirname(pkg)), "include", "triton_cpu"),
    ]
    for d in candidates:
        if os.path.isfile(os.path.join(d, "runtime.h")):
            return d
    raise RuntimeError("triton_cpu: runtime.h not found in " + " or ".join(candidates))


_launcher_lock = threading.Lock()
_launcher_mod = None


def launcher_module():
    """The compiled `launcher.c`: the one built with the package when it was built from
    the installed sources, else built on first use (then taken from Triton's cache)."""
    global _launcher_mod
    if _launcher_mod is not None:
        return _launcher_mod
    with _launcher_lock:
        if _launcher_mod is None:
            from triton import knobs
            _launcher_mod = _prebuilt_launcher() or _build_launcher()
            _launcher_mod.set_hook_chain_type(knobs.HookChain)
            _launcher_mod.set_streaming_bytes(streaming_bytes())
    return _launcher_mod


def _launcher_sources():
    with open(os.path.join(_BACKEND_DIR, "launcher.c"), "rb") as f:
        src = f.read()
    with open(os.path.join(_include_dir(), "runtime.h"), "rb") as f:
        header = f.read()
    return src, header


def _prebuilt_launcher():
    """triton_cpu/_C/triton_cpu_launcher*.so (CMakeLists.txt), if its SOURCE_HASH is that
    of the installed launcher.c + runtime.h (an editable install may have changed them)."""
    import importlib
    try:
        mod = importlib.import_module("triton_cpu._C." + _MODULE_NAME)
    except ImportError:
        return None
    src, header = _launcher_sources()
    if getattr(mod, "SOURCE_HASH", None) != hashlib.sha256(src + header).hexdigest():
        return None
    return mod


def _build_launcher():
    from triton.runtime.build import compile_module_from_file

    rt = _runtime_dir()
    inc = _include_dir()
    # Triton's build cache hashes only launcher.c; a changed header must rebuild it too.
    header_hash = hashlib.sha256(_launcher_sources()[1]).hexdigest()[:16]
    src = os.path.join(_BACKEND_DIR, "launcher.c")
    common = dict(library_dirs=[rt], include_dirs=[inc], libraries=["TritonCPURuntime"])
    flags = ["-pthread", f"-Wl,-rpath,{rt}", f"-DTCPU_RUNTIME_H_HASH={header_hash}"]
    try:
        mod = compile_module_from_file(src, _MODULE_NAME, ccflags=["-fopenmp", *flags], **common)
    except subprocess.CalledProcessError:
        # A compiler without OpenMP (e.g. clang without libomp) still gives a working
        # launcher; it starts plain threads per launch instead of reusing a pool.
        warnings.warn("triton_cpu: building the launcher with -fopenmp failed; "
                      "using a slower launcher that starts threads per launch")
        mod = compile_module_from_file(src, _MODULE_NAME, ccflags=flags, **common)
    return mod


# ----------------------------------------------------------------------------------------
# Argument spec


def _is_descriptor(ty):
    return isinstance(ty, str) and ty.startswith("tensordesc")


def _descriptor_part_names(name, ndim):
    # The order of triton.backends.driver.decompose_descriptor.
    shape = [f"{name}.shape[{d}]" for d in range(ndim)]
    strides = [f"{name}.strides[{d}]" for d in range(ndim)]
    return [f"{name}.base", *shape, *strides, f"{name}.padding", f"{name}.round_f32_to_tf32", *shape, *strides]


def make_arg_spec(kernel_name, signature, codes):
    """Encodes a kernel signature for the C launcher.

    Returns (spec, names, top_names): `spec` has one code per Python argument after host
    tensor descriptors are expanded (tuples as '(' ... ')'), `names` one name per flattened
    non-constexpr kernel argument and `top_names` one per Python argument, both for errors.
    """
    spec = bytearray()
    names = []
    top_names = []

    def code_of(name, ty):
        if ty.startswith("*"):
            return codes["*"]
        code = codes.get(ty)
        if code is None:
            raise TypeError(f"kernel '{kernel_name}': argument '{name}' has type '{ty}', "
                            "which the CPU launcher does not support")
        return code

    def visit(name, ty, top):
        if isinstance(ty, tuple):
            if top:
                top_names.append(name)
            spec.append(codes["("])
            for i, t in enumerate(ty):
                visit(f"{name}[{i}]", t, False)
            spec.append(codes[")"])
        elif _is_descriptor(ty):
            parts = expand_signature([ty], None, "nvTmaDesc")
            part_names = _descriptor_part_names(name, (len(parts) - 3) // 4)
            for part_name, part in zip(part_names, parts):
                visit(part_name, part, top)
        else:
            if top:
                top_names.append(name)
            code = code_of(name, ty)
            spec.append(code)
            if code != codes["constexpr"]:
                names.append(name)

    for key, ty in signature.items():
        visit(str(key), ty, True)
    return bytes(spec), tuple(names), tuple(top_names)


# ----------------------------------------------------------------------------------------
# Launcher


class CPULauncher:
    """`launcher_cls`: `CPULauncher(src, metadata)` makes the launcher of one compiled kernel.

    The launcher is called as `launcher(gridX, gridY, gridZ, stream, function,
    packed_metadata, launch_metadata, launch_enter_hook, launch_exit_hook, *args)`, where
    `args` are the kernel's bound arguments as the runtime passes them: constexpr slots
    included, tuples nested, host TensorDescriptors unexpanded.

    What is returned is the native `triton_cpu_launcher.Launcher` itself rather than an
    instance of this class: a Python `__call__` forwarding to it would add a Python frame
    and an argument tuple to every launch, a third of the launcher's own cost.
    """

    def __new__(cls, src, metadata):
        mod = launcher_module()
        name = getattr(metadata, "name", None) or getattr(src, "name", None) or "<kernel>"
        signature = dict(src.signature)
        spec, names, top_names = make_arg_spec(name, signature, mod.ARG_CODES)
        native = mod.Launcher(spec, names, top_names, name)
        if not any(_is_descriptor(ty) for ty in _leaves(signature.values())):
            return native
        # make_tensordesc_args takes the kernel arguments as one trailing sequence and
        # returns them with each descriptor spliced into its parts; a CPU backend sets no
        # tensordesc_meta, so the parts are the descriptor's plain fields.
        wrapped = wrap_handle_tensordesc_impl(lambda *a: native(*a[:-1], *a[-1]), signature, [],
                                              lambda arg, meta, _: decompose_descriptor(arg))

        def launch_with_descriptors(*args):
            return wrapped(*args[:9], args[9:])

        launch_with_descriptors.native = native
        launch_with_descriptors.num_kernel_args = native.num_kernel_args
        return launch_with_descriptors


def _leaves(types):
    for ty in types:
        if isinstance(ty, tuple):
            yield from _leaves(ty)
        else:
            yield ty


# ----------------------------------------------------------------------------------------
# Utils


class _KernelFiles:
    """Kernel shared objects as files, named by content, under `<TRITON_CACHE_DIR>/cpu_so/`.

    dlopen needs a file. Keeping it where it outlives the process lets gdb find the
    kernel's symbols and line tables, and `perf report` / `perf annotate` read them after
    the run. Identical bytes map to one path (written once, atomically), so processes
    sharing a cache share the files, and reloading a kernel gives the same handle back.
    """

    def path_for(self, name, data):
        digest = hashlib.sha256(data).hexdigest()[:32]
        from triton import knobs
        directory = os.path.join(knobs.cache.dir, "cpu_so")
        path = os.path.join(directory, f"{name}-{digest}.so")
        if not os.path.exists(path):
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        return path


def _sysfs_caches():
    """(level, type, directory) of each of cpu0's caches in Linux sysfs (none elsewhere)."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = os.listdir(base)
    except OSError:
        return
    for entry in entries:
        if not entry.startswith("index"):
            continue
        path = os.path.join(base, entry)
        try:
            with open(os.path.join(path, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(path, "level")) as f:
                level = int(f.read())
        except (OSError, ValueError):
            continue
        yield level, kind, path


def _read_sysfs_caches():
    """{level: bytes} of cpu0's data/unified caches, from Linux sysfs (empty elsewhere)."""
    sizes = {}
    for level, kind, path in _sysfs_caches():
        if kind not in ("Data", "Unified"):
            continue
        try:
            with open(os.path.join(path, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            sizes[level] = int(text.rstrip("KMG")) * scale
        except ValueError:
            continue
    return sizes


@functools.lru_cache(None)
def cache_sizes():
    """{"l1d", "l2", "l3"} in bytes (0 when unknown).

    sysfs is preferred: glibc's sysconf misreports some CPUs (on an AMD EPYC guest it gives
    the L3 as 256 MiB where sysfs and lscpu give 32 MiB).
    """
    sysfs = _read_sysfs_caches()
    try:
        native = {k: max(int(v), 0) for k, v in _native().cache_sizes().items()}
    except Exception:
        native = {}
    return {
        "l1d": sysfs.get(1) or native.get("l1d", 0),
        "l2": sysfs.get(2) or native.get("l2", 0),
        "l3": sysfs.get(3) or native.get("l3", 0),
    }


# The most L3 one logical CPU has to itself on any chip we know of (AMD's F-series EPYC:
# 32 MiB per two-thread core; X3D parts 6 MiB, Intel Xeons under 3 MiB).
L3_PER_CPU_MAX = 16 << 20


def _sysfs_l3_sharing_cpus() -> int:
    """How many logical CPUs share cpu0's L3, from sysfs's shared_cpu_list (0: unknown)."""
    for level, _, path in _sysfs_caches():
        if level != 3:
            continue
        try:
            with open(os.path.join(path, "shared_cpu_list")) as f:
                text = f.read().strip()
        except OSError:
            continue
        count = 0
        for part in filter(None, text.split(",")):
            lo, _, hi = part.partition("-")
            count += int(hi or lo) - int(lo) + 1
        return count
    return 0


def streaming_bytes() -> int:
    """Bytes a launch must store for its kernels to bypass the caches (runtime.h's
    tcpu_streaming_bytes): a quarter of the L3, glibc's rule (2.38 on) for memcpy's
    non-temporal stores. Past it, most lines of an output are evicted before anything reads
    them (its inputs pass through the same cache), and reading each line before overwriting
    it is wasted: tutorial 02's softmax (16 MB in, 16 MB out, 32 MB L3) runs 15-20% faster
    streamed on a Zen 3, layer norm 2-3%.

    The L3 counted is at most L3_PER_CPU_MAX per CPU sharing it: a virtual machine is shown
    its socket's whole cache with only its own CPUs (a 2-CPU guest on a Xeon: 260 MiB
    shared by 2 CPUs), of which it gets a share like any other two cores. There, streaming
    measured faster from 2 MiB of output up (vector add, outputs of 2-64 MiB, warm or after
    a cache flush: 1.1-1.9x); the full 260 MiB put the threshold at 65 MiB, past every
    benchmark. 0 (never) when TRITON_CPU_STREAMING_STORES=0 or no L3 size is known (then a
    smaller cache's size could send output the L3 would have kept to memory)."""
    if os.environ.get("TRITON_CPU_STREAMING_STORES", "1") == "0":
        return 0
    l3 = cache_sizes()["l3"]
    sharing = _sysfs_l3_sharing_cpus()
    if sharing:
        l3 = min(l3, sharing * L3_PER_CPU_MAX)
    return l3 // 4


def default_num_threads():
    """Threads a launch uses without a per-kernel option (launcher.c decides)."""
    return launcher_module().default_num_threads()


@functools.lru_cache(None)
def _vector_registers():
    import platform
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i386", "i686"):
        from triton_cpu import llvm
        return 32 if llvm.host().has("avx512f") else 16
    return 32  # AArch64 (NEON/SVE), RISC-V V, POWER VSX


def _check_amx(native, handle, name):
    """A kernel that uses AMX tiles runs only in a process that Linux lets use them (else its
    first tile instruction would raise SIGILL): asked for here when parse_options did not
    (a kernel compiled with `amx` resolved in another process)."""
    from triton_cpu import amx
    if native.find_symbol(handle, amx.EXPORTED_MARK) and not amx.permitted():
        raise RuntimeError(f"triton-cpu: kernel {name} uses AMX tiles and Linux refused this process the AMX "
                           f"tile state (arch_prctl ARCH_REQ_XCOMP_PERM); compile it with amx=False")


class CPUUtils:
    """`driver.active.utils`: loading kernels and describing the CPU."""

    def __init__(self):
        self._files = _KernelFiles()

    def load_binary(self, name, kernel, shared, device):
        """Loads a kernel shared object; returns (module, function, n_regs, n_spills,
        n_max_threads) as CompiledKernel expects.

        `function` is the address of the kernel `<name>` (its entry has the launcher's
        signature, include/triton_cpu/runtime.h). A CPU has no per-kernel register
        count; n_regs is the architectural vector register count, which keeps occupancy
        formulas written for GPUs (NUM_REGS // (n_regs * warp_size * num_warps)) finite.
        """
        native = _native()
        handle = native.load_library(self._files.path_for(name, bytes(kernel)))
        try:
            function = native.get_symbol(handle, name)
            _check_amx(native, handle, name)
        except Exception:
            native.unload_library(handle)
            raise
        return handle, function, _vector_registers(), 0, 2**30

    def unload_module(self, module):
        # At interpreter shutdown (CompiledKernel.__del__ of kernels still held) the process
        # is exiting: its libraries stay mapped, and importing _native would fail anyway.
        if sys.is_finalizing():
            return
        _native().unload_library(module)

    def get_device_properties(self, device=None):
        from triton_cpu import llvm
        caches = cache_sizes()
        return {
            # Programs that run at once: sizing persistent grids by this fills every thread.
            "multiprocessor_count": default_num_threads(),
            # CompiledKernel raises OutOfResources for a kernel whose `shared` (its buffer
            # bytes per program) exceeds this. Buffers past 64 KiB live in a per-thread heap
            # arena, so any block size fits: the limit only guards against absurd sizes.
            "max_shared_mem": 1 << 30,
            "max_num_regs": 65536,
            "warpSize": 1,
            "arch": llvm.host().cpu,
            "sm_clock_rate": _cpu_clock_khz(),
            # Nominal dual-channel DDR4-3200 (about 51 GB/s through triton.testing.get_dram_gbps);
            # the real figure is not observable without privileges.
            "mem_clock_rate": 1600000,
            "mem_bus_width": 128,
            "l1_cache_size": caches["l1d"],
            "l2_cache_size": caches["l2"],
            "l3_cache_size": caches["l3"],
        }


@functools.lru_cache(None)
def _cpu_clock_khz():
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read())
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return int(float(line.split(":")[1]) * 1000)
    except (OSError, ValueError, IndexError):
        pass
    return 0


# ----------------------------------------------------------------------------------------
# Device interface (what triton.testing.do_bench uses)


class CPUEvent:
    """A wall-clock timing event: CPU kernels have finished when the launch returns."""

    __slots__ = ("time", )

    def __init__(self, enable_timing=True, **kwargs):
        self.time = None

    def record(self, stream=None):
        self.time = time.perf_counter()

    def elapsed_time(self, end_event):
        if self.time is None or end_event.time is None:
            raise RuntimeError("elapsed_time() needs both events to have been recorded")
        return (end_event.time - self.time) * 1000.0

    def synchronize(self):
        pass

    def query(self):
        return True

    def wait(self, stream=None):
        pass


class CPUDeviceInterface:
    """The subset of `torch.cuda` that Triton's benchmarking uses, for the host."""

    Event = CPUEvent

    @staticmethod
    def synchronize(device=None):
        pass

    @staticmethod
    def current_device():
        return 0

    @staticmethod
    def set_device(device):
        pass

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def current_stream(device=None):
        return 0


# ----------------------------------------------------------------------------------------
# Driver

_CPP_TYPES = {
    "i1": "uint8_t",
    "u1": "uint8_t",
    "i8": "int8_t",
    "i16": "int16_t",
    "i32": "int32_t",
    "i64": "int64_t",
    "u8": "uint8_t",
    "u16": "uint16_t",
    "u32": "uint32_t",
    "u64": "uint64_t",
    "fp16": "uint16_t",  # bit pattern, as the kernel ABI passes it
    "bf16": "uint16_t",
    "fp32": "float",
    "fp64": "double",
}


class CPUDriver(DriverBase):

    def __init__(self):
        super().__init__()
        self.utils = CPUUtils()
        self.launcher_cls = CPULauncher
        self._bench_cache = None
        # The compiler worker starts now, when Triton selects this driver (at a process's
        # first launch, before its argument binder and frontend): forked by the compile
        # server with the compiler loaded, or spawned and importing it beside Triton's
        # work (triton_cpu/llvm_worker.py). A process whose kernels are all cached has one
        # idle worker.
        from triton_cpu import llvm_worker
        llvm_worker.start()

    @classmethod
    def is_active(cls):
        selected = os.environ.get("TRITON_DEFAULT_BACKEND")
        if selected:
            return selected == "cpu"
        # Otherwise stand aside wherever a GPU driver would be active too: Triton refuses
        # to choose between two active drivers.
        try:
            torch = sys.modules.get("torch")
            if torch is None:
                import torch
        except ImportError:
            return True
        try:
            return not torch.cuda.is_available()
        except Exception:
            return True

    def get_current_target(self):
        from triton_cpu import llvm
        return GPUTarget("cpu", llvm.host().cpu, 1)

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_current_device(self):
        # What torch.cpu.current_device() returns (a constant; this runs on every launch):
        # code that keys Triton's per-device caches by torch's current device finds them.
        return "cpu"

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_device_interface(self):
        return CPUDeviceInterface

    def get_benchmarker(self):
        # The autotuner's timer: do_bench's interface with warm caches, without the
        # per-call flush of a cache-sized buffer (see benchmarker.py).
        from .benchmarker import do_bench_warm
        return do_bench_warm

    def map_python_to_cpp_type(self, ty):
        if ty.startswith("*"):
            return "void*"
        try:
            return _CPP_TYPES[ty]
        except KeyError:
            raise ValueError(f"no C type for Triton type '{ty}' on the CPU backend") from None

    def get_empty_cache_for_benchmark(self):
        # Kept for the life of the driver: faulting in a fresh buffer per do_bench call
        # would cost more than the benchmark it prepares.
        if self._bench_cache is None:
            import torch
            llc = max(cache_sizes().values()) or 0
            size = max(2 * llc, 64 << 20)
            self._bench_cache = torch.empty(size // 4, dtype=torch.int32)
        return self._bench_cache

    def clear_cache(self, cache):
        cache.zero_()
