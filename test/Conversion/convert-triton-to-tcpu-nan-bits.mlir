// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// The bits of a float (tt.bitcast to an integer; core.py, _canonical_nan_bits). A value an
// arithmetic op computed shows every NaN as 0x7fffffff (2147483647), NVIDIA's canonical NaN.
// CHECK-LABEL: func.func public @computed
// CHECK: arith.addf
// CHECK: %[[NAN:.*]] = arith.cmpf uno
// CHECK: arith.select %[[NAN]], %{{.*}} : vector<{{[0-9]+}}xi1>, vector<{{[0-9]+}}xi32>
tt.func public @computed(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %q: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %pp = tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %pp : tensor<64x!tt.ptr<f32>>
  %w = arith.addf %v, %v : tensor<64xf32>
  %b = tt.bitcast %w : tensor<64xf32> -> tensor<64xi32>
  %qs = tt.splat %q : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %qq = tt.addptr %qs, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  tt.store %qq, %b : tensor<64x!tt.ptr<i32>>
  tt.return
}

// A select moves bits, as a GPU's selp does: between a loaded value and a NaN constant
// (tl.where(x == x, x, float('nan'))) the loaded payloads and the constant's 0x7fc00000 stay.
// CHECK-LABEL: func.func public @selected
// CHECK-NOT: arith.cmpf uno
// CHECK-NOT: 2147483647
// CHECK: func.return
tt.func public @selected(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %q: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %pp = tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %pp : tensor<64x!tt.ptr<f32>>
  %eq = arith.cmpf oeq, %v, %v : tensor<64xf32>
  %nan = arith.constant dense<0x7FC00000> : tensor<64xf32>
  %s = arith.select %eq, %v, %nan : tensor<64xi1>, tensor<64xf32>
  %b = tt.bitcast %s : tensor<64xf32> -> tensor<64xi32>
  %qs = tt.splat %q : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %qq = tt.addptr %qs, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  tt.store %qq, %b : tensor<64x!tt.ptr<i32>>
  tt.return
}

// One computed side: only the lanes the select takes from it are canonical (the NaN test of
// the computed side, selected against false where the constant is taken).
// CHECK-LABEL: func.func public @mixed
// CHECK: arith.mulf
// CHECK: %[[ON:.*]] = arith.cmpf uno
// CHECK: %[[LANES:.*]] = arith.select %{{.*}}, %[[ON]], %{{.*}} : vector<{{[0-9]+}}xi1>, vector<{{[0-9]+}}xi1>
// CHECK: arith.select %[[LANES]], %{{.*}} : vector<{{[0-9]+}}xi1>, vector<{{[0-9]+}}xi32>
tt.func public @mixed(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %q: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %pp = tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %pp : tensor<64x!tt.ptr<f32>>
  %two = arith.constant dense<2.0> : tensor<64xf32>
  %m = arith.mulf %v, %two : tensor<64xf32>
  %c32 = arith.constant dense<32> : tensor<64xi32>
  %lo = arith.cmpi slt, %r, %c32 : tensor<64xi32>
  %nan = arith.constant dense<0x7FC00000> : tensor<64xf32>
  %s = arith.select %lo, %m, %nan : tensor<64xi1>, tensor<64xf32>
  %b = tt.bitcast %s : tensor<64xf32> -> tensor<64xi32>
  %qs = tt.splat %q : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %qq = tt.addptr %qs, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  tt.store %qq, %b : tensor<64x!tt.ptr<i32>>
  tt.return
}
