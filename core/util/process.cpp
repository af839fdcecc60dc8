#include "util/process.hpp"

#include <ATen/Parallel.h>
#include <malloc.h>

namespace induct {

void configure_process(int threads) {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_MMAP_MAX, 0);  // (glibc still falls back to mmap when the heap cannot grow)
  if (threads > 0) at::set_num_threads(threads);
}

}  // namespace induct
