// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma | FileCheck %s
// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 --cpu-features +avx,+avx2,+fma,+avx512f,+avx512vl | FileCheck %s --check-prefix=AVX512

// An accumulator updated under a mask (Inductor's `_tmp = tl.where(rmask, new, _tmp)`):
// stored as a select of the old value, which LLVM's x86 code generator would turn into a
// masked store, on AVX2 the microcoded vmaskmovps. Frozen first without AVX-512; left as is
// with it (its masked stores are fast).
// CHECK-LABEL: define external void @"update"
// CHECK: %[[OLD:.*]] = load <8 x float>, ptr %{{.*}}, align 4
// CHECK: %[[SEL:.*]] = select {{ *}}<8 x i1> %{{.*}}, <8 x float> %{{.*}}, <8 x float> %[[OLD]]
// CHECK-NEXT: %[[F:.*]] = freeze <8 x float> %[[SEL]]
// CHECK: store <8 x float> %[[F]]
// AVX512-LABEL: define external void @"update"
// AVX512-NOT: freeze
// AVX512: ret void
func.func public @update(%x: vector<8xf32>, %m: vector<8xi1>) {
  %c0 = arith.constant 0 : index
  %buf = memref.alloca() {alignment = 64 : i64} : memref<64xf32>
  %old = vector.load %buf[%c0] : memref<64xf32>, vector<8xf32>
  %new = arith.addf %old, %x : vector<8xf32>
  %sel = arith.select %m, %new, %old : vector<8xi1>, vector<8xf32>
  vector.store %sel, %buf[%c0] : memref<64xf32>, vector<8xf32>
  func.return
}
