// How a linear probe is fitted (core/probe/probe.hpp). Torch-free.
#pragma once

#include <cstdint>

namespace induct {

struct ProbeSettings {
  int64_t iterations = 100;  // full-batch L-BFGS iterations
  double l2 = 1e-3;          // penalty on the weights (standardised features), per sample
  bool standardize = true;   // false: fit on x as given (mean 0, scale 1)
};

}  // namespace induct
