"""The package layout: every package directory ships in the wheel, moved module names still import
(deprecated, the same module object), and discovery registers every pass exactly once."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _tree_packages() -> set[str]:
    """Every directory with an __init__.py below a package-dir root, as a dotted package name."""
    found = set()
    for name, folder in _setuptools_config()["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            found.add(".".join((name, *rel.parts)))
    return found


def test_every_package_directory_is_in_the_wheel_package_list():
    listed = set(_setuptools_config()["packages"])
    tree = _tree_packages()
    assert tree - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert listed - tree == set(), "listed in pyproject.toml but not a package directory"


def test_package_dir_maps_every_listed_top_level_package():
    cfg = _setuptools_config()
    tops = {".".join(p.split(".")[:2]) for p in cfg["packages"]}
    assert tops == set(cfg["package-dir"])


def test_moved_modules_import_as_the_new_module_with_a_warning():
    from minimlir.passes._moved import MOVED

    for old, new in MOVED.items():
        sys.modules.pop(old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(old)
        assert module is importlib.import_module(new), old
        assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in caught), old


def test_old_names_users_import():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from minimlir.passes._schedule import Schedule
        from minimlir.passes.convert_mem_to_llvm import ConvertMemToLlvmPass
    from minimlir.passes.loop.schedule.api import Schedule as NewSchedule
    from minimlir.passes.to_llvm.mem import ConvertMemToLlvmPass as NewPass

    assert Schedule is NewSchedule and ConvertMemToLlvmPass is NewPass


def test_no_pass_module_left_at_the_top_of_passes():
    top = [p.name for p in (ROOT / "passes").glob("*.py") if not p.name.startswith("_")]
    assert top == [], "passes live in a level folder (passes/graph, loop, mem, to_llvm)"


def test_discovery_finds_every_pass_once_and_warns_nothing():
    # A fresh process: discovery must not import a moved (deprecated) name.
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "from minimlir.tools.mini_opt import our_passes\n"
        "ps = our_passes()\n"
        "print('\\n'.join(f'{n} {c.__module__}' for n, c in sorted(ps.items())))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    rows = dict(line.split() for line in out.splitlines())
    assert rows["graph-fuse"] == "minimlir.passes.graph.fuse"
    assert rows["graph-legalize"] == "minimlir.passes.graph.legalize"
    assert rows["loop-schedule"] == "minimlir.passes.loop.schedule"
    assert rows["loop-split"] == "minimlir.passes.loop.primitives.split"
    assert rows["mem-plan"] == "minimlir.passes.mem.plan"
    assert rows["convert-mem-to-llvm"] == "minimlir.passes.to_llvm.mem"
    level = {"graph": "graph-", "loop": "loop-", "mem": "mem-", "to_llvm": "convert-"}
    for name, module in rows.items():
        folder = module.split(".")[2]
        assert name.startswith(level[folder]), (name, module)
    assert rows["graph-infer-dims"] == "minimlir.passes.graph.infer_dims"
    assert rows["graph-pack-weights"] == "minimlir.passes.graph.pack_weights"
    assert rows["graph-lift-params"] == "minimlir.passes.graph.lift_params"
    assert rows["mem-concat-in-place"] == "minimlir.passes.mem.concat_in_place"
    assert rows["loop-mark-inplace"] == "minimlir.passes.loop.inplace"
    assert rows["mem-reuse-inputs"] == "minimlir.passes.mem.reuse_inputs"
    assert rows["graph-layout"] == "minimlir.passes.graph.layout"
    assert rows["graph-winograd"] == "minimlir.passes.graph.winograd"
    assert len(rows) == 42  # + mem-check-sites (checked mode), graph-profile-nodes, convert-profile-kernels,
    # graph-strength-reduce, convert-math-to-polynomials, graph-pack-weights, graph-lift-params, mem-concat-in-place,
    # loop-mark-inplace, mem-reuse-inputs, graph-layout, graph-winograd


def test_alias_table_names_only_existing_modules():
    from minimlir.passes._moved import MOVED

    for new in MOVED.values():
        assert importlib.util.find_spec(new) is not None, new
