"""minimlir passes, one pass per module, in level folders: graph/, loop/, mem/, to_llvm/.

mini-opt discovers every ModulePass defined in a module below this package; `_`-prefixed modules (and
packages) are shared helpers and are skipped. Old flat module names (`minimlir.passes.convert_mem_to_llvm`,
`minimlir.passes._schedule`, …) still import, with a DeprecationWarning (see `_moved.py`).
"""

from minimlir.passes import _moved

_moved.install()
