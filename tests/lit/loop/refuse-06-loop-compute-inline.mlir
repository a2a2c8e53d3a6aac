// RUN: mini-opt %s --verify-diagnostics -p 'loop-compute-inline{block=add}'

func.func @chain(%a: memref<?x?xf32>, %b: memref<?xf32>, %z: memref<?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = mem.dim %a, 0 : memref<?x?xf32>
  %cols = mem.dim %a, 1 : memref<?x?xf32>
  %t = mem.alloca(%rows, %cols) : memref<?x?xf32>
  loop.for %i = %c0 to %rows step %c1 {
    loop.for %j = %c0 to %cols step %c1 {
      loop.block "scale" (%vi = %i, %vj = %j) [spatial, spatial] {
        %x = mem.load %a[%vi, %vj] : memref<?x?xf32> -> f32
        %m = arith.mulf %x, %x : f32
        mem.store %m, %t[%vi, %vj] : f32, memref<?x?xf32>
      }
    }
  }
  loop.for %i2 = %c0 to %rows step %c1 {
    loop.for %j2 = %c0 to %cols step %c1 {
      // expected-error @+1 {{compute-inline: block 'add' writes %z, a kernel argument (output)}}
      loop.block "add" (%wi = %i2, %wj = %j2) [spatial, spatial] {
        %p = mem.load %t[%wi, %wj] : memref<?x?xf32> -> f32
        %q = mem.load %b[%wj] : memref<?xf32> -> f32
        %s = arith.addf %p, %q : f32
        mem.store %s, %z[%wi, %wj] : f32, memref<?x?xf32>
      }
    }
  }
  func.return
}
