// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// A reduction along the last axis: vector chunks combined lane-wise in a loop, then
// the lanes pairwise (shuffles), down to one scalar result.
// CHECK-LABEL: func.func public @sum_rows
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: vector.extract {{.*}}[1] : f32 from vector<2xf32>
// CHECK: arith.addf {{.*}} : f32
// CHECK: "tcpu.store"
tt.func public @sum_rows(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32>) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
  %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<64xf32>) -> f32
  tt.store %o, %s : !tt.ptr<f32>
  tt.return
}

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
