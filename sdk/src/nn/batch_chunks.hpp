// A batch split over the intra-op thread pool for kernels whose backward sums over the batch.
// Internal: not installed.
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

namespace induct::nn {

// `count` contiguous ranges of batch indices, one task each: the split depends only on the
// thread count (a config value), never on timing, so sums that each chunk accumulates in a row
// of its own and that are added afterwards (weight gradients) are the same from run to run.
struct BatchChunks {
  int64_t batch, count;
  explicit BatchChunks(int64_t batch_)
      : batch(batch_),
        count(std::max<int64_t>(1, std::min<int64_t>(batch_, at::get_num_threads()))) {}
  int64_t begin(int64_t chunk) const { return chunk * batch / count; }
  int64_t end(int64_t chunk) const { return begin(chunk + 1); }

  // f(chunk, first batch index, end) for every chunk, on the thread pool.
  template <class F>
  void run(F&& f) const {
    at::parallel_for(0, count, 1, [&](int64_t first, int64_t last) {
      for (int64_t c = first; c < last; ++c) f(c, begin(c), end(c));
    });
  }
};

}  // namespace induct::nn
