// Hook points: where a model shows its layer outputs to a study (probes, ablation, patching).
#pragma once

#include <torch/types.h>

#include <functional>
#include <string>

#include "induct/export.hpp"

namespace induct {

// A model passes each layer output through its hooks by name, in the order it computes them:
//   x = hooks("block.3", x);
// Without a handler (training, evaluation) the call returns x itself and costs one branch.
// A study installs a handler that records the activation (returning it unchanged) or returns
// another tensor of the same shape in its place (ablation, patching). Names: "embed" for the
// embedding (with positions), "block.i" / "<layer>.i" for the i-th block or recurrent layer
// from 0, "norm" for the final norm; docs/plugin-guide.md lists the in-tree models' names.
class INDUCT_SDK_API Hooks {
 public:
  using Handler = std::function<torch::Tensor(const std::string& name, const torch::Tensor& x)>;

  torch::Tensor operator()(const std::string& name, const torch::Tensor& x) const {
    return handler_ ? handler_(name, x) : x;
  }
  void set_handler(Handler handler) { handler_ = std::move(handler); }
  void clear() { handler_ = nullptr; }

 private:
  Handler handler_;
};

}  // namespace induct
