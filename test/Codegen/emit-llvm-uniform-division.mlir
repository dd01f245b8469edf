// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma | FileCheck %s

// An fp32 vector divided by a broadcast scalar s: y = 1/s once, q0 = a*y, then, when |s| is
// in [2^-30, 2^30] and every lane has |q0| in [2^-60, 2^60], the two FMAs that round
// q0 to the correctly rounded quotient; any other vector takes the vector fdiv.
// CHECK-LABEL: define external void @"k"
// CHECK: %[[Y:.+]] = fdiv float 0x3ff0000000000000, %[[S:.+]]
// CHECK: %[[Q0:.+]] = fmul <8 x float> %[[A:[^,]+]], %{{.*}}
// CHECK: call <8 x float> @"llvm.fabs.v8f32"(<8 x float> %[[Q0]])
// CHECK: fcmp oge <8 x float> %{{.*}}, splat (float 0x3c30000000000000)
// CHECK: fcmp ole <8 x float> %{{.*}}, splat (float 0x43b0000000000000)
// CHECK: call i1 @"llvm.vector.reduce.and.v8i1"
// CHECK: br i1 %{{.*}}, label %"div.reciprocal", label %"div.fdiv", !prof
// CHECK: div.reciprocal:
// CHECK-NEXT: %[[NEG:.+]] = fneg <8 x float> %[[Q0]]
// CHECK-NEXT: %[[R:.+]] = call <8 x float> @"llvm.fma.v8f32"(<8 x float> %[[NEG]], <8 x float> %{{.*}}, <8 x float> %[[A]])
// CHECK-NEXT: call <8 x float> @"llvm.fma.v8f32"(<8 x float> %[[R]], <8 x float> %{{.*}}, <8 x float> %[[Q0]])
// CHECK: div.fdiv:
// CHECK-NEXT: %[[FB:.+]] = call <8 x float> @"llvm.arithmetic.fence.v8f32"(<8 x float>
// CHECK-NEXT: fdiv {{(contract )?}}<8 x float> %[[A]], %[[FB]]
// CHECK: div.join:
// CHECK: phi <8 x float>
// A divisor that is not the same in every lane: the vector fdiv alone, its divisor through
// llvm.arithmetic.fence (what its lanes hold hidden from LLVM 22's X86 code generation, which
// takes 0/0 lanes of a division of two zero lanes to be 0: fuzz seed 440655).
// CHECK: %[[F:.+]] = call <8 x float> @"llvm.arithmetic.fence.v8f32"(<8 x float>
// CHECK-NEXT: fdiv {{(contract )?}}<8 x float> %{{.*}}, %[[F]]
// CHECK-NOT: llvm.fma
// A vector narrower than a register (4 x f32 at 256 bits): the fdiv alone.
// CHECK: fdiv {{(contract )?}}<4 x float>
// CHECK-NOT: llvm.fma
// A constant divisor: no fence when no lane is zero (LLVM keeps x / 2 -> x * 0.5), a fence
// when the constant is zero (0 / 0.0 in a zero lane is NaN, not the 0 LLVM would take).
// CHECK-NOT: llvm.arithmetic.fence
// CHECK: fdiv {{(contract )?}}<4 x float> %{{[^,]+}}, splat (float 0x4000000000000000)
// CHECK: %[[F0:.+]] = call <4 x float> @"llvm.arithmetic.fence.v4f32"(<4 x float> splat (float {{ *}}0x0))
// CHECK-NEXT: fdiv {{(contract )?}}<4 x float> %{{[^,]+}}, %[[F0]]
// A full vector divided by a power of two: the plain fdiv, which LLVM turns into a multiply
// by the exact reciprocal, not the reciprocal path.
// CHECK-NOT: div.reciprocal
// CHECK: fdiv {{(contract )?}}<8 x float> %{{[^,]+}}, splat (float 0x3fe0000000000000)
// CHECK-NOT: div.reciprocal
// CHECK: ret void
func.func public @k(%x: !tt.ptr<f32>, %o: !tt.ptr<f32>) {
  %m = arith.constant dense<true> : vector<8xi1>
  %v = "tcpu.vload"(%x, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xi1>) -> vector<8xf32>
  %s = "tcpu.load"(%x) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> f32
  %b = vector.broadcast %s : f32 to vector<8xf32>
  %q = arith.divf %v, %b : vector<8xf32>
  %q2 = arith.divf %q, %v : vector<8xf32>
  "tcpu.vstore"(%o, %q2, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<8xf32>, vector<8xi1>) -> ()
  %m4 = arith.constant dense<true> : vector<4xi1>
  %v4 = "tcpu.vload"(%x, %m4) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<4xi1>) -> vector<4xf32>
  %b4 = vector.broadcast %s : f32 to vector<4xf32>
  %q4 = arith.divf %v4, %b4 : vector<4xf32>
  "tcpu.vstore"(%o, %q4, %m4) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<4xf32>, vector<4xi1>) -> ()
  %c2 = arith.constant dense<2.0> : vector<4xf32>
  %h = arith.divf %v4, %c2 : vector<4xf32>
  "tcpu.vstore"(%o, %h, %m4) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<4xf32>, vector<4xi1>) -> ()
  %c0 = arith.constant dense<0.0> : vector<4xf32>
  %z = arith.divf %v4, %c0 : vector<4xf32>
  "tcpu.vstore"(%o, %z, %m4) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<4xf32>, vector<4xi1>) -> ()
  %half = arith.constant dense<0.5> : vector<8xf32>
  %p = arith.divf %v, %half : vector<8xf32>
  "tcpu.vstore"(%o, %p, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<8xf32>, vector<8xi1>) -> ()
  func.return
}
