"""Old module paths that moved when passes/ was split into level folders: they keep working, with a
DeprecationWarning, and name the very same module object (`minimlir.passes._schedule is
minimlir.passes.loop.schedule.api`), so monkeypatching and `isinstance` behave as before.

They are served by an import hook, not by files, so pass discovery (which walks the files) never
sees them and registers every pass once. Remove an entry when nothing imports the old name.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

MOVED: dict[str, str] = {
    "minimlir.tools._pipeline": "minimlir.compiler.pass_manager",
    "minimlir.tools._diagnostics": "minimlir.compiler.diagnostics",
    "minimlir.passes._pipelines": "minimlir.compiler.pipelines",
    "minimlir.frontend.params": "minimlir.compiler.params",
    "minimlir.passes.graph_fuse": "minimlir.passes.graph.fuse",
    "minimlir.passes._op_pattern": "minimlir.passes.graph._op_pattern",
    "minimlir.passes.graph_legalize": "minimlir.passes.graph.legalize",
    "minimlir.passes._legalize_common": "minimlir.passes.graph.legalize._common",
    "minimlir.passes._legalize_elementwise": "minimlir.passes.graph.legalize.elementwise",
    "minimlir.passes._legalize_nn": "minimlir.passes.graph.legalize.nn",
    "minimlir.passes._legalize_reduce": "minimlir.passes.graph.legalize.reduce",
    "minimlir.passes._legalize_data": "minimlir.passes.graph.legalize.data",
    "minimlir.passes.graph_bufferize": "minimlir.passes.graph.bufferize",
    "minimlir.passes.loop_fuse": "minimlir.passes.loop.fuse",
    "minimlir.passes.loop_schedule": "minimlir.passes.loop.schedule",
    "minimlir.passes._schedule": "minimlir.passes.loop.schedule.api",
    "minimlir.passes._affine": "minimlir.passes.loop.schedule.affine",
    "minimlir.passes._index_fold": "minimlir.passes.loop.schedule.index_fold",
    "minimlir.passes._default_schedule": "minimlir.passes.loop.schedule.default",
    "minimlir.passes._kernel_builder": "minimlir.passes.loop._kernel_builder",
    "minimlir.passes._main_loop": "minimlir.passes.loop._main_loop",
    "minimlir.passes.loop_lower_vectors": "minimlir.passes.loop.lower_vectors",
    "minimlir.passes.loop_lower_unroll": "minimlir.passes.loop.lower_unroll",
    "minimlir.passes.loop_outline_parallel": "minimlir.passes.loop.outline_parallel",
    "minimlir.passes.mem_plan": "minimlir.passes.mem.plan",
    "minimlir.passes._llvm_common": "minimlir.passes.to_llvm._common",
    "minimlir.passes._memref_abi": "minimlir.passes.to_llvm._memref_abi",
    "minimlir.passes._llvm_ext": "minimlir.dialects.llvm_ext",
    "minimlir.passes.loop_split": "minimlir.passes.loop.primitives.split",
    "minimlir.passes.loop_reorder": "minimlir.passes.loop.primitives.reorder",
    "minimlir.passes.loop_compute_at": "minimlir.passes.loop.primitives.compute_at",
    "minimlir.passes.loop_reverse_compute_at": "minimlir.passes.loop.primitives.reverse_compute_at",
    "minimlir.passes.loop_compute_inline": "minimlir.passes.loop.primitives.compute_inline",
    "minimlir.passes.loop_vectorize": "minimlir.passes.loop.primitives.vectorize",
    "minimlir.passes.loop_unroll": "minimlir.passes.loop.primitives.unroll",
    "minimlir.passes.loop_parallel": "minimlir.passes.loop.primitives.parallel",
    "minimlir.passes.loop_decompose_reduction": "minimlir.passes.loop.primitives.decompose_reduction",
    "minimlir.passes.loop_cache_read": "minimlir.passes.loop.primitives.cache_read",
    "minimlir.passes.loop_fuse_loops": "minimlir.passes.loop.primitives.fuse_loops",
    "minimlir.passes.convert_arith_to_llvm": "minimlir.passes.to_llvm.arith",
    "minimlir.passes.convert_cf_to_llvm": "minimlir.passes.to_llvm.cf",
    "minimlir.passes.convert_func_to_llvm": "minimlir.passes.to_llvm.func",
    "minimlir.passes.convert_loop_to_llvm": "minimlir.passes.to_llvm.loop",
    "minimlir.passes.convert_math_to_llvm": "minimlir.passes.to_llvm.math",
    "minimlir.passes.convert_mem_to_llvm": "minimlir.passes.to_llvm.mem",
    "minimlir.passes.convert_parallel_to_llvm": "minimlir.passes.to_llvm.parallel",
    "minimlir.passes.convert_vector_to_llvm": "minimlir.passes.to_llvm.vector",
}


class _MovedLoader(importlib.abc.Loader):
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        # The import system returns whatever sys.modules holds after exec: the new module itself.
        warnings.warn(
            f"{module.__name__} moved to {self.new}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        sys.modules[module.__name__] = importlib.import_module(self.new)


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Resolves a moved module's old name to its new module."""

    def __init__(self, moved: dict[str, str]):
        self.moved = moved

    def find_spec(self, fullname, path=None, target=None):
        new = self.moved.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedLoader(new))


def install(moved: dict[str, str] = MOVED) -> None:
    """Add the finder for `moved` once (idempotent)."""
    if not any(isinstance(f, MovedModuleFinder) and f.moved is moved for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder(moved))
