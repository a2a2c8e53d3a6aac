// A faulty kernel for checked mode: y[i] = x[i] + t[i] with a scratch buffer t nobody wrote.
func.func private @add_k(%x: memref<4xf32>, %t: memref<4xf32>, %y: memref<4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.block "add" (%j = %i) [spatial] {
      %a = mem.load %x[%j] : memref<4xf32> -> f32
      %b = mem.load %t[%j] : memref<4xf32> -> f32
      %s = arith.addf %a, %b : f32
      mem.store %s, %y[%j] : f32, memref<4xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %t = mem.alloc() : memref<4xf32>
  %y = mem.alloc() : memref<4xf32>
  func.call @add_k(%x, %t, %y) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  mem.dealloc %t : memref<4xf32>
  func.return %y : memref<4xf32>
}
