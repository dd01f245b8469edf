// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// A load whose lanes step by 2 elements (x[1::2]): one 32-element masked contiguous load
// that keeps every other element (the lane mask spread over pairs, ANDed with 1,0,1,0...),
// then a shuffle picking lanes 0, 2, 4, ...; no gather.
// CHECK-LABEL: func.func public @stride2
// CHECK: arith.constant dense<[true, false, true, false
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 0, 1, 1, 2, 2
// CHECK: arith.andi
// CHECK: "tcpu.vload"({{.*}}) -> vector<32xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xf32>, vector<32xf32>
// CHECK-NOT: tcpu.gather
tt.func public @stride2(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %cst = arith.constant dense<-7.000000e+00> : tensor<64xf32>
  %cst_0 = arith.constant dense<2> : tensor<64xi32>
  %c1_i32 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %pid = tt.get_program_id x : i32
  %base = arith.muli %pid, %c64 : i32
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %bs = tt.splat %base : i32 -> tensor<64xi32>
  %o = arith.addi %bs, %r : tensor<64xi32>
  %ns = tt.splat %n : i32 -> tensor<64xi32>
  %m = arith.cmpi slt, %o, %ns : tensor<64xi32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %o : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %x1 = tt.addptr %x, %c1_i32 : !tt.ptr<f32>, i32
  %o2 = arith.muli %o, %cst_0 : tensor<64xi32>
  %xs = tt.splat %x1 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %o2 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %xp, %m, %cst : tensor<64x!tt.ptr<f32>>
  tt.store %yp, %v, %m : tensor<64x!tt.ptr<f32>>
  tt.return
}

// Stride 5 is past MAX_LOAD_STRIDE: a gather.
// CHECK-LABEL: func.func public @stride5
// CHECK: tcpu.gather
tt.func public @stride5(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %cst_0 = arith.constant dense<5> : tensor<64xi32>
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %o5 = arith.muli %r, %cst_0 : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %o5 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
  tt.store %yp, %v : tensor<64x!tt.ptr<f32>>
  tt.return
}
