// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=512}' | FileCheck %s

// A loop step is two native registers (32 fp32 lanes at 512 bits), unless one register's
// worth of lanes turns a gather or scatter into a vector access: here the offsets
// `r % 16 + 32 * (r // 16)` are contiguous in runs of 16 only, on the load and the store.
// CHECK-LABEL: func.func public @runs_of_16
// CHECK: %[[STEP:.*]] = arith.constant 16 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[STEP]] {
// CHECK-NOT: tcpu.gather
// CHECK: "tcpu.vload"{{.*}} -> vector<16xf32>
// CHECK-NOT: tcpu.scatter
// CHECK: "tcpu.vstore"
tt.func public @runs_of_16(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %c16 = arith.constant dense<16> : tensor<64xi32>
  %c32 = arith.constant dense<32> : tensor<64xi32>
  %col = arith.remsi %r, %c16 : tensor<64xi32>
  %row = arith.divsi %r, %c16 : tensor<64xi32>
  %rowoff = arith.muli %row, %c32 : tensor<64xi32>
  %offs = arith.addi %col, %rowoff : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %a = tt.load %xp : tensor<64x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %yp, %a : tensor<64x!tt.ptr<f32>>
  tt.return
}

// A gather that no step width avoids keeps the step of 32 lanes.
// CHECK-LABEL: func.func public @gather
// CHECK: %[[STEP:.*]] = arith.constant 32 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[STEP]] {
// CHECK: "tcpu.gather"{{.*}} -> vector<32xf32>
tt.func public @gather(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %i: !tt.ptr<i32> {tt.divisibility = 16 : i32},
                       %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %is = tt.splat %i : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %ip = tt.addptr %is, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  %idx = tt.load %ip : tensor<64x!tt.ptr<i32>>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %idx : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %a = tt.load %xp : tensor<64x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %yp, %a : tensor<64x!tt.ptr<f32>>
  tt.return
}
