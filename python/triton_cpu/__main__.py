"""`python -m triton_cpu`: what the backend will compile for on this machine.

Prints the versions, the host CPU and vector width, the math library kernels use (and
where SLEEF is, or why not), the runtime library and the default thread count: the facts
a bug report needs.
"""
import os
import sys


def report() -> str:
    import triton

    import triton_cpu
    from triton_cpu import llvm, sleef
    h = llvm.host()
    isa = [f for f in ("avx512f", "avx512bf16", "avx512vnni", "avxvnni", "amx-tile", "avx2", "fma", "avx", "sse4.1")
           if h.has(f)]
    try:
        math = sleef.resolve(None)
    except ValueError as e:
        math = f"error: {e}"
    source = "TRITON_CPU_MATH_LIB" if os.environ.get("TRITON_CPU_MATH_LIB") else "default"
    threads = (os.environ.get("TRITON_CPU_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
               or f"{len(os.sched_getaffinity(0))} (the cores this process may use)")
    rows = [
        ("triton-cpu", f"{triton_cpu.__version__} ({os.path.dirname(triton_cpu.__file__)})"),
        ("triton", triton.__version__),
        ("python", sys.version.split()[0]),
        ("host", f"{h.cpu} ({h.triple}), {h.vector_bits}-bit vectors; {' '.join(isa)}"),
        ("math library", f"{math} ({source}; choices: auto, {', '.join(sleef.LIBRARIES)})"),
        ("SLEEF", sleef.status()),
        ("runtime", os.path.join(llvm.RUNTIME_DIR, "libTritonCPURuntime.so")),
        ("threads per launch", threads),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


if __name__ == "__main__":
    print(report())
