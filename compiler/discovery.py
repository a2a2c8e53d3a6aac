"""Discovery: every pass and dialect minimlir defines, found by walking the packages (no hand-kept
registry), next to xDSL's; the named pipelines; one line describing a pass.

    our_passes()        {"graph-fuse": GraphFusePass, ...}: ModulePasses defined below minimlir.passes
    our_dialects()      [Graph, Loop, Mem, ...]: Dialect objects defined below minimlir.dialects
    pass_registry()     every pass by name (xDSL's and ours), as PipelineBuilder wants them
    named_pipelines()   {"compile": (pipeline text, description), ...} (minimlir.compiler.pipelines)

A module (or package) whose dotted name has a part starting with `_` is a helper and is skipped.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Callable, Iterator
from types import ModuleType

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from minimlir.compiler.pipelines import PIPELINES


def _modules(package_name: str):
    """`package_name` and every module below it (subpackages walked), skipping any dotted part that
    starts with `_` (shared helpers, and the moved-module aliases, which live in no file)."""
    package = importlib.import_module(package_name)
    yield package
    infos = pkgutil.walk_packages(package.__path__, package_name + ".", onerror=_raise)
    for info in sorted(infos, key=lambda m: m.name):
        if any(part.startswith("_") for part in info.name[len(package_name) + 1:].split(".")):
            continue
        yield importlib.import_module(info.name)


def _raise(name: str) -> None:
    raise  # walk_packages swallows a subpackage's ImportError unless told; a broken pass must show


def passes_defined_in(module: ModuleType) -> Iterator[type[ModulePass]]:
    """Every concrete, named ModulePass class defined (not imported) in `module`."""
    for obj in vars(module).values():
        if (
            inspect.isclass(obj)
            and issubclass(obj, ModulePass)
            and obj.__module__ == module.__name__
            and not inspect.isabstract(obj)
            and isinstance(getattr(obj, "name", None), str)
        ):
            yield obj


def our_passes() -> dict[str, type[ModulePass]]:
    """Every concrete ModulePass defined in minimlir.passes, by pass name."""
    found: dict[str, type[ModulePass]] = {}
    for module in _modules("minimlir.passes"):
        for obj in passes_defined_in(module):
            if obj.name in found and found[obj.name] is not obj:
                raise RuntimeError(f"pass '{obj.name}' is defined twice")
            found[obj.name] = obj
    return found


def our_dialects() -> list[Dialect]:
    """Every Dialect object defined in minimlir.dialects."""
    return [
        obj
        for module in _modules("minimlir.dialects")
        for obj in vars(module).values()
        if isinstance(obj, Dialect)
    ]


def named_pipelines() -> dict[str, tuple[str, str]]:
    """Registered named pipelines: name -> (pipeline text, description)."""
    return {name: (entry[0], entry[1]) for name, entry in PIPELINES.items()}


def pass_summary(cls: type) -> str:
    """One line: the class docstring's first line, else the pass module's (STYLE puts it there)."""
    doc = cls.__dict__.get("__doc__")
    if doc and doc.startswith(cls.__name__ + "("):
        doc = None  # dataclass's generated signature, not a description
    if not doc:
        doc = getattr(sys.modules.get(cls.__module__), "__doc__", None)
    for line in (doc or "").strip().splitlines():
        if line.strip():
            return line.strip()
    # No docstring anywhere (xDSL's cse, dce): the class name is the best description left.
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", cls.__name__.removesuffix("Pass"))
    return " ".join(words).capitalize() + "." if words else ""


def pass_registry() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass by name: xDSL's (lazily imported) and ours (ours win on a clash)."""
    from xdsl.universe import Universe

    passes: dict[str, Callable[[], type[ModulePass]]] = dict(Universe.get_multiverse().all_passes)
    for name, cls in our_passes().items():
        passes[name] = lambda c=cls: c
    return passes
