// RUN: mini-opt %s --split-input-file -p graph-expand-pow | filecheck %s

// CHECK-LABEL: func.func @cube
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK:         %[[S:.*]] = graph.mul %[[X]], %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.mul %[[S]], %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @cube(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = graph.constant dense<3.0> : tensor<f32>
  %0 = graph.pow %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @fourth
// CHECK:         %[[S:.*]] = graph.mul %{{.*}}, %{{.*}} : tensor<8xf32>
// CHECK-NEXT:    %[[Q:.*]] = graph.mul %[[S]], %[[S]] : tensor<8xf32>
// CHECK-NEXT:    func.return %[[Q]]
func.func @fourth(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = graph.constant dense<4.0> : tensor<8xf32>
  %0 = graph.pow %x, %c : tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

// Not expanded: a non-integer exponent, an exponent that broadcasts x to a bigger shape, a run-time exponent.
// CHECK-LABEL: func.func @untouched
// CHECK-COUNT-3: graph.pow
// CHECK-NOT:     graph.mul
func.func @untouched(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<2x8xf32>, tensor<8xf32>) {
  %h = graph.constant dense<2.5> : tensor<f32>
  %0 = graph.pow %x, %h : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %t = graph.constant dense<2.0> : tensor<2x8xf32>
  %1 = graph.pow %x, %t : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %2 = graph.pow %x, %y : tensor<8xf32>
  func.return %0, %1, %2 : tensor<8xf32>, tensor<2x8xf32>, tensor<8xf32>
}
