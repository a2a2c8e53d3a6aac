// RUN: mini-opt %s | filecheck %s
// RUN: mini-opt %s | mini-opt | filecheck %s
// RUN: mini-opt %s --print-op-generic | mini-opt | filecheck %s

// CHECK-LABEL: func.func @alloc_load_store
// CHECK-SAME:    (%[[N:.*]]: index, %[[I:.*]]: index, %[[V:.*]]: f32)
// CHECK-NEXT:    %[[M:.*]] = mem.alloc(%[[N]]) : memref<?x8xf32>
// CHECK-NEXT:    %[[M2:.*]] = mem.alloc() {alignment = 128 : i64} : memref<4x8xf32>
// CHECK-NEXT:    %[[S:.*]] = mem.alloca() : memref<8xf32>
// CHECK-NEXT:    %[[X:.*]] = mem.load %[[M]][%[[I]], %[[I]]] : memref<?x8xf32> -> f32
// CHECK-NEXT:    %[[W:.*]] = mem.load %[[M]][%[[I]], %[[I]]] : memref<?x8xf32> -> vector<8xf32>
// CHECK-NEXT:    mem.store %[[X]], %[[M2]][%[[I]], %[[I]]] : f32, memref<4x8xf32>
// CHECK-NEXT:    mem.store %[[W]], %[[S]][%[[I]]] : vector<8xf32>, memref<8xf32>
// CHECK-NEXT:    mem.fill %[[V]], %[[S]] : f32, memref<8xf32>
// CHECK-NEXT:    mem.dealloc %[[M]] : memref<?x8xf32>
// CHECK-NEXT:    mem.dealloc %[[M2]] : memref<4x8xf32>
// CHECK-NEXT:    func.return
func.func @alloc_load_store(%n: index, %i: index, %v: f32) {
  %m = mem.alloc(%n) {alignment = 64} : memref<?x8xf32>
  %m2 = mem.alloc() {alignment = 128} : memref<4x8xf32>
  %s = mem.alloca() : memref<8xf32>
  %x = mem.load %m[%i, %i] : memref<?x8xf32> -> f32
  %w = mem.load %m[%i, %i] : memref<?x8xf32> -> vector<8xf32>
  mem.store %x, %m2[%i, %i] : f32, memref<4x8xf32>
  mem.store %w, %s[%i] : vector<8xf32>, memref<8xf32>
  mem.fill %v, %s : f32, memref<8xf32>
  mem.dealloc %m : memref<?x8xf32>
  mem.dealloc %m2 : memref<4x8xf32>
  func.return
}

// CHECK-LABEL: func.func @views
// CHECK-SAME:    (%[[M:.*]]: memref<?x4xf32>, %[[T:.*]]: memref<16xf32>, %[[U:.*]]: memref<?x4xf32>)
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[M]], 0 : memref<?x4xf32>
// CHECK-NEXT:    %[[V:.*]] = mem.view %[[M]](%[[N]]) : memref<?x4xf32> -> memref<?x2x2xf32>
// CHECK-NEXT:    %[[V2:.*]] = mem.view %[[T]] : memref<16xf32> -> memref<2x2x4xf32>
// CHECK-NEXT:    %[[Z:.*]] = mem.view %[[M]] : memref<?x4xf32> -> memref<8xf32>
// CHECK-NEXT:    mem.copy %[[M]], %[[U]] : memref<?x4xf32>, memref<?x4xf32>
// CHECK-NEXT:    func.return
func.func @views(%m: memref<?x4xf32>, %t: memref<16xf32>, %u: memref<?x4xf32>) {
  %n = mem.dim %m, 0 : memref<?x4xf32>
  %v = mem.view %m(%n) : memref<?x4xf32> -> memref<?x2x2xf32>
  %v2 = mem.view %t : memref<16xf32> -> memref<2x2x4xf32>
  %z = mem.view %m : memref<?x4xf32> -> memref<8xf32>
  mem.copy %m, %u : memref<?x4xf32>, memref<?x4xf32>
  func.return
}

// A contiguous part of a buffer (mem-concat-in-place's output parts), offset in elements.
// CHECK-LABEL: func.func @subrange
// CHECK-SAME:    (%[[Y:.*]]: memref<1x5x4xf32>, %[[O:.*]]: index)
// CHECK-NEXT:    %[[P:.*]] = mem.subrange %[[Y]][%[[O]]] : memref<1x5x4xf32> -> memref<1x2x4xf32>
// CHECK-NEXT:    func.return
func.func @subrange(%y: memref<1x5x4xf32>, %o: index) {
  %p = mem.subrange %y[%o] : memref<1x5x4xf32> -> memref<1x2x4xf32>
  func.return
}

// Memory planning's output: one arena, typed slots at byte offsets.

// CHECK-LABEL: func.func @arena
// CHECK-SAME:    (%[[SIZE:.*]]: index, %[[N:.*]]: index)
// CHECK-NEXT:    %[[A:.*]] = mem.arena(%[[SIZE]]) : memref<?xi8>
// CHECK-NEXT:    %[[B:.*]] = mem.arena : memref<4096xi8>
// CHECK-NEXT:    %[[OFF:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %{{.*}} = mem.slot %[[A]][%[[OFF]]](%[[N]]) : memref<?xi8> -> memref<?x4xf32>
// CHECK-NEXT:    %{{.*}} = mem.slot %[[B]][%[[OFF]]] : memref<4096xi8> -> memref<4x4xf16>
// CHECK-NEXT:    mem.dealloc %[[A]] : memref<?xi8>
func.func @arena(%size: index, %n: index) {
  %a = mem.arena(%size) : memref<?xi8>
  %b = mem.arena : memref<4096xi8>
  %off = arith.constant 256 : index
  %s0 = mem.slot %a[%off](%n) : memref<?xi8> -> memref<?x4xf32>
  %s1 = mem.slot %b[%off] : memref<4096xi8> -> memref<4x4xf16>
  mem.dealloc %a : memref<?xi8>
  func.return
}
