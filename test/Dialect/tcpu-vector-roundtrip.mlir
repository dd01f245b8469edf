// RUN: triton-cpu-opt %s | FileCheck %s

// The vector ops the conversion emits on vectors of pointers (a gather's addresses) parse
// and print back unchanged (dialects/compat.py: xDSL's vector.extract and vector.insert
// accept integers, indices and floats only).

// CHECK-LABEL: func.func public @pointer_lanes
// CHECK: %[[V:.*]] = vector.broadcast %p : !tt.ptr<f32> to vector<8x!tt.ptr<f32>>
// CHECK: %[[E:.*]] = vector.extract %[[V]][3] : !tt.ptr<f32> from vector<8x!tt.ptr<f32>>
// CHECK: vector.insert %[[E]], %[[V]] [5] : !tt.ptr<f32> into vector<8x!tt.ptr<f32>>
// CHECK: vector.extract %{{.*}}[1] : f32 from vector<4xf32>
// CHECK: vector.extract %{{.*}}[1] : vector<4xf32> from vector<2x4xf32>
builtin.module {
  func.func public @pointer_lanes(%p: !tt.ptr<f32>, %x: f32) {
    %v = vector.broadcast %p : !tt.ptr<f32> to vector<8x!tt.ptr<f32>>
    %e = vector.extract %v[3] : !tt.ptr<f32> from vector<8x!tt.ptr<f32>>
    %w = vector.insert %e, %v [5] : !tt.ptr<f32> into vector<8x!tt.ptr<f32>>
    %f = vector.broadcast %x : f32 to vector<4xf32>
    %g = vector.extract %f[1] : f32 from vector<4xf32>
    %h = vector.broadcast %x : f32 to vector<2x4xf32>
    %i = vector.extract %h[1] : vector<4xf32> from vector<2x4xf32>
    func.return
  }
}
