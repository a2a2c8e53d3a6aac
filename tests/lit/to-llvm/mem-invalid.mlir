// RUN: not mini-opt %s -p convert-mem-to-llvm --split-input-file 2>&1 | filecheck %s

// Only public entry functions may return memrefs.
// CHECK: mem-invalid.mlir:[[# @LINE + 1]]:1: error: failed to legalize operation 'func.func': @g returns a memref
func.func private @g(%n: index) -> memref<?xf32> {
  %m = mem.alloc(%n) : memref<?xf32>
  func.return %m : memref<?xf32>
}

// -----

// A memref that comes from an op without a memref ABI lowering.
// CHECK: mem-invalid.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: failed to legalize operation 'mem.dim': its memref operand comes from test.op
func.func @f() -> index {
  %m = "test.op"() : () -> memref<?xf32>
  %d = mem.dim %m, 0 : memref<?xf32>
  func.return %d : index
}
