// relu(x + y), with y broadcast over the rows of x (the batch dim is dynamic).
//
//   mini-run examples/add_relu.mlir --input x='[[1, -2, 3], [-4, 5, -6]]' --input y='[0.5, 0.5, 0.5]'
func.func @add_relu(%x: tensor<?x3xf32>, %y: tensor<3xf32>) -> tensor<?x3xf32> {
  %s = graph.add %x, %y : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %r = graph.relu %s : tensor<?x3xf32>
  func.return %r : tensor<?x3xf32>
}
