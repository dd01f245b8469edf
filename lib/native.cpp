// _native: what the Python side of the backend needs natively.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "triton_cpu/runtime.h"

namespace py = pybind11;

namespace {

// Loads a kernel shared object privately (RTLD_LOCAL): kernels of the same name
// from different compilations must not resolve to each other.
uintptr_t load_library(const std::string &path) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw std::runtime_error(std::string("cannot load kernel library: ") + dlerror());
  return reinterpret_cast<uintptr_t>(handle);
}

uintptr_t get_symbol(uintptr_t handle, const std::string &name) {
  void *sym = dlsym(reinterpret_cast<void *>(handle), name.c_str());
  if (!sym)
    throw std::runtime_error("symbol " + name + " not found in kernel library");
  return reinterpret_cast<uintptr_t>(sym);
}

// The address of a symbol, or 0 where the library has none.
uintptr_t find_symbol(uintptr_t handle, const std::string &name) {
  return reinterpret_cast<uintptr_t>(dlsym(reinterpret_cast<void *>(handle), name.c_str()));
}

// Asks Linux for the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA):
// a process must hold it before its first tile instruction, which otherwise raises SIGILL.
// The permission is the process's, for all its threads. Returns whether it is granted.
bool request_amx_permission() {
#if defined(__linux__) && defined(__x86_64__)
  const long ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18;
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
  return false;
#endif
}

void unload_library(uintptr_t handle) {
  if (handle)
    dlclose(reinterpret_cast<void *>(handle));
}

py::dict cache_sizes() {
  py::dict d;
  d["l1d"] = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  d["l2"] = sysconf(_SC_LEVEL2_CACHE_SIZE);
  d["l3"] = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return d;
}

} // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "Native helpers of the Triton CPU backend";
  m.def("load_library", &load_library, "dlopen a kernel shared object; returns its handle");
  m.def("get_symbol", &get_symbol, "address of a symbol in a loaded kernel library");
  m.def("find_symbol", &find_symbol, "address of a symbol in a loaded kernel library, 0 when absent");
  m.def("request_amx_permission", &request_amx_permission,
        "asks the OS for the AMX tile state (Linux, x86-64); whether it is granted");
  m.def("unload_library", &unload_library, "dlclose a kernel library");
  m.def("cache_sizes", &cache_sizes, "host data cache sizes in bytes (0 when unknown)");
  m.def("error_clear", &tcpu_error_clear, "forget a recorded device-side assert");
}
