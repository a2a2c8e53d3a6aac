// RUN: mini-opt %s -p convert-loop-to-llvm,convert-mem-to-llvm | filecheck %s

// A kernel's dynamic-shape access is addressed as a static one is: the strides' products of
// dynamic dims built once at entry, each index * stride once per function (hoisted next to the
// index's definition), constant indices folded into the stride terms, and one shared base gep
// per block with the constant part in a second gep: not a Horner chain of mul/add per access.
// CHECK-LABEL: func.func @k
// CHECK-SAME:    (%[[A:.*]]: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %[[D1:.*]]: i64, %[[D2:.*]]: i64)
// CHECK-DAG:     %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK-DAG:     %[[P12:.*]] = llvm.mul %[[D1]], %[[D2]] overflow<nsw> : i64
// CHECK:       ^bb1(%[[J:.*]]: index):
// CHECK-NEXT:    %[[J64:.*]] = builtin.unrealized_conversion_cast %[[J]] : index to i64
// CHECK-NEXT:    %[[S1:.*]] = llvm.mul %[[J64]], %[[D2]] overflow<nsw> : i64
// CHECK-NEXT:    %[[J4:.*]] = llvm.mul %[[J64]], %[[C4]] overflow<nsw> : i64
// CHECK-NEXT:    %[[S0:.*]] = llvm.mul %[[J4]], %[[P12]] overflow<nsw> : i64
// CHECK-NOT:     llvm.mul
// CHECK:       ^bb2:
// CHECK-NEXT:    %[[T:.*]] = llvm.add %[[S0]], %[[S1]] overflow<nsw> : i64
// CHECK-NEXT:    %[[B:.*]] = llvm.getelementptr inbounds %[[A]][%[[T]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr inbounds %[[B]][5] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[V:.*]] = llvm.load %[[P0]]
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr inbounds %[[B]][6] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[V]], %[[P1]]
// CHECK-NOT:     llvm.mul
// CHECK:         func.return
func.func @k(%a: memref<?x4x?x?xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %n = mem.dim %a, 0 : memref<?x4x?x?xf32>
  loop.for %j = %c0 to %n step %c1 {
    %v = mem.load %a[%j, %c0, %j, %c5] : memref<?x4x?x?xf32> -> f32
    mem.store %v, %a[%j, %c0, %j, %c6] : f32, memref<?x4x?x?xf32>
  }
  func.return
}
