"""Command-line tools: mini-opt, mini-run, mini-import-onnx."""

from minimlir.passes import _moved as _moved  # old module names (minimlir.frontend.params, …) keep importing
