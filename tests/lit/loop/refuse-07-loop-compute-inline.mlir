// RUN: mini-opt %s --verify-diagnostics -p 'loop-compute-inline{block=matmul}'

func.func @matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = mem.dim %a, 0 : memref<?x?xf32>
  %k = mem.dim %a, 1 : memref<?x?xf32>
  %n = mem.dim %b, 1 : memref<?x?xf32>
  loop.for %i = %c0 to %m step %c1 {
    loop.for %j = %c0 to %n step %c1 {
      loop.for %kk = %c0 to %k step %c1 {
        // expected-error @+1 {{compute-inline: block 'matmul' is a reduction}}
        loop.block "matmul" (%vi = %i, %vj = %j, %vk = %kk) [spatial, spatial, reduce] {
          %x = mem.load %a[%vi, %vk] : memref<?x?xf32> -> f32
          %y = mem.load %b[%vk, %vj] : memref<?x?xf32> -> f32
          %z = mem.load %c[%vi, %vj] : memref<?x?xf32> -> f32
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %z, %p : f32
          mem.store %s, %c[%vi, %vj] : f32, memref<?x?xf32>
        } init {
          %zero = arith.constant 0.0 : f32
          mem.store %zero, %c[%vi, %vj] : f32, memref<?x?xf32>
        }
      }
    }
  }
  func.return
}
