// One-layer LSTM with embedding = hidden and a linear head on every step (docs/method.md section
// 8).
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>

#include <induct/model.hpp>
#include <induct/nn/linear.hpp>
#include <induct/nn/lstm.hpp>
#include <induct/plugin.hpp>

namespace {

class Lstm final : public induct::SequenceModel {
 public:
  Lstm(int64_t vocab, int64_t hidden)
      : embed_(register_module("embed", torch::nn::Embedding(vocab, hidden))),
        lstm_(register_module(
            "lstm", torch::nn::LSTM(torch::nn::LSTMOptions(hidden, hidden).batch_first(true)))),
        head_(register_module("head", torch::nn::Linear(hidden, vocab))) {}

  torch::Tensor forward(const torch::Tensor& tokens) override {
    auto x = hooks("embed", embed_(tokens));  // [B, T, H]
    // torch::nn::LSTM holds the parameters (and their names); the SDK's fused layer runs them.
    const auto w = lstm_->all_weights();  // weight_ih, weight_hh, bias_ih, bias_hh
    auto h = hooks("lstm", induct::nn::lstm_layer(x, w[0], w[1], w[2], w[3]));  // [B, T, H]
    return induct::nn::linear(h, head_->weight, head_->bias);                   // [B, T, V]
  }

 private:
  torch::nn::Embedding embed_;
  torch::nn::LSTM lstm_;
  torch::nn::Linear head_;
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto hidden =
      induct::get_in_range(ctx.options, "hidden", 256, 1, induct::kMaxModelDimension);
  return std::make_unique<Lstm>(ctx.vocab_size, hidden);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_model(
      "lstm", "one-layer LSTM, embedding = hidden, linear head (options: hidden=256)", make);
}

}  // namespace

// 1.1.0: the SDK's fused layer instead of torch::nn::LSTM's forward (same parameters, results
// differ by float rounding, so stored 1.0.0 trials are not reused). 1.2.0: the layer's matrix
// products on oneDNN's sgemm (rounding again). 1.3.0: the head on the SDK's linear (oneDNN),
// the layer's bias gradient summed in another order (rounding). 1.4.0: the layer works
// batch-major (no transposed copies) and sums W_hh's gradient in another order (rounding).
INDUCT_PLUGIN("lstm", "1.4.0", register_components)
