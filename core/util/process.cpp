#include "util/process.hpp"

#include <ATen/Parallel.h>
#include <malloc.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "util/files.hpp"

namespace induct {

void configure_process(int threads) {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_MMAP_MAX, 0);  // (glibc still falls back to mmap when the heap cannot grow)
  if (threads > 0) at::set_num_threads(std::min(threads, thread_limit()));
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

int thread_limit(int cores) {
  long limit = cores > 0 ? cores : usable_cores();
  rlimit r{};
  if (::getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
    rlimit stack{};
    rlim_t per_thread = rlim_t{8} << 20;
    if (::getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur != RLIM_INFINITY &&
        stack.rlim_cur > 0)
      per_thread = stack.rlim_cur;
    limit = std::min<long>(limit, static_cast<long>(r.rlim_cur / 4 / per_thread));
  }
  if (::getrlimit(RLIMIT_NPROC, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    limit = std::min<long>(limit, static_cast<long>(r.rlim_cur / 2));
  return static_cast<int>(std::max<long>(1, limit));
}

void say_line(const std::string& line) {
  const std::string text = line + "\n";
  write_all(2, text.data(), text.size());  // nothing to say it to when stderr fails
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace induct
