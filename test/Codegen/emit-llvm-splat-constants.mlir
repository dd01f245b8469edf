// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma | FileCheck %s

// A dense vector constant whose lanes are all one value is printed as a splat; one whose
// lanes differ only in the sign of zero is not (0.0 and -0.0 are different constants).
// A broadcast's shuffle mask is `zeroinitializer`, not sixteen `i32 0`.
// CHECK-LABEL: define external void @"k"
// CHECK: shufflevector <8 x i32> %{{.*}}, <8 x i32> undef, <8 x i32> zeroinitializer
// CHECK: fadd contract <8 x float> %{{.*}}, splat (float 0x4000000000000000)
// CHECK: fadd contract <8 x float> %{{.*}}, <float {{ *}}0x0, float 0x8000000000000000, float {{ *}}0x0, float 0x8000000000000000,
func.func public @k(%x: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : index
  %nn = vector.broadcast %n : i32 to vector<8xi32>
  %m = "tcpu.iota"() : () -> vector<8xi32>
  %mask = arith.cmpi slt, %m, %nn : vector<8xi32>
  %v = "tcpu.vload"(%x, %mask) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xi1>) -> vector<8xf32>
  %two = arith.constant dense<2.0> : vector<8xf32>
  %signs = arith.constant dense<[0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0]> : vector<8xf32>
  %a = arith.addf %v, %two : vector<8xf32>
  %b = arith.addf %a, %signs : vector<8xf32>
  "tcpu.vstore"(%x, %b, %mask) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<8xf32>, vector<8xi1>) -> ()
  func.return
}
