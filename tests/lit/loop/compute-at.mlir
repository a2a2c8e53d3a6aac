// RUN: mini-opt %s -p 'loop-split{block=add loop=1 factors=4},loop-compute-at{block=scale target=add loop=1}' | filecheck %s

// "scale" is computed per 1x4 tile of "add": its loops run over exactly that tile (the row
// loop has extent 1 and disappears; the columns are guarded by min(4, cols - jo*4)).

// CHECK-LABEL: func.func @chain
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      loop.for %[[JO:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[T:.*]] = arith.muli %[[JO]], %[[C4:.*]] : index
// CHECK-NEXT:        %[[R:.*]] = arith.subi %{{.*}}, %[[T]] : index
// CHECK-NEXT:        %[[E:.*]] = arith.minsi %[[C4]], %[[R]] : index
// CHECK-NEXT:        loop.for %[[S:.*]] = %{{.*}} to %[[E]] step %{{.*}} {
// CHECK-NEXT:          %[[T2:.*]] = arith.muli %[[JO]], %[[C4]] : index
// CHECK-NEXT:          %[[COL:.*]] = arith.addi %[[T2]], %[[S]] : index
// CHECK-NEXT:          loop.block "scale" (%{{.*}} = %[[I]], %{{.*}} = %[[COL]]) [spatial, spatial] {
// CHECK:             loop.for %[[JI:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               loop.block "add"
// CHECK-NOT:     loop.block "scale"
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
