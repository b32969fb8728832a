"""The package keeps to Python 3.10 (``requires-python = ">=3.10"``).

Only 3.11 runs here, so this is a static check: every module parses with the 3.10 grammar
and uses none of the standard library that 3.11 added.
"""

from __future__ import annotations

import ast
import os
import unittest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "otelcol_gym")

# Names that first appeared in Python 3.11's standard library, by module (builtins: "").
ADDED_IN_311 = {
    "": {"ExceptionGroup", "BaseExceptionGroup"},
    "asyncio": {"TaskGroup", "timeout", "timeout_at", "Timeout", "Runner", "Barrier", "BrokenBarrierError"},
    "contextlib": {"chdir"},
    "datetime": {"UTC"},
    "enum": {"StrEnum", "ReprEnum", "EnumCheck", "FlagBoundary", "verify", "member", "nonmember", "global_enum", "property"},
    "hashlib": {"file_digest"},
    "inspect": {"getmembers_static", "markcoroutinefunction"},
    "logging": {"getLevelNamesMapping"},
    "math": {"cbrt", "exp2"},
    "operator": {"call"},
    "sys": {"exception"},
    "typing": {"Self", "LiteralString", "Never", "assert_never", "assert_type", "reveal_type", "dataclass_transform", "Required", "NotRequired", "clear_overloads", "get_overloads"},
    "tomllib": {"*"},
    "wsgiref.types": {"*"},
}


def modules() -> list[str]:
    return sorted(os.path.join(PKG, f) for f in os.listdir(PKG) if f.endswith(".py"))


def uses_311(src: str) -> list[str]:
    """The 3.11-only names a module's source uses: imported, read off a module, or builtin."""
    tree = ast.parse(src)
    aliases: dict[str, str] = {}  # local name -> module
    used: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name] = a.name
                used.add((a.name, "*"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                used.add((node.module, a.name))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            used.add((aliases[node.value.id], node.attr))
        elif isinstance(node, ast.Name):
            used.add(("", node.id))
        elif isinstance(node, ast.TryStar):
            used.add(("", "except*"))
    bad = set()
    for m, n in used:
        added = ADDED_IN_311.get(m, set())
        if n in added or "*" in added or (m, n) == ("", "except*"):
            bad.add(f"{m}.{n}" if m else n)
    return sorted(bad)


class TestPython310(unittest.TestCase):
    def test_grammar(self) -> None:
        for path in modules():
            with open(path, encoding="utf-8") as f:
                src = f.read()
            with self.subTest(path=os.path.basename(path)):
                ast.parse(src, path, feature_version=(3, 10))

    def test_no_standard_library_of_311(self) -> None:
        for path in modules():
            with open(path, encoding="utf-8") as f:
                src = f.read()
            with self.subTest(path=os.path.basename(path)):
                self.assertEqual(uses_311(src), [])

    def test_the_check_finds_what_it_looks_for(self) -> None:
        src = "import asyncio as a\nimport tomllib\nfrom typing import Self\na.timeout(1)\ntry:\n    pass\nexcept* ValueError:\n    raise ExceptionGroup('x', [])\n"
        self.assertEqual(uses_311(src), ["ExceptionGroup", "asyncio.timeout", "except*", "tomllib.*", "typing.Self"])
        with self.assertRaises(SyntaxError):
            ast.parse(src, feature_version=(3, 10))


if __name__ == "__main__":
    unittest.main()
