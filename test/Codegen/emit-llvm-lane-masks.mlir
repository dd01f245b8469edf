// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma | FileCheck %s

// A bound check `splat(base) + (splat(j) + iota) < splat(n)`: whether the whole chunk is in
// bounds is one scalar compare of its last lane, in integers twice as wide (no wrap-around),
// not a reduction of the i1 vector.
// CHECK-LABEL: define external void @"k"
// CHECK: %[[J:.+]] = add i32 0, %{{.+}}
// CHECK: %[[S:.+]] = add i32 %[[J]], %{{.+}}
// CHECK: %[[SW:.+]] = sext i32 %[[S]] to i64
// CHECK: %[[NW:.+]] = sext i32 %{{.+}} to i64
// CHECK: %[[LAST:.+]] = add i64 %[[SW]], 15
// CHECK: %[[ALL:.+]] = icmp slt i64 %[[LAST]], %[[NW]]
// CHECK: br i1 %[[ALL]]
// CHECK: call <16 x float> @"llvm.masked.load.v16f32.p0"
// A mask of loaded values is not a bound check: the vector reduction stays.
// CHECK: icmp sgt <16 x i32>
// CHECK: %[[RED:.+]] = call i1 @"llvm.vector.reduce.and.v16i1"
// CHECK: br i1 %[[RED]]
func.func public @k(%x: !tt.ptr<f32>, %f: !tt.ptr<i32>, %o: !tt.ptr<f32>, %base: i32, %n: i32) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 64 : index
  %st = arith.constant 16 : index
  scf.for %j = %lb to %ub step %st {
    %jj = arith.index_cast %j : index to i32
    %iota = "tcpu.iota"() : () -> vector<16xi32>
    %bj = vector.broadcast %jj : i32 to vector<16xi32>
    %inner = arith.addi %bj, %iota : vector<16xi32>
    %bb = vector.broadcast %base : i32 to vector<16xi32>
    %offs = arith.addi %bb, %inner : vector<16xi32>
    %nn = vector.broadcast %n : i32 to vector<16xi32>
    %m = arith.cmpi slt, %offs, %nn : vector<16xi32>
    %p = "tcpu.addptr"(%x, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    %v = "tcpu.vload"(%p, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<16xi1>) -> vector<16xf32>
    %pf = "tcpu.addptr"(%f, %jj) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    %flags = "tcpu.vload"(%pf) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<i32>) -> vector<16xi32>
    %zero = arith.constant dense<0> : vector<16xi32>
    %m2 = arith.cmpi sgt, %flags, %zero : vector<16xi32>
    %po = "tcpu.addptr"(%o, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    "tcpu.vstore"(%po, %v, %m2) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<16xf32>, vector<16xi1>) -> ()
  }
  func.return
}
