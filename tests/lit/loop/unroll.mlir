// RUN: mini-opt %s -p 'loop-unroll{block=add loop=0 factor=2},loop-lower-unroll' | filecheck %s

// Dynamic trip count, factor 2: a loop of step 2 with two copies of the body and a scalar
// remainder loop from n - n mod 2.

// CHECK-LABEL: func.func @add
// CHECK:         %[[N:.*]] = mem.dim
// CHECK-NEXT:    %[[REM:.*]] = arith.remsi %[[N]], %[[C2:.*]] : index
// CHECK-NEXT:    %[[MAIN:.*]] = arith.subi %[[N]], %[[REM]] : index
// CHECK-NEXT:    loop.for %[[I:.*]] = %{{.*}} to %[[MAIN]] step %[[C2]] {
// CHECK-NEXT:      loop.block "add" (%{{.*}} = %[[I]]) [spatial] {
// CHECK:           }
// CHECK-NEXT:      %[[I1:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK-NEXT:      loop.block "add" (%{{.*}} = %[[I1]]) [spatial] {
// CHECK:         loop.for %{{.*}} = %[[MAIN]] to %[[N]] step %{{.*}} {
// CHECK-NEXT:      loop.block "add"
func.func @add(%a: memref<?xf32>, %b: memref<?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = mem.dim %a, 0 : memref<?xf32>
  loop.for %i = %c0 to %n step %c1 {
    loop.block "add" (%v = %i) [spatial] {
      %x = mem.load %a[%v] : memref<?xf32> -> f32
      %y = arith.addf %x, %x : f32
      mem.store %y, %b[%v] : f32, memref<?xf32>
    }
  }
  func.return
}
