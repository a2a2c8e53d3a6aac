"""minimlir passes: one pass per module, discovered by mini-opt. `_`-prefixed modules are shared helpers."""
