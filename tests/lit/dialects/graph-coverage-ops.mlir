// RUN: mini-opt %s | filecheck %s
// RUN: mini-opt %s | mini-opt | filecheck %s
// RUN: mini-opt %s --print-op-generic | mini-opt | filecheck %s

// The ops of dialects/_graph_coverage.py in their custom syntax.

// CHECK-LABEL: func.func @reduce_prod
// CHECK-NEXT:    %[[R:.*]] = graph.reduce_prod %{{.*}} axes [1] : tensor<?x4xf32> -> tensor<?x1xf32>
func.func @reduce_prod(%x: tensor<?x4xf32>) -> tensor<?x1xf32> {
  %0 = graph.reduce_prod %x axes [1] : tensor<?x4xf32> -> tensor<?x1xf32>
  func.return %0 : tensor<?x1xf32>
}

// CHECK-LABEL: func.func @scatters
// CHECK-SAME:    (%[[X:.*]]: tensor<?x5xf32>, %[[I:.*]]: tensor<?x2xi64>, %[[U:.*]]: tensor<?x2xf32>, %[[J:.*]]: tensor<2x1xi64>, %[[V:.*]]: tensor<2x5xf32>)
// CHECK-NEXT:    %[[SE:.*]] = graph.scatter_elements %[[X]], %[[I]], %[[U]] axis 1 {reduction = "add"} : (tensor<?x5xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> tensor<?x5xf32>
// CHECK-NEXT:    %[[SN:.*]] = graph.scatter_nd %[[SE]], %[[J]], %[[V]] : (tensor<?x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<?x5xf32>
func.func @scatters(%x: tensor<?x5xf32>, %i: tensor<?x2xi64>, %u: tensor<?x2xf32>, %j: tensor<2x1xi64>, %v: tensor<2x5xf32>) -> tensor<?x5xf32> {
  %0 = graph.scatter_elements %x, %i, %u axis 1 {reduction = "add"} : (tensor<?x5xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> tensor<?x5xf32>
  %1 = graph.scatter_nd %0, %j, %v : (tensor<?x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<?x5xf32>
  func.return %1 : tensor<?x5xf32>
}

// CHECK-LABEL: func.func @topk
// CHECK-NEXT:    %{{.*}}, %{{.*}} = graph.topk %{{.*}} k 2 axis 1 {largest = false} : tensor<?x5xf32> -> (tensor<?x2xf32>, tensor<?x2xi64>)
func.func @topk(%x: tensor<?x5xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  %v, %i = graph.topk %x k 2 axis 1 {largest = false} : tensor<?x5xf32> -> (tensor<?x2xf32>, tensor<?x2xi64>)
  func.return %v, %i : tensor<?x2xf32>, tensor<?x2xi64>
}

// CHECK-LABEL: func.func @cumprod
// CHECK-NEXT:    %{{.*}} = graph.cumprod %{{.*}} axis 0 {exclusive = true} : tensor<?x8xf32>
func.func @cumprod(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = graph.cumprod %x axis 0 {exclusive = true} : tensor<?x8xf32>
  func.return %0 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @max_pool_indices
// CHECK-NEXT:    %{{.*}} = graph.max_pool2d_indices %{{.*}}, %{{.*}} kernel [2, 2] strides [2, 2] {storage_order = 1 : i64} : (tensor<?x1x4x4xf32>, tensor<?x1x2x2xf32>) -> tensor<?x1x2x2xi64>
func.func @max_pool_indices(%x: tensor<?x1x4x4xf32>, %y: tensor<?x1x2x2xf32>) -> tensor<?x1x2x2xi64> {
  %0 = graph.max_pool2d_indices %x, %y kernel [2, 2] strides [2, 2] {storage_order = 1 : i64} : (tensor<?x1x4x4xf32>, tensor<?x1x2x2xf32>) -> tensor<?x1x2x2xi64>
  func.return %0 : tensor<?x1x2x2xi64>
}

// CHECK-LABEL: func.func @nonzero
// CHECK-NEXT:    %{{.*}} = graph.nonzero %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<i64>) -> tensor<2x?xi64>
func.func @nonzero(%x: tensor<?x4xf32>, %c: tensor<i64>) -> tensor<2x?xi64> {
  %0 = graph.nonzero %x, %c : (tensor<?x4xf32>, tensor<i64>) -> tensor<2x?xi64>
  func.return %0 : tensor<2x?xi64>
}
