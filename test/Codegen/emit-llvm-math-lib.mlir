// REQUIRES: sleef
// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --math-lib sleef --cpu-features +avx,+avx2,+fma | FileCheck %s --check-prefix=AVX2
// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 512 --math-lib sleef --cpu-features +avx,+avx2,+fma,+avx512f | FileCheck %s --check-prefix=AVX512
// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 512 --math-lib sleef --cpu-features +avx,+avx2,+fma | FileCheck %s --check-prefix=CAPPED
// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --math-lib libmvec --cpu-features +avx,+avx2,+fma | FileCheck %s --check-prefix=MVEC
// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --math-lib scalar --cpu-features +avx,+avx2,+fma | FileCheck %s --check-prefix=SCALAR

// SLEEF's 1-ulp AVX2 sin in 8-lane chunks; sin needs no second opinion.
// AVX2-LABEL: define external void @"k"
// AVX2: call <8 x float> @"Sleef_sinf8_u10avx2"
// AVX2: call <8 x float> @"Sleef_sinf8_u10avx2"
// AVX2-NOT: sin.recheck
// cosh can overflow early in SLEEF 3.5: lanes with an infinite result for a finite argument
// are recomputed by libmvec, in a branch.
// AVX2: call <8 x float> @"Sleef_coshf8_u10avx2"
// AVX2: call i1 @"llvm.vector.reduce.or.v16i1"
// AVX2: br i1 %{{.*}}, label %"cosh.recheck", label %"cosh.checked"
// AVX2: cosh.recheck:
// AVX2: call <8 x float> @"_ZGVdN8v_coshf"
// AVX2: cosh.checked:
// AVX2: phi <16 x float>
// Two lanes: padded to SLEEF's 4-lane variant, the extra lanes dropped.
// AVX2: shufflevector <2 x float> %{{.*}}, <2 x float> <float 0.0, float 0.0>, <4 x i32> <i32 0, i32 1, i32 2, i32 2>
// AVX2: call <4 x float> @"Sleef_powf4_u10avx2128"
// A scalar: SLEEF's one-lane variant, the same algorithm as the vector lanes.
// AVX2: call float @"Sleef_tanf1_u10purecfma"(float

// With AVX-512 the whole 16-lane vector goes to one call.
// AVX512: call <16 x float> @"Sleef_sinf16_u10avx512f"
// AVX512: call <16 x float> @"Sleef_coshf16_u10avx512f"

// Lowered for 512-bit vectors on a host without AVX-512: the AVX2 variant, never an
// AVX-512 one (it would be an illegal instruction).
// CAPPED: call <8 x float> @"Sleef_sinf8_u10avx2"
// CAPPED-NOT: avx512f

// libmvec: glibc's vector ABI names; the scalar tan stays a libm call.
// MVEC: call <8 x float> @"_ZGVdN8v_sinf"
// MVEC: call <8 x float> @"_ZGVdN8v_coshf"
// MVEC: call <4 x float> @"_ZGVbN4vv_powf"
// MVEC: call float @"tanf"

// scalar: libm per lane.
// SCALAR-NOT: Sleef_
// SCALAR-NOT: _ZGV
// SCALAR: call float @"sinf"
func.func public @k(%x: !tt.ptr<f32>, %o: !tt.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %m = arith.constant dense<true> : vector<16xi1>
  %v = "tcpu.vload"(%x, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<16xi1>) -> vector<16xf32>
  %s = math.sin %v : vector<16xf32>
  %c = math.cosh %s : vector<16xf32>
  "tcpu.vstore"(%o, %c, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<16xf32>, vector<16xi1>) -> ()
  %m2 = arith.constant dense<true> : vector<2xi1>
  %w = "tcpu.vload"(%x, %m2) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<2xi1>) -> vector<2xf32>
  %p = math.powf %w, %w : vector<2xf32>
  "tcpu.vstore"(%o, %p, %m2) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<2xf32>, vector<2xi1>) -> ()
  %f = "tcpu.load"(%x) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> f32
  %e = math.tan %f : f32
  "tcpu.store"(%o, %e) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, f32) -> ()
  func.return
}
