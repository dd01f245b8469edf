// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma | FileCheck %s

// A store that may stream is counted with the trip counts of the loops around it: the
// chunk loop's (constant bounds, 4 x 16 floats = 256 bytes) at compile time, the row
// loop's (run-time bounds) in its preheader. The launch streams when that count is above
// tcpu_streaming_bytes / grid size.
// CHECK-LABEL: define external void @"rows"
// CHECK: %[[LIMIT:.*]] = load i64, {{.*}}@"tcpu_streaming_bytes"
// CHECK: %[[LIMITF:.*]] = uitofp i64 %[[LIMIT]] to double
// CHECK: %[[BUDGET:.*]] = fdiv double %[[LIMITF]], %{{.*}}
// The row loop's preheader: ceil((n - first) / step), at least 0; 1 if the step is not positive.
// CHECK: %[[SPAN:.*]] = fsub double
// CHECK: %[[Q:.*]] = fdiv double %[[SPAN]]
// CHECK: %[[C:.*]] = call double @"llvm.ceil.f64"(double %[[Q]])
// CHECK: %[[N:.*]] = call double @"llvm.maxnum.f64"(double %[[C]], double {{ *}}0x0)
// CHECK: %[[POS:.*]] = fcmp ogt double
// CHECK: %[[TRIP:.*]] = select {{ *}}i1 %[[POS]], double %[[N]], double 0x3ff0000000000000
// CHECK: for.header
// At the store: 256 bytes x (trip - 1) more than the compile-time count.
// CHECK: %[[T1:.*]] = fsub double %[[TRIP]], 0x3ff0000000000000
// CHECK: %[[EXTRA:.*]] = fmul double 0x4070000000000000, %[[T1]]
// CHECK: %[[TOTAL:.*]] = fadd double 0x4070000000000000, %[[EXTRA]]
// CHECK: %[[S:.*]] = fcmp ogt double %[[TOTAL]], %[[BUDGET]]
// CHECK: br i1 %[[S]]
// CHECK: store <8 x float> {{.*}}, ptr %{{.*}}, align 32, !nontemporal
func.func public @rows(%y: !tt.ptr<f32>, %first: i32, %n: i32, %step: i32) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %v = arith.constant dense<1.0> : vector<8xf32>
  scf.for %row = %first to %n step %step : i32 {
    %base = "tcpu.addptr"(%y, %row) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    scf.for %i = %c0 to %c64 step %c8 {
      %ii = arith.index_cast %i : index to i32
      %p = "tcpu.addptr"(%base, %ii) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
      "tcpu.vstore"(%p, %v) <{alignment = 32 : i64, may_stream, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<8xf32>) -> ()
    }
  }
  func.return
}
