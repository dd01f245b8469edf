// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma | FileCheck %s

// An i32 vector divided by a broadcast run-time scalar d: d's magic number once (a scalar
// 64-bit udiv), then per lane the high half of a 64-bit product, shifts and the sign; no
// vector division. d = 0 is taken by a select on the scalar.
// CHECK-LABEL: define external void @"k"
// CHECK: %[[Z:.+]] = icmp eq i32 %[[D:[^,]+]], 0
// CHECK: call i32 @"llvm.ctlz.i32"
// CHECK: udiv i64
// CHECK: mul <8 x i64>
// CHECK: lshr <8 x i64> %{{.*}}, splat (i64 32)
// CHECK-NOT: {{[su](div|rem)}} <8 x i32>
// CHECK: select {{ *}}i1 %[[Z]], <8 x i32> splat (i32 0), <8 x i32>
// An i64 vector by an i64 scalar: the same where every |lane| and |d| fit in 32 bits,
// checked per vector; else the division lane by lane.
// CHECK: call i1 @"llvm.vector.reduce.and.v4i1"
// CHECK: br i1 %{{.*}}, label %"idiv.magic", label %"idiv.lanes", !prof
// CHECK: idiv.magic:
// CHECK: mul <4 x i64>
// CHECK: idiv.lanes:
// CHECK: srem <4 x i64>
// CHECK: idiv.join:
// CHECK: phi <4 x i64>
// A divisor that differs between lanes: the vector division (LLVM divides lane by lane).
// CHECK: sdiv <8 x i32>
// CHECK: ret void
func.func public @k(%x: !tt.ptr<i32>, %y: !tt.ptr<i64>, %d: i32, %e: i64) {
  %m = arith.constant dense<true> : vector<8xi1>
  %v = "tcpu.vload"(%x, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<i32>, vector<8xi1>) -> vector<8xi32>
  %b = vector.broadcast %d : i32 to vector<8xi32>
  %q = arith.divsi %v, %b : vector<8xi32>
  "tcpu.vstore"(%x, %q, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<i32>, vector<8xi32>, vector<8xi1>) -> ()
  %m4 = arith.constant dense<true> : vector<4xi1>
  %w = "tcpu.vload"(%y, %m4) <{alignment = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<i64>, vector<4xi1>) -> vector<4xi64>
  %be = vector.broadcast %e : i64 to vector<4xi64>
  %r = arith.remsi %w, %be : vector<4xi64>
  "tcpu.vstore"(%y, %r, %m4) <{alignment = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<i64>, vector<4xi64>, vector<4xi1>) -> ()
  %q2 = arith.divsi %v, %q : vector<8xi32>
  "tcpu.vstore"(%x, %q2, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<i32>, vector<8xi32>, vector<8xi1>) -> ()
  func.return
}
