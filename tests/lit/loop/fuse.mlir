// RUN: mini-opt %s -p loop-fuse | filecheck %s
// Input: the output of graph-fuse,graph-legalize on conv2d->add->relu (static), add->tanh
// (dynamic), add->add on a 128 KiB tensor and exp->reshape->sigmoid (dynamic), plus a hand-written
// multi-result primitive function.

// conv2d -> add -> relu: one kernel over (x, w, b, out); the two intermediates are local
// (static, small: mem.alloca, both at the kernel entry so they dominate every nest a schedule may
// move); the relu writes the output buffer directly.
// CHECK-LABEL: func.func private @fused_conv2d_add_relu
// CHECK-SAME:    (%[[X:.*]]: memref<1x2x4x4xf32>, %[[W:.*]]: memref<2x2x3x3xf32>, %[[B:.*]]: memref<2x1x1xf32>, %[[OUT:.*]]: memref<1x2x2x2xf32>) attributes {loop.kernel}
// CHECK-NOT:     func.func
// CHECK:         %[[C:.*]] = mem.alloca() : memref<1x2x2x2xf32>
// CHECK:         %[[A:.*]] = mem.alloca() : memref<1x2x2x2xf32>
// CHECK-NOT:     func.func
// CHECK:         loop.block "conv2d"
// CHECK:           mem.load %[[X]]
// CHECK:           mem.load %[[W]]
// CHECK:           mem.store %{{.*}}, %[[C]]
// CHECK:         } init {
// CHECK:           mem.store %{{.*}}, %[[C]]
// CHECK:         loop.block "add"
// CHECK:           mem.load %[[C]]
// CHECK:           mem.load %[[B]]
// CHECK:           mem.store %{{.*}}, %[[A]]
// CHECK:         loop.block "relu"
// CHECK:           mem.load %[[A]]
// CHECK:           mem.store %{{.*}}, %[[OUT]]
// CHECK-NOT:     mem.dealloc
// CHECK:         func.return
// CHECK-LABEL: func.func @conv_add_relu
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x4x4xf32>, %[[W:.*]]: tensor<2x2x3x3xf32>, %[[B:.*]]: tensor<2x1x1xf32>)
// CHECK-NEXT:    %[[R:.*]] = graph.call_kernel @fused_conv2d_add_relu(%[[X]], %[[W]], %[[B]]) : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %[[R]]

// Dynamic: the intermediate is sized from the inputs inside the kernel (mem.dim + arith) and
// lives on the heap; the caller recomputes the result dim from graph.dim of its arguments.
// CHECK-LABEL: func.func private @fused_add_tanh
// CHECK-SAME:    (%[[X:.*]]: memref<?x8xf32>, %[[Y:.*]]: memref<?x8xf32>, %[[OUT:.*]]: memref<?x8xf32>)
// CHECK-DAG:     %[[NX:.*]] = mem.dim %[[X]], 0
// CHECK-DAG:     %[[NY:.*]] = mem.dim %[[Y]], 0
// CHECK:         %[[N:.*]] = arith.maxsi %[[NX]], %[[NY]] : index
// CHECK-NEXT:    %[[E:.*]] = mem.alloc(%[[N]]) {{.*}}: memref<?x8xf32>
// CHECK:         loop.block "add"
// CHECK:           mem.store %{{.*}}, %[[E]]
// CHECK:         loop.block "tanh"
// CHECK:           mem.load %[[E]]
// CHECK:           mem.store %{{.*}}, %[[OUT]]
// CHECK:         mem.dealloc %[[E]] : memref<?x8xf32>
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @dyn
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8xf32>, %[[Y:.*]]: tensor<?x8xf32>)
// CHECK-NEXT:    %[[NX:.*]] = graph.dim %[[X]], 0
// CHECK-NEXT:    %[[NY:.*]] = graph.dim %[[Y]], 0
// CHECK-NEXT:    %[[N:.*]] = arith.maxsi %[[NX]], %[[NY]] : index
// CHECK-NEXT:    %[[S:.*]] = graph.call_kernel @fused_add_tanh(%[[X]], %[[Y]]) dims(%[[N]])
// CHECK-NEXT:    func.return %[[S]]

// A static intermediate over 64 KiB goes to the heap; one kernel used twice gets a unique
// block name the second time.
// CHECK-LABEL: func.func private @fused_add(
// CHECK:         %[[E:.*]] = mem.alloc() {{.*}}: memref<128x256xf32>
// CHECK:         loop.block "add" (
// CHECK:         loop.block "add_1" (
// CHECK:         mem.dealloc %[[E]]
// CHECK-NEXT:    func.return

// graph.reshape between members becomes a zero-copy mem.view of the intermediate.
// CHECK-LABEL: func.func private @fused_exp_reshape_sigmoid
// CHECK-SAME:    (%[[X:.*]]: memref<?x4xf32>, %[[OUT:.*]]: memref<?x2x2xf32>)
// CHECK:         %[[N:.*]] = mem.dim %[[X]], 0
// CHECK:         %[[E:.*]] = mem.alloc(%[[N]])
// CHECK:         %[[V:.*]] = mem.view %[[E]](%[[N]]) : memref<?x4xf32> -> memref<?x2x2xf32>
// CHECK:         loop.block "exp"
// CHECK:         loop.block "sigmoid"
// CHECK:           mem.load %[[V]]
// CHECK:         mem.dealloc %[[E]]
// CHECK-LABEL: func.func @view
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0
// CHECK-NEXT:    graph.call_kernel @fused_exp_reshape_sigmoid(%[[X]]) dims(%[[N]])

// Member kernels nobody calls any more are gone; @neg_k is still called by @multi.
// CHECK-NOT:   func.func private @conv2d_0
// CHECK-NOT:   func.func private @relu_0
// CHECK-NOT:   func.func private @tanh_0

// An intermediate that is also a result is written into its output buffer; a result returned
// twice is copied.
// CHECK-LABEL: func.func private @two_results
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>, %[[O0:.*]]: memref<4xf32>, %[[O1:.*]]: memref<4xf32>, %[[O2:.*]]: memref<4xf32>)
// CHECK-NOT:     mem.alloc
// CHECK:         loop.block "neg"
// CHECK:           mem.load %[[X]]
// CHECK:           mem.store %{{.*}}, %[[O0]]
// CHECK:         loop.block "neg_1"
// CHECK:           mem.load %[[O0]]
// CHECK:           mem.store %{{.*}}, %[[O1]]
// CHECK:         mem.copy %[[O1]], %[[O2]]
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @multi
// CHECK-NEXT:    graph.call_kernel @two_results(%{{.*}}) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    graph.call_kernel @neg_k(
// A result returned through a reshape of a call result: the call writes a view of the output
// buffer (no local buffer, no copy of the whole result at the end); a reshape returned twice is
// copied into its second output.
// CHECK-LABEL: func.func private @neg_reshaped
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<2x2xf32>, %[[OUT2:.*]]: memref<2x2xf32>)
// CHECK-NOT:     mem.alloc
// CHECK:         %[[V:.*]] = mem.view %[[OUT]] : memref<2x2xf32> -> memref<4xf32>
// CHECK:         loop.block "neg"
// CHECK:           mem.store %{{.*}}, %[[V]]
// CHECK:         mem.copy %{{.*}}, %[[OUT2]]
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @neg_k

func.func private @fused_conv2d_add_relu(%0: tensor<1x2x4x4xf32>, %1: tensor<2x2x3x3xf32>, %2: tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32> attributes {graph.primitive} {
  %c = graph.call_kernel @conv2d_0(%0, %1) : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  %a = graph.call_kernel @add_0(%c, %2) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %r = graph.call_kernel @relu_0(%a) : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %r : tensor<1x2x2x2xf32>
}
func.func @conv_add_relu(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>, %b: tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32> {
  %r = func.call @fused_conv2d_add_relu(%x, %w, %b) : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  func.return %r : tensor<1x2x2x2xf32>
}
func.func private @fused_add_tanh(%0: tensor<?x8xf32>, %1: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {graph.primitive} {
  %2 = graph.dim %0, 0 : tensor<?x8xf32>
  %3 = graph.dim %1, 0 : tensor<?x8xf32>
  %4 = arith.maxsi %2, %3 : index
  %e = graph.call_kernel @add_1(%0, %1) dims(%4) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %5 = graph.dim %e, 0 : tensor<?x8xf32>
  %s = graph.call_kernel @tanh_0(%e) dims(%5) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  func.return %s : tensor<?x8xf32>
}
func.func @dyn(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %s = func.call @fused_add_tanh(%x, %y) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  func.return %s : tensor<?x8xf32>
}
func.func private @fused_add(%0: tensor<128x256xf32>) -> tensor<128x256xf32> attributes {graph.primitive} {
  %e = graph.call_kernel @add_2(%0, %0) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  %s = graph.call_kernel @add_2(%e, %0) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  func.return %s : tensor<128x256xf32>
}
func.func @big_twice(%x: tensor<128x256xf32>) -> tensor<128x256xf32> {
  %s = func.call @fused_add(%x) : (tensor<128x256xf32>) -> tensor<128x256xf32>
  func.return %s : tensor<128x256xf32>
}
func.func private @fused_exp_reshape_sigmoid(%0: tensor<?x4xf32>) -> tensor<?x2x2xf32> attributes {graph.primitive} {
  %1 = graph.dim %0, 0 : tensor<?x4xf32>
  %e = graph.call_kernel @exp_0(%0) dims(%1) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %n = graph.dim %0, 0 : tensor<?x4xf32>
  %r = graph.reshape %e dims(%n) : tensor<?x4xf32> -> tensor<?x2x2xf32>
  %2 = graph.dim %r, 0 : tensor<?x2x2xf32>
  %s = graph.call_kernel @sigmoid_0(%r) dims(%2) : (tensor<?x2x2xf32>) -> tensor<?x2x2xf32>
  func.return %s : tensor<?x2x2xf32>
}
func.func @view(%x: tensor<?x4xf32>) -> tensor<?x2x2xf32> {
  %s = func.call @fused_exp_reshape_sigmoid(%x) : (tensor<?x4xf32>) -> tensor<?x2x2xf32>
  func.return %s : tensor<?x2x2xf32>
}
func.func private @conv2d_0(%0: memref<1x2x4x4xf32>, %1: memref<2x2x3x3xf32>, %2: memref<1x2x2x2xf32>) attributes {loop.kernel} {
  %3 = arith.constant 0 : index
  %4 = arith.constant 1 : index
  %5 = arith.constant 2 : index
  %6 = arith.constant 3 : index
  loop.for %7 = %3 to %4 step %4 {
    loop.for %8 = %3 to %5 step %4 {
      loop.for %9 = %3 to %5 step %4 {
        loop.for %10 = %3 to %5 step %4 {
          loop.for %11 = %3 to %5 step %4 {
            loop.for %12 = %3 to %6 step %4 {
              loop.for %13 = %3 to %6 step %4 {
                loop.block "conv2d" (%14 = %7, %15 = %8, %16 = %9, %17 = %10, %18 = %11, %19 = %12, %20 = %13) [spatial, spatial, spatial, spatial, reduce, reduce, reduce] {
                  %21 = arith.addi %16, %19 : index
                  %22 = arith.addi %17, %20 : index
                  %23 = arith.constant 0.000000e+00 : f32
                  %24 = mem.load %0[%14, %18, %21, %22] : memref<1x2x4x4xf32> -> f32
                  %25 = mem.load %1[%15, %18, %19, %20] : memref<2x2x3x3xf32> -> f32
                  %26 = mem.load %2[%14, %15, %16, %17] : memref<1x2x2x2xf32> -> f32
                  %27 = arith.mulf %24, %25 : f32
                  %28 = arith.addf %26, %27 : f32
                  mem.store %28, %2[%14, %15, %16, %17] : f32, memref<1x2x2x2xf32>
                } init {
                  %29 = arith.constant 0.000000e+00 : f32
                  mem.store %29, %2[%14, %15, %16, %17] : f32, memref<1x2x2x2xf32>
                }
              }
            }
          }
        }
      }
    }
  }
  func.return
}
func.func private @add_0(%0: memref<1x2x2x2xf32>, %1: memref<2x1x1xf32>, %2: memref<1x2x2x2xf32>) attributes {loop.kernel} {
  %3 = arith.constant 0 : index
  %4 = arith.constant 1 : index
  %5 = arith.constant 2 : index
  loop.for %6 = %3 to %4 step %4 {
    loop.for %7 = %3 to %5 step %4 {
      loop.for %8 = %3 to %5 step %4 {
        loop.for %9 = %3 to %5 step %4 {
          loop.block "add" (%10 = %6, %11 = %7, %12 = %8, %13 = %9) [spatial, spatial, spatial, spatial] {
            %14 = mem.load %0[%3, %11, %12, %13] : memref<1x2x2x2xf32> -> f32
            %15 = mem.load %1[%11, %3, %3] : memref<2x1x1xf32> -> f32
            %16 = arith.addf %14, %15 : f32
            mem.store %16, %2[%10, %11, %12, %13] : f32, memref<1x2x2x2xf32>
          }
        }
      }
    }
  }
  func.return
}
func.func private @relu_0(%0: memref<1x2x2x2xf32>, %1: memref<1x2x2x2xf32>) attributes {loop.kernel} {
  %2 = arith.constant 0 : index
  %3 = arith.constant 1 : index
  %4 = arith.constant 2 : index
  loop.for %5 = %2 to %3 step %3 {
    loop.for %6 = %2 to %4 step %3 {
      loop.for %7 = %2 to %4 step %3 {
        loop.for %8 = %2 to %4 step %3 {
          loop.block "relu" (%9 = %5, %10 = %6, %11 = %7, %12 = %8) [spatial, spatial, spatial, spatial] {
            %13 = mem.load %0[%2, %10, %11, %12] : memref<1x2x2x2xf32> -> f32
            %14 = arith.constant 0.000000e+00 : f32
            %15 = arith.maximumf %13, %14 : f32
            mem.store %15, %1[%9, %10, %11, %12] : f32, memref<1x2x2x2xf32>
          }
        }
      }
    }
  }
  func.return
}
func.func private @add_1(%0: memref<?x8xf32>, %1: memref<?x8xf32>, %2: memref<?x8xf32>) attributes {loop.kernel} {
  %3 = mem.dim %0, 0 : memref<?x8xf32>
  %4 = arith.constant 1 : index
  %5 = arith.constant 0 : index
  %6 = mem.dim %1, 0 : memref<?x8xf32>
  %7 = mem.dim %2, 0 : memref<?x8xf32>
  %8 = arith.constant 8 : index
  %9 = arith.cmpi eq, %3, %4 : index
  %10 = arith.select %9, %5, %4 : index
  %11 = arith.cmpi eq, %6, %4 : index
  %12 = arith.select %11, %5, %4 : index
  loop.for %13 = %5 to %7 step %4 {
    loop.for %14 = %5 to %8 step %4 {
      loop.block "add" (%15 = %13, %16 = %14) [spatial, spatial] {
        %17 = arith.muli %15, %10 : index
        %18 = mem.load %0[%17, %16] : memref<?x8xf32> -> f32
        %19 = arith.muli %15, %12 : index
        %20 = mem.load %1[%19, %16] : memref<?x8xf32> -> f32
        %21 = arith.addf %18, %20 : f32
        mem.store %21, %2[%15, %16] : f32, memref<?x8xf32>
      }
    }
  }
  func.return
}
func.func private @tanh_0(%0: memref<?x8xf32>, %1: memref<?x8xf32>) attributes {loop.kernel} {
  %2 = mem.dim %1, 0 : memref<?x8xf32>
  %3 = arith.constant 0 : index
  %4 = arith.constant 1 : index
  %5 = arith.constant 8 : index
  loop.for %6 = %3 to %2 step %4 {
    loop.for %7 = %3 to %5 step %4 {
      loop.block "tanh" (%8 = %6, %9 = %7) [spatial, spatial] {
        %10 = mem.load %0[%8, %9] : memref<?x8xf32> -> f32
        %11 = math.tanh %10 : f32
        mem.store %11, %1[%8, %9] : f32, memref<?x8xf32>
      }
    }
  }
  func.return
}
func.func private @add_2(%0: memref<128x256xf32>, %1: memref<128x256xf32>, %2: memref<128x256xf32>) attributes {loop.kernel} {
  %3 = arith.constant 0 : index
  %4 = arith.constant 128 : index
  %5 = arith.constant 1 : index
  %6 = arith.constant 256 : index
  loop.for %7 = %3 to %4 step %5 {
    loop.for %8 = %3 to %6 step %5 {
      loop.block "add" (%9 = %7, %10 = %8) [spatial, spatial] {
        %11 = mem.load %0[%9, %10] : memref<128x256xf32> -> f32
        %12 = mem.load %1[%9, %10] : memref<128x256xf32> -> f32
        %13 = arith.addf %11, %12 : f32
        mem.store %13, %2[%9, %10] : f32, memref<128x256xf32>
      }
    }
  }
  func.return
}
func.func private @exp_0(%0: memref<?x4xf32>, %1: memref<?x4xf32>) attributes {loop.kernel} {
  %2 = mem.dim %1, 0 : memref<?x4xf32>
  %3 = arith.constant 0 : index
  %4 = arith.constant 1 : index
  %5 = arith.constant 4 : index
  loop.for %6 = %3 to %2 step %4 {
    loop.for %7 = %3 to %5 step %4 {
      loop.block "exp" (%8 = %6, %9 = %7) [spatial, spatial] {
        %10 = mem.load %0[%8, %9] : memref<?x4xf32> -> f32
        %11 = math.exp %10 : f32
        mem.store %11, %1[%8, %9] : f32, memref<?x4xf32>
      }
    }
  }
  func.return
}
func.func private @sigmoid_0(%0: memref<?x2x2xf32>, %1: memref<?x2x2xf32>) attributes {loop.kernel} {
  %2 = mem.dim %1, 0 : memref<?x2x2xf32>
  %3 = arith.constant 0 : index
  %4 = arith.constant 1 : index
  %5 = arith.constant 2 : index
  loop.for %6 = %3 to %2 step %4 {
    loop.for %7 = %3 to %5 step %4 {
      loop.for %8 = %3 to %5 step %4 {
        loop.block "sigmoid" (%9 = %6, %10 = %7, %11 = %8) [spatial, spatial, spatial] {
          %12 = mem.load %0[%9, %10, %11] : memref<?x2x2xf32> -> f32
          %13 = arith.constant 1.000000e+00 : f32
          %14 = arith.negf %12 : f32
          %15 = math.exp %14 : f32
          %16 = arith.addf %13, %15 : f32
          %17 = arith.divf %13, %16 : f32
          mem.store %17, %1[%9, %10, %11] : f32, memref<?x2x2xf32>
        }
      }
    }
  }
  func.return
}

// Hand-written: an intermediate that is also a result, a result returned twice, and a member
// kernel (@neg_k) that another caller still uses, so it must stay.
func.func private @two_results(%0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {graph.primitive} {
  %a = graph.call_kernel @neg_k(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.call_kernel @neg_k(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
func.func @multi(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %r:3 = func.call @two_results(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %n = graph.call_kernel @neg_k(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r#0, %r#1, %r#2, %n : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
func.func private @neg_reshaped(%0: tensor<4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) attributes {graph.primitive} {
  %a = graph.call_kernel @neg_k(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %r = graph.reshape %a : tensor<4xf32> -> tensor<2x2xf32>
  func.return %r, %r : tensor<2x2xf32>, tensor<2x2xf32>
}
func.func @reshaped(%x: tensor<4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %r:2 = func.call @neg_reshaped(%x) : (tensor<4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  func.return %r#0, %r#1 : tensor<2x2xf32>, tensor<2x2xf32>
}
func.func private @neg_k(%0: memref<4xf32>, %1: memref<4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 {
    loop.block "neg" (%vi = %i) [spatial] {
      %v = mem.load %0[%vi] : memref<4xf32> -> f32
      %n = arith.negf %v : f32
      mem.store %n, %1[%vi] : f32, memref<4xf32>
    }
  }
  func.return
}

