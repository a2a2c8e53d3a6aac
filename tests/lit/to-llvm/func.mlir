// RUN: mini-opt %s --split-input-file -p convert-func-to-llvm | filecheck %s

// CHECK-LABEL: llvm.func @scalars
// CHECK-SAME:    (%[[I:.*]]: i64, %[[V:.*]]: vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    %[[R:.*]] = llvm.call @callee(%[[V]]) : (vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    llvm.return %[[R]] : vector<8xf32>
// CHECK:       llvm.func @callee(vector<8xf32>) -> vector<8xf32>
func.func @scalars(%i: index, %v: vector<8xf32>) -> vector<8xf32> {
  %0 = func.call @callee(%v) : (vector<8xf32>) -> vector<8xf32>
  func.return %0 : vector<8xf32>
}
func.func private @callee(vector<8xf32>) -> vector<8xf32>

// -----

// Several results travel in a struct.
// CHECK-LABEL: llvm.func internal @pair
// CHECK-SAME:    (%[[A:.*]]: f32, %[[B:.*]]: i32) -> !llvm.struct<(f32, i32)>
// CHECK-NEXT:    %[[U:.*]] = llvm.mlir.undef : !llvm.struct<(f32, i32)>
// CHECK-NEXT:    %[[S0:.*]] = llvm.insertvalue %[[A]], %[[U]][0] : !llvm.struct<(f32, i32)>
// CHECK-NEXT:    %[[S1:.*]] = llvm.insertvalue %[[B]], %[[S0]][1] : !llvm.struct<(f32, i32)>
// CHECK-NEXT:    llvm.return %[[S1]] : !llvm.struct<(f32, i32)>
// CHECK-LABEL: llvm.func @use_pair
// CHECK-NEXT:    %[[P:.*]] = llvm.call @pair(%{{.*}}, %{{.*}}) : (f32, i32) -> !llvm.struct<(f32, i32)>
// CHECK-NEXT:    %[[X:.*]] = llvm.extractvalue %[[P]][0] : !llvm.struct<(f32, i32)>
// CHECK-NEXT:    %[[Y:.*]] = llvm.extractvalue %[[P]][1] : !llvm.struct<(f32, i32)>
// CHECK-NEXT:    llvm.return %[[X]] : f32
func.func private @pair(%a: f32, %b: i32) -> (f32, i32) {
  func.return %a, %b : f32, i32
}
func.func @use_pair(%a: f32, %b: i32) -> f32 {
  %x, %y = func.call @pair(%a, %b) : (f32, i32) -> (f32, i32)
  func.return %x : f32
}

// -----

// Argument attributes carry over.
// CHECK-LABEL: llvm.func @noalias
// CHECK-SAME:    (%{{.*}}: !llvm.ptr {llvm.noalias})
func.func @noalias(%p: !llvm.ptr {llvm.noalias}) {
  func.return
}
