// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// A masked load whose lanes step by 2 elements (x[1::2]): one 32-element contiguous window
// load whose mask is the lane mask spread over pairs ANDed with 1,0,1,0... (the element after
// a lane may be past a masked-off end), a shuffle picking lanes 0, 2, 4, ..., and `other`
// selected into the masked-off lanes; no gather.
// CHECK-LABEL: func.func public @stride2
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 0, 1, 1, 2, 2
// CHECK: arith.constant dense<[true, false, true, false
// CHECK: arith.andi
// CHECK: "tcpu.vload"({{.*}}) -> vector<32xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xf32>, vector<32xf32>
// CHECK: arith.select
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

// x[2i] and x[2i + 1] (Inductor's `2*x0 + 256*row` and `1 + 2*x0 + 256*row`): one window
// shared by both, unmasked (it runs from the first one's lane 0 to the second one's last
// lane), and two shuffles.
// CHECK-LABEL: func.func public @pair
// CHECK: "tcpu.vload"(%{{[^,]*}}) <{{.*}}> : (!tt.ptr<f32>) -> vector<32xf32>
// CHECK-NOT: tcpu.vload"({{.*}}) -> vector<32xf32>
// CHECK: vector.shuffle %[[W:.*]], %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
// CHECK: vector.shuffle %[[W]], %{{.*}} [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]
// CHECK-NOT: tcpu.vload"({{.*}}) -> vector<32xf32>
// CHECK: "tcpu.vstore"
tt.func public @pair(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %c2 = arith.constant dense<2> : tensor<64xi32>
  %c1 = arith.constant dense<1> : tensor<64xi32>
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %e = arith.muli %r, %c2 : tensor<64xi32>
  %o = arith.addi %e, %c1 : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %pe = tt.addptr %xs, %e : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %po = tt.addptr %xs, %o : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %a = tt.load %pe : tensor<64x!tt.ptr<f32>>
  %b = tt.load %po : tensor<64x!tt.ptr<f32>>
  %s = arith.addf %a, %b : tensor<64xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %yp, %s : tensor<64x!tt.ptr<f32>>
  tt.return
}

// x[3i + 1] and x[3i + 2] share a window starting at the first one's lane 0; only the
// element after the second one's last lane is masked off.
// CHECK-LABEL: func.func public @two_of_three
// CHECK: "tcpu.addptr"(%{{.*}}, %{{.*}}) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
// CHECK: %[[M:.*]] = arith.constant dense<[true, true, true, true, {{.*}}, true, true, false]> : vector<48xi1>
// CHECK: "tcpu.vload"(%{{.*}}, %[[M]]) {{.*}} -> vector<48xf32>
// CHECK-NOT: tcpu.vload"({{.*}}) -> vector<48xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 3, 6, 9,
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [1, 4, 7, 10,
tt.func public @two_of_three(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %c3 = arith.constant dense<3> : tensor<64xi32>
  %c1 = arith.constant dense<1> : tensor<64xi32>
  %c2 = arith.constant dense<2> : tensor<64xi32>
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %e = arith.muli %r, %c3 : tensor<64xi32>
  %o1 = arith.addi %e, %c1 : tensor<64xi32>
  %o2 = arith.addi %e, %c2 : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %p1 = tt.addptr %xs, %o1 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %p2 = tt.addptr %xs, %o2 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %a = tt.load %p1 : tensor<64x!tt.ptr<f32>>
  %b = tt.load %p2 : tensor<64x!tt.ptr<f32>>
  %s = arith.mulf %a, %b : tensor<64xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %yp, %s : tensor<64x!tt.ptr<f32>>
  tt.return
}
