// RUN: mini-opt %s -p graph-strength-reduce | filecheck %s

// A float power by the constant 3 is x*x*x (onnxruntime's Pow does the same), by 2 x*x, by 1 x;
// the pow's attributes (its symbolic dims) stay on the multiplies, and the dead exponent goes.
// CHECK-LABEL: func.func @cube
// CHECK-NOT:     graph.constant dense<3.0
// CHECK:         %[[S:.*]] = graph.mul %x, %x {graph.dims = ["n"]} : tensor<?x8xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.mul %[[S]], %x {graph.dims = ["n"]} : tensor<?x8xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @cube(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c = graph.constant dense<3.000000e+00> : tensor<f32>
  %y = graph.pow %x, %c {graph.dims = ["n"]} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  func.return %y : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @square_f64
// CHECK:         %[[S:.*]] = graph.mul %x, %x : tensor<4xf64>
// CHECK-NEXT:    func.return %[[S]]
func.func @square_f64(%x: tensor<4xf64>) -> tensor<4xf64> {
  %c = graph.constant dense<2.000000e+00> : tensor<1xf64>
  %y = graph.pow %x, %c : (tensor<4xf64>, tensor<1xf64>) -> tensor<4xf64>
  func.return %y : tensor<4xf64>
}

// CHECK-LABEL: func.func @identity
// CHECK-NEXT:    func.return %x
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense<1.000000e+00> : tensor<f32>
  %y = graph.pow %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Left alone: other exponents (powf(x, 0.5) is not sqrt(x) at -0 and -inf), a non-constant or
// non-splat exponent, an exponent that broadcasts the base to a larger shape, integer powers.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: graph.pow
// CHECK-NOT:     graph.mul
func.func @kept(%x: tensor<4xf32>, %e: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xi32>) {
  %half = graph.constant dense<5.000000e-01> : tensor<f32>
  %a = graph.pow %x, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %b = graph.pow %x, %e : tensor<4xf32>
  %mixed = graph.constant dense<[2.000000e+00, 3.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
  %c = graph.pow %x, %mixed : tensor<4xf32>
  %three = graph.constant dense<3.000000e+00> : tensor<2x4xf32>
  %d = graph.pow %x, %three : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %two = graph.constant dense<2> : tensor<i32>
  %f = graph.pow %i, %two : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  func.return %a, %b, %c, %d, %f : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xi32>
}

// A division by a power of two is the multiplication by its exact reciprocal (any users); one
// that feeds only erf (GELU's x / sqrt(2)) multiplies by the rounded reciprocal.
// CHECK-LABEL: func.func @div
// CHECK-NOT:     graph.div
// CHECK:         %[[Q:.*]] = graph.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT:    %[[H:.*]] = graph.mul %x, %[[Q]] {graph.dims = ["n"]} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
// CHECK:         %[[R:.*]] = graph.constant dense<0.707106769> : tensor<1xf32>
// CHECK-NEXT:    %[[D:.*]] = graph.mul %x, %[[R]] : (tensor<?x8xf32>, tensor<1xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:    %[[E:.*]] = graph.erf %[[D]]
func.func @div(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %four = graph.constant dense<4.000000e+00> : tensor<f32>
  %h = graph.div %x, %four {graph.dims = ["n"]} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %s = graph.constant dense<1.41421354> : tensor<1xf32>
  %d = graph.div %x, %s : (tensor<?x8xf32>, tensor<1xf32>) -> tensor<?x8xf32>
  %e = graph.erf %d : tensor<?x8xf32>
  func.return %h, %e : tensor<?x8xf32>, tensor<?x8xf32>
}

// Kept: a division by a constant that is not a power of two and is used elsewhere than erf (x / 3
// is not x * 0.333...), by zero, by a non-splat constant, integer division.
// CHECK-LABEL: func.func @div_kept
// CHECK-COUNT-4: graph.div
// CHECK-NOT:     graph.mul
func.func @div_kept(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %three = graph.constant dense<3.000000e+00> : tensor<f32>
  %a = graph.div %x, %three : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %ea = graph.erf %a : tensor<4xf32>
  %zero = graph.constant dense<0.000000e+00> : tensor<f32>
  %b = graph.div %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %mixed = graph.constant dense<[2.000000e+00, 4.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
  %c = graph.div %x, %mixed : tensor<4xf32>
  %two = graph.constant dense<2> : tensor<i32>
  %f = graph.div %i, %two : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  func.return %a, %ea, %b, %c, %f : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// An image conv whose windows tile it (kernel = strides, no pads: a ViT's patch embedding) is a
// matmul of the patches (reshape + transpose of the input, no copies of a pixel) by the reshaped
// weight, its bias added, and the result transposed back to NCHW.
// CHECK-LABEL: func.func @patches
// CHECK-NOT:     graph.conv2d
// CHECK:         %[[A:.*]] = graph.reshape %x : tensor<2x3x32x48xf32> -> tensor<2x3x4x8x6x8xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.transpose %[[A]] perm [0, 2, 4, 1, 3, 5] : tensor<2x3x4x8x6x8xf32> -> tensor<2x4x6x3x8x8xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.reshape %[[B]] : tensor<2x4x6x3x8x8xf32> -> tensor<48x192xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.reshape %w : tensor<16x3x8x8xf32> -> tensor<16x192xf32>
// CHECK-NEXT:    %[[K:.*]] = graph.transpose %[[W]] perm [1, 0] : tensor<16x192xf32> -> tensor<192x16xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %[[P]], %[[K]] : (tensor<48x192xf32>, tensor<192x16xf32>) -> tensor<48x16xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[M]], %b : (tensor<48x16xf32>, tensor<16xf32>) -> tensor<48x16xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[S]] : tensor<48x16xf32> -> tensor<2x4x6x16xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.transpose %[[R]] perm [0, 3, 1, 2] : tensor<2x4x6x16xf32> -> tensor<2x16x4x6xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @patches(%x: tensor<2x3x32x48xf32>, %w: tensor<16x3x8x8xf32>, %b: tensor<16xf32>) -> tensor<2x16x4x6xf32> {
  %y = graph.conv2d %x, %w, %b strides [8, 8] : (tensor<2x3x32x48xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<2x16x4x6xf32>
  func.return %y : tensor<2x16x4x6xf32>
}

// Kept: overlapping windows (stride below the kernel), pads, a ragged edge (30 is not a multiple
// of 8), a feature map (8 channels), a 1x1 conv, a dynamic batch.
// CHECK-LABEL: func.func @patches_kept
// CHECK-COUNT-6: graph.conv2d
// CHECK-NOT:     graph.matmul
func.func @patches_kept(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x8x8xf32>, %r: tensor<1x3x30x32xf32>, %f: tensor<1x8x32x32xf32>, %wf: tensor<16x8x8x8xf32>, %w1: tensor<16x3x1x1xf32>, %d: tensor<?x3x32x32xf32>) -> (tensor<1x16x7x7xf32>, tensor<1x16x5x5xf32>, tensor<1x16x3x4xf32>, tensor<1x16x4x4xf32>, tensor<1x16x32x32xf32>, tensor<?x16x4x4xf32>) {
  %a = graph.conv2d %x, %w strides [4, 4] : (tensor<1x3x32x32xf32>, tensor<16x3x8x8xf32>) -> tensor<1x16x7x7xf32>
  %b = graph.conv2d %x, %w strides [8, 8] pads [4, 4, 4, 4] : (tensor<1x3x32x32xf32>, tensor<16x3x8x8xf32>) -> tensor<1x16x5x5xf32>
  %c = graph.conv2d %r, %w strides [8, 8] : (tensor<1x3x30x32xf32>, tensor<16x3x8x8xf32>) -> tensor<1x16x3x4xf32>
  %e = graph.conv2d %f, %wf strides [8, 8] : (tensor<1x8x32x32xf32>, tensor<16x8x8x8xf32>) -> tensor<1x16x4x4xf32>
  %g = graph.conv2d %x, %w1 : (tensor<1x3x32x32xf32>, tensor<16x3x1x1xf32>) -> tensor<1x16x32x32xf32>
  %h = graph.conv2d %d, %w strides [8, 8] : (tensor<?x3x32x32xf32>, tensor<16x3x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return %a, %b, %c, %e, %g, %h : tensor<1x16x7x7xf32>, tensor<1x16x5x5xf32>, tensor<1x16x3x4xf32>, tensor<1x16x4x4xf32>, tensor<1x16x32x32xf32>, tensor<?x16x4x4xf32>
}

// GELU's tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) as torch.onnx writes
// it, is graph.gelu "tanh" (computed as x / (1 + exp(-2u))); its pieces go. The same with 0.05 for
// 0.044715 is not GELU and stays.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-NEXT:    %[[G:.*]] = graph.gelu %x approximate "tanh" {graph.dims = ["n"]} : tensor<?x8xf32>
// CHECK-NEXT:    func.return %[[G]]
// CHECK-LABEL: func.func @gelu_tanh_kept
// CHECK:         graph.tanh
// CHECK-NOT:     graph.gelu
func.func @gelu_tanh(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %three = graph.constant dense<3.000000e+00> : tensor<f32>
  %k = graph.constant dense<4.471500e-02> : tensor<f32>
  %sp = graph.constant dense<0.797884583> : tensor<f32>
  %one = graph.constant dense<1.000000e+00> : tensor<f32>
  %half = graph.constant dense<5.000000e-01> : tensor<f32>
  %c = graph.pow %x, %three : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %kc = graph.mul %c, %k : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %s = graph.add %x, %kc : tensor<?x8xf32>
  %u = graph.mul %s, %sp : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %t = graph.tanh %u : tensor<?x8xf32>
  %t1 = graph.add %t, %one : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %h = graph.mul %x, %half : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %y = graph.mul %h, %t1 {graph.dims = ["n"]} : tensor<?x8xf32>
  func.return %y : tensor<?x8xf32>
}
func.func @gelu_tanh_kept(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %three = graph.constant dense<3.000000e+00> : tensor<f32>
  %k = graph.constant dense<5.000000e-02> : tensor<f32>
  %sp = graph.constant dense<0.797884583> : tensor<f32>
  %one = graph.constant dense<1.000000e+00> : tensor<f32>
  %half = graph.constant dense<5.000000e-01> : tensor<f32>
  %c = graph.pow %x, %three : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %kc = graph.mul %c, %k : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %s = graph.add %x, %kc : tensor<?x8xf32>
  %u = graph.mul %s, %sp : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %t = graph.tanh %u : tensor<?x8xf32>
  %t1 = graph.add %t, %one : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %h = graph.mul %x, %half : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %y = graph.mul %h, %t1 {graph.dims = ["n"]} : tensor<?x8xf32>
  func.return %y : tensor<?x8xf32>
}
