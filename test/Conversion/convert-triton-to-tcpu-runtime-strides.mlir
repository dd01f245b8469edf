// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// Offsets times a stride the compiler does not know (an argument Triton does not
// specialize: FlagGems' pointwise kernels, in i64). The access is a vector one when the
// stride is 1 at run time, one scalar compare decides; else a gather (a scatter).
// CHECK-LABEL: func.func public @unit_stride
// CHECK-NOT: tcpu.is_contiguous
// CHECK: %[[S:.*]] = arith.extsi %stride : i32 to i64
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[S]], %[[ONE]] : i64
// CHECK: scf.if %[[OK]] -> (vector<16xf32>) {
// CHECK:   "tcpu.vload"
// CHECK: } else {
// CHECK:   "tcpu.gather"
// CHECK: scf.if %{{.*}} {
// CHECK:   "tcpu.vstore"
// CHECK: } else {
// CHECK:   "tcpu.scatter"
// CHECK-NOT: tcpu.is_contiguous
tt.func public @unit_stride(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32},
                            %stride: i32) {
  %pid = tt.get_program_id x : i32
  %pid64 = arith.extsi %pid : i32 to i64
  %c16 = arith.constant 16 : i64
  %base = arith.muli %pid64, %c16 : i64
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %r64 = arith.extsi %r : tensor<16xi32> to tensor<16xi64>
  %bs = tt.splat %base : i64 -> tensor<16xi64>
  %offs = arith.addi %bs, %r64 : tensor<16xi64>
  %s64 = arith.extsi %stride : i32 to i64
  %ss = tt.splat %s64 : i64 -> tensor<16xi64>
  %scaled = arith.muli %offs, %ss : tensor<16xi64>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %scaled : tensor<16x!tt.ptr<f32>>, tensor<16xi64>
  %a = tt.load %xp : tensor<16x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %scaled : tensor<16x!tt.ptr<f32>>, tensor<16xi64>
  tt.store %yp, %a : tensor<16x!tt.ptr<f32>>
  tt.return
}

// A 64-bit bound check with one truth value per chunk (n a multiple of 16): one scalar
// compare, splat, instead of a vector of 64-bit compares.
// CHECK-LABEL: func.func public @mask64
// CHECK: %[[C:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : i64
// CHECK: %[[M:.*]] = vector.broadcast %[[C]] : i1 to vector<16xi1>
// CHECK: "tcpu.vload"(%{{.*}}, %[[M]])
// CHECK-NOT: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<16xi64>
tt.func public @mask64(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32},
                       %n: i32 {tt.divisibility = 16 : i32}) {
  %pid = tt.get_program_id x : i32
  %pid64 = arith.extsi %pid : i32 to i64
  %c64 = arith.constant 64 : i64
  %base = arith.muli %pid64, %c64 : i64
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %r64 = arith.extsi %r : tensor<64xi32> to tensor<64xi64>
  %bs = tt.splat %base : i64 -> tensor<64xi64>
  %offs = arith.addi %bs, %r64 : tensor<64xi64>
  %n64 = arith.extsi %n : i32 to i64
  %ns = tt.splat %n64 : i64 -> tensor<64xi64>
  %m = arith.cmpi slt, %offs, %ns : tensor<64xi64>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi64>
  %a = tt.load %xp, %m : tensor<64x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi64>
  tt.store %yp, %a, %m : tensor<64x!tt.ptr<f32>>
  tt.return
}

// pow(x, 2) is x * x rounded once: a multiplication, no call.
// CHECK-LABEL: func.func public @pow_two
// CHECK: arith.mulf %[[V:.*]], %[[V]] : vector<16xf32>
// CHECK-NOT: extern_elementwise
tt.func public @pow_two(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %a = tt.load %xp : tensor<16x!tt.ptr<f32>>
  %two = arith.constant dense<2.000000e+00> : tensor<16xf32>
  %p = tt.extern_elementwise %a, %two {libname = "", libpath = "", pure = true, symbol = "powf"} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  tt.store %xp, %p : tensor<16x!tt.ptr<f32>>
  tt.return
}
