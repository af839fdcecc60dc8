// Process-wide settings for training, in one place: the CLI, the workers and the tests use it.
#pragma once

#include <string>

namespace induct {

// Keeps large tensors on glibc's heap instead of fresh zeroed pages every step: raises the mmap
// threshold to its maximum, 32 MB (measured up to 1.29x per step), and turns mmap off for larger
// blocks too (paper-size Dense-SSM's 67 MB weight gradient: page faults were a quarter of its
// step; 1.35x at 10 tokens, peak memory +16%). Sets LibTorch's intra-op threads (0: leave as is).
// (Lowered to thread_limit() first.)
void configure_process(int threads);

// The cores this process may run on: its CPU affinity (what taskset, Slurm's task binding
// and cgroup cpusets leave it), not every core of the machine.
int usable_cores();

// The most threads one process should start for `cores` cores (0: usable_cores()): no more
// than the cores, than a quarter of its address-space limit holds at one stack each
// (RLIMIT_AS, RLIMIT_STACK; 8 MiB when unset), or than half the user's process limit
// (RLIMIT_NPROC). More would only wait for a core, and under such limits LibTorch's thread
// pool can hang at start (a worker asked for 1,000 threads under `ulimit -v 6000000` sat at 0%
// CPU with 660 of them).
int thread_limit(int cores = 0);

// Writes `line` and a newline to stderr in one write: lines of processes that share a stderr
// (the pool's workers) never interleave within a line.
void say_line(const std::string& line);

// This machine's name (gethostname).
std::string host_name();

}  // namespace induct
