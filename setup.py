"""Build script: Python packages plus the native runtime (CMake + ninja + pybind11).

The native part (`lib/`, `include/`) produces three files in `triton_cpu/_C/`:
`libTritonCPURuntime.so`, linked into every kernel shared object, `_native`, a pybind11
module for what the Python side needs natively, and `build_config.json`, what CMake found
(the SLEEF library, when installed).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import pybind11
        # `_native` lands in triton_cpu/_C/; the runtime library goes next to it.
        out_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        out_dir.mkdir(parents=True, exist_ok=True)
        build_dir = Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        cmake_args = [
            "-G", "Ninja",
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={out_dir}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            "-DCMAKE_BUILD_TYPE=Release",
        ]
        subprocess.check_call(["cmake", str(ROOT)] + cmake_args, cwd=build_dir)
        subprocess.check_call(["cmake", "--build", ".", "-j", str(os.cpu_count() or 2)], cwd=build_dir)
        # The launcher is compiled at run time against runtime.h: ship it in the package.
        header_dir = out_dir.parent / "include"
        header_dir.mkdir(exist_ok=True)
        shutil.copy2(ROOT / "include" / "triton_cpu" / "runtime.h", header_dir / "runtime.h")
        # Editable installs import from the source tree: put both libraries there too
        # (setuptools would copy only the extension module, not the runtime library).
        if self.inplace or getattr(self, "editable_mode", False):
            src_dir = ROOT / "python" / "triton_cpu" / "_C"
            src_dir.mkdir(parents=True, exist_ok=True)
            for f in out_dir.iterdir():
                if f.suffix in (".so", ".json"):
                    # A new file renamed over the old one: rewriting the old one in place
                    # killed (SIGBUS) a process that had it loaded, a tutorial running
                    # while the package was reinstalled.
                    tmp = src_dir / f".{f.name}.{os.getpid()}.tmp"
                    shutil.copy2(f, tmp)
                    os.replace(tmp, src_dir / f.name)


setup(
    packages=[
        "triton_cpu", "triton_cpu.backend", "triton_cpu.dialects", "triton_cpu.analysis",
        "triton_cpu.transforms", "triton_cpu.codegen", "triton_cpu.language", "triton_cpu.tools",
    ],
    package_dir={
        "triton_cpu": "python/triton_cpu",
        "triton_cpu.backend": "third_party/cpu/backend",
    },
    package_data={"triton_cpu.backend": ["*.c"]},
    ext_modules=[CMakeExtension("triton_cpu._C._native")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
