// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// A noinline function returning a tensor is inlined (and then dropped); the tensor is
// fused into the caller's store.
// CHECK-NOT: @load_block
// CHECK-LABEL: func.func public @caller
// CHECK-NOT: call
// CHECK: "tcpu.vload"
// CHECK: "tcpu.vstore"
tt.func private @load_block(%p: !tt.ptr<f32>) -> tensor<16xf32> {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %pp = tt.addptr %ps, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %v = tt.load %pp : tensor<16x!tt.ptr<f32>>
  tt.return %v : tensor<16xf32>
}
tt.func public @caller(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %v = tt.call @load_block(%x) : (!tt.ptr<f32>) -> tensor<16xf32>
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %op = tt.addptr %os, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  tt.store %op, %v : tensor<16x!tt.ptr<f32>>
  tt.return
}
