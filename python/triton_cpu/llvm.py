"""LLVM through llvmlite: the host target, the O3 pipeline, assembly and shared objects.

The `*_here` functions run LLVM in the calling process; `optimize` and `to_asm` run them in
the LLVM worker process (llvm_worker.py), where an LLVM assertion cannot end the user's Python.
llvmlite's binding is imported by the functions that call LLVM: the user's process needs it
only to detect the host CPU, which is remembered per machine (`host`)."""
import functools
import hashlib
import os
import re
import struct
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass

RUNTIME_DIR = os.path.join(os.path.dirname(__file__), "_C")


@dataclass(frozen=True)
class Host:
    triple: str
    cpu: str
    features: str  # LLVM feature string, "+avx2,-avx512f,..."
    vector_bits: int  # widest native SIMD register

    def has(self, feature: str) -> bool:
        return f"+{feature}" in self.features.split(",")

    @property
    def key(self) -> str:
        """Identifies the code this host may run: part of the kernel cache key."""
        return hashlib.sha256(f"{self.triple}|{self.cpu}|{self.features}".encode()).hexdigest()[:16]


@functools.lru_cache(None)
def _init():
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


@functools.lru_cache(None)
def host() -> Host:
    """The host CPU as LLVM sees it (name, features, triple). A process that imported Triton
    looks it up first in `$TRITON_HOME/.triton/cpu/host.json`, keyed by what /proc/cpuinfo
    says of the CPU (vendor, family, model, stepping, name, every flag: the kernel clears the
    flags of what it does not enable) and by llvmlite's library file, so that the user's
    process does not import llvmlite's binding (50-90 ms) only for this; on a miss LLVM
    detects it and the entry is stored."""
    from triton_cpu import load_json, store_json
    fingerprint, path = _cpu_fingerprint(), _host_memo_path()
    if not (fingerprint and path):
        return _detect_host()
    memo = load_json(path)
    memo = memo if isinstance(memo, dict) else {}
    try:
        return Host(**memo[fingerprint])
    except (KeyError, TypeError):  # not stored yet, or not an entry of ours
        pass
    h = _detect_host()
    memo[fingerprint] = asdict(h)
    store_json(path, memo)
    return h


def _detect_host() -> Host:
    llvm = _init()
    cpu = llvm.get_host_cpu_name()
    features = llvm.get_host_cpu_features().flatten()
    feats = set(features.split(","))
    if "+avx512f" in feats:
        bits = 512
    elif "+avx" in feats or "+avx2" in feats:
        bits = 256
    else:
        bits = 128
    return Host(llvm.get_process_triple(), cpu, features, bits)


def _cpu_fingerprint() -> str | None:
    """A digest of the first CPU's identity and flags in /proc/cpuinfo and of llvmlite's
    library (its LLVM names the CPU and its features), or None where either is unknown."""
    import importlib.util
    try:
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n", 1)[0]
        spec = importlib.util.find_spec("llvmlite")
        lib = os.path.join(spec.submodule_search_locations[0], "binding", "libllvmlite.so")
        st = os.stat(lib)
    except (OSError, AttributeError, TypeError, IndexError):
        return None
    wanted = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags")
    lines = [ln for ln in first.splitlines() if ln.split(":")[0].strip() in wanted]
    if not any(ln.startswith("flags") for ln in lines):
        return None
    lines.append(f"{lib}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:32]


def _host_memo_path() -> str | None:
    # Only where Triton is imported already (the user's process): the compiler worker does
    # not import Triton, whose knobs name the directory, and loads llvmlite's binding anyway.
    if "triton" not in sys.modules:
        return None
    from triton_cpu import user_path
    return user_path("host.json")


@functools.lru_cache(None)
def target_machine(h: Host):
    llvm = _init()
    target = llvm.Target.from_triple(h.triple)
    return target.create_target_machine(cpu=h.cpu, features=h.features, opt=3, reloc="pic",
                                        codemodel="default", jit=False)


# LLVM pipelines `optimize` tries in order: a later one only when LLVM aborted on the previous
# (an assertion of llvmlite's LLVM, see llvm_worker.py; LLVM 22's loop vectorizer trips one on
# some scalar min/max reduction loops) or its output does not verify.
PIPELINES = (
    ("O3", dict(speed=3, loop_vectorize=True, slp_vectorize=True)),
    ("O3 without the loop vectorizer", dict(speed=3, loop_vectorize=False, slp_vectorize=True)),
    ("O1 without vectorizers", dict(speed=1, loop_vectorize=False, slp_vectorize=False)),
)


def optimize(ir_text: str, h: Host, kernel: str = "kernel", first: int = 0) -> str:
    """Parses, verifies and optimizes the module for the host CPU (LLVM's O3 pipeline) in the
    LLVM worker process; returns the IR text. If LLVM aborts, or its output does not verify,
    retries with the next of PIPELINES and warns (LLVMFallbackWarning); raises
    LLVMCrashError when all fail. `first`: the index in PIPELINES to start from."""
    from triton_cpu import llvm_worker

    def attempt(i):
        out, invalid = llvm_worker.call("optimize", ir_text, h, PIPELINES[i][1])
        return out, invalid and f"its output does not verify: {invalid.splitlines()[0]}"
    return with_fallback(kernel, attempt, first)


def with_fallback(kernel: str, attempt, first: int = 0):
    """The output of `attempt(i)` for the first index i of PIPELINES, from `first` on, whose
    attempt succeeds: it returns (output, "") or (anything, what went wrong), or raises
    llvm_worker.LLVMAborted (LLVM ended the worker). Warns (LLVMFallbackWarning) when an
    earlier pipeline failed; raises LLVMCrashError, naming every failure, when all fail."""
    from triton_cpu import llvm_worker
    from triton_cpu.errors import LLVMCrashError, LLVMFallbackWarning
    failures = []
    for i in range(first, len(PIPELINES)):
        label = PIPELINES[i][0]
        try:
            out, problem = attempt(i)
        except llvm_worker.LLVMAborted as e:
            out, problem = None, e.detail
        if problem:
            failures.append(f"{label}: {problem}")
            continue
        if failures:
            import warnings
            warnings.warn(f"LLVM failed optimizing kernel '{kernel}' ({failures[0]}); compiled it with "
                          f"{label} instead: the results are right, the code may be slower",
                          LLVMFallbackWarning, stacklevel=3)
        return out
    raise LLVMCrashError(f"LLVM failed on kernel '{kernel}' with every pipeline tried:\n  " + "\n  ".join(failures))


def optimize_here(ir_text: str, h: Host, config: dict) -> tuple[str, str]:
    """`optimize` with one pipeline, in this process: (IR text, "") or, when the optimized
    module does not verify, ("", the verifier's message)."""
    llvm = _init()
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    tm = target_machine(h)
    mod.triple = h.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=config["speed"])
    pto.loop_vectorization = config["loop_vectorize"]
    pto.slp_vectorization = config["slp_vectorize"]
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)
    # The optimizer's output is verified, so that a pipeline that breaks the module (LLVM
    # 22's O3 has placed a shufflevector before its operands' definitions; O3 without the
    # loop vectorizer did not) is a failure of that pipeline and `optimize` tries the next
    # one, instead of code generation aborting on it later.
    try:
        mod.verify()
    except RuntimeError as e:
        return "", str(e) or "the module does not verify"
    return str(mod), ""


def to_asm(ir_text: str, h: Host, kernel: str = "kernel") -> str:
    """Assembly for the host CPU, generated in the LLVM worker; LLVMCrashError if LLVM aborts."""
    from triton_cpu import llvm_worker
    from triton_cpu.errors import LLVMCrashError
    try:
        return llvm_worker.call("asm", ir_text, h)
    except llvm_worker.LLVMAborted as e:
        raise LLVMCrashError(f"LLVM aborted generating code for kernel '{kernel}': {e.detail}") from None


def asm_here(ir_text: str, h: Host) -> str:
    mod = _init().parse_assembly(ir_text)
    return target_machine(h).emit_assembly(mod)


def to_shared_object(name: str, asm_text: str, h: Host) -> bytes:
    """Assembles and links the kernel with the runtime library, glibc's vector math and, when
    the kernel calls it, SLEEF (codegen/math_lib.py).

    With binutils' `as` and `ld` on PATH (and no CC in the environment), they are run
    directly: the compiler driver's own start-up, and collect2 between it and ld, took
    ~8 of the ~20 ms of a link. Otherwise `$CC` (default `cc`) drives both steps.

    Run directly, ld links SLEEF, libm and libmvec through stubs (`_link_stub`): empty
    shared objects with the same SONAMEs, so the kernel still names the real libraries
    (DT_NEEDED, found at load time through its run path or the system's) and its
    undefined symbols bind to them when it is loaded, but ld no longer reads their symbol
    tables: SLEEF's 3600 symbols took ~4 ms of a 10 ms link, libm's and libmvec's ~3."""
    needed = _libraries(asm_text)
    rpaths = [RUNTIME_DIR]
    sleef_lib = None
    if "Sleef_" in asm_text:
        from triton_cpu import sleef
        sleef_lib = sleef.library_path()
        if sleef_lib is None:
            raise RuntimeError(f"kernel {name} calls SLEEF, which is {sleef.status()}")
        rpaths.append(os.path.dirname(sleef_lib))
    real = ([sleef_lib] if sleef_lib else []) + [f"-l{lib}" for lib in needed if lib != "gcc"]
    runtime = [f"-L{RUNTIME_DIR}", "-lTritonCPURuntime", *(["-lgcc"] if "gcc" in needed else [])]
    # Line tables (codegen/debug_info.py): LLVM writes `.file N "dir" "name"`, which GNU as
    # reads only in its DWARF 5 mode.
    dwarf5 = "\t.loc\t" in asm_text
    tools = _binutils()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, f"{name}.s")
        out = os.path.join(tmp, f"{name}.so")
        with open(src, "w") as f:
            f.write(asm_text)
        if tools is not None:
            as_, ld, libgcc_dir = tools
            obj = os.path.join(tmp, f"{name}.o")
            sonames = ([_elf_soname(sleef_lib)] if sleef_lib else []) + [_GLIBC_SONAMES[lib] for lib in needed
                                                                        if lib != "gcc"]
            stubs = [soname and _link_stub(soname, as_, ld) for soname in sonames]
            if stubs and all(stubs):
                # every stub is named, used or not (--no-as-needed): what it stands for is
                # decided here (_libraries), as --as-needed decided it from the real tables
                linked = ["--push-state", "--no-as-needed", *stubs, "--pop-state", *runtime]
            else:
                linked = real + runtime
            # no C runtime start files, as with the driver's -nostdlib below; these are
            # the flags gcc passes ld for `-shared -nostdlib` (gcc -v)
            steps = [[as_, *(["--gdwarf-5"] if dwarf5 else []), "-o", obj, src],
                     [ld, "--build-id", "--eh-frame-hdr", "--hash-style=gnu", "--as-needed", "-shared", "-o", out,
                      obj, *(f"-rpath={d}" for d in rpaths), f"-L{libgcc_dir}", *linked]]
        else:
            # -nostdlib: a kernel needs none of the C runtime's start files, and libc, which
            # every process has loaded, resolves the few libc calls it makes when the object
            # is loaded; libgcc supplies the compiler's helper routines (half/bfloat16
            # conversions without F16C, 128-bit division).
            steps = [[os.environ.get("CC", "cc"), *(["-Wa,--gdwarf-5"] if dwarf5 else []), "-nostdlib", "-shared",
                      "-fPIC", "-o", out, src, *(f"-Wl,-rpath,{d}" for d in rpaths), *real, *runtime]]
        for cmd in steps:
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError(f"linking kernel {name} failed:\n{' '.join(cmd)}\n{res.stderr}")
        with open(out, "rb") as f:
            return f.read()


# glibc's SONAMEs for the libraries `_libraries` names (fixed since glibc 2.1 / 2.22).
_GLIBC_SONAMES = {"m": "libm.so.6", "mvec": "libmvec.so.1"}


def _elf_soname(path: str) -> str | None:
    """The DT_SONAME of a shared object, or None (none, not a 64-bit little-endian ELF file,
    unreadable)."""
    try:
        with open(path, "rb") as f:
            names = elf_dynamic_strings(f.read(), 14)  # DT_SONAME
    except (OSError, struct.error, ValueError, IndexError):  # unreadable or truncated
        return None
    return names[0] if names else None


def elf_dynamic_strings(data: bytes, tag: int) -> list[str]:
    """The strings of a 64-bit little-endian ELF object's dynamic section entries with `tag`
    (1 DT_NEEDED, 14 DT_SONAME, 29 DT_RUNPATH), in order; [] for any other format."""
    if data[:6] != b"\x7fELF\x02\x01":
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for _name, kind, _flags, _addr, offset, size, link, *_ in sections:
        if kind != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[link][4]
        for pos in range(offset, offset + size, 16):
            entry, value = struct.unpack_from("<qQ", data, pos)
            if entry == 0:  # DT_NULL
                break
            if entry == tag:
                out.append(data[strtab + value:data.index(b"\0", strtab + value)].decode())
    return out


def _link_stub(soname: str, as_: str, ld: str) -> str | None:
    """An empty shared object whose SONAME is `soname`, for ld to link against in place of
    the library of that name (to_shared_object); made once per machine and user in
    $TRITON_HOME/.triton/cpu/link-stubs (looked up at every link, a stat: a stub removed
    since is made again). None when it cannot be made there."""
    from triton_cpu import user_path
    directory = user_path("link-stubs")
    path = os.path.join(directory, f"{soname}.stub")
    if os.path.isfile(path):
        return path
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            empty_s, empty_o, stub = (os.path.join(tmp, n) for n in ("empty.s", "empty.o", "stub.so"))
            open(empty_s, "w").close()
            for cmd in ([as_, "-o", empty_o, empty_s], [ld, "-shared", f"-soname={soname}", "-o", stub, empty_o]):
                if subprocess.run(cmd, capture_output=True).returncode != 0:
                    return None
            os.replace(stub, path)  # atomic: another process sees the whole stub or none
    except OSError:
        return None
    return path


# Symbols the assembly refers to through the PLT or the GOT (PIC code reaches every
# external function and variable that way) and labels it defines.
_REFERENCED = re.compile(r"([A-Za-z_.$][\w.$]*)@(?:PLT|GOTPCREL)")
_DEFINED = re.compile(r"^([A-Za-z_.$][\w.$]*):", re.M)


def _libraries(asm_text: str) -> list[str]:
    """The libraries besides the runtime (always linked) and SLEEF (linked when the kernel
    calls it) that may define a symbol the kernel refers to, as `-l` names: glibc's libmvec
    ("mvec") for `_ZGV*` vector functions, libgcc ("gcc") for `__*` compiler helpers,
    libm ("m") for any other (a libc function such as memset lands here too: with the real
    libm `--as-needed` drops it again; through its stub the kernel names libm.so.6, which
    every Python process has loaded). Reading only these saved ~2.3 of a 6 ms link for a
    kernel that calls nothing."""
    external = set(_REFERENCED.findall(asm_text)) - set(_DEFINED.findall(asm_text))
    external = {s for s in external if not s.startswith(("tcpu_", "Sleef_"))}
    libs = []
    if any(s.startswith("_ZGV") for s in external):
        libs.append("mvec")
    if any(not s.startswith(("_ZGV", "__")) for s in external):
        libs.append("m")
    if any(s.startswith("__") for s in external):
        libs.append("gcc")
    return libs


def _binutils():
    """(as, ld, the directory of libgcc) to assemble and link without the compiler driver,
    or None: CC is set (the user chose the toolchain), TRITON_CPU_DIRECT_LINK=0, or a tool
    is missing. libgcc's directory is asked of the driver once per process."""
    from triton_cpu import env_flag
    if "CC" in os.environ or not env_flag("TRITON_CPU_DIRECT_LINK", True):
        return None
    return _find_binutils()


@functools.lru_cache(None)
def _find_binutils():
    import shutil
    as_, ld = shutil.which("as"), shutil.which("ld")
    if as_ is None or ld is None:
        return None
    try:
        res = subprocess.run(["cc", "-print-libgcc-file-name"], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    libgcc = res.stdout.strip()
    # A clang driver may answer with compiler-rt's builtins, which `-lgcc` would not find.
    if res.returncode != 0 or os.path.basename(libgcc) != "libgcc.a" or not os.path.isfile(libgcc):
        return None
    return as_, ld, os.path.dirname(libgcc)
