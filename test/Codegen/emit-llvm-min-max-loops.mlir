// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma | FileCheck %s

// A loop carrying a scalar float through arith.maxnumf / arith.minnumf is kept from LLVM's
// loop vectorizer and interleaver (llvm/llvm-project#209159: its NaN-checking vector form
// of such a reduction skipped the leftover scalar iterations). A scalar sum and a vector
// max are left to LLVM.
// CHECK-LABEL: define external float @"reductions"
// CHECK: br label %"for.header", !llvm.loop ![[ID:[0-9]+]]
// CHECK: br label %"for.header.1"{{$}}
// CHECK: br label %"for.header.2"{{$}}
// CHECK: ![[NOVEC:[0-9]+]] = !{ !"llvm.loop.vectorize.enable", i1 0 }
// CHECK: ![[NOINT:[0-9]+]] = !{ !"llvm.loop.interleave.count", i32 1 }
// CHECK: ![[ID]] = !{ ![[ID]], ![[NOVEC]], ![[NOINT]] }
func.func public @reductions(%x: !tt.ptr<f32>) -> f32 {
  %lb = arith.constant 0 : index
  %ub = arith.constant 60 : index
  %st = arith.constant 1 : index
  %init = arith.constant 0.0 : f32
  %vinit = arith.constant dense<0.0> : vector<8xf32>
  %m = scf.for %j = %lb to %ub step %st iter_args(%acc = %init) -> (f32) {
    %jj = arith.index_cast %j : index to i32
    %p = "tcpu.addptr"(%x, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    %v = "tcpu.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> f32
    %r = arith.maxnumf %acc, %v : f32
    scf.yield %r : f32
  }
  %s = scf.for %j = %lb to %ub step %st iter_args(%acc = %m) -> (f32) {
    %jj = arith.index_cast %j : index to i32
    %p = "tcpu.addptr"(%x, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    %v = "tcpu.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> f32
    %r = arith.addf %acc, %v : f32
    scf.yield %r : f32
  }
  %vm = scf.for %j = %lb to %ub step %st iter_args(%acc = %vinit) -> (vector<8xf32>) {
    %jj = arith.index_cast %j : index to i32
    %p = "tcpu.addptr"(%x, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    %v = "tcpu.vload"(%p) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> vector<8xf32>
    %r = arith.maxnumf %acc, %v : vector<8xf32>
    scf.yield %r : vector<8xf32>
  }
  %e = vector.extract %vm[0] : f32 from vector<8xf32>
  %t = arith.addf %s, %e : f32
  func.return %t : f32
}
