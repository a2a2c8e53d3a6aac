// RUN: mini-opt %s | mini-opt | filecheck %s
// RUN: mini-opt %s --mlir-print-op-generic | mini-opt | filecheck %s
// Vector comparisons give vectors of i1 and select takes them, as in MLIR's arith (xDSL 0.74
// declares both as scalar i1: dialects/_xdsl_compat.py widens them).

// CHECK-LABEL: func.func @vector_select
// CHECK-NEXT:    %[[C:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT:    %[[I:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : vector<8xi64>
// CHECK-NEXT:    %[[S:.*]] = arith.select %[[C]], %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK-NEXT:    %{{.*}} = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    func.return %[[S]], %[[I]]
func.func @vector_select(%a: vector<8xf32>, %b: vector<8xf32>, %i: vector<8xi64>, %s: i1, %x: f32) -> (vector<8xf32>, vector<8xi1>) {
  %c = arith.cmpf olt, %a, %b : vector<8xf32>
  %ci = arith.cmpi slt, %i, %i : vector<8xi64>
  %r = arith.select %c, %a, %b : vector<8xi1>, vector<8xf32>
  %y = arith.select %s, %x, %x : f32
  func.return %r, %ci : vector<8xf32>, vector<8xi1>
}
