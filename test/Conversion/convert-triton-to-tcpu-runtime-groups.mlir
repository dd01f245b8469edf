// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// Inductor's broadcast of a row under dynamic shapes: `b[x % ks0]` with ks0 an i64
// argument. The lane loop runs in groups found at run time when ks0 >= 2 steps (32 lanes):
// each group's length is the distance to the next multiple of ks0 (one scalar remainder),
// to the mask's end and to where x would wrap; its chunks read b with vector loads from
// the group's start, under one branch on the mask; a chunk straddling a group's end is
// evaluated as before (a gather). Smaller ks0: the nest as before.
// CHECK-LABEL: func.func public @broadcast_row
// CHECK: %[[BIG:.*]] = arith.cmpi sge, %ks0, %{{.*}} : i64
// CHECK: scf.if %[[BIG]] {
// CHECK: scf.while
// CHECK: arith.remsi %{{.*}}, %{{.*}} : i64
// CHECK: %[[MASK:.*]] = arith.cmpi slt, %{{.*}}, %n : i32
// CHECK: scf.for
// CHECK-NOT: tcpu.gather
// CHECK: scf.if %[[MASK]] -> (vector<16xf32>) {
// CHECK: "tcpu.vload"
// CHECK-NOT: tcpu.gather
// CHECK: "tcpu.vstore"
// CHECK: scf.if %{{.*}} -> (index) {
// CHECK: "tcpu.gather"
// CHECK: } else {
// CHECK: scf.for
// CHECK: "tcpu.gather"
tt.func public @broadcast_row(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %b: !tt.ptr<f32>, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %ks0: i64, %n: i32) {
  %c512 = arith.constant 512 : i32
  %pid = tt.get_program_id x : i32
  %base = arith.muli %pid, %c512 : i32
  %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32>
  %bs = tt.splat %base : i32 -> tensor<512xi32>
  %xi = arith.addi %bs, %r : tensor<512xi32>
  %ns = tt.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %xi, %ns : tensor<512xi32>
  %xw = arith.extsi %xi : tensor<512xi32> to tensor<512xi64>
  %ks = tt.splat %ks0 : i64 -> tensor<512xi64>
  %x0 = arith.remsi %xw, %ks : tensor<512xi64>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %xi : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  %a = tt.load %xp, %m : tensor<512x!tt.ptr<f32>>
  %bsp = tt.splat %b : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %bp = tt.addptr %bsp, %x0 : tensor<512x!tt.ptr<f32>>, tensor<512xi64>
  %bv = tt.load %bp, %m : tensor<512x!tt.ptr<f32>>
  %s = arith.addf %a, %bv : tensor<512xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %xi : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  tt.store %yp, %s, %m : tensor<512x!tt.ptr<f32>>
  tt.return
}
