// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 | FileCheck %s

// bf16 values are f32 in registers, rounded by the op that produces them; in memory they
// are the f32's high half. The conversion rounds to nearest even (adds 0x7FFF plus the
// kept lowest bit; a NaN is quieted instead), the store only shifts. The round-toward-zero
// conversion keeps the high half, a NaN quieted first.
// CHECK-LABEL: define external void @"k"
// CHECK: add i32 {{.*}}, 32767
// CHECK: fcmp uno float
// CHECK: or i32 {{.*}}, 4194304
// CHECK: select i1
// CHECK: fcmp uno float
// CHECK: or i32 {{.*}}, 4194304
// CHECK: and i32 {{.*}}, 4294901760
// CHECK-NOT: fcmp uno
// CHECK: [[BITS:%.*]] = bitcast float {{.*}} to i32
// CHECK-NEXT: [[HIGH:%.*]] = lshr i32 [[BITS]], 16
// CHECK-NEXT: [[HALF:%.*]] = trunc i32 [[HIGH]] to i16
// CHECK: store i16 [[HALF]]
func.func public @k(%p: !tt.ptr<f32>, %q: !tt.ptr<bf16>, %r: !tt.ptr<bf16>) {
  %x = "tcpu.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> f32
  %y = arith.truncf %x : f32 to bf16
  %z = "tcpu.fp_to_fp"(%x) <{rounding = "rtz"}> : (f32) -> bf16
  "tcpu.store"(%q, %y) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<bf16>, bf16) -> ()
  "tcpu.store"(%r, %z) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<bf16>, bf16) -> ()
  func.return
}
