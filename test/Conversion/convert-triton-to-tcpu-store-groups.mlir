// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// Two adjacent stores of values from the same loads (a multi-output kernel; the first
// updates x in place). One nest stores both, each chunk's loads before its stores, under
// a run-time check that each store lies apart from the other tiles or on them lane for
// lane; otherwise, one nest per store after the loads and the shared exp are copied into
// buffers. The pointer arithmetic of the second store was moved above the first. A store
// through the pointers the kernel loads through never streams (its lines are cached); the
// second streams only where the check finds it apart from the loads (inner scf.if).
// CHECK-LABEL: func.func public @two_outputs
// CHECK: "tcpu.ptr_to_int"
// CHECK: arith.cmpi ule
// CHECK: arith.cmpi eq
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: scf.if %{{.*}} {
// CHECK: scf.for
// CHECK-COUNT-2: "tcpu.vload"
// CHECK: math.exp
// CHECK-NOT: scf.for
// CHECK: "tcpu.vstore"
// CHECK-NOT: may_stream
// CHECK-NEXT: "tcpu.vstore"
// CHECK-NOT: may_stream
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: } else {
// CHECK: scf.for
// CHECK: "tcpu.vstore"
// CHECK-NOT: may_stream
// CHECK-NEXT: "tcpu.vstore"{{.*}}may_stream
// CHECK: } else {
// CHECK: vector.store
// CHECK: math.exp
// CHECK: vector.store
// CHECK: "tcpu.vstore"
// CHECK: "tcpu.vstore"
// CHECK: func.return
tt.func public @two_outputs(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %a = tt.load %xp : tensor<64x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %b = tt.load %yp : tensor<64x!tt.ptr<f32>>
  %s = arith.addf %a, %b : tensor<64xf32>
  %e = math.exp %s : tensor<64xf32>
  %p = arith.mulf %e, %a : tensor<64xf32>
  tt.store %xp, %p : tensor<64x!tt.ptr<f32>>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %op = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %q = arith.mulf %e, %b : tensor<64xf32>
  tt.store %op, %q : tensor<64x!tt.ptr<f32>>
  tt.return
}

// A store of another shape ends the run: each store keeps its own nest, no check.
// CHECK-LABEL: func.func public @shapes_differ
// CHECK-NOT: scf.if
// CHECK: func.return
tt.func public @shapes_differ(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %a = tt.load %xp : tensor<64x!tt.ptr<f32>>
  %r32 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %op = tt.addptr %os, %r32 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  %c = arith.constant dense<1.0> : tensor<32xf32>
  tt.store %xp, %a : tensor<64x!tt.ptr<f32>>
  tt.store %op, %c : tensor<32x!tt.ptr<f32>>
  tt.return
}
