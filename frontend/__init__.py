"""Frontends: ONNX import into the graph dialect."""
