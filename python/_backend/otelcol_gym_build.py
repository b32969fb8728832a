"""The build backend: setuptools' own, with a fallback where setuptools cannot build a wheel.

setuptools before 70.1 builds wheels only with the separate ``wheel`` package, and a
virtualenv of Python 3.12 or later has no setuptools at all. Where either is missing and
nothing can be downloaded (``pip install --no-build-isolation`` offline), this backend writes
the wheel itself with the standard library: the package is pure Python, so the wheel is its
files, its metadata and a RECORD.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import os
import zipfile

try:
    from setuptools import build_meta as _setuptools
except ImportError:  # no setuptools in this environment: the standard library's wheel only
    _setuptools = None  # type: ignore[assignment]

NAME = "otelcol_gym_emitter"
DIST = "otelcol-gym-emitter"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The one source of the version (pyproject.toml's is dynamic: setuptools reads the same line).
VERSION_FILE = os.path.join(ROOT, "otelcol_gym", "__init__.py")


def version(path: str = VERSION_FILE) -> str:
    """The string assigned to ``__version__`` at the top level of ``path``, read without
    importing the package (importing it would start its emitter)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets):
            v = ast.literal_eval(node.value)
            if isinstance(v, str) and v:
                return v
    raise RuntimeError("%s assigns no __version__ string" % path)


def build_sdist(sdist_directory, config_settings=None):
    if _setuptools is None:
        raise RuntimeError("building an sdist needs setuptools")
    return _setuptools.build_sdist(sdist_directory, config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return [] if _setuptools is None else _setuptools.get_requires_for_build_sdist(config_settings)


def _has_wheel() -> bool:
    if _setuptools is None:
        return False
    try:
        import wheel  # noqa: F401
    except ImportError:
        return False
    return True


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) if _has_wheel() else []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    if _has_wheel():
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)
    d = os.path.join(metadata_directory, "%s-%s.dist-info" % (NAME, version()))
    os.makedirs(d, exist_ok=True)
    for name, data in _metadata().items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    return os.path.basename(d)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    if _has_wheel():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    ver = version()
    name = "%s-%s-py3-none-any.whl" % (NAME, ver)
    files: dict[str, bytes] = {}
    pkg = os.path.join(ROOT, "otelcol_gym")
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py") or f == "py.typed":
            with open(os.path.join(pkg, f), "rb") as fh:
                files["otelcol_gym/" + f] = fh.read()
    info = "%s-%s.dist-info/" % (NAME, ver)
    for k, v in _metadata().items():
        files[info + k] = v
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(info + "RECORD,,")
    files[info + "RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
    return name


def _metadata() -> dict[str, bytes]:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    meta = (
        "Metadata-Version: 2.1\n"
        "Name: %s\n"
        "Version: %s\n"
        "Summary: Gym's telemetry recorders (gym_metrics, observer) as events-v1 lines to otelcol-gym\n"
        "License: Apache-2.0\n"
        "License-File: LICENSE\n"
        "Requires-Python: >=3.10\n"
        "Classifier: License :: OSI Approved :: Apache Software License\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Typing :: Typed\n"
        "Description-Content-Type: text/markdown\n\n%s" % (DIST, version(), readme)
    )
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        license_text = f.read()
    return {
        "METADATA": meta.encode("utf-8"),
        "LICENSE": license_text,
        "WHEEL": b"Wheel-Version: 1.0\nGenerator: otelcol_gym_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "top_level.txt": b"otelcol_gym\n",
    }
