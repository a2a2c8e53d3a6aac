// RUN: mini-opt %s --split-input-file --verify-diagnostics

%n = "test.op"() : () -> index
// expected-error @+1 {{expected 1 dim operand(s), one per '?' of the result type memref<?x4xf32>, got 2}}
%m = "mem.alloc"(%n, %n) : (index, index) -> memref<?x4xf32>

// -----

// expected-error @+1 {{alignment must be a positive power of two, got 48}}
%m = "mem.alloc"() <{alignment = 48 : i64}> : () -> memref<4xf32>

// -----

// expected-error @+1 {{expected 2 dim operand(s), one per '?' of the result type memref<?x?xf32>, got 0}}
%m = "mem.alloca"() : () -> memref<?x?xf32>

// -----

// expected-error @+1 {{allocated memref must have the identity layout and no memory space, got memref<4x4xf32, strided<[1, 4]>>}}
%m = "mem.alloc"() : () -> memref<4x4xf32, strided<[1, 4]>>

// -----

%m, %i = "test.op"() : () -> (memref<?x4xf32>, index)
// expected-error @+1 {{expected 2 indices for memref<?x4xf32> (one per dim), got 1}}
%v = "mem.load"(%m, %i) : (memref<?x4xf32>, index) -> f32

// -----

%m, %i = "test.op"() : () -> (memref<?x4xf32>, index)
// expected-error @+1 {{loaded type f16 does not match the memref element type f32 (nor a vector of it)}}
%v = "mem.load"(%m, %i, %i) : (memref<?x4xf32>, index, index) -> f16

// -----

%m, %i = "test.op"() : () -> (memref<?x8xf32>, index)
// expected-error @+1 {{loaded vector element type f16 does not match the memref element type f32}}
%v = "mem.load"(%m, %i, %i) : (memref<?x8xf32>, index, index) -> vector<4xf16>

// -----

%m, %i = "test.op"() : () -> (memref<?x4xf32>, index)
// expected-error @+1 {{loaded vector of 8 elements does not fit in the last dim (size 4) of memref<?x4xf32>}}
%v = "mem.load"(%m, %i, %i) : (memref<?x4xf32>, index, index) -> vector<8xf32>

// -----

%m, %i = "test.op"() : () -> (memref<?x16xf32>, index)
// expected-error @+1 {{loaded vector must be 1-D and fixed-size, got vector<2x4xf32>}}
%v = "mem.load"(%m, %i, %i) : (memref<?x16xf32>, index, index) -> vector<2x4xf32>

// -----

%m, %i, %v = "test.op"() : () -> (memref<?xf32>, index, i32)
// expected-error @+1 {{stored type i32 does not match the memref element type f32 (nor a vector of it)}}
"mem.store"(%v, %m, %i) : (i32, memref<?xf32>, index) -> ()

// -----

%m, %i, %v = "test.op"() : () -> (memref<?xf32>, index, vector<8xf64>)
// expected-error @+1 {{stored vector element type f64 does not match the memref element type f32}}
"mem.store"(%v, %m, %i) : (vector<8xf64>, memref<?xf32>, index) -> ()

// -----

%m, %i, %v = "test.op"() : () -> (memref<f32>, index, f32)
// expected-error @+1 {{expected 0 indices for memref<f32> (one per dim), got 1}}
"mem.store"(%v, %m, %i) : (f32, memref<f32>, index) -> ()

// -----

%m = "test.op"() : () -> memref<4x4xf32>
// expected-error @+1 {{view must keep the element type: f32 vs i32}}
%v = "mem.view"(%m) : (memref<4x4xf32>) -> memref<2x4xi32>

// -----

%m = "test.op"() : () -> memref<4x4xf32>
// expected-error @+1 {{view must keep the element count: memref<4x4xf32> has 16 elements, memref<2x4xf32> has 8}}
%v = "mem.view"(%m) : (memref<4x4xf32>) -> memref<2x4xf32>

// -----

%m = "test.op"() : () -> memref<?x4xf32>
// expected-error @+1 {{expected 1 dim operand(s), one per '?' of the result type memref<?x2x2xf32>, got 0}}
%v = "mem.view"(%m) : (memref<?x4xf32>) -> memref<?x2x2xf32>

// -----

%m = "test.op"() : () -> memref<?x4xf32>
// expected-error @+1 {{dim index 2 out of range for rank-2 memref}}
%d = "mem.dim"(%m) <{index = 2 : index}> : (memref<?x4xf32>) -> index

// -----

%a, %b = "test.op"() : () -> (memref<4x4xf32>, memref<4x5xf32>)
// expected-error @+1 {{shapes differ in dim 1: memref<4x4xf32> vs memref<4x5xf32>}}
"mem.copy"(%a, %b) : (memref<4x4xf32>, memref<4x5xf32>) -> ()

// -----

%a, %b = "test.op"() : () -> (memref<4xf32>, memref<4xf16>)
// expected-error @+1 {{element types differ: f32 vs f16}}
"mem.copy"(%a, %b) : (memref<4xf32>, memref<4xf16>) -> ()

// -----

%m, %v = "test.op"() : () -> (memref<4xf32>, f64)
// expected-error @+1 {{fill value type f64 does not match the memref element type f32}}
"mem.fill"(%v, %m) : (f64, memref<4xf32>) -> ()

// -----

// expected-error @+1 {{arena of type memref<?xi8> needs a size operand}}
%a = "mem.arena"() : () -> memref<?xi8>

// -----

%n = "test.op"() : () -> index
// expected-error @+1 {{arena of static type memref<64xi8> takes no size operand}}
%a = "mem.arena"(%n) : (index) -> memref<64xi8>

// -----

// expected-error @+1 {{arena must be a 1-D i8 memref, got memref<64xf32>}}
%a = "mem.arena"() : () -> memref<64xf32>

// -----

%a, %o = "test.op"() : () -> (memref<256xf32>, index)
// expected-error @+1 {{slot source must be a 1-D i8 memref, got memref<256xf32>}}
%s = "mem.slot"(%a, %o) : (memref<256xf32>, index) -> memref<4xf32>

// -----

%a, %o = "test.op"() : () -> (memref<?xi8>, index)
// expected-error @+1 {{expected 2 dim operand(s), one per '?' of the result type memref<?x?xf32>, got 0}}
%s = "mem.slot"(%a, %o) : (memref<?xi8>, index) -> memref<?x?xf32>

// -----

%m = "test.op"() : () -> memref<1x5x4xf32>
%o = arith.constant 12 : index
// expected-error @+1 {{subrange of 12 elements at offset 12 does not fit in memref<1x5x4xf32> (20 elements)}}
%p = "mem.subrange"(%m, %o) : (memref<1x5x4xf32>, index) -> memref<1x3x4xf32>

// -----

%m = "test.op"() : () -> memref<?x4xf32>
%o = arith.constant 0 : index
// expected-error @+1 {{subrange needs static shapes, got memref<?x4xf32> -> memref<1x4xf32>}}
%p = "mem.subrange"(%m, %o) : (memref<?x4xf32>, index) -> memref<1x4xf32>

// -----

%m = "test.op"() : () -> memref<8xf32>
%o = arith.constant 0 : index
// expected-error @+1 {{subrange must keep the element type: f32 vs i32}}
%p = "mem.subrange"(%m, %o) : (memref<8xf32>, index) -> memref<4xi32>
