// A faulty kernel for checked mode: y[i] = x[i + 1] reads one element past the end of x.
func.func private @shift_k(%x: memref<?xf32>, %y: memref<?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %y, 0 : memref<?xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.block "shift" (%j = %i) [spatial] {
      %k = arith.addi %j, %c1 : index
      %v = mem.load %x[%k] : memref<?xf32> -> f32 loc("Shift_0"("model.onnx":1:0))
      mem.store %v, %y[%j] : f32, memref<?xf32> loc("Shift_0"("model.onnx":1:0))
    }
  }
  func.return
}
func.func @main(%x: memref<?xf32>) -> memref<?xf32> {
  %n = mem.dim %x, 0 : memref<?xf32>
  %y = mem.alloc(%n) : memref<?xf32>
  func.call @shift_k(%x, %y) : (memref<?xf32>, memref<?xf32>) -> ()
  func.return %y : memref<?xf32>
}
