// RUN: mini-opt %s -p convert-mem-to-llvm | filecheck %s

// Kernel memref args expand to (ptr noalias, i64 per `?`); load = row-major gep + aligned load.
// CHECK-LABEL: func.func @load_store
// CHECK-SAME:    (%[[A:.*]]: !llvm.ptr {llvm.noalias}, %[[N:.*]]: i64, %[[I:.*]]: index, %[[J:.*]]: index)
// CHECK-DAG:     %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK-DAG:     %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK-DAG:     %[[J64:.*]] = builtin.unrealized_conversion_cast %[[J]] : index to i64
// CHECK:         %[[R:.*]] = llvm.mul %[[I64]], %[[C4]] overflow<nsw> : i64
// CHECK-NEXT:    %[[L:.*]] = llvm.add %[[R]], %[[J64]] overflow<nsw> : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %[[A]][%[[L]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[V:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK:         llvm.store %[[V]], %{{.*}} {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
func.func @load_store(%a: memref<?x4xf32>, %i: index, %j: index) attributes {loop.kernel} {
  %v = mem.load %a[%i, %j] : memref<?x4xf32> -> vector<4xf32>
  mem.store %v, %a[%i, %j] : vector<4xf32>, memref<?x4xf32>
  func.return
}

// mem.dim: the i64 of the descriptor, or a constant for a static dim.
// CHECK-LABEL: func.func @dims
// CHECK-SAME:    (%[[A:.*]]: !llvm.ptr, %[[N:.*]]: i64) -> (index, index)
// CHECK-DAG:     %[[C:.*]] = llvm.mlir.constant(4) : i64
// CHECK-DAG:     %[[D0:.*]] = builtin.unrealized_conversion_cast %[[N]] : i64 to index
// CHECK:         %[[D1:.*]] = builtin.unrealized_conversion_cast %[[C]] : i64 to index
// CHECK-NEXT:    func.return %[[D0]], %[[D1]]
func.func @dims(%a: memref<?x4xf32>) -> (index, index) {
  %0 = mem.dim %a, 0 : memref<?x4xf32>
  %1 = mem.dim %a, 1 : memref<?x4xf32>
  func.return %0, %1 : index, index
}

// alloc: aligned_alloc with the size rounded up to the alignment; dealloc: free;
// view: the same pointer with new dims.
// CHECK-LABEL: func.func @alloc_view
// CHECK-SAME:    (%[[N:.*]]: index)
// CHECK-DAG:     %[[C64:.*]] = llvm.mlir.constant(64) : i64
// CHECK-DAG:     %[[MASK:.*]] = llvm.mlir.constant(-64) : i64
// CHECK-DAG:     %[[C63:.*]] = llvm.mlir.constant(63) : i64
// CHECK-DAG:     %[[C16:.*]] = llvm.mlir.constant(16) : i64
// CHECK:         %[[N64:.*]] = builtin.unrealized_conversion_cast %[[N]] : index to i64
// CHECK-NEXT:    %[[BYTES:.*]] = llvm.mul %[[N64]], %[[C16]] overflow<nsw> : i64
// CHECK-NEXT:    %[[B1:.*]] = llvm.add %[[BYTES]], %[[C63]] overflow<nsw> : i64
// CHECK-NEXT:    %[[RND:.*]] = llvm.and %[[B1]], %[[MASK]] : i64
// CHECK-NEXT:    %[[SIZE:.*]] = llvm.intr.umax(%[[RND]], %[[C64]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[P:.*]] = llvm.call @aligned_alloc(%[[C64]], %[[SIZE]]) : (i64, i64) -> !llvm.ptr
// CHECK:         llvm.call @free(%[[P]]) : (!llvm.ptr) -> ()
// CHECK-NOT:     mem.
func.func @alloc_view(%n: index) -> index {
  %m = mem.alloc(%n) : memref<?x4xf32>
  %c2 = arith.constant 2 : index
  %v = mem.view %m(%n) : memref<?x4xf32> -> memref<?x2x2xf32>
  %d = mem.dim %v, 0 : memref<?x2x2xf32>
  mem.dealloc %m : memref<?x4xf32>
  func.return %d : index
}

// A static alloca is hoisted to the entry block; the zero fill is a memset.
// CHECK-LABEL: func.func @alloca_fill
// CHECK:         %[[C8:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[S:.*]] = llvm.alloca %[[C8]] x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK:         cf.br
// CHECK:         llvm.call_intrinsic "llvm.memset.p0.i64"(%[[S]], %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i8, i64, i1) -> ()
func.func @alloca_fill(%n: index) {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  cf.br ^loop
^loop:
  %t = mem.alloca() : memref<2x4xf32>
  mem.fill %z, %t : f32, memref<2x4xf32>
  func.return
}

// Entry ABI: status i32 return, trailing results pointer, result slot [ptr, dim0, dim1].
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: !llvm.ptr, %[[XN:.*]]: i64, %[[RES:.*]]: !llvm.ptr) -> i32
// CHECK-DAG:     %[[OK:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG:     %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG:     %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK:         %[[RAW:.*]] = llvm.load %[[RES]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK:         %[[NULL:.*]] = llvm.icmp "eq" %[[RAW]], %{{.*}} : i64
// CHECK-NEXT:    llvm.cond_br %[[NULL]], ^[[ALLOC:.*]], ^[[CHECK:.*]]
// CHECK-NEXT:  ^[[CHECK]]:
// CHECK-NEXT:    %[[GIVEN:.*]] = llvm.load %[[RES]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         llvm.cond_br %{{.*}}, ^[[JOIN:.*]](%[[GIVEN]] : !llvm.ptr), ^[[FAIL:.*]]
// CHECK-NEXT:  ^[[FAIL]]:
// CHECK:         func.return %[[ONE]] : i32
// CHECK-NEXT:  ^[[ALLOC]]:
// CHECK:         %[[NEW:.*]] = llvm.call @aligned_alloc
// CHECK-NEXT:    %[[NEWI:.*]] = llvm.ptrtoint %[[NEW]] : !llvm.ptr to i64
// CHECK:         %[[ISNULL:.*]] = llvm.icmp "eq" %[[NEWI]], %{{.*}} : i64
// CHECK-NEXT:    llvm.cond_br %[[ISNULL]], ^[[OOM:.*]], ^[[PUBLISH:.*]]
// CHECK-NEXT:  ^[[PUBLISH]]:
// CHECK-NEXT:    llvm.store %[[NEW]], %[[RES]] {alignment = 8 : i64} : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.br ^[[JOIN]](%[[NEW]] : !llvm.ptr)
// CHECK-NEXT:  ^[[OOM]]:
// CHECK-NEXT:    func.return %[[TWO]] : i32
// CHECK-NEXT:  ^[[JOIN]](%[[BUF:.*]]: !llvm.ptr):
// CHECK:         llvm.memcpy
// CHECK-NEXT:    func.return %[[OK]] : i32
func.func @main(%x: memref<?x3xf32>) -> memref<?x3xf32> {
  func.return %x : memref<?x3xf32>
}
// A kernel whose output may take an input's buffer (loop.inplace, mem-reuse-inputs): that pair's
// pointers are not noalias, the other arguments' still are.
// CHECK-LABEL: func.func @inplace_pair
// CHECK-SAME:    (%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
func.func @inplace_pair(%w: memref<4xf32>, %r: memref<4xf32>, %y: memref<4xf32>) attributes {loop.kernel, loop.inplace = [[1 : i64, 2 : i64]]} {
  func.return
}


// Entry error paths free the buffers live at that point: the arena is null-checked (status 2),
// and the out= dims mismatch (status 1) and the result's own null check (status 2) free it.
// CHECK-LABEL: func.func @entry_errors_free_the_arena
// CHECK-DAG:     %[[S0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG:     %[[S1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG:     %[[S2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK:         %[[ARENA:.*]] = llvm.call @aligned_alloc
// CHECK-NEXT:    %[[AI:.*]] = llvm.ptrtoint %[[ARENA]] : !llvm.ptr to i64
// CHECK:         %[[ANULL:.*]] = llvm.icmp "eq" %[[AI]], %{{.*}} : i64
// CHECK-NEXT:    llvm.cond_br %[[ANULL]], ^[[AOOM:.*]], ^[[BODY:.*]]
// CHECK-NEXT:  ^[[AOOM]]:
// CHECK-NEXT:    func.return %[[S2]] : i32
// CHECK-NEXT:  ^[[BODY]]:
// CHECK:         llvm.cond_br %{{.*}}, ^{{.*}}(%{{.*}} : !llvm.ptr), ^[[FAIL:.*]]
// CHECK-NEXT:  ^[[FAIL]]:
// CHECK-NEXT:    llvm.store
// CHECK-NEXT:    llvm.call @free(%[[ARENA]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    func.return %[[S1]] : i32
// CHECK:         llvm.cond_br %{{.*}}, ^[[ROOM:.*]], ^{{.*}}
// CHECK:       ^[[ROOM]]:
// CHECK-NEXT:    llvm.call @free(%[[ARENA]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    func.return %[[S2]] : i32
// CHECK:         llvm.call @free(%[[ARENA]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    func.return %[[S0]] : i32
// CHECK:       llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK:       llvm.func @free(!llvm.ptr)
func.func @entry_errors_free_the_arena(%x: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = mem.dim %x, 0 : memref<?xf32>
  %a = mem.arena(%n) : memref<?xi8>
  %t = mem.slot %a[%c0] (%n) : memref<?xi8> -> memref<?xf32>
  mem.copy %x, %t : memref<?xf32>, memref<?xf32>
  %r = mem.alloc(%n) {mem.result_slot = 0 : i64} : memref<?xf32>
  mem.copy %t, %r : memref<?xf32>, memref<?xf32>
  mem.dealloc %a : memref<?xi8>
  func.return %r : memref<?xf32>
}

