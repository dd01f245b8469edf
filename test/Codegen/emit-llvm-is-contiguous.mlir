// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 | FileCheck %s

// The run-time contiguity check of a speculative vector access: each lane's address
// minus lane 0's, against k elements, all lanes at once.
// CHECK-LABEL: define external void @"contig"
// CHECK: %[[A:.*]] = ptrtoint <16 x ptr> %{{.*}} to <16 x i64>
// CHECK: %[[D:.*]] = sub <16 x i64> %[[A]], %{{.*}}
// CHECK: %[[E:.*]] = icmp eq <16 x i64> %[[D]], <i64 0, i64 4, i64 8, i64 12,
// CHECK: %[[M:.*]] = bitcast <16 x i1> %[[E]] to i16
// CHECK: icmp eq i16 %[[M]], 65535
// On element offsets (a check moved to the lane-varying part of an address, see
// contiguity_checks): the offsets widened to 64 bits, against k * stride elements.
// CHECK: %[[W:.*]] = sext <8 x i32> %{{.*}} to <8 x i64>
// CHECK: %[[D2:.*]] = sub <8 x i64> %[[W]], %{{.*}}
// CHECK: icmp eq <8 x i64> %[[D2]], <i64 0, i64 2, i64 4, i64 6,
func.func public @contig(%x: !tt.ptr<f32>, %o: !tt.ptr<i8>, %s: i32) {
  %ptrs = vector.broadcast %x : !tt.ptr<f32> to vector<16x!tt.ptr<f32>>
  %ok = "tcpu.is_contiguous"(%ptrs) : (vector<16x!tt.ptr<f32>>) -> i1
  %b = arith.extui %ok : i1 to i8
  "tcpu.store"(%o, %b) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<i8>, i8) -> ()
  %offs = vector.broadcast %s : i32 to vector<8xi32>
  %ok2 = "tcpu.is_contiguous"(%offs) <{stride = 2 : i64}> : (vector<8xi32>) -> i1
  %b2 = arith.extui %ok2 : i1 to i8
  "tcpu.store"(%o, %b2) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<i8>, i8) -> ()
  func.return
}
