// RUN: mini-opt %s | mini-opt | filecheck %s
// Non-finite float constants print as bit patterns and must parse back as the same floats.

// CHECK-LABEL: func.func @masks
// CHECK-NEXT:    graph.constant dense<[0xff800000, 0x7f800000, 1.500000e+00]> : tensor<3xf32>
// CHECK-NEXT:    graph.constant dense<0xfc00> : tensor<f16>
// CHECK-NEXT:    graph.constant dense<0xfff0000000000000> : tensor<f64>
func.func @masks() -> tensor<3xf32> {
  %c = graph.constant dense<[0xFF800000, 0x7F800000, 1.5]> : tensor<3xf32>
  %h = graph.constant dense<0xFC00> : tensor<f16>
  %d = graph.constant dense<0xFFF0000000000000> : tensor<f64>
  func.return %c : tensor<3xf32>
}
