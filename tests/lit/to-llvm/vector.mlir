// RUN: mini-opt %s --split-input-file -p convert-vector-to-llvm | filecheck %s

// A scalar splat: insert into lane 0 of an undef vector, then shuffle lane 0 everywhere.
// CHECK-LABEL: func.func @broadcast_f32
// CHECK-SAME:    (%[[S:.*]]: f32)
// CHECK-NEXT:    %[[U:.*]] = llvm.mlir.undef : vector<16xf32>
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[I:.*]] = llvm.insertelement %[[S]], %[[U]][%[[Z]] : i32] : vector<16xf32>
// CHECK-NEXT:    %[[V:.*]] = llvm.shufflevector %[[I]], %[[U]] [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] : vector<16xf32>
// CHECK-NEXT:    func.return %[[V]] : vector<16xf32>
func.func @broadcast_f32(%s: f32) -> vector<16xf32> {
  %v = vector.broadcast %s : f32 to vector<16xf32>
  func.return %v : vector<16xf32>
}

// -----

// Integer elements and another width.
// CHECK-LABEL: func.func @broadcast_i32
// CHECK:         llvm.insertelement %{{.*}}, %{{.*}}[%{{.*}} : i32] : vector<8xi32>
// CHECK-NEXT:    llvm.shufflevector %{{.*}}, %{{.*}} [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xi32>
// CHECK-NOT:     vector.broadcast
func.func @broadcast_i32(%s: i32) -> vector<8xi32> {
  %v = vector.broadcast %s : i32 to vector<8xi32>
  func.return %v : vector<8xi32>
}

// -----

// A 1-lane vector is broadcast by a shuffle alone; the same type is the value itself.
// CHECK-LABEL: func.func @broadcast_vector
// CHECK-SAME:    (%[[A:.*]]: vector<1xf32>, %[[B:.*]]: vector<4xf32>)
// CHECK-NEXT:    %[[V:.*]] = llvm.shufflevector %[[A]], %[[A]] [0, 0, 0, 0] : vector<1xf32>
// CHECK-NEXT:    func.return %[[V]], %[[B]] : vector<4xf32>, vector<4xf32>
func.func @broadcast_vector(%a: vector<1xf32>, %b: vector<4xf32>) -> (vector<4xf32>, vector<4xf32>) {
  %v = vector.broadcast %a : vector<1xf32> to vector<4xf32>
  %w = vector.broadcast %b : vector<4xf32> to vector<4xf32>
  func.return %v, %w : vector<4xf32>, vector<4xf32>
}

// -----

// CHECK-LABEL: func.func @fma
// CHECK-SAME:    (%[[A:.*]]: vector<8xf32>, %[[B:.*]]: vector<8xf32>, %[[C:.*]]: vector<8xf32>)
// CHECK-NEXT:    %[[R:.*]] = llvm.intr.fma(%[[A]], %[[B]], %[[C]]) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    func.return %[[R]] : vector<8xf32>
func.func @fma(%a: vector<8xf32>, %b: vector<8xf32>, %c: vector<8xf32>) -> vector<8xf32> {
  %r = vector.fma %a, %b, %c : vector<8xf32>
  func.return %r : vector<8xf32>
}
