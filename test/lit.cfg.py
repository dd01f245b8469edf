# lit configuration: one .mlir file per pass, checked with the FileCheck that ships in the triton wheel.
import os
import shutil
import sys

import lit.formats
import triton

config.name = "triton-cpu"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py"]

root = os.path.dirname(config.test_source_root)
filecheck = os.path.join(os.path.dirname(triton.__file__), "FileCheck")
if not os.path.exists(filecheck):
    filecheck = shutil.which("FileCheck")
opt = os.path.join(root, "bin", "triton-cpu-opt")
config.substitutions.append(("triton-cpu-opt", f"{sys.executable} {opt}"))
config.substitutions.append(("FileCheck", filecheck))
config.environment["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")

# SLEEF found when the package was built: tests of SLEEF's lowering need its symbols.
from triton_cpu import sleef  # noqa: E402
if sleef.available():
    config.available_features.add("sleef")
