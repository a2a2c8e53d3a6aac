// RUN: mini-opt %s | filecheck %s
// RUN: mini-opt %s | mini-opt | filecheck %s
// RUN: mini-opt %s --print-op-generic | mini-opt | filecheck %s

// Every graph op in its custom syntax. Binary ops print `: T` when both operands have type T and
// the result is the inferred one, the full functional type otherwise.

// CHECK-LABEL: func.func @param_constant
// CHECK-NEXT:    %[[W:.*]] = graph.param "fc.weight" : tensor<4x8xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[3, -1]> : tensor<2xi64>
// CHECK-NEXT:    func.return %[[W]], %[[C]] : tensor<4x8xf32>, tensor<2xi64>
func.func @param_constant() -> (tensor<4x8xf32>, tensor<2xi64>) {
  %w = graph.param "fc.weight" : tensor<4x8xf32>
  %c = graph.constant dense<[3, -1]> : tensor<2xi64>
  func.return %w, %c : tensor<4x8xf32>, tensor<2xi64>
}

// CHECK-LABEL: func.func @binary_same_type
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<4xi32>, %[[P:.*]]: tensor<4xi1>, %[[Q:.*]]: tensor<4xi1>)
// CHECK-NEXT:    %[[ADD:.*]] = graph.add %[[A]], %[[B]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[SUB:.*]] = graph.sub %[[A]], %[[B]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[MUL:.*]] = graph.mul %[[A]], %[[B]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[DIV:.*]] = graph.div %[[A]], %[[B]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[POW:.*]] = graph.pow %[[A]], %[[B]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[MAX:.*]] = graph.max %[[A]], %[[B]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[MIN:.*]] = graph.min %[[A]], %[[B]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[FMOD:.*]] = graph.mod %[[A]], %[[B]] {fmod = true} : tensor<2x3xf32>
// CHECK-NEXT:    %[[IMOD:.*]] = graph.mod %[[I]], %[[I]] : tensor<4xi32>
// CHECK-NEXT:    %[[AND:.*]] = graph.and %[[P]], %[[Q]] : tensor<4xi1>
// CHECK-NEXT:    %[[OR:.*]] = graph.or %[[P]], %[[Q]] : tensor<4xi1>
// CHECK-NEXT:    %[[XOR:.*]] = graph.xor %[[I]], %[[I]] : tensor<4xi32>
// CHECK-NEXT:    func.return
func.func @binary_same_type(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %i: tensor<4xi32>, %p: tensor<4xi1>, %q: tensor<4xi1>) {
  %add = graph.add %a, %b : tensor<2x3xf32>
  %sub = graph.sub %a, %b : tensor<2x3xf32>
  %mul = graph.mul %a, %b : tensor<2x3xf32>
  %div = graph.div %a, %b : tensor<2x3xf32>
  %pow = graph.pow %a, %b : tensor<2x3xf32>
  %max = graph.max %a, %b : tensor<2x3xf32>
  %min = graph.min %a, %b : tensor<2x3xf32>
  %fmod = graph.mod %a, %b {fmod = true} : tensor<2x3xf32>
  %imod = graph.mod %i, %i : tensor<4xi32>
  %and = graph.and %p, %q : tensor<4xi1>
  %or = graph.or %p, %q : tensor<4xi1>
  %xor = graph.xor %i, %i : tensor<4xi32>
  func.return
}

// CHECK-LABEL: func.func @binary_broadcast
// CHECK-SAME:    (%[[A:.*]]: tensor<?x3xf32>, %[[B:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<?x1xf32>, %[[D:.*]]: tensor<1x?xf32>, %[[S:.*]]: tensor<f32>)
// CHECK-NEXT:    %[[AB:.*]] = graph.add %[[A]], %[[B]] : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %[[CD:.*]] = graph.mul %[[C]], %[[D]] : (tensor<?x1xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT:    %[[AS:.*]] = graph.sub %[[A]], %[[S]] : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x3xf32>
// CHECK-NEXT:    func.return
func.func @binary_broadcast(%a: tensor<?x3xf32>, %b: tensor<3xf32>, %c: tensor<?x1xf32>, %d: tensor<1x?xf32>, %s: tensor<f32>) {
  %ab = graph.add %a, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %cd = graph.mul %c, %d : (tensor<?x1xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %as = graph.sub %a, %s : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x3xf32>
  func.return
}

// CHECK-LABEL: func.func @compare
// CHECK-SAME:    (%[[A:.*]]: tensor<?x3xf32>, %[[B:.*]]: tensor<3xf32>, %[[I:.*]]: tensor<4xi64>, %[[P:.*]]: tensor<4xi1>)
// CHECK-NEXT:    %[[EQ:.*]] = graph.eq %[[A]], %[[B]] : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xi1>
// CHECK-NEXT:    %[[LT:.*]] = graph.lt %[[A]], %[[A]] : tensor<?x3xf32>
// CHECK-NEXT:    %[[LE:.*]] = graph.le %[[I]], %[[I]] : tensor<4xi64>
// CHECK-NEXT:    %[[GT:.*]] = graph.gt %[[A]], %[[B]] : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xi1>
// CHECK-NEXT:    %[[GE:.*]] = graph.ge %[[I]], %[[I]] : tensor<4xi64>
// CHECK-NEXT:    %[[PEQ:.*]] = graph.eq %[[P]], %[[P]] : tensor<4xi1>
// CHECK-NEXT:    func.return
func.func @compare(%a: tensor<?x3xf32>, %b: tensor<3xf32>, %i: tensor<4xi64>, %p: tensor<4xi1>) {
  %eq = graph.eq %a, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xi1>
  %lt = graph.lt %a, %a : tensor<?x3xf32>
  %le = graph.le %i, %i : tensor<4xi64>
  %gt = graph.gt %a, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xi1>
  %ge = graph.ge %i, %i : tensor<4xi64>
  %peq = graph.eq %p, %p : tensor<4xi1>
  func.return
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>, %[[P:.*]]: tensor<4xi1>, %[[I:.*]]: tensor<4xi32>)
// CHECK-NEXT:    %[[RELU:.*]] = graph.relu %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[SIGMOID:.*]] = graph.sigmoid %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[TANH:.*]] = graph.tanh %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[EXP:.*]] = graph.exp %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[LOG:.*]] = graph.log %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[SQRT:.*]] = graph.sqrt %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[RSQRT:.*]] = graph.rsqrt %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[ERF:.*]] = graph.erf %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[NEG:.*]] = graph.neg %[[I]] : tensor<4xi32>
// CHECK-NEXT:    %[[ABS:.*]] = graph.abs %[[I]] : tensor<4xi32>
// CHECK-NEXT:    %[[FLOOR:.*]] = graph.floor %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[CEIL:.*]] = graph.ceil %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[SIGN:.*]] = graph.sign %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[RECIP:.*]] = graph.reciprocal %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[NOT:.*]] = graph.not %[[P]] : tensor<4xi1>
// CHECK-NEXT:    %[[SOFTPLUS:.*]] = graph.softplus %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[HSWISH:.*]] = graph.hard_swish %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    func.return
func.func @unary(%x: tensor<?x4xf32>, %p: tensor<4xi1>, %i: tensor<4xi32>) {
  %relu = graph.relu %x : tensor<?x4xf32>
  %sigmoid = graph.sigmoid %x : tensor<?x4xf32>
  %tanh = graph.tanh %x : tensor<?x4xf32>
  %exp = graph.exp %x : tensor<?x4xf32>
  %log = graph.log %x : tensor<?x4xf32>
  %sqrt = graph.sqrt %x : tensor<?x4xf32>
  %rsqrt = graph.rsqrt %x : tensor<?x4xf32>
  %erf = graph.erf %x : tensor<?x4xf32>
  %neg = graph.neg %i : tensor<4xi32>
  %abs = graph.abs %i : tensor<4xi32>
  %floor = graph.floor %x : tensor<?x4xf32>
  %ceil = graph.ceil %x : tensor<?x4xf32>
  %sign = graph.sign %x : tensor<?x4xf32>
  %recip = graph.reciprocal %x : tensor<?x4xf32>
  %not = graph.not %p : tensor<4xi1>
  %softplus = graph.softplus %x : tensor<?x4xf32>
  %hswish = graph.hard_swish %x : tensor<?x4xf32>
  func.return
}

// CHECK-LABEL: func.func @unary_params
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT:    %[[GELU:.*]] = graph.gelu %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[GELU_TANH:.*]] = graph.gelu %[[X]] approximate "tanh" : tensor<?x4xf32>
// CHECK-NEXT:    %[[CLIP:.*]] = graph.clip %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    %[[RELU6:.*]] = graph.clip %[[X]] min 0.000000e+00 max 6.000000e+00 : tensor<?x4xf32>
// CHECK-NEXT:    %[[CMAX:.*]] = graph.clip %[[X]] max 1.500000e+00 : tensor<?x4xf32>
// CHECK-NEXT:    %[[LEAKY:.*]] = graph.leaky_relu %[[X]] alpha 1.000000e-02 : tensor<?x4xf32>
// CHECK-NEXT:    %[[ELU:.*]] = graph.elu %[[X]] alpha 1.000000e+00 : tensor<?x4xf32>
// CHECK-NEXT:    %[[SELU:.*]] = graph.selu %[[X]] alpha 1.500000e+00 gamma 2.000000e+00 : tensor<?x4xf32>
// CHECK-NEXT:    %[[HSIG:.*]] = graph.hard_sigmoid %[[X]] alpha 2.000000e-01 beta 5.000000e-01 : tensor<?x4xf32>
// CHECK-NEXT:    func.return
func.func @unary_params(%x: tensor<?x4xf32>) {
  %gelu = graph.gelu %x : tensor<?x4xf32>
  %gelu_tanh = graph.gelu %x approximate "tanh" : tensor<?x4xf32>
  %clip = graph.clip %x : tensor<?x4xf32>
  %relu6 = graph.clip %x min 0.0 max 6.0 : tensor<?x4xf32>
  %cmax = graph.clip %x max 1.5 : tensor<?x4xf32>
  %leaky = graph.leaky_relu %x alpha 0.01 : tensor<?x4xf32>
  %elu = graph.elu %x alpha 1.0 : tensor<?x4xf32>
  %selu = graph.selu %x alpha 1.5 gamma 2.0 : tensor<?x4xf32>
  %hsig = graph.hard_sigmoid %x alpha 0.2 beta 0.5 : tensor<?x4xf32>
  func.return
}

// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<4x8xf32>, %[[BA:.*]]: tensor<2x1x3x4xf32>, %[[BB:.*]]: tensor<5x4x6xf32>, %[[V:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[MM:.*]] = graph.matmul %[[A]], %[[B]] : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:    %[[BATCHED:.*]] = graph.matmul %[[BA]], %[[BB]] : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
// CHECK-NEXT:    %[[MV:.*]] = graph.matmul %[[A]], %[[V]] : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?xf32>
// CHECK-NEXT:    %[[VM:.*]] = graph.matmul %[[V]], %[[B]] : (tensor<4xf32>, tensor<4x8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %[[DOT:.*]] = graph.matmul %[[V]], %[[V]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return
func.func @matmul(%a: tensor<?x4xf32>, %b: tensor<4x8xf32>, %ba: tensor<2x1x3x4xf32>, %bb: tensor<5x4x6xf32>, %v: tensor<4xf32>) {
  %mm = graph.matmul %a, %b : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %batched = graph.matmul %ba, %bb : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  %mv = graph.matmul %a, %v : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?xf32>
  %vm = graph.matmul %v, %b : (tensor<4xf32>, tensor<4x8xf32>) -> tensor<8xf32>
  %dot = graph.matmul %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  func.return
}

// CHECK-LABEL: func.func @conv2d
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3x224x224xf32>, %[[W:.*]]: tensor<64x3x7x7xf32>, %[[B:.*]]: tensor<64xf32>, %[[Y:.*]]: tensor<1x32x?x?xf32>, %[[DW:.*]]: tensor<32x1x3x3xf32>)
// CHECK-NEXT:    %[[STEM:.*]] = graph.conv2d %[[X]], %[[W]], %[[B]] strides [2, 2] pads [3, 3, 3, 3] : (tensor<?x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<?x64x112x112xf32>
// CHECK-NEXT:    %[[PLAIN:.*]] = graph.conv2d %[[X]], %[[W]] : (tensor<?x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<?x64x218x218xf32>
// CHECK-NEXT:    %[[DEPTHWISE:.*]] = graph.conv2d %[[Y]], %[[DW]] pads [2, 2, 2, 2] dilations [2, 2] group 32 : (tensor<1x32x?x?xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x?x?xf32>
// CHECK-NEXT:    func.return
func.func @conv2d(%x: tensor<?x3x224x224xf32>, %w: tensor<64x3x7x7xf32>, %b: tensor<64xf32>, %y: tensor<1x32x?x?xf32>, %dw: tensor<32x1x3x3xf32>) {
  %stem = graph.conv2d %x, %w, %b strides [2, 2] pads [3, 3, 3, 3] : (tensor<?x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<?x64x112x112xf32>
  %plain = graph.conv2d %x, %w : (tensor<?x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<?x64x218x218xf32>
  %depthwise = graph.conv2d %y, %dw pads [2, 2, 2, 2] dilations [2, 2] group 32 : (tensor<1x32x?x?xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x?x?xf32>
  func.return
}

// CHECK-LABEL: func.func @pools
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8x7x7xf32>)
// CHECK-NEXT:    %[[MAX:.*]] = graph.max_pool2d %[[X]] kernel [3, 3] strides [2, 2] pads [1, 1, 1, 1] : tensor<?x8x7x7xf32> -> tensor<?x8x4x4xf32>
// CHECK-NEXT:    %[[CEIL:.*]] = graph.max_pool2d %[[X]] kernel [2, 2] strides [2, 2] {ceil_mode = true} : tensor<?x8x7x7xf32> -> tensor<?x8x4x4xf32>
// CHECK-NEXT:    %[[DIL:.*]] = graph.max_pool2d %[[X]] kernel [2, 2] dilations [2, 2] : tensor<?x8x7x7xf32> -> tensor<?x8x5x5xf32>
// CHECK-NEXT:    %[[AVG:.*]] = graph.avg_pool2d %[[X]] kernel [3, 3] pads [1, 1, 1, 1] {count_include_pad = true} : tensor<?x8x7x7xf32> -> tensor<?x8x7x7xf32>
// CHECK-NEXT:    %[[GAVG:.*]] = graph.global_avg_pool %[[X]] : tensor<?x8x7x7xf32> -> tensor<?x8x1x1xf32>
// CHECK-NEXT:    %[[GMAX:.*]] = graph.global_max_pool %[[X]] : tensor<?x8x7x7xf32> -> tensor<?x8x1x1xf32>
// CHECK-NEXT:    func.return
func.func @pools(%x: tensor<?x8x7x7xf32>) {
  %max = graph.max_pool2d %x kernel [3, 3] strides [2, 2] pads [1, 1, 1, 1] : tensor<?x8x7x7xf32> -> tensor<?x8x4x4xf32>
  %ceil = graph.max_pool2d %x kernel [2, 2] strides [2, 2] {ceil_mode = true} : tensor<?x8x7x7xf32> -> tensor<?x8x4x4xf32>
  %dil = graph.max_pool2d %x kernel [2, 2] dilations [2, 2] : tensor<?x8x7x7xf32> -> tensor<?x8x5x5xf32>
  %avg = graph.avg_pool2d %x kernel [3, 3] pads [1, 1, 1, 1] {count_include_pad = true} : tensor<?x8x7x7xf32> -> tensor<?x8x7x7xf32>
  %gavg = graph.global_avg_pool %x : tensor<?x8x7x7xf32> -> tensor<?x8x1x1xf32>
  %gmax = graph.global_max_pool %x : tensor<?x8x7x7xf32> -> tensor<?x8x1x1xf32>
  func.return
}

// CHECK-LABEL: func.func @normalization
// CHECK-SAME:    (%[[X:.*]]: tensor<?x?x16xf32>, %[[G:.*]]: tensor<16xf32>, %[[BETA:.*]]: tensor<16xf32>, %[[IMG:.*]]: tensor<?x8x4x4xf32>, %[[C:.*]]: tensor<8xf32>)
// CHECK-NEXT:    %[[SOFTMAX:.*]] = graph.softmax %[[X]] axis 2 : tensor<?x?x16xf32>
// CHECK-NEXT:    %[[LOGSM:.*]] = graph.log_softmax %[[X]] axis 0 : tensor<?x?x16xf32>
// CHECK-NEXT:    %[[LN:.*]] = graph.layer_norm %[[X]], %[[G]], %[[BETA]] axis 2 epsilon 1.000000e-05 : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT:    %[[LN_NOBIAS:.*]] = graph.layer_norm %[[X]], %[[G]] axis 2 epsilon 1.000000e-06 : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT:    %[[BN:.*]] = graph.batch_norm %[[IMG]], %[[C]], %[[C]], %[[C]], %[[C]] epsilon 1.000000e-05 : (tensor<?x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8x4x4xf32>
// CHECK-NEXT:    %[[LRN:.*]] = graph.lrn %[[IMG]] size 5 alpha 1.000000e-04 beta 7.500000e-01 bias 1.000000e+00 : tensor<?x8x4x4xf32>
// CHECK-NEXT:    func.return
func.func @normalization(%x: tensor<?x?x16xf32>, %g: tensor<16xf32>, %beta: tensor<16xf32>, %img: tensor<?x8x4x4xf32>, %c: tensor<8xf32>) {
  %softmax = graph.softmax %x axis 2 : tensor<?x?x16xf32>
  %logsm = graph.log_softmax %x axis 0 : tensor<?x?x16xf32>
  %ln = graph.layer_norm %x, %g, %beta axis 2 epsilon 1.0e-05 : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %ln_nobias = graph.layer_norm %x, %g axis 2 epsilon 1.0e-06 : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %bn = graph.batch_norm %img, %c, %c, %c, %c epsilon 1.0e-05 : (tensor<?x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8x4x4xf32>
  %lrn = graph.lrn %img size 5 alpha 1.0e-04 beta 0.75 bias 1.0 : tensor<?x8x4x4xf32>
  func.return
}

// CHECK-LABEL: func.func @reductions
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4x5xf32>)
// CHECK-NEXT:    %[[SUM:.*]] = graph.reduce_sum %[[X]] axes [1] : tensor<?x4x5xf32> -> tensor<?x1x5xf32>
// CHECK-NEXT:    %[[MEAN:.*]] = graph.reduce_mean %[[X]] axes [1, 2] {keepdims = false} : tensor<?x4x5xf32> -> tensor<?xf32>
// CHECK-NEXT:    %[[MAX:.*]] = graph.reduce_max %[[X]] axes [0] : tensor<?x4x5xf32> -> tensor<1x4x5xf32>
// CHECK-NEXT:    %[[MIN:.*]] = graph.reduce_min %[[X]] axes [2] {keepdims = false} : tensor<?x4x5xf32> -> tensor<?x4xf32>
// CHECK-NEXT:    %[[ARGMAX:.*]] = graph.argmax %[[X]] axis 2 : tensor<?x4x5xf32> -> tensor<?x4x1xi64>
// CHECK-NEXT:    %[[ARGLAST:.*]] = graph.argmax %[[X]] axis 1 {keepdims = false, select_last_index = true} : tensor<?x4x5xf32> -> tensor<?x5xi64>
// CHECK-NEXT:    func.return
func.func @reductions(%x: tensor<?x4x5xf32>) {
  %sum = graph.reduce_sum %x axes [1] : tensor<?x4x5xf32> -> tensor<?x1x5xf32>
  %mean = graph.reduce_mean %x axes [1, 2] {keepdims = false} : tensor<?x4x5xf32> -> tensor<?xf32>
  %max = graph.reduce_max %x axes [0] : tensor<?x4x5xf32> -> tensor<1x4x5xf32>
  %min = graph.reduce_min %x axes [2] {keepdims = false} : tensor<?x4x5xf32> -> tensor<?x4xf32>
  %argmax = graph.argmax %x axis 2 : tensor<?x4x5xf32> -> tensor<?x4x1xi64>
  %arglast = graph.argmax %x axis 1 {keepdims = false, select_last_index = true} : tensor<?x4x5xf32> -> tensor<?x5xi64>
  func.return
}

// CHECK-LABEL: func.func @reshape_transpose_concat
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>, %[[S:.*]]: tensor<2x6xf32>, %[[N:.*]]: index)
// CHECK-NEXT:    %[[FLAT:.*]] = graph.reshape %[[S]] : tensor<2x6xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    %[[SPLIT_DIM:.*]] = graph.reshape %[[X]] dims(%[[N]]) : tensor<?x4xf32> -> tensor<?x2x2xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[X]] perm [1, 0] : tensor<?x4xf32> -> tensor<4x?xf32>
// CHECK-NEXT:    %[[CAT:.*]] = graph.concat %[[X]], %[[X]] axis 0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    %[[CAT1:.*]] = graph.concat %[[S]], %[[S]], %[[S]] axis 1 : (tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x18xf32>
// CHECK-NEXT:    func.return
func.func @reshape_transpose_concat(%x: tensor<?x4xf32>, %s: tensor<2x6xf32>, %n: index) {
  %flat = graph.reshape %s : tensor<2x6xf32> -> tensor<3x4xf32>
  %split_dim = graph.reshape %x dims(%n) : tensor<?x4xf32> -> tensor<?x2x2xf32>
  %t = graph.transpose %x perm [1, 0] : tensor<?x4xf32> -> tensor<4x?xf32>
  %cat = graph.concat %x, %x axis 0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %cat1 = graph.concat %s, %s, %s axis 1 : (tensor<2x6xf32>, tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x18xf32>
  func.return
}

// CHECK-LABEL: func.func @slice_split_gather
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8xf32>, %[[IDX:.*]]: tensor<3xi64>, %[[IDX32:.*]]: tensor<2x2xi32>)
// CHECK-NEXT:    %[[SL:.*]] = graph.slice %[[X]] starts [0, 1] ends [9223372036854775807, 7] steps [1, 2] : tensor<?x8xf32> -> tensor<?x3xf32>
// CHECK-NEXT:    %[[REV:.*]] = graph.slice %[[X]] starts [0, 7] ends [9223372036854775807, -1] steps [1, -1] : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT:    %[[PARTS:.*]], %[[PARTS_1:.*]] = graph.split %[[X]] axis 1 sizes [3, 5] : tensor<?x8xf32> -> tensor<?x3xf32>, tensor<?x5xf32>
// CHECK-NEXT:    %[[HALVES:.*]], %[[HALVES_1:.*]] = graph.split %[[X]] axis 0 sizes [-1, -1] : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT:    %[[ROWS:.*]] = graph.gather %[[X]], %[[IDX]] axis 0 : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
// CHECK-NEXT:    %[[COLS:.*]] = graph.gather %[[X]], %[[IDX32]] axis 1 : (tensor<?x8xf32>, tensor<2x2xi32>) -> tensor<?x2x2xf32>
// CHECK-NEXT:    func.return
func.func @slice_split_gather(%x: tensor<?x8xf32>, %idx: tensor<3xi64>, %idx32: tensor<2x2xi32>) {
  %sl = graph.slice %x starts [0, 1] ends [9223372036854775807, 7] steps [1, 2] : tensor<?x8xf32> -> tensor<?x3xf32>
  %rev = graph.slice %x starts [0, 7] ends [9223372036854775807, -1] steps [1, -1] : tensor<?x8xf32> -> tensor<?x8xf32>
  %parts:2 = graph.split %x axis 1 sizes [3, 5] : tensor<?x8xf32> -> tensor<?x3xf32>, tensor<?x5xf32>
  %halves:2 = graph.split %x axis 0 sizes [-1, -1] : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  %rows = graph.gather %x, %idx axis 0 : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %cols = graph.gather %x, %idx32 axis 1 : (tensor<?x8xf32>, tensor<2x2xi32>) -> tensor<?x2x2xf32>
  func.return
}

// x[:, :n] and x[:, m:n:-1] with run-time bounds: `bounds` holds the dyn_starts values, then the dyn_ends ones.
// CHECK-LABEL: func.func @slice_runtime_bounds
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8xf32>, %[[M:.*]]: index, %[[N:.*]]: index)
// CHECK-NEXT:    %[[A:.*]] = graph.slice %[[X]] starts [0, 0] ends [2, 0] steps [1, 1] dyn_ends [1] bounds(%[[N]]) : tensor<2x8xf32> -> tensor<2x?xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.slice %[[X]] starts [0, 0] ends [2, 0] steps [1, -1] dyn_starts [1] dyn_ends [1] bounds(%[[M]], %[[N]]) : tensor<2x8xf32> -> tensor<2x?xf32>
// CHECK-NEXT:    func.return
func.func @slice_runtime_bounds(%x: tensor<2x8xf32>, %m: index, %n: index) {
  %a = graph.slice %x starts [0, 0] ends [2, 0] steps [1, 1] dyn_ends [1] bounds(%n) : tensor<2x8xf32> -> tensor<2x?xf32>
  %b = graph.slice %x starts [0, 0] ends [2, 0] steps [1, -1] dyn_starts [1] dyn_ends [1] bounds(%m, %n) : tensor<2x8xf32> -> tensor<2x?xf32>
  func.return
}

// CHECK-LABEL: func.func @where_cast_pad
// CHECK-SAME:    (%[[C:.*]]: tensor<?x1xi1>, %[[A:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<f32>, %[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[W:.*]] = graph.where %[[C]], %[[A]], %[[S]] : (tensor<?x1xi1>, tensor<4xf32>, tensor<f32>) -> tensor<?x4xf32>
// CHECK-NEXT:    %[[I:.*]] = graph.cast %[[X]] : tensor<2x3xf32> -> tensor<2x3xi64>
// CHECK-NEXT:    %[[H:.*]] = graph.cast %[[X]] : tensor<2x3xf32> -> tensor<2x3xf16>
// CHECK-NEXT:    %[[P:.*]] = graph.pad %[[X]] pads [0, 1, 0, 2] : tensor<2x3xf32> -> tensor<2x6xf32>
// CHECK-NEXT:    %[[PV:.*]] = graph.pad %[[X]] pads [1, 0, 1, 0] value -1.000000e+00 : tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    %[[PR:.*]] = graph.pad %[[X]] pads [0, 2, 0, 2] mode "reflect" : tensor<2x3xf32> -> tensor<2x7xf32>
// CHECK-NEXT:    %[[CROP:.*]] = graph.pad %[[X]] pads [0, -1, 0, 0] mode "edge" : tensor<2x3xf32> -> tensor<2x2xf32>
// CHECK-NEXT:    func.return
func.func @where_cast_pad(%c: tensor<?x1xi1>, %a: tensor<4xf32>, %s: tensor<f32>, %x: tensor<2x3xf32>) {
  %w = graph.where %c, %a, %s : (tensor<?x1xi1>, tensor<4xf32>, tensor<f32>) -> tensor<?x4xf32>
  %i = graph.cast %x : tensor<2x3xf32> -> tensor<2x3xi64>
  %h = graph.cast %x : tensor<2x3xf32> -> tensor<2x3xf16>
  %p = graph.pad %x pads [0, 1, 0, 2] : tensor<2x3xf32> -> tensor<2x6xf32>
  %pv = graph.pad %x pads [1, 0, 1, 0] value -1.0 : tensor<2x3xf32> -> tensor<4x3xf32>
  %pr = graph.pad %x pads [0, 2, 0, 2] mode "reflect" : tensor<2x3xf32> -> tensor<2x7xf32>
  %crop = graph.pad %x pads [0, -1, 0, 0] mode "edge" : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// CHECK-LABEL: func.func @broadcast_tile_trilu
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4xf32>, %[[N:.*]]: index, %[[M:.*]]: tensor<?x3x3xf32>)
// CHECK-NEXT:    %[[B:.*]] = graph.broadcast_to %[[X]] dims(%[[N]]) : tensor<1x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT:    %[[BS:.*]] = graph.broadcast_to %[[X]] : tensor<1x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.tile %[[X]] repeats [3, 2] : tensor<1x4xf32> -> tensor<3x8xf32>
// CHECK-NEXT:    %[[UP:.*]] = graph.trilu %[[M]] : tensor<?x3x3xf32>
// CHECK-NEXT:    %[[LOW:.*]] = graph.trilu %[[M]] k -1 {upper = false} : tensor<?x3x3xf32>
// CHECK-NEXT:    func.return
func.func @broadcast_tile_trilu(%x: tensor<1x4xf32>, %n: index, %m: tensor<?x3x3xf32>) {
  %b = graph.broadcast_to %x dims(%n) : tensor<1x4xf32> -> tensor<?x4xf32>
  %bs = graph.broadcast_to %x : tensor<1x4xf32> -> tensor<2x3x4xf32>
  %t = graph.tile %x repeats [3, 2] : tensor<1x4xf32> -> tensor<3x8xf32>
  %up = graph.trilu %m : tensor<?x3x3xf32>
  %low = graph.trilu %m k -1 {upper = false} : tensor<?x3x3xf32>
  func.return
}

// CHECK-LABEL: func.func @shape_ops
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>, %[[S:.*]]: tensor<i64>, %[[L:.*]]: tensor<i64>, %[[D:.*]]: tensor<i64>)
// CHECK-NEXT:    %[[R:.*]] = graph.range %[[S]], %[[L]], %[[D]] : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0 : tensor<?x4xf32>
// CHECK-NEXT:    %[[SHAPE:.*]] = graph.shape %[[X]] : tensor<?x4xf32> -> tensor<2xi64>
// CHECK-NEXT:    %[[DIMS:.*]] = graph.from_dims(%[[N]], %[[N]]) : tensor<2xi64>
// CHECK-NEXT:    %[[NONE:.*]] = graph.from_dims() : tensor<0xi64>
// CHECK-NEXT:    func.return
func.func @shape_ops(%x: tensor<?x4xf32>, %s: tensor<i64>, %l: tensor<i64>, %d: tensor<i64>) {
  %r = graph.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %n = graph.dim %x, 0 : tensor<?x4xf32>
  %shape = graph.shape %x : tensor<?x4xf32> -> tensor<2xi64>
  %dims = graph.from_dims(%n, %n) : tensor<2xi64>
  %none = graph.from_dims() : tensor<0xi64>
  func.return
}

// CHECK-LABEL: func.func @extract
// CHECK-SAME:    (%[[T:.*]]: tensor<f32>, %[[I:.*]]: tensor<i64>)
// CHECK-NEXT:    %[[F:.*]] = graph.extract %[[T]] : tensor<f32> -> f32
// CHECK-NEXT:    %[[N:.*]] = graph.extract %[[I]] : tensor<i64> -> i64
// CHECK-NEXT:    func.return %[[F]], %[[N]] : f32, i64
func.func @extract(%t: tensor<f32>, %i: tensor<i64>) -> (f32, i64) {
  %f = graph.extract %t : tensor<f32> -> f32
  %n = graph.extract %i : tensor<i64> -> i64
  func.return %f, %n : f32, i64
}

// CHECK-LABEL: func.func @call_kernel
// CHECK-SAME:    (%[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[A]], 0 : tensor<?x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.call_kernel @k(%[[A]], %[[B]]) dims(%[[N]]) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.call_kernel @k_static(%[[B]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[U:.*]], %[[U_1:.*]] = graph.call_kernel @k2(%[[A]]) dims(%[[N]], %[[N]]) : (tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?xf32>)
// CHECK-NEXT:    func.return
func.func @call_kernel(%a: tensor<?x4xf32>, %b: tensor<4xf32>) {
  %n = graph.dim %a, 0 : tensor<?x4xf32>
  %y = graph.call_kernel @k(%a, %b) dims(%n) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %s = graph.call_kernel @k_static(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %u:2 = graph.call_kernel @k2(%a) dims(%n, %n) : (tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?xf32>)
  func.return
}
