"""Command-line tools: mini-opt, mini-run, mini-import-onnx."""
