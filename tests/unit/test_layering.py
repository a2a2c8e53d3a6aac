"""The top-level packages form a DAG: dialects <- passes <- compiler <- backend <- frontend <- tuning
<- tools; runtime/ (the artifact loader, numpy + ctypes) imports nothing of ours and anything may
import it (the error hierarchy's base lives there). Checked on every `import minimlir.…` statement, also
inside functions; a function-local import against the order is allowed only for an optional
dependency, listed here with the reason. And the driver imports no command-line module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ORDER = ["dialects", "passes", "compiler", "backend", "frontend", "tuning", "tools"]
ALLOWED = {pkg: set(ORDER[:i]) for i, pkg in enumerate(ORDER)}
for _allowed in ALLOWED.values():
    _allowed.add("runtime")
ALLOWED["runtime"] = set()

OPTIONAL = {
    # (file, imported package): why the dependency is optional
    ("passes/loop/schedule/default/config.py", "backend"): "host vector width; 8 lanes without LLVM",
    ("passes/to_llvm/parallel.py", "backend"): "libgomp availability; loops stay serial without it",
    ("compiler/interpreter.py", "backend"): "run_graph(backend='native'); the interpreter needs no JIT",
    ("passes/loop/schedule/__init__.py", "tuning"): "loop-schedule{tuning-db=}: read only with a database",
    ("frontend/api.py", "tuning"): "compile(tuning_db=): read only with a database",
    ("passes/graph/winograd.py", "tuning"): "graph-winograd{tuning-db=}: read only with a database",
    ("backend/artifact.py", "frontend"): "the deprecated alias backend.artifact.build (frontend/build.py)",
}


def _imports(path: Path):
    """(line, imported top-level minimlir package, inside a function?) for every import in `path`."""
    tree = ast.parse(path.read_text(), str(path))
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node

    def in_function(node: ast.AST) -> bool:
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                return True
        return False

    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "minimlir" and len(parts) > 1:
                yield node.lineno, parts[1], in_function(node)


def test_packages_form_a_dag():
    bad = []
    for pkg, allowed in ALLOWED.items():
        folder = ROOT / pkg
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for line, target, local in _imports(path):
                if target == pkg or target in allowed:
                    continue
                if local and (rel, target) in OPTIONAL:
                    continue
                bad.append(f"{rel}:{line}: {pkg} imports minimlir.{target}{' (in a function)' if local else ''}")
    assert bad == [], "\n".join(bad)


def test_optional_imports_listed_are_still_there():
    for (rel, target), _why in OPTIONAL.items():
        found = [t for _, t, local in _imports(ROOT / rel) if local]
        assert target in found, f"{rel} no longer imports minimlir.{target}: drop it from OPTIONAL"


def test_importing_the_compiler_imports_no_cli_module():
    code = (
        "import sys, minimlir.compiler, minimlir.compiler.driver, minimlir.compiler.interpreter\n"
        "import minimlir.frontend, minimlir.backend.runtime\n"
        "print(sorted(m for m in sys.modules if m.startswith('minimlir.tools')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
