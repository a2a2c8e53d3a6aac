// RUN: mini-opt %s --split-input-file -p convert-arith-to-llvm | filecheck %s
// RUN: mini-opt %s --split-input-file -p 'convert-arith-to-llvm{fast-math=true}' | filecheck %s --check-prefix=FAST

// CHECK-LABEL: func.func @float_ops
// CHECK-SAME:    (%[[A:.*]]: f32, %[[B:.*]]: f32)
// CHECK-NEXT:    %[[C:.*]] = llvm.mlir.constant(1.500000e+00 : f32) : f32
// CHECK-NEXT:    %[[S:.*]] = llvm.fadd %[[A]], %[[C]] : f32
// CHECK-NEXT:    %[[M:.*]] = llvm.fmul %[[S]], %[[B]] : f32
// CHECK-NEXT:    %[[N:.*]] = llvm.fneg %[[M]] : f32
// CHECK-NEXT:    %[[X:.*]] = llvm.intr.maximum(%[[N]], %[[A]]) {fastmathFlags = #llvm.fastmath<nsz>} : (f32, f32) -> f32
// CHECK-NEXT:    %[[Y:.*]] = llvm.intr.minnum(%[[X]], %[[B]]) : (f32, f32) -> f32
// CHECK-NEXT:    func.return %[[Y]] : f32
// FAST-LABEL: func.func @float_ops
// FAST:         llvm.fadd %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// FAST:         llvm.fmul %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
func.func @float_ops(%a: f32, %b: f32) -> f32 {
  %c = arith.constant 1.5 : f32
  %0 = arith.addf %a, %c : f32
  %1 = arith.mulf %0, %b : f32
  %2 = arith.negf %1 : f32
  %3 = arith.maximumf %2, %a : f32
  %4 = arith.minnumf %3, %b : f32
  func.return %4 : f32
}

// -----

// Index values become i64; an index function argument is cast at the boundary.
// CHECK-LABEL: func.func @index_ops
// CHECK-SAME:    (%[[I:.*]]: index)
// CHECK-DAG:     %[[II:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// CHECK-DAG:     %[[C:.*]] = llvm.mlir.constant(4) : i64
// CHECK:         %[[M:.*]] = llvm.mul %[[II]], %[[C]] : i64
// CHECK-NEXT:    %[[T:.*]] = llvm.trunc %[[M]] : i64 to i32
// CHECK-NEXT:    func.return %[[T]] : i32
func.func @index_ops(%i: index) -> i32 {
  %c = arith.constant 4 : index
  %0 = arith.muli %i, %c : index
  %1 = arith.index_cast %0 : index to i32
  func.return %1 : i32
}

// -----

// CHECK-LABEL: func.func @vector_ops
// CHECK-SAME:    (%[[V:.*]]: vector<8xf32>)
// CHECK-NEXT:    %[[C:.*]] = llvm.mlir.constant(dense<2.000000e+00> : vector<8xf32>) : vector<8xf32>
// CHECK-NEXT:    %[[M:.*]] = llvm.fmul %[[V]], %[[C]] : vector<8xf32>
// CHECK-NEXT:    %[[X:.*]] = llvm.intr.maximum(%[[M]], %[[C]]) {fastmathFlags = #llvm.fastmath<nsz>} : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    func.return %[[X]] : vector<8xf32>
func.func @vector_ops(%v: vector<8xf32>) -> vector<8xf32> {
  %c = arith.constant dense<2.0> : vector<8xf32>
  %0 = arith.mulf %v, %c : vector<8xf32>
  %1 = arith.maximumf %0, %c : vector<8xf32>
  func.return %1 : vector<8xf32>
}

// -----

// CHECK-LABEL: func.func @int_ops
// CHECK-SAME:    (%[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK-NEXT:    %[[X:.*]] = llvm.intr.smax(%[[A]], %[[B]]) : (i32, i32) -> i32
// CHECK-NEXT:    %[[Y:.*]] = llvm.lshr %[[X]], %[[B]] : i32
// CHECK-NEXT:    %[[P:.*]] = llvm.icmp "ule" %[[Y]], %[[A]] : i32
// CHECK-NEXT:    %[[S:.*]] = llvm.select %[[P]], %[[Y]], %[[A]] : i1, i32
// CHECK-NEXT:    %[[F:.*]] = llvm.uitofp %[[S]] : i32 to f32
// CHECK-NEXT:    %[[G:.*]] = llvm.fptosi %[[F]] : f32 to i64
// CHECK-NEXT:    func.return %[[G]] : i64
func.func @int_ops(%a: i32, %b: i32) -> i64 {
  %0 = arith.maxsi %a, %b : i32
  %1 = arith.shrui %0, %b : i32
  %2 = arith.cmpi ule, %1, %a : i32
  %3 = arith.select %2, %1, %a : i32
  %4 = arith.uitofp %3 : i32 to f32
  %5 = arith.fptosi %4 : f32 to i64
  func.return %5 : i64
}

// -----

// floordivsi: q = a / b, minus one when the remainder is non-zero and has the sign of -b.
// CHECK-LABEL: func.func @floordiv
// CHECK-SAME:    (%[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK-NEXT:    %[[Q:.*]] = llvm.sdiv %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[R:.*]] = llvm.srem %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[O:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    %[[NZ:.*]] = llvm.icmp "ne" %[[R]], %[[Z]] : i32
// CHECK-NEXT:    %[[X:.*]] = llvm.xor %[[R]], %[[B]] : i32
// CHECK-NEXT:    %[[NEG:.*]] = llvm.icmp "slt" %[[X]], %[[Z]] : i32
// CHECK-NEXT:    %[[C:.*]] = llvm.and %[[NZ]], %[[NEG]] : i1
// CHECK-NEXT:    %[[QM:.*]] = llvm.sub %[[Q]], %[[O]] : i32
// CHECK-NEXT:    %[[RES:.*]] = llvm.select %[[C]], %[[QM]], %[[Q]] : i1, i32
// CHECK-NEXT:    func.return %[[RES]] : i32
func.func @floordiv(%a: i32, %b: i32) -> i32 {
  %0 = arith.floordivsi %a, %b : i32
  func.return %0 : i32
}
