"""triton_cpu: a CPU backend for stock Triton.

The compiler lives in the subpackages (`dialects`, `analysis`, `transforms`,
`codegen`, `llvm`); the plugin Triton loads is `triton_cpu.backend`.
"""
__version__ = "0.1.0"
