// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// A row loaded before a store of one element, and used after it: the consumer reads the
// row again from memory unless the store wrote inside it, in which case the store took a
// copy first (write_guards.py). The flag is cleared where the load runs.
// CHECK-LABEL: func.func public @scalar_store_between
// CHECK-DAG: %[[FLAG:.*]] = memref.alloca() {{.*}} : memref<1xi8>
// CHECK-DAG: %[[COPY:.*]] = memref.alloca() {{.*}} : memref<32xf32>
// CHECK: memref.store %{{.*}}, %[[FLAG]]
// The row's bytes [w, w + 32 * 4) where it is loaded; at the store, its element against
// them, then the copy if none was taken.
// CHECK: %[[LO:.*]] = "tcpu.ptr_to_int"
// CHECK: %[[LAST:.*]] = "tcpu.ptr_to_int"
// CHECK: %[[HI:.*]] = arith.addi %[[LAST]]
// CHECK: %[[AT:.*]] = "tcpu.ptr_to_int"(%stat) : (!tt.ptr<f32>) -> i64
// CHECK: %[[END:.*]] = arith.addi %[[AT]]
// CHECK: arith.cmpi ult, %[[AT]], %[[HI]]
// CHECK: arith.cmpi ugt, %[[END]], %[[LO]]
// CHECK: scf.if
// CHECK: scf.for
// CHECK: "tcpu.vload"
// CHECK: vector.store %{{.*}}, %[[COPY]]
// CHECK: memref.store %{{.*}}, %[[FLAG]]
// CHECK: "tcpu.store"(%stat
// The consumer after the store: the copy when taken, else memory.
// CHECK: memref.load %[[FLAG]]
// CHECK: scf.if %{{.*}} -> (vector<16xf32>)
// CHECK: vector.load %[[COPY]]
// CHECK: } else {
// CHECK: "tcpu.vload"
// CHECK: "tcpu.vstore"(%{{.*}}, %{{.*}})
tt.func public @scalar_store_between(%w: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %stat: !tt.ptr<f32>, %out: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %ws = tt.splat %w : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %wp = tt.addptr %ws, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  %v = tt.load %wp : tensor<32x!tt.ptr<f32>>
  %c = arith.constant 1.0 : f32
  tt.store %stat, %c : !tt.ptr<f32>
  %os = tt.splat %out : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %op = tt.addptr %os, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  tt.store %op, %v : tensor<32x!tt.ptr<f32>>
  tt.return
}

// A store of a whole tile in between: the load is still copied once, right after it.
// CHECK-LABEL: func.func public @tile_store_between
// CHECK-NOT: memref<1xi8>
// CHECK: %[[BUF:.*]] = memref.alloca() {{.*}} : memref<32xf32>
// CHECK: "tcpu.vload"
// CHECK: vector.store %{{.*}}, %[[BUF]]
// CHECK: "tcpu.vstore"
// CHECK: vector.load %[[BUF]]
// CHECK: "tcpu.vstore"
tt.func public @tile_store_between(%w: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %other: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %out: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %ws = tt.splat %w : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %wp = tt.addptr %ws, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  %v = tt.load %wp : tensor<32x!tt.ptr<f32>>
  %zs = arith.constant dense<0.0> : tensor<32xf32>
  %xs = tt.splat %other : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  tt.store %xp, %zs : tensor<32x!tt.ptr<f32>>
  %os = tt.splat %out : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %op = tt.addptr %os, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  tt.store %op, %v : tensor<32x!tt.ptr<f32>>
  tt.return
}
