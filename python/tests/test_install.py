"""`pip install --no-build-isolation ./python` into a fresh virtualenv, offline."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TestInstall(unittest.TestCase):
    def test_pip_install_into_a_fresh_venv(self) -> None:
        try:
            import ensurepip  # noqa: F401
        except ImportError:
            self.skipTest("venv without ensurepip (Debian: apt-get install python3-venv)")
        with tempfile.TemporaryDirectory() as d:
            venv = os.path.join(d, "venv")
            subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
            py = os.path.join(venv, "bin", "python")
            r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index", PKG], capture_output=True, text=True, cwd=d)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = subprocess.run(
                [py, "-c", "import os, otelcol_gym; from otelcol_gym import gym_metrics, observer; print(otelcol_gym.__file__); print(os.path.exists(os.path.join(os.path.dirname(otelcol_gym.__file__), 'py.typed')))"],
                capture_output=True, text=True, cwd=d, env={"PATH": os.environ.get("PATH", ""), "OTELCOL_GYM_ENABLED": "false"},
            )
            self.assertEqual(r.returncode, 0, r.stderr)
            path, typed = r.stdout.split()
            self.assertTrue(path.startswith(venv), path)
            self.assertEqual(typed, "True")
            r = subprocess.run([py, "-m", "pip", "show", "otelcol-gym-emitter"], capture_output=True, text=True)
            self.assertIn("Version: 0.1.0", r.stdout)
            # Without setuptools (a virtualenv of Python 3.12 or later has none): the backend
            # writes the wheel with the standard library.
            r = subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", "otelcol-gym-emitter", "setuptools"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index", PKG], capture_output=True, text=True, cwd=d)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = subprocess.run([py, "-c", "import otelcol_gym.observer"], capture_output=True, text=True, cwd=d, env={"OTELCOL_GYM_ENABLED": "false"})
            self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
