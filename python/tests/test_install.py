"""`pip install --no-build-isolation ./python` into a fresh virtualenv, offline; the version
written once (``otelcol_gym.__version__``) is the installed distribution's."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import unittest

import otelcol_gym

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST = "otelcol-gym-emitter"

# Prints the installed distribution's version, then the package's.
VERSIONS = "import importlib.metadata as m, otelcol_gym; print(m.version(%r)); print(otelcol_gym.__version__)" % DIST


def backend():
    """The in-tree build backend (_backend/otelcol_gym_build.py), imported from its file."""
    spec = importlib.util.spec_from_file_location("otelcol_gym_build", os.path.join(PKG, "_backend", "otelcol_gym_build.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class TestInstall(unittest.TestCase):
    def installed_versions(self, py: str, cwd: str) -> list[str]:
        r = subprocess.run([py, "-c", VERSIONS], capture_output=True, text=True, cwd=cwd, env={"PATH": os.environ.get("PATH", ""), "OTELCOL_GYM_ENABLED": "false"})
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def assert_licence(self, py: str, cwd: str) -> None:
        """The installed distribution says Apache-2.0 and carries the repository's LICENSE."""
        code = "import importlib.metadata as m; d = m.distribution(%r); print(d.metadata['License']); print('License :: OSI Approved :: Apache Software License' in d.metadata.get_all('Classifier')); print(d.read_text('LICENSE'), end='')" % DIST
        r = subprocess.run([py, "-c", code], capture_output=True, text=True, cwd=cwd, env={"PATH": os.environ.get("PATH", ""), "OTELCOL_GYM_ENABLED": "false"})
        self.assertEqual(r.returncode, 0, r.stderr)
        licence, classifier, text = r.stdout.split("\n", 2)
        self.assertEqual((licence, classifier), ("Apache-2.0", "True"))
        with open(os.path.join(os.path.dirname(PKG), "LICENSE"), encoding="utf-8") as f:
            self.assertEqual(text, f.read(), "the wheel's LICENSE is the repository's")

    def test_pip_install_into_a_fresh_venv(self) -> None:
        if importlib.util.find_spec("ensurepip") is None:
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
            self.assertEqual(self.installed_versions(py, d), [otelcol_gym.__version__] * 2, "the installed distribution's version is __version__")
            r = subprocess.run([py, "-m", "pip", "show", DIST], capture_output=True, text=True)
            self.assertIn("Version: %s\n" % otelcol_gym.__version__, r.stdout)
            self.assert_licence(py, d)
            # Without setuptools (a virtualenv of Python 3.12 or later has none): the backend
            # writes the wheel with the standard library.
            r = subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", DIST, "setuptools"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index", PKG], capture_output=True, text=True, cwd=d)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = subprocess.run([py, "-c", "import otelcol_gym.observer"], capture_output=True, text=True, cwd=d, env={"OTELCOL_GYM_ENABLED": "false"})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(self.installed_versions(py, d), [otelcol_gym.__version__] * 2, "the standard library's wheel has __version__ too")
            self.assert_licence(py, d)


class TestOneVersion(unittest.TestCase):
    """``__version__`` in otelcol_gym/__init__.py is the only place the version is written."""

    def test_the_backend_reads_the_assignment(self) -> None:
        b = backend()
        self.assertEqual(b.version(), otelcol_gym.__version__)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "__init__.py")
            with open(path, "w") as f:
                f.write('"""doc"""\nfrom x import y\nOTHER = "1"\n__all__ = []\n__version__ = "9.8.7rc1"\n')
            self.assertEqual(b.version(path), "9.8.7rc1")
            with open(path, "w") as f:
                f.write('def f():\n    __version__ = "1.0"\n')
            with self.assertRaises(RuntimeError):
                b.version(path)

    def test_setuptools_reads_it_without_importing_the_package(self) -> None:
        if importlib.util.find_spec("setuptools") is None:
            self.skipTest("setuptools is not installed")
        code = (
            "import sys, warnings; warnings.simplefilter('ignore')\n"
            "from setuptools.config.pyprojecttoml import read_configuration\n"
            "c = read_configuration('pyproject.toml')\n"
            "print(c['project']['version'], 'otelcol_gym' in sys.modules)\n"
        )
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PKG, env=dict(os.environ, OTELCOL_GYM_ENABLED="false", PYTHONPATH=""))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), [otelcol_gym.__version__, "False"])

    def test_written_once(self) -> None:
        with open(os.path.join(PKG, "pyproject.toml"), encoding="utf-8") as f:
            pyproject = f.read()
        project = pyproject[pyproject.index("[project]") :].split("\n[", 1)[0]
        self.assertIsNone(re.search(r"^version\s*=", project, re.M), "pyproject.toml's [project] has no version of its own")
        self.assertRegex(project, r'(?m)^dynamic = \[[^\]]*"version"')
        literal = re.compile(r"""["']%s["']""" % re.escape(otelcol_gym.__version__))
        found = []
        for d in ("otelcol_gym", "_backend"):
            for name in sorted(os.listdir(os.path.join(PKG, d))):
                if name.endswith(".py"):
                    with open(os.path.join(PKG, d, name), encoding="utf-8") as f:
                        found += ["%s/%s" % (d, name)] * len(literal.findall(f.read()))
        found += ["pyproject.toml"] * len(literal.findall(pyproject))
        self.assertEqual(found, ["otelcol_gym/__init__.py"])


if __name__ == "__main__":
    unittest.main()
