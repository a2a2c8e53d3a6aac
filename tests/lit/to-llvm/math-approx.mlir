// RUN: mini-opt %s --split-input-file -p convert-math-to-polynomials | filecheck %s
// RUN: mini-opt %s --split-input-file -p 'convert-math-to-polynomials{exp=false tanh=false erf=false}' | filecheck %s --check-prefix=OFF

// exp: clamp (a NaN passes), n rounded by adding 1.5 * 2^23 (its bits give k = n + 126: no
// roundeven, no fptosi), Cody-Waite reduction, 2 exp(r) by Horner's rule, one exponent scaling by
// 2^(n-1) for normal results (n >= -125), the subnormal results built as integer bits (n <= -126,
// an unsigned test that a NaN's bits fail); no NaN select.
// CHECK-LABEL: func.func @exp
// CHECK-SAME:    (%[[X:.*]]: vector<8xf32>)
// CHECK-NOT:     math.exp
// CHECK-NOT:     llvm.fcmp "uno"
// CHECK:         %[[MAGIC:.*]] = llvm.mlir.constant(dense<0x4B400000> : vector<8xf32>) : vector<8xf32>
// CHECK:         %[[NF:.*]] = llvm.intr.fmuladd(%{{.*}}, %{{.*}}, %[[MAGIC]])
// CHECK-NEXT:    %[[N:.*]] = llvm.fsub %[[NF]], %[[MAGIC]] : vector<8xf32>
// CHECK:         %[[BITS:.*]] = llvm.bitcast %[[NF]] : vector<8xf32> to vector<8xi32>
// CHECK:         %[[K:.*]] = llvm.sub %[[BITS]], %{{.*}} : vector<8xi32>
// CHECK:         %[[NI:.*]] = llvm.intr.smax(%[[K]], %{{.*}}) : (vector<8xi32>, vector<8xi32>) -> vector<8xi32>
// CHECK:         llvm.shl %[[NI]]
// CHECK-NEXT:    llvm.bitcast %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NEXT:    %[[YN:.*]] = llvm.fmul %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:         %[[T:.*]] = llvm.add %[[K]], %{{.*}} : vector<8xi32>
// CHECK:         llvm.intr.smin(%[[T]], %{{.*}})
// CHECK:         %[[RE:.*]] = llvm.intr.roundeven(%{{.*}}) : (vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    %[[M:.*]] = llvm.fptosi %[[RE]] : vector<8xf32> to vector<8xi32>
// CHECK-NEXT:    %[[TINY:.*]] = llvm.icmp "ule" %[[T]], %{{.*}} : vector<8xi32>
// CHECK-NEXT:    %[[SUB:.*]] = llvm.bitcast %[[M]] : vector<8xi32> to vector<8xf32>
// CHECK-NEXT:    %[[Y:.*]] = llvm.select %[[TINY]], %[[SUB]], %[[YN]] : vector<8xi1>, vector<8xf32>
// CHECK-NEXT:    func.return %[[Y]] : vector<8xf32>
// OFF-LABEL: func.func @exp
// OFF-NEXT:    math.exp
func.func @exp(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.exp %x : vector<8xf32>
  func.return %0 : vector<8xf32>
}

// -----

// An exp marked loop.exp_clamped (tanh-GELU's x / (1 + exp(a))) is the inner exp: clamped to
// [-86, 88], one scaling, no subnormal path.
// CHECK-LABEL: func.func @exp_clamped
// CHECK-NOT:     math.exp
// CHECK-NOT:     llvm.intr.smin
// CHECK-NOT:     llvm.intr.smax
// CHECK:         llvm.shl
// CHECK-NEXT:    llvm.bitcast %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NEXT:    %[[Y:.*]] = llvm.fmul %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT:    func.return %[[Y]] : vector<8xf32>
// OFF-LABEL: func.func @exp_clamped
// OFF-NEXT:    math.exp
func.func @exp_clamped(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.exp %x {loop.exp_clamped} : vector<8xf32>
  func.return %0 : vector<8xf32>
}

// -----

// tanh: the small-|x| polynomial and (1 - e)/(1 + e) with e from the inner exp (clamped, one
// exponent scaling, no subnormal path: no smin), one select, NaN restored, then the sign of x.
// CHECK-LABEL: func.func @tanh
// CHECK-SAME:    (%[[X:.*]]: vector<16xf32>)
// CHECK:         llvm.intr.fabs(%[[X]])
// CHECK-NOT:     llvm.intr.smin
// CHECK:         llvm.fdiv
// CHECK:         llvm.select %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK:         %[[NAN:.*]] = llvm.fcmp "uno" %[[X]], %[[X]] : vector<16xf32>
// CHECK-NEXT:    %[[Y:.*]] = llvm.select %[[NAN]], %[[X]], %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK-NEXT:    %[[R:.*]] = llvm.intr.copysign(%[[Y]], %[[X]]) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK-NEXT:    func.return %[[R]]
// OFF-LABEL: func.func @tanh
// OFF-NEXT:    math.tanh
func.func @tanh(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.tanh %x : vector<16xf32>
  func.return %0 : vector<16xf32>
}

// -----

// erf: three ranges chosen by selects, NaN restored, sign of x.
// CHECK-LABEL: func.func @erf
// CHECK-SAME:    (%[[X:.*]]: vector<4xf32>)
// CHECK-NOT:     math.erf
// CHECK-NOT:     llvm.intr.smin
// CHECK:         llvm.intr.fmuladd
// CHECK:         llvm.fcmp "olt" %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:         llvm.fcmp "uno" %[[X]], %[[X]] : vector<4xf32>
// CHECK:         llvm.intr.copysign
// CHECK-NEXT:    func.return
func.func @erf(%x: vector<4xf32>) -> vector<4xf32> {
  %0 = math.erf %x : vector<4xf32>
  func.return %0 : vector<4xf32>
}

// -----

// f64 (vector or scalar) is left to convert-math-to-llvm (libm / intrinsics).
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT:    math.exp %{{.*}} : f64
// CHECK-NEXT:    math.tanh %{{.*}} : vector<4xf64>
// CHECK-NEXT:    math.erf %{{.*}} : f64
func.func @untouched(%s: f64, %d: vector<4xf64>) -> (f64, vector<4xf64>, f64) {
  %0 = math.exp %s : f64
  %1 = math.tanh %d : vector<4xf64>
  %2 = math.erf %s : f64
  func.return %0, %1, %2 : f64, vector<4xf64>, f64
}

// -----

// A scalar f32 (a vector loop's remainder) gets the same polynomial on f32 (no expf call).
// CHECK-LABEL: func.func @scalar_exp
// CHECK-NOT:     math.exp
// CHECK:         %{{.*}} = llvm.intr.roundeven(%{{.*}}) : (f32) -> f32
// CHECK:         %{{.*}} = llvm.fptosi %{{.*}} : f32 to i32
// CHECK:         %{{.*}} = llvm.bitcast %{{.*}} : i32 to f32
// CHECK:         func.return
func.func @scalar_exp(%s: f32) -> f32 {
  %0 = math.exp %s : f32
  func.return %0 : f32
}
