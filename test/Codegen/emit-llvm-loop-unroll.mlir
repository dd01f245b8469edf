// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma | FileCheck %s

// A loop whose body branches (here an scf.if; a masked chunk or exp's two paths branch the
// same way) gets `llvm.loop.unroll.disable` on its back edge, in a loop ID of its own; a
// straight-line body, or one whose only branches are those of inner loops, gets no loop
// metadata and is left to LLVM's unroller, unless the conversion marked it `tcpu.no_unroll`
// (a pass over a tile: the fourth loop), which takes the same loop ID form.
// CHECK-LABEL: define external void @"loops"
// CHECK: br label %"for.header", !llvm.loop ![[ID:[0-9]+]]
// The second loop's back edge (its entry branch comes before the first loop's back edge):
// CHECK: br label %"for.header.1"{{$}}
// The third loop, around a straight-line inner loop (for.header.3): its back edge comes
// after the inner loop's blocks.
// CHECK: for.exit.3:
// CHECK-NEXT: add i64
// CHECK-NEXT: br label %"for.header.2"{{$}}
// CHECK: br label %"for.header.4", !llvm.loop ![[ID4:[0-9]+]]
// CHECK: ![[PROP:[0-9]+]] = !{ !"llvm.loop.unroll.disable" }
// CHECK: ![[ID]] = !{ ![[ID]], ![[PROP]] }
// CHECK: ![[ID4]] = !{ ![[ID4]], ![[PROP]] }
func.func public @loops(%x: !tt.ptr<f32>, %n: i32) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 64 : index
  %st = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  scf.for %j = %lb to %ub step %st {
    %jj = arith.index_cast %j : index to i32
    %p = "tcpu.addptr"(%x, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    %c = arith.cmpi slt, %jj, %n : i32
    scf.if %c {
      %v = "tcpu.vload"(%p) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> vector<8xf32>
      "tcpu.vstore"(%p, %v) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xf32>) -> ()
    }
  }
  scf.for %j = %lb to %ub step %st {
    %jj = arith.index_cast %j : index to i32
    %p = "tcpu.addptr"(%x, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    %v = "tcpu.vload"(%p) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> vector<8xf32>
    "tcpu.vstore"(%p, %v) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xf32>) -> ()
  }
  scf.for %i = %lb to %st step %st {
    scf.for %j = %lb to %ub step %st {
      %jj = arith.index_cast %j : index to i32
      %p = "tcpu.addptr"(%x, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
      %v = "tcpu.vload"(%p) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> vector<8xf32>
      "tcpu.vstore"(%p, %v) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xf32>) -> ()
    }
  }
  scf.for %j = %lb to %ub step %st {
    %jj = arith.index_cast %j : index to i32
    %p = "tcpu.addptr"(%x, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    %v = "tcpu.vload"(%p) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> vector<8xf32>
    "tcpu.vstore"(%p, %v) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xf32>) -> ()
  } {tcpu.no_unroll}
  func.return
}
