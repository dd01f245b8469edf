// RUN: triton-cpu-opt %s -p transpose-column-tiles | FileCheck %s

// A column reduction (Inductor's amax over dim 0): the loads `x + i + 1024*j` on an 8x4
// tile run down the first axis. Every 2-D tensor becomes its transpose, expand_dims and
// the reduction take the mirrored axis, splat constants keep their value; 1-D tensors and
// scalars are untouched.
// CHECK-LABEL: tt.func public @column_max
// CHECK: %cst = arith.constant dense<0xFF800000> : tensor<4x8xf32>
// CHECK: %rows = tt.expand_dims %i {axis = 0 : i32} : tensor<8xi32> -> tensor<1x8xi32>
// CHECK: %cols = tt.expand_dims %j {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
// CHECK: tt.broadcast %rows : tensor<1x8xi32> -> tensor<4x8xi32>
// CHECK: tt.load %{{.*}} : tensor<4x8x!tt.ptr<f32>>
// CHECK: arith.maxnumf %{{.*}} : tensor<4x8xf32>
// CHECK: "tt.reduce"(%{{.*}}) <{axis = 0 : i32}>
// CHECK: (tensor<4x8xf32>) -> tensor<8xf32>
// CHECK: tt.store %{{.*}} : tensor<8x!tt.ptr<f32>>
tt.func public @column_max(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>) {
  %cst = arith.constant dense<0xFF800000> : tensor<8x4xf32>
  %c1024 = arith.constant dense<1024> : tensor<1x4xi32>
  %i = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %j = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
  %rows = tt.expand_dims %i {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %cols = tt.expand_dims %j {axis = 0 : i32} : tensor<4xi32> -> tensor<1x4xi32>
  %cs = arith.muli %cols, %c1024 : tensor<1x4xi32>
  %rb = tt.broadcast %rows : tensor<8x1xi32> -> tensor<8x4xi32>
  %cb = tt.broadcast %cs : tensor<1x4xi32> -> tensor<8x4xi32>
  %off = arith.addi %rb, %cb : tensor<8x4xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<8x4x!tt.ptr<f32>>
  %p = tt.addptr %xs, %off : tensor<8x4x!tt.ptr<f32>>, tensor<8x4xi32>
  %v = tt.load %p : tensor<8x4x!tt.ptr<f32>>
  %m = arith.maxnumf %v, %cst : tensor<8x4xf32>
  %r = "tt.reduce"(%m) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.maxnumf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<8x4xf32>) -> tensor<8xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %i : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
  tt.store %yp, %r : tensor<8x!tt.ptr<f32>>
  tt.return
}

// Row-contiguous loads (`x + 4*i + j`): left as they are.
// CHECK-LABEL: tt.func public @row_sum
// CHECK: tt.load %{{.*}} : tensor<8x4x!tt.ptr<f32>>
// CHECK: "tt.reduce"(%{{.*}}) <{axis = 1 : i32}>
tt.func public @row_sum(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>) {
  %c4 = arith.constant dense<4> : tensor<8x1xi32>
  %i = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %j = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
  %rows = tt.expand_dims %i {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %rs = arith.muli %rows, %c4 : tensor<8x1xi32>
  %cols = tt.expand_dims %j {axis = 0 : i32} : tensor<4xi32> -> tensor<1x4xi32>
  %rb = tt.broadcast %rs : tensor<8x1xi32> -> tensor<8x4xi32>
  %cb = tt.broadcast %cols : tensor<1x4xi32> -> tensor<8x4xi32>
  %off = arith.addi %rb, %cb : tensor<8x4xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<8x4x!tt.ptr<f32>>
  %p = tt.addptr %xs, %off : tensor<8x4x!tt.ptr<f32>>, tensor<8x4xi32>
  %v = tt.load %p : tensor<8x4x!tt.ptr<f32>>
  %r = "tt.reduce"(%v) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<8x4xf32>) -> tensor<8xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %i : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
  tt.store %yp, %r : tensor<8x!tt.ptr<f32>>
  tt.return
}

// Column loads, but a tt.dot needs its operands as they are: left alone.
// CHECK-LABEL: tt.func public @with_dot
// CHECK: tt.load %{{.*}} : tensor<8x4x!tt.ptr<f32>>
// CHECK: tt.dot %{{.*}} : tensor<8x4xf32> * tensor<4x8xf32> -> tensor<8x8xf32>
tt.func public @with_dot(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>) {
  %c1024 = arith.constant dense<1024> : tensor<1x4xi32>
  %z = arith.constant dense<0.0> : tensor<8x8xf32>
  %b = arith.constant dense<1.0> : tensor<4x8xf32>
  %i = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %j = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
  %rows = tt.expand_dims %i {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %cols = tt.expand_dims %j {axis = 0 : i32} : tensor<4xi32> -> tensor<1x4xi32>
  %cs = arith.muli %cols, %c1024 : tensor<1x4xi32>
  %rb = tt.broadcast %rows : tensor<8x1xi32> -> tensor<8x4xi32>
  %cb = tt.broadcast %cs : tensor<1x4xi32> -> tensor<8x4xi32>
  %off = arith.addi %rb, %cb : tensor<8x4xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<8x4x!tt.ptr<f32>>
  %p = tt.addptr %xs, %off : tensor<8x4x!tt.ptr<f32>>, tensor<8x4xi32>
  %v = tt.load %p : tensor<8x4x!tt.ptr<f32>>
  %d = tt.dot %v, %b, %z : tensor<8x4xf32> * tensor<4x8xf32> -> tensor<8x8xf32>
  tt.return
}


// A function with a 2-D tensor argument (a noinline callee): its callers pass the tensor
// untransposed, so it is left alone even with column loads.
// CHECK-LABEL: tt.func private @callee
// CHECK: tt.load %{{.*}} : tensor<8x4x!tt.ptr<f32>>
tt.func private @callee(%x: !tt.ptr<f32>, %t: tensor<8x4xf32>) {
  %c1024 = arith.constant dense<1024> : tensor<1x4xi32>
  %i = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %j = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
  %rows = tt.expand_dims %i {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %cols = tt.expand_dims %j {axis = 0 : i32} : tensor<4xi32> -> tensor<1x4xi32>
  %cs = arith.muli %cols, %c1024 : tensor<1x4xi32>
  %rb = tt.broadcast %rows : tensor<8x1xi32> -> tensor<8x4xi32>
  %cb = tt.broadcast %cs : tensor<1x4xi32> -> tensor<8x4xi32>
  %off = arith.addi %rb, %cb : tensor<8x4xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<8x4x!tt.ptr<f32>>
  %p = tt.addptr %xs, %off : tensor<8x4x!tt.ptr<f32>>, tensor<8x4xi32>
  %v = tt.load %p : tensor<8x4x!tt.ptr<f32>>
  %s = arith.addf %v, %t : tensor<8x4xf32>
  tt.store %p, %s : tensor<8x4x!tt.ptr<f32>>
  tt.return
}
