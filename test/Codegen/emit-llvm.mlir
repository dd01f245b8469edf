// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma | FileCheck %s

// The kernel ABI: the launcher's argument array, then program id x, y, z and grid x, y, z;
// the kernel loads its arguments from the array's slots at entry (one function: no
// separate unpacking entry).
// CHECK-LABEL: define external void @"k"(ptr %"args", i32 %"pid_x", i32 %"pid_y", i32 %"pid_z", i32 %"grid_x", i32 %"grid_y", i32 %"grid_z")
// CHECK: %[[S0:.+]] = getelementptr ptr, ptr %"args", i64 0
// CHECK: %[[P0:.+]] = load ptr, ptr %[[S0]]
// CHECK: load ptr, ptr %[[P0]]
// CHECK: %[[S2:.+]] = getelementptr ptr, ptr %"args", i64 2
// CHECK: %[[P2:.+]] = load ptr, ptr %[[S2]]
// CHECK: load i32, ptr %[[P2]]
// A prefetch hint: read, high locality, data cache; with locality 2, to the L2 (prefetcht1).
// CHECK: call void @"llvm.prefetch.p0"(ptr %{{.*}}, i32 0, i32 3, i32 1)
// CHECK: call void @"llvm.prefetch.p0"(ptr %{{.*}}, i32 0, i32 2, i32 1)
// Masked contiguous accesses are LLVM masked loads/stores on native-width vectors.
// CHECK: call <16 x float> @"llvm.masked.load.v16f32.p0"
// Integer division by zero must not trap: the divisor (here lane 0 of the first step) is
// made safe first. (A divisor all lanes share takes integer_division.py instead.)
// CHECK: icmp eq <16 x i32>
// CHECK: select <16 x i1>
// CHECK: sdiv <16 x i32>
// libmvec's AVX2 logf, in 8-lane chunks (fp32 exp would be inlined: inline_math.py).
// CHECK: call <8 x float> @"_ZGVdN8v_logf"
// CHECK: call void @"llvm.masked.store.v16f32.p0"
// CHECK-NOT: define
func.func public @k(%x: !tt.ptr<f32>, %o: !tt.ptr<f32>, %n: i32) {
  %pid = "tcpu.program_id"() <{axis = 0 : i32}> : () -> i32
  %lb = arith.constant 0 : index
  %ub = arith.constant 64 : index
  %st = arith.constant 16 : index
  scf.for %j = %lb to %ub step %st {
    %jj = arith.index_cast %j : index to i32
    %iota = "tcpu.iota"() : () -> vector<16xi32>
    %b = vector.broadcast %jj : i32 to vector<16xi32>
    %offs = arith.addi %b, %iota : vector<16xi32>
    %nn = vector.broadcast %n : i32 to vector<16xi32>
    %m = arith.cmpi slt, %offs, %nn : vector<16xi32>
    %p = "tcpu.addptr"(%x, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    "tcpu.prefetch"(%p) : (!tt.ptr<f32>) -> ()
    "tcpu.prefetch"(%p) <{locality = 2 : i32}> : (!tt.ptr<f32>) -> ()
    %v = "tcpu.vload"(%p, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<f32>, vector<16xi1>) -> vector<16xf32>
    %q = arith.divsi %nn, %offs : vector<16xi32>
    %qf = arith.sitofp %q : vector<16xi32> to vector<16xf32>
    %e = math.log %v : vector<16xf32>
    %r = arith.addf %e, %qf : vector<16xf32>
    %po = "tcpu.addptr"(%o, %jj) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
    "tcpu.vstore"(%po, %r, %m) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!tt.ptr<f32>, vector<16xf32>, vector<16xi1>) -> ()
  }
  func.return
}
