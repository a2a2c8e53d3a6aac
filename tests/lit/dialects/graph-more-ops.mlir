// RUN: mini-opt %s | filecheck %s
// RUN: mini-opt %s | mini-opt | filecheck %s
// RUN: mini-opt %s --print-op-generic | mini-opt | filecheck %s

// The ops of dialects/_graph_more.py in their custom syntax.

// CHECK-LABEL: func.func @index_ops
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>, %[[I:.*]]: tensor<?x2xi64>, %[[J:.*]]: tensor<3x1xi32>)
// CHECK-NEXT:    %[[GE:.*]] = graph.gather_elements %[[X]], %[[I]] axis 1 : (tensor<?x4xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
// CHECK-NEXT:    %[[GN:.*]] = graph.gather_nd %[[X]], %[[J]] batch_dims 0 : (tensor<?x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %[[GE]], %[[GN]]
func.func @index_ops(%x: tensor<?x4xf32>, %i: tensor<?x2xi64>, %j: tensor<3x1xi32>) -> (tensor<?x2xf32>, tensor<3x4xf32>) {
  %0 = graph.gather_elements %x, %i axis 1 : (tensor<?x4xf32>, tensor<?x2xi64>) -> tensor<?x2xf32>
  %1 = graph.gather_nd %x, %j batch_dims 0 : (tensor<?x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  func.return %0, %1 : tensor<?x2xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @scan
// CHECK-NEXT:    %[[C:.*]] = graph.cumsum %{{.*}} axis 1 {reverse = true} : tensor<?x8xf32>
func.func @scan(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = graph.cumsum %x axis 1 {reverse = true} : tensor<?x8xf32>
  func.return %0 : tensor<?x8xf32>
}
