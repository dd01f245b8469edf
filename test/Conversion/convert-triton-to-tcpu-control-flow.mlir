// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// A tensor carried by scf.for lives in a buffer: no tensor iter_args remain, the
// init is stored before the loop and the yield writes the buffer in place.
// CHECK-LABEL: func.func public @carried
// CHECK: %[[BUF:.*]] = memref.alloca() {alignment = 64 : i64} : memref<32xf32>
// CHECK: vector.store {{.*}}, %[[BUF]]
// CHECK: scf.for %{{[^ ]*}} = %{{.*}} to %{{.*}} step %{{[^ ]*}} : i32 {
// CHECK: vector.load %[[BUF]]
// CHECK: vector.store {{.*}}, %[[BUF]]
// CHECK: vector.load %[[BUF]]
// CHECK: "tcpu.vstore"
tt.func public @carried(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.000000e+00> : tensor<32xf32>
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %zero) -> (tensor<32xf32>) : i32 {
    %v = tt.load %xp : tensor<32x!tt.ptr<f32>>
    %s = arith.addf %a, %v : tensor<32xf32>
    scf.yield %s : tensor<32xf32>
  }
  tt.store %xp, %acc : tensor<32x!tt.ptr<f32>>
  tt.return
}

// A loop whose init is in a buffer already and read by nothing else (the scf.if that
// peel-accumulator-loops puts before it) carries its tensor in that buffer: one alloca,
// no copy between the if and the loop.
// CHECK-LABEL: func.func public @takes_over
// CHECK: %[[BUF:.*]] = memref.alloca() {alignment = 64 : i64} : memref<32xf32>
// CHECK-NOT: memref.alloca
// CHECK: scf.if
// CHECK: vector.store {{.*}}, %[[BUF]]
// CHECK: } else {
// CHECK: vector.store {{.*}}, %[[BUF]]
// CHECK: } {tcpu.no_unroll}
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %i = %c1 to %n step %c1 : i32 {
// CHECK: vector.load %[[BUF]]
// CHECK: vector.store {{.*}}, %[[BUF]]
tt.func public @takes_over(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.000000e+00> : tensor<32xf32>
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  %first = arith.cmpi slt, %c0, %n : i32
  %y = scf.if %first -> (tensor<32xf32>) {
    %v = tt.load %xp : tensor<32x!tt.ptr<f32>>
    %s = arith.addf %zero, %v : tensor<32xf32>
    scf.yield %s : tensor<32xf32>
  } else {
    scf.yield %zero : tensor<32xf32>
  }
  %acc = scf.for %i = %c1 to %n step %c1 iter_args(%a = %y) -> (tensor<32xf32>) : i32 {
    %v = tt.load %xp : tensor<32x!tt.ptr<f32>>
    %s = arith.addf %a, %v : tensor<32xf32>
    scf.yield %s : tensor<32xf32>
  }
  tt.store %xp, %acc : tensor<32x!tt.ptr<f32>>
  tt.return
}
