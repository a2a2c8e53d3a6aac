// RUN: mini-opt %s --split-input-file -p 'loop-split{block=add loop=0 factors=4}' | filecheck %s

// Static extent divisible by the factor: no guard.

// CHECK-LABEL: func.func @divisible
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK:         loop.for %[[IO:.*]] = %{{.*}} to %[[C2]] step %{{.*}} {
// CHECK-NEXT:      loop.for %[[II:.*]] = %{{.*}} to %[[C4]] step %{{.*}} {
// CHECK-NEXT:        %[[T:.*]] = arith.muli %[[IO]], %[[C4]] : index
// CHECK-NEXT:        %[[I:.*]] = arith.addi %[[T]], %[[II]] : index
// CHECK-NEXT:        loop.block "add" (%{{.*}} = %[[I]]) [spatial] {
func.func @divisible(%a: memref<8xf32>, %b: memref<8xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  loop.for %i = %c0 to %c8 step %c1 {
    loop.block "add" (%v = %i) [spatial] {
      %x = mem.load %a[%v] : memref<8xf32> -> f32
      %y = arith.addf %x, %x : f32
      mem.store %y, %b[%v] : f32, memref<8xf32>
    }
  }
  func.return
}

// -----

// Dynamic extent: ceildiv outer loop at kernel level, inner loop bounded by min(4, n - io*4).

// CHECK-LABEL: func.func @dynamic
// CHECK:         %[[N:.*]] = mem.dim
// CHECK:         %[[NO:.*]] = arith.ceildivsi %[[N]], %[[C4:.*]] : index
// CHECK-NEXT:    loop.for %[[IO:.*]] = %{{.*}} to %[[NO]] step %{{.*}} {
// CHECK-NEXT:      %[[T:.*]] = arith.muli %[[IO]], %[[C4]] : index
// CHECK-NEXT:      %[[R:.*]] = arith.subi %[[N]], %[[T]] : index
// CHECK-NEXT:      %[[G:.*]] = arith.minsi %[[C4]], %[[R]] : index
// CHECK-NEXT:      loop.for %[[II:.*]] = %{{.*}} to %[[G]] step %{{.*}} {
// CHECK-NEXT:        %[[T2:.*]] = arith.muli %[[IO]], %[[C4]] : index
// CHECK-NEXT:        %[[I:.*]] = arith.addi %[[T2]], %[[II]] : index
// CHECK-NEXT:        loop.block "add" (%{{.*}} = %[[I]]) [spatial] {
func.func @dynamic(%a: memref<?xf32>, %b: memref<?xf32>) attributes {loop.kernel} {
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
