// RUN: mini-opt %s --split-input-file --verify-diagnostics | filecheck %s

%n = "test.op"() : () -> index
%m = "mem.alloc"(%n, %n) : (index, index) -> memref<?x4xf32>
// CHECK: {{^}}expected 1 dim operand(s), one per '?' of the result type memref<?x4xf32>, got 2

// -----

%m = "mem.alloc"() <{alignment = 48 : i64}> : () -> memref<4xf32>
// CHECK: {{^}}alignment must be a positive power of two, got 48

// -----

%m = "mem.alloca"() : () -> memref<?x?xf32>
// CHECK: {{^}}expected 2 dim operand(s), one per '?' of the result type memref<?x?xf32>, got 0

// -----

%m = "mem.alloc"() : () -> memref<4x4xf32, strided<[1, 4]>>
// CHECK: {{^}}allocated memref must have the identity layout and no memory space, got memref<4x4xf32, strided<[1, 4]>>

// -----

%m, %i = "test.op"() : () -> (memref<?x4xf32>, index)
%v = "mem.load"(%m, %i) : (memref<?x4xf32>, index) -> f32
// CHECK: {{^}}expected 2 indices for memref<?x4xf32> (one per dim), got 1

// -----

%m, %i = "test.op"() : () -> (memref<?x4xf32>, index)
%v = "mem.load"(%m, %i, %i) : (memref<?x4xf32>, index, index) -> f16
// CHECK: {{^}}loaded type f16 does not match the memref element type f32 (nor a vector of it)

// -----

%m, %i = "test.op"() : () -> (memref<?x8xf32>, index)
%v = "mem.load"(%m, %i, %i) : (memref<?x8xf32>, index, index) -> vector<4xf16>
// CHECK: {{^}}loaded vector element type f16 does not match the memref element type f32

// -----

%m, %i = "test.op"() : () -> (memref<?x4xf32>, index)
%v = "mem.load"(%m, %i, %i) : (memref<?x4xf32>, index, index) -> vector<8xf32>
// CHECK: {{^}}loaded vector of 8 elements does not fit in the last dim (size 4) of memref<?x4xf32>

// -----

%m, %i = "test.op"() : () -> (memref<?x16xf32>, index)
%v = "mem.load"(%m, %i, %i) : (memref<?x16xf32>, index, index) -> vector<2x4xf32>
// CHECK: {{^}}loaded vector must be 1-D and fixed-size, got vector<2x4xf32>

// -----

%m, %i, %v = "test.op"() : () -> (memref<?xf32>, index, i32)
"mem.store"(%v, %m, %i) : (i32, memref<?xf32>, index) -> ()
// CHECK: {{^}}stored type i32 does not match the memref element type f32 (nor a vector of it)

// -----

%m, %i, %v = "test.op"() : () -> (memref<?xf32>, index, vector<8xf64>)
"mem.store"(%v, %m, %i) : (vector<8xf64>, memref<?xf32>, index) -> ()
// CHECK: {{^}}stored vector element type f64 does not match the memref element type f32

// -----

%m, %i, %v = "test.op"() : () -> (memref<f32>, index, f32)
"mem.store"(%v, %m, %i) : (f32, memref<f32>, index) -> ()
// CHECK: {{^}}expected 0 indices for memref<f32> (one per dim), got 1

// -----

%m = "test.op"() : () -> memref<4x4xf32>
%v = "mem.view"(%m) : (memref<4x4xf32>) -> memref<2x4xi32>
// CHECK: {{^}}view must keep the element type: f32 vs i32

// -----

%m = "test.op"() : () -> memref<4x4xf32>
%v = "mem.view"(%m) : (memref<4x4xf32>) -> memref<2x4xf32>
// CHECK: {{^}}view must keep the element count: memref<4x4xf32> has 16 elements, memref<2x4xf32> has 8

// -----

%m = "test.op"() : () -> memref<?x4xf32>
%v = "mem.view"(%m) : (memref<?x4xf32>) -> memref<?x2x2xf32>
// CHECK: {{^}}expected 1 dim operand(s), one per '?' of the result type memref<?x2x2xf32>, got 0

// -----

%m = "test.op"() : () -> memref<?x4xf32>
%d = "mem.dim"(%m) <{index = 2 : index}> : (memref<?x4xf32>) -> index
// CHECK: {{^}}dim index 2 out of range for rank-2 memref

// -----

%a, %b = "test.op"() : () -> (memref<4x4xf32>, memref<4x5xf32>)
"mem.copy"(%a, %b) : (memref<4x4xf32>, memref<4x5xf32>) -> ()
// CHECK: {{^}}shapes differ in dim 1: memref<4x4xf32> vs memref<4x5xf32>

// -----

%a, %b = "test.op"() : () -> (memref<4xf32>, memref<4xf16>)
"mem.copy"(%a, %b) : (memref<4xf32>, memref<4xf16>) -> ()
// CHECK: {{^}}element types differ: f32 vs f16

// -----

%m, %v = "test.op"() : () -> (memref<4xf32>, f64)
"mem.fill"(%v, %m) : (f64, memref<4xf32>) -> ()
// CHECK: {{^}}fill value type f64 does not match the memref element type f32

// -----

%a = "mem.arena"() : () -> memref<?xi8>
// CHECK: {{^}}arena of type memref<?xi8> needs a size operand

// -----

%n = "test.op"() : () -> index
%a = "mem.arena"(%n) : (index) -> memref<64xi8>
// CHECK: {{^}}arena of static type memref<64xi8> takes no size operand

// -----

%a = "mem.arena"() : () -> memref<64xf32>
// CHECK: {{^}}arena must be a 1-D i8 memref, got memref<64xf32>

// -----

%a, %o = "test.op"() : () -> (memref<256xf32>, index)
%s = "mem.slot"(%a, %o) : (memref<256xf32>, index) -> memref<4xf32>
// CHECK: {{^}}slot source must be a 1-D i8 memref, got memref<256xf32>

// -----

%a, %o = "test.op"() : () -> (memref<?xi8>, index)
%s = "mem.slot"(%a, %o) : (memref<?xi8>, index) -> memref<?x?xf32>
// CHECK: {{^}}expected 2 dim operand(s), one per '?' of the result type memref<?x?xf32>, got 0
