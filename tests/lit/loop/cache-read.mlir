// RUN: mini-opt %s -p 'loop-split{block=matmul loop=1 factors=0,8},loop-cache-read{block=matmul read=1 loop=1 copy=B_pack}' | filecheck %s

// B's 5 x 8 column tile (K = 5 static, columns guarded by min(8, n - jo*8)) is copied into a
// packed local buffer at the top of the jo loop; the matmul block reads it at (k, j - jo*8).

// CHECK-LABEL: func.func @mm
// CHECK-NEXT:    %[[P:.*]] = mem.alloca() {loop.private} : memref<5x8xf32>
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      loop.for %[[JO:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[LO:.*]] = arith.muli %[[JO]], %{{.*}} : index
// CHECK:             loop.for %[[A:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               loop.for %[[B:.*]] = %{{.*}} to %[[E:.*]] step %{{.*}} {
// CHECK-NEXT:            loop.block "B_pack" (%[[VA:.*]] = %[[A]], %[[VB:.*]] = %[[B]]) [spatial, spatial] {
// CHECK-NEXT:              %[[C:.*]] = arith.addi %[[LO]], %[[VB]] : index
// CHECK-NEXT:              %[[V:.*]] = mem.load %{{.*}}[%[[VA]], %[[C]]] : memref<5x?xf32> -> f32
// CHECK-NEXT:              mem.store %[[V]], %[[P]][%[[VA]], %[[VB]]] : f32, memref<5x8xf32>
// CHECK:             loop.block "matmul"
// CHECK:               %[[JJ:.*]] = arith.subi %{{.*}}, %[[LO]] : index
// CHECK-NEXT:          %{{.*}} = mem.load %[[P]][%[[VR:.*]], %[[JJ]]] : memref<5x8xf32> -> f32
func.func @mm(%a: memref<?x5xf32>, %b: memref<5x?xf32>, %c: memref<?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %m = mem.dim %a, 0 : memref<?x5xf32>
  %n = mem.dim %b, 1 : memref<5x?xf32>
  loop.for %i = %c0 to %m step %c1 {
    loop.for %j = %c0 to %n step %c1 {
      loop.for %r = %c0 to %c5 step %c1 {
        loop.block "matmul" (%vi = %i, %vj = %j, %vr = %r) [spatial, spatial, reduce] {
          %x = mem.load %a[%vi, %vr] : memref<?x5xf32> -> f32
          %y = mem.load %b[%vr, %vj] : memref<5x?xf32> -> f32
          %acc = mem.load %c[%vi, %vj] : memref<?x?xf32> -> f32
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %acc, %p : f32
          mem.store %s, %c[%vi, %vj] : f32, memref<?x?xf32>
        }
      }
    }
  }
  func.return
}
