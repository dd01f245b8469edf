// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --math-lib libmvec --cpu-features +avx,+avx2,+fma | FileCheck %s
// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --math-lib scalar --cpu-features +avx,+avx2,+fma | FileCheck %s --check-prefix=SCALAR

// fp32 exp is emitted inline: clamp, q = x * log2(e) rounded by adding 1.5 * 2^23 + 254 in
// the same FMA (the sum's pattern holds q + 254 in its low bits), s = x - q*ln2 in two
// parts, a polynomial, then the scale by 2^q in two halves whose exponent fields are
// (bits >> 1) << 23 and (bits << 23) minus that. No call, no conversion.
// CHECK-LABEL: define external void @"k"
// CHECK-NOT: call {{.*}}exp
// CHECK: fcmp olt <8 x float> %{{.*}}, splat (float 0xc05a000000000000)
// CHECK: %[[BIG:.+]] = call <8 x float> @"llvm.fmuladd.v8f32"(<8 x float> %{{.*}}, <8 x float> splat (float 0x3ff7154760000000){{.*}}, <8 x float> splat (float 0x4168001fc0000000)
// CHECK: fsub <8 x float> %[[BIG]], splat (float 0x4168001fc0000000)
// CHECK: %[[BITS:.+]] = bitcast <8 x float> %[[BIG]] to <8 x i32>
// CHECK: call <8 x float> @"llvm.fmuladd.v8f32"(<8 x float> %{{.*}}, <8 x float> splat (float 0xbfe62e4000000000)
// CHECK: %[[HALF:.+]] = lshr <8 x i32> %[[BITS]], splat (i32 1)
// CHECK: %[[P1:.+]] = shl <8 x i32> %[[HALF]], splat (i32 23)
// CHECK: %[[ALL:.+]] = shl <8 x i32> %[[BITS]], splat (i32 23)
// CHECK: %[[P2:.+]] = sub <8 x i32> %[[ALL]], %[[P1]]
// CHECK: bitcast <8 x i32> %[[P1]] to <8 x float>
// CHECK: bitcast <8 x i32> %[[P2]] to <8 x float>
// CHECK-NOT: fptosi
// CHECK-NOT: fcmp uno
// fp32 exp2: the same scheme, the reduced argument x - q is exact.
// CHECK: fadd <8 x float> %{{.*}}, splat (float 0x4168001fc0000000)
// CHECK-NOT: call {{.*}}exp
// fp32 erf: three polynomials selected per lane, the sign copied back.
// CHECK: call <8 x float> @"llvm.fabs.v8f32"
// CHECK: fcmp olt <8 x float> %{{.*}}, splat (float 0x4000000000000000)
// CHECK: fcmp olt <8 x float> %{{.*}}, splat (float 0x3feae147a0000000)
// CHECK: call <8 x float> @"llvm.copysign.v8f32"
// CHECK-NOT: call {{.*}}erf
// A scalar gets the same code, so a lane and a scalar agree.
// CHECK: call float @"llvm.fmuladd.f32"(float %{{.*}}, float 0x3ff7154760000000, float 0x4168001fc0000000)
// CHECK-NOT: call {{.*}}exp
// fp64 exp is still a library call.
// CHECK: call <4 x double> @"_ZGVdN4v_exp"

// The scalar mode is the libm reference: nothing inlined.
// SCALAR: call float @"expf"
// SCALAR: call float @"exp2f"
// SCALAR: call float @"erff"
// SCALAR-NOT: llvm.rint
func.func public @k(%x: !tt.ptr<f32>, %o: !tt.ptr<f32>, %xd: !tt.ptr<f64>, %od: !tt.ptr<f64>) {
  %m = arith.constant dense<true> : vector<8xi1>
  %v = "tcpu.vload"(%x, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xi1>) -> vector<8xf32>
  %e = math.exp %v : vector<8xf32>
  %e2 = math.exp2 %e : vector<8xf32>
  %er = math.erf %e2 : vector<8xf32>
  "tcpu.vstore"(%o, %er, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<8xf32>, vector<8xi1>) -> ()
  %f = "tcpu.load"(%x) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> f32
  %ef = math.exp %f : f32
  "tcpu.store"(%o, %ef) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, f32) -> ()
  %md = arith.constant dense<true> : vector<4xi1>
  %d = "tcpu.vload"(%xd, %md) <{alignment = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f64>, vector<4xi1>) -> vector<4xf64>
  %ed = math.exp %d : vector<4xf64>
  "tcpu.vstore"(%od, %ed, %md) <{alignment = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f64>, vector<4xf64>, vector<4xi1>) -> ()
  func.return
}
