// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 | FileCheck %s

// tcpu.bounds_check: the argument's [lo, hi) is read once per program from the launch's
// table; a contiguous run is tested as a whole first, lane by lane only when that fails;
// violations are reported (first address, count) and left out of the access's mask.
// CHECK-LABEL: define external void @"k"
// CHECK: call ptr @"tcpu_bounds_ranges"(i32 1)
// CHECK: load i64
// CHECK: load i64
// CHECK: icmp uge i64
// CHECK: icmp uge i64 {{.*}}, 32
// CHECK: br i1 {{.*}}, !prof
// CHECK: icmp uge <8 x i64>
// CHECK: call i1 @"llvm.vector.reduce.or.v8i1"
// CHECK: %[[OK:.*]] = phi <8 x i1> [splat (i1 1), {{.*}}], [
// CHECK: call i8 @"llvm.cttz.i8"
// CHECK: call void @"tcpu_bounds_fail"(i32 0, i32 0, i64 {{.*}}, i32 4, i64 {{.*}}, i32 3,
// CHECK: call <8 x float> @"llvm.masked.load.v8f32.p0"(ptr {{.*}}, i32 4, <8 x i1> %[[OK]]
func.func public @k(%x: !tt.ptr<f32>, %o: !tt.ptr<f32>) {
  %ok = "tcpu.bounds_check"(%x) <{kind = "load", args = array<i32: 0>, lanes = 8 : i32, elem_bytes = 4 : i32, file = "k.py", line = 3 : i32, operandSegmentSizes = array<i32: 1, 0>}> : (!tt.ptr<f32>) -> vector<8xi1>
  %v = "tcpu.vload"(%x, %ok) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xi1>) -> vector<8xf32>
  "tcpu.vstore"(%o, %v) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xf32>) -> ()
  func.return
}
