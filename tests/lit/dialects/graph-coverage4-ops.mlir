// RUN: mini-opt %s | filecheck %s
// RUN: mini-opt %s | mini-opt | filecheck %s
// RUN: mini-opt %s --print-op-generic | mini-opt | filecheck %s

// The ops of dialects/_graph_coverage4.py in their custom syntax.

// CHECK-LABEL: func.func @nms_select
// CHECK-NEXT:    %{{.*}} = graph.nms_select %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x6x6xi1>, tensor<?x2x6xi64>, tensor<?x2x6xi1>, tensor<i64>) -> tensor<?x2x6xi1>
func.func @nms_select(%s: tensor<?x6x6xi1>, %o: tensor<?x2x6xi64>, %v: tensor<?x2x6xi1>, %m: tensor<i64>) -> tensor<?x2x6xi1> {
  %0 = graph.nms_select %s, %o, %v, %m : (tensor<?x6x6xi1>, tensor<?x2x6xi64>, tensor<?x2x6xi1>, tensor<i64>) -> tensor<?x2x6xi1>
  func.return %0 : tensor<?x2x6xi1>
}

// CHECK-LABEL: func.func @bitcast
// CHECK-NEXT:    %{{.*}} = graph.bitcast %{{.*}} : tensor<?x3xf32> -> tensor<?x3xi32>
func.func @bitcast(%x: tensor<?x3xf32>) -> tensor<?x3xi32> {
  %0 = graph.bitcast %x : tensor<?x3xf32> -> tensor<?x3xi32>
  func.return %0 : tensor<?x3xi32>
}
