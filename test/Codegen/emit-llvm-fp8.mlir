// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 | FileCheck %s

// fp8 values are bytes. Widening reads a 256-entry table of exact f32 values;
// narrowing rounds on the f32 value (roundeven of x / 2^(e-M)) and assembles the bits;
// abs clears the sign bit.
// CHECK-LABEL: define external void @"k"
// CHECK: getelementptr float, ptr @"__tcpu_f8E4M3FN_to_f32"
// CHECK: call float @"llvm.roundeven.f32"
// CHECK: trunc i32 {{.*}} to i8
// CHECK: and i8 {{.*}}, 127
// CHECK: @"__tcpu_f8E4M3FN_to_f32" = private constant [256 x float]
func.func public @k(%p: !tt.ptr<i8>, %q: !tt.ptr<f32>) {
  %b = "tcpu.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<i8>) -> i8
  %x = "tcpu.bitcast"(%b) : (i8) -> f8E4M3FN
  %f = "tcpu.fp_to_fp"(%x) : (f8E4M3FN) -> f32
  %h = arith.mulf %f, %f : f32
  %y = "tcpu.fp_to_fp"(%h) <{rounding = "rtne"}> : (f32) -> f8E4M3FN
  %a = math.absf %y : f8E4M3FN
  %r = "tcpu.fp_to_fp"(%a) : (f8E4M3FN) -> f32
  "tcpu.store"(%q, %r) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, f32) -> ()
  func.return
}
