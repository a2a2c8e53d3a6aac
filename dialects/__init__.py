"""minimlir dialects: graph (tensor level), loop (kernels over buffers), mem (explicit memory)."""
