"""Runs the lit + FileCheck tests under test/ (one file per pass) as part of pytest."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_lit_suite():
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lit"), "-v", os.path.join(ROOT, "test")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    assert "Passed" in res.stdout
