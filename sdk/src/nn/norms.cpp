#include "induct/nn/norms.hpp"

#include "induct/nn/elementwise.hpp"

namespace induct::nn {

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) { return rms_norm(x, weight, eps_); }

}  // namespace induct::nn
