// RUN: mini-opt %s --verify-diagnostics -p 'loop-vectorize{block=pool loop=1}'

// Stride 3 is refused (one shuffle takes two vectors).

func.func @pool3(%x: memref<4x28xf32>, %y: memref<4x9xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c9 = arith.constant 9 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.for %j = %c0 to %c9 step %c1 {
      loop.block "pool" (%vi = %i, %vj = %j) [spatial, spatial] {
        %t = arith.muli %vj, %c3 : index
        // expected-error @+1 {{vectorize: access to x is strided along loop %j}}
        %a = mem.load %x[%vi, %t] : memref<4x28xf32> -> f32
        mem.store %a, %y[%vi, %vj] : f32, memref<4x9xf32>
      }
    }
  }
  func.return
}
