"""Backend: llvm dialect -> llvmlite -> native code (JIT and AOT), and the runtime boundary."""
