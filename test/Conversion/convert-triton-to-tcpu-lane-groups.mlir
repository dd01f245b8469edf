// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// Inductor's `x1 = xindex // 128`, `x0 = xindex % 128` over a block of 512: the lane loop is
// split into groups of 128 lanes. The row index, the load of idx[x1] and the scaled row
// offset are computed once per group, before the inner loop; inside it only the group's
// lane offset is added (no division or remainder per 16 lanes).
// CHECK-LABEL: func.func public @rows
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C128]] {
// CHECK: arith.divsi
// CHECK: %[[ROW:.*]] = "tcpu.load"
// CHECK: arith.remsi
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT: arith.divsi
// CHECK-NOT: arith.remsi
// CHECK-NOT: "tcpu.load"
// CHECK: "tcpu.vload"
// CHECK: "tcpu.vstore"
// CHECK: }
// CHECK: }
tt.func public @rows(%idx: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %t: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %c512 = arith.constant 512 : i32
  %c128 = arith.constant dense<128> : tensor<512xi32>
  %c256 = arith.constant dense<256> : tensor<512xi32>
  %pid = tt.get_program_id x : i32
  %base = arith.muli %pid, %c512 : i32
  %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32>
  %bs = tt.splat %base : i32 -> tensor<512xi32>
  %x = arith.addi %bs, %r : tensor<512xi32>
  %x1 = arith.divsi %x, %c128 : tensor<512xi32>
  %x0 = arith.remsi %x, %c128 : tensor<512xi32>
  %is = tt.splat %idx : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>>
  %ip = tt.addptr %is, %x1 : tensor<512x!tt.ptr<i32>>, tensor<512xi32>
  %row = tt.load %ip : tensor<512x!tt.ptr<i32>>
  %ro = arith.muli %row, %c256 : tensor<512xi32>
  %o = arith.addi %ro, %x0 : tensor<512xi32>
  %ts = tt.splat %t : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %tp = tt.addptr %ts, %o : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  %v = tt.load %tp : tensor<512x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %x : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  tt.store %yp, %v : tensor<512x!tt.ptr<f32>>
  tt.return
}

// Nothing runs longer than the 16 lanes of a step: one loop, as before.
// CHECK-LABEL: func.func public @short_runs
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK: func.return
tt.func public @short_runs(%t: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %c8 = arith.constant dense<8> : tensor<64xi32>
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %q = arith.divsi %r, %c8 : tensor<64xi32>
  %ts = tt.splat %t : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %tp = tt.addptr %ts, %q : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %tp : tensor<64x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %yp, %v : tensor<64x!tt.ptr<f32>>
  tt.return
}

// Inductor's `xmask = xindex < xnumel` with xnumel divisible by 16 is constant over the
// 16 lanes of a step (it flips where a run of 16 starts): the masked load of idx[x1] is one
// scalar load and the row's load a vector load, not gathers.
// CHECK-LABEL: func.func public @masked_rows
// CHECK: "tcpu.load"({{.*}}) <{{.*}}> : (!tt.ptr<i32>, i1, i32) -> i32
// CHECK: "tcpu.vload"({{.*}}) <{{.*}}> : (!tt.ptr<f32>, vector<16xi1>) -> vector<16xf32>
// CHECK-NOT: tcpu.gather
// CHECK: func.return
tt.func public @masked_rows(%idx: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %t: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32 {tt.divisibility = 16 : i32}) {
  %c512 = arith.constant 512 : i32
  %c128 = arith.constant dense<128> : tensor<512xi32>
  %c256 = arith.constant dense<256> : tensor<512xi32>
  %zero = arith.constant dense<0> : tensor<512xi32>
  %pid = tt.get_program_id x : i32
  %base = arith.muli %pid, %c512 : i32
  %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32>
  %bs = tt.splat %base : i32 -> tensor<512xi32>
  %x = arith.addi %bs, %r : tensor<512xi32>
  %ns = tt.splat %n : i32 -> tensor<512xi32>
  %m = arith.cmpi slt, %x, %ns : tensor<512xi32>
  %x1 = arith.divsi %x, %c128 : tensor<512xi32>
  %x0 = arith.remsi %x, %c128 : tensor<512xi32>
  %is = tt.splat %idx : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>>
  %ip = tt.addptr %is, %x1 : tensor<512x!tt.ptr<i32>>, tensor<512xi32>
  %row = tt.load %ip, %m, %zero : tensor<512x!tt.ptr<i32>>
  %ro = arith.muli %row, %c256 : tensor<512xi32>
  %o = arith.addi %ro, %x0 : tensor<512xi32>
  %ts = tt.splat %t : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %tp = tt.addptr %ts, %o : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  %v = tt.load %tp, %m : tensor<512x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %x : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  tt.store %yp, %v, %m : tensor<512x!tt.ptr<f32>>
  tt.return
}
