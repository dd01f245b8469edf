// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// tt.dot: both operands packed to buffers, then a K loop carrying a 4 x 2 tile of
// 8-lane accumulators updated with vector FMAs on a broadcast of A.
// CHECK-LABEL: func.func public @dot
// CHECK-COUNT-3: memref.alloca
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: memref.load
// CHECK: vector.broadcast {{.*}} : f32 to vector<8xf32>
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK-NOT: tt.dot
tt.func public @dot(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %c16 = arith.constant dense<16> : tensor<16x1xi32>
  %row = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %col = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %rs = arith.muli %row, %c16 : tensor<16x1xi32>
  %rb = tt.broadcast %rs : tensor<16x1xi32> -> tensor<16x16xi32>
  %cb = tt.broadcast %col : tensor<1x16xi32> -> tensor<16x16xi32>
  %off = arith.addi %rb, %cb : tensor<16x16xi32>
  %as = tt.splat %a : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %ap = tt.addptr %as, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  %x = tt.load %ap : tensor<16x16x!tt.ptr<f32>>
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %d = tt.dot %x, %x, %z, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  tt.store %op, %d : tensor<16x16x!tt.ptr<f32>>
  tt.return
}
