// conv2d -> add -> relu at the graph level, weights inline (graph.constant), batch dynamic.
// Output channel 0 is a 3x3 box sum minus 30, channel 1 is 8 - x; both through relu.
//
//   mini-run examples/conv_add_relu.mlir --random-inputs --dim batch=2
//   mini-run examples/conv_add_relu.mlir --input x=x.npy --print-ir-after-all 2> stages.mlir
func.func @conv_add_relu(%x: tensor<?x1x4x4xf32> {graph.name = "x", graph.dim_names = ["batch", "", "", ""]})
    -> (tensor<?x2x4x4xf32> {graph.name = "y"}) {
  %w = graph.constant dense<[[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]],
                             [[[0.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 0.0]]]]> : tensor<2x1x3x3xf32>
  %c = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<?x1x4x4xf32>, tensor<2x1x3x3xf32>) -> tensor<?x2x4x4xf32>
  %shift = graph.constant dense<[[[-30.0]], [[8.0]]]> : tensor<2x1x1xf32>
  %a = graph.add %c, %shift : (tensor<?x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<?x2x4x4xf32>
  %y = graph.relu %a : tensor<?x2x4x4xf32>
  func.return %y : tensor<?x2x4x4xf32>
}
