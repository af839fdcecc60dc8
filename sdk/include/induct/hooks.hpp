// Hook points: where a model shows its layer outputs to a study (probes, ablation, patching).
#pragma once

#include <torch/types.h>

#include <functional>
#include <string>
#include <vector>

#include "induct/export.hpp"

namespace induct {

// A model passes each layer output through its hooks by name, in the order it computes them:
//   x = hooks("block.3", x);
// Without a handler (training, evaluation) the call returns x itself and costs one branch.
// A study installs a handler that records the activation (returning it unchanged) or returns
// another tensor of the same shape in its place (ablation, patching). Names: "embed" for the
// embedding (with positions), "block.i" / "<layer>.i" for the i-th block or recurrent layer
// from 0, "norm" for the final norm; docs/plugin-guide.md lists the in-tree models' names.
// A point inside a layer is named "<layer point>.<part>" (an inner point, e.g. "block.2.conv":
// a Mamba block's causal convolution output); the probe study reads inner points named "conv"
// for the convolution's attribution and no others, and keeps them out of its depth profile.
class INDUCT_SDK_API Hooks {
 public:
  using Handler = std::function<torch::Tensor(const std::string& name, const torch::Tensor& x)>;

  torch::Tensor operator()(const std::string& name, const torch::Tensor& x) const {
    return handler_ ? handler_(name, x) : x;
  }
  void set_handler(Handler handler) { handler_ = std::move(handler); }
  void clear() { handler_ = nullptr; }
  // Whether a handler is installed (a study reads or edits the layers): a recurrent layer then
  // runs through hooked_recurrence instead of its fused kernel.
  bool active() const { return static_cast<bool>(handler_); }

 private:
  Handler handler_;
};

// A recurrent layer whose hook point is the state it carries (the LSTM's and GRU's "lstm.i" /
// "gru.i", Dense-SSM's "state"), run step by step so that an edit of the hook point is an edit of
// the state: for t = 0..T-1, `step(t, h)` gives h_t [B, H] from h_{t-1} (`h` starts as h_{-1};
// any other state, such as the LSTM's cell, the caller keeps), the outputs so far (later
// positions zero) pass through the hook `name`, and its value at t is h_t from then on: what the
// next step reads and what goes up. So a handler is called T times with [B, T, H], and its edit
// must give the same result when applied again (recording, ablation and patching do). Returns
// the last call's value, the layer's output [B, T, H]. Without a handler the layers run their
// fused kernels and call the hook once.
inline torch::Tensor hooked_recurrence(
    const Hooks& hooks, const std::string& name, int64_t T, torch::Tensor h,
    const std::function<torch::Tensor(int64_t t, const torch::Tensor& h)>& step) {
  std::vector<torch::Tensor> outputs;
  outputs.reserve(static_cast<size_t>(T));
  torch::Tensor edited;
  for (int64_t t = 0; t < T; ++t) {
    h = step(t, h);
    outputs.push_back(h);
    std::vector<torch::Tensor> all = outputs;
    for (int64_t later = t + 1; later < T; ++later) all.push_back(torch::zeros_like(h));
    edited = hooks(name, torch::stack(all, 1));
    h = edited.select(1, t);
    outputs.back() = h;
  }
  return edited;
}

}  // namespace induct
