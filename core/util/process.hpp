// Process-wide settings for training, in one place: the CLI, the workers and the tests use it.
#pragma once

namespace induct {

// Keeps large tensors on glibc's heap instead of fresh zeroed pages every step: raises the mmap
// threshold to its maximum, 32 MB (measured up to 1.29x per step), and turns mmap off for larger
// blocks too (paper-size Dense-SSM's 67 MB weight gradient: page faults were a quarter of its
// step; 1.35x at 10 tokens, peak memory +16%). Sets LibTorch's intra-op threads (0: leave as is).
void configure_process(int threads);

}  // namespace induct
