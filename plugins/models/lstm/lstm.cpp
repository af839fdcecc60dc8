// LSTM of `layers` layers (the paper's: one), embedding = hidden, a linear head on every step
// (docs/method.md section 8). Each layer's output, its hidden state, is a hook point, "lstm.0"
// up; while a study reads or edits them the layers run step by step, so that an edit of h_t is
// what step t + 1 reads.
#include <torch/nn/functional/linear.h>
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
  Lstm(int64_t vocab, int64_t hidden, int64_t layers)
      : embed_(register_module("embed", torch::nn::Embedding(vocab, hidden))),
        lstm_(register_module(
            "lstm",
            torch::nn::LSTM(
                torch::nn::LSTMOptions(hidden, hidden).num_layers(layers).batch_first(true)))),
        head_(register_module("head", torch::nn::Linear(hidden, vocab))) {}

  torch::Tensor forward(const torch::Tensor& tokens) override {
    auto h = hooks("embed", embed_(tokens));  // [B, T, H]
    // torch::nn::LSTM holds the parameters (and their names: weight_ih_l0, ...); the SDK's fused
    // layer runs them, layer by layer.
    const auto w = lstm_->all_weights();  // per layer: weight_ih, weight_hh, bias_ih, bias_hh
    for (size_t l = 0; l + 3 < w.size(); l += 4) {
      const std::string name = "lstm." + std::to_string(l / 4);
      h = hooks.active() ? hooked_layer(name, h, w[l], w[l + 1], w[l + 2], w[l + 3])
                         : hooks(name, induct::nn::lstm_layer(h, w[l], w[l + 1], w[l + 2],
                                                              w[l + 3]));  // [B, T, H]
    }
    return induct::nn::linear(h, head_->weight, head_->bias);  // [B, T, V]
  }

 private:
  // The layer step by step with LibTorch's operations (PyTorch's cell: gates i, f, g, o), its
  // hook point the hidden state h_t: an edit there is what step t + 1 reads (the cell state c_t
  // flows on unchanged). While a study reads or edits the layers.
  torch::Tensor hooked_layer(const std::string& name, const torch::Tensor& x,
                             const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                             const torch::Tensor& b_ih, const torch::Tensor& b_hh) {
    const auto projected = torch::nn::functional::linear(x, w_ih, b_ih);  // [B, T, 4H]
    const int64_t B = x.size(0), H = w_hh.size(1);
    torch::Tensor c = torch::zeros({B, H}, x.options());
    return induct::hooked_recurrence(
        hooks, name, x.size(1), torch::zeros({B, H}, x.options()),
        [&](int64_t t, const torch::Tensor& h) {
          const auto gates =
              (projected.select(1, t) + torch::nn::functional::linear(h, w_hh, b_hh)).chunk(4, 1);
          c = torch::sigmoid(gates[1]) * c + torch::sigmoid(gates[0]) * torch::tanh(gates[2]);
          return torch::sigmoid(gates[3]) * torch::tanh(c);
        });
  }

  torch::nn::Embedding embed_;
  torch::nn::LSTM lstm_;
  torch::nn::Linear head_;
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto hidden =
      induct::get_in_range(ctx.options, "hidden", 256, 1, induct::kMaxModelDimension);
  const auto layers = induct::get_in_range(ctx.options, "layers", 1, 1, 64);
  return std::make_unique<Lstm>(ctx.vocab_size, hidden, layers);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_model(
      "lstm", "LSTM, embedding = hidden, linear head (options: hidden=256, layers=1)", make);
}

}  // namespace

INDUCT_PLUGIN("lstm", "1.5.0", register_components)
