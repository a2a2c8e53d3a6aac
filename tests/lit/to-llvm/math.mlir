// RUN: mini-opt %s --split-input-file -p convert-math-to-llvm | filecheck %s

// CHECK-LABEL: func.func @intrinsics
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK-NEXT:    %[[E:.*]] = llvm.intr.exp(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %[[L:.*]] = llvm.intr.log10(%[[E]]) : (f32) -> f32
// CHECK-NEXT:    %[[R:.*]] = llvm.intr.round(%[[L]]) : (f32) -> f32
// CHECK-NEXT:    %[[F:.*]] = llvm.intr.fma(%[[R]], %[[X]], %[[X]]) : (f32, f32, f32) -> f32
// CHECK-NEXT:    func.return %[[F]] : f32
func.func @intrinsics(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  %1 = math.log10 %0 : f32
  %2 = math.round %1 : f32
  %3 = math.fma %2, %x, %x : f32
  func.return %3 : f32
}

// -----

// CHECK-LABEL: func.func @rsqrt
// CHECK-SAME:    (%[[V:.*]]: vector<4xf32>)
// CHECK-NEXT:    %[[S:.*]] = llvm.intr.sqrt(%[[V]]) : (vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(dense<1.000000e+00> : vector<4xf32>) : vector<4xf32>
// CHECK-NEXT:    %[[R:.*]] = llvm.fdiv %[[ONE]], %[[S]] : vector<4xf32>
// CHECK-NEXT:    func.return %[[R]] : vector<4xf32>
func.func @rsqrt(%v: vector<4xf32>) -> vector<4xf32> {
  %0 = math.rsqrt %v : vector<4xf32>
  func.return %0 : vector<4xf32>
}

// -----

// No LLVM intrinsic: a libm call, declared once.
// CHECK-LABEL: func.func @libm
// CHECK-SAME:    (%[[X:.*]]: f32, %[[D:.*]]: f64)
// CHECK-NEXT:    %[[T:.*]] = llvm.call @tanhf(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %[[U:.*]] = llvm.call @tanhf(%[[T]]) : (f32) -> f32
// CHECK-NEXT:    %[[E:.*]] = llvm.call @erf(%[[D]]) : (f64) -> f64
// CHECK-NEXT:    func.return %[[U]] : f32
// CHECK:       llvm.func @tanhf(f32) -> f32
// CHECK-NOT:   llvm.func @tanhf
// CHECK:       llvm.func @erf(f64) -> f64
func.func @libm(%x: f32, %d: f64) -> f32 {
  %0 = math.tanh %x : f32
  %1 = math.tanh %0 : f32
  %2 = math.erf %d : f64
  func.return %1 : f32
}

// -----

// A libm function on a vector: one call per lane.
// CHECK-LABEL: func.func @libm_vector
// CHECK-SAME:    (%[[V:.*]]: vector<2xf32>)
// CHECK-NEXT:    %[[U:.*]] = llvm.mlir.undef : vector<2xf32>
// CHECK-NEXT:    %[[C0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[E0:.*]] = llvm.extractelement %[[V]][%[[C0]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[R0:.*]] = llvm.call @erff(%[[E0]]) : (f32) -> f32
// CHECK-NEXT:    %[[V0:.*]] = llvm.insertelement %[[R0]], %[[U]][%[[C0]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[C1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[E1:.*]] = llvm.extractelement %[[V]][%[[C1]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[R1:.*]] = llvm.call @erff(%[[E1]]) : (f32) -> f32
// CHECK-NEXT:    %[[V1:.*]] = llvm.insertelement %[[R1]], %[[V0]][%[[C1]] : i64] : vector<2xf32>
// CHECK-NEXT:    func.return %[[V1]] : vector<2xf32>
func.func @libm_vector(%v: vector<2xf32>) -> vector<2xf32> {
  %0 = math.erf %v : vector<2xf32>
  func.return %0 : vector<2xf32>
}

// -----

// CHECK-LABEL: func.func @integer
// CHECK-SAME:    (%[[N:.*]]: i32, %[[X:.*]]: f32, %[[K:.*]]: i64)
// CHECK-NEXT:    %[[A:.*]] = "llvm.intr.abs"(%[[N]]) <{is_int_min_poison = false}> : (i32) -> i32
// CHECK-NEXT:    %[[T:.*]] = llvm.trunc %[[K]] : i64 to i32
// CHECK-NEXT:    %[[P:.*]] = llvm.intr.powi(%[[X]], %[[T]]) : (f32, i32) -> f32
// CHECK-NEXT:    func.return %[[A]], %[[P]] : i32, f32
func.func @integer(%n: i32, %x: f32, %k: i64) -> (i32, f32) {
  %0 = math.absi %n : i32
  %1 = math.fpowi %x, %k : f32, i64
  func.return %0, %1 : i32, f32
}
