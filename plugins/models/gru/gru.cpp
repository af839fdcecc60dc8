// GRU (Cho et al. 2014) of `layers` layers, embedding = hidden, a linear head on every step:
// the recurrent shape of the paper's LSTM with PyTorch's GRU cell (gates r, z, n;
// n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) n + z h).
#include <torch/nn/functional/linear.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>

#include <induct/model.hpp>
#include <induct/nn/gru.hpp>
#include <induct/nn/linear.hpp>
#include <induct/plugin.hpp>

namespace {

class Gru final : public induct::SequenceModel {
 public:
  Gru(int64_t vocab, int64_t hidden, int64_t layers)
      : embed_(register_module("embed", torch::nn::Embedding(vocab, hidden))),
        gru_(register_module(
            "gru",
            torch::nn::GRU(
                torch::nn::GRUOptions(hidden, hidden).num_layers(layers).batch_first(true)))),
        head_(register_module("head", torch::nn::Linear(hidden, vocab))) {}

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    auto h = hooks("embed", embed_(tokens));                     // [B, T, H]
    // torch::nn::GRU holds the parameters (and their names); the SDK's fused layer runs them.
    const auto w = gru_->all_weights();  // per layer: weight_ih, weight_hh, bias_ih, bias_hh
    for (size_t l = 0; l + 3 < w.size(); l += 4) {
      const std::string name = "gru." + std::to_string(l / 4);
      h = hooks.active()
              ? hooked_layer(name, h, w[l], w[l + 1], w[l + 2], w[l + 3])
              : hooks(name, induct::nn::gru_layer(h, w[l], w[l + 1], w[l + 2], w[l + 3]));
    }
    return induct::nn::linear(h, head_->weight, head_->bias);
  }

 private:
  // The layer step by step with LibTorch's operations, its hook point the state h_t: an edit
  // there is what step t + 1 reads. While a study reads or edits the layers.
  torch::Tensor hooked_layer(const std::string& name, const torch::Tensor& x,
                             const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                             const torch::Tensor& b_ih, const torch::Tensor& b_hh) {
    const auto projected = torch::nn::functional::linear(x, w_ih, b_ih).chunk(3, 2);  // r, z, n
    const int64_t B = x.size(0), H = w_hh.size(1);
    return induct::hooked_recurrence(
        hooks, name, x.size(1), torch::zeros({B, H}, x.options()),
        [&](int64_t t, const torch::Tensor& h) {
          const auto recurrent = torch::nn::functional::linear(h, w_hh, b_hh).chunk(3, 1);
          const auto r = torch::sigmoid(projected[0].select(1, t) + recurrent[0]);
          const auto z = torch::sigmoid(projected[1].select(1, t) + recurrent[1]);
          const auto n = torch::tanh(projected[2].select(1, t) + r * recurrent[2]);
          return (1 - z) * n + z * h;
        });
  }

  torch::nn::Embedding embed_;
  torch::nn::GRU gru_;
  torch::nn::Linear head_;
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto hidden =
      induct::get_in_range(ctx.options, "hidden", 256, 1, induct::kMaxModelDimension);
  const auto layers = induct::get_in_range(ctx.options, "layers", 1, 1, 64);
  return std::make_unique<Gru>(ctx.vocab_size, hidden, layers);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_model("gru", "GRU, embedding = hidden, linear head (options: hidden=256, layers=1)",
                      make);
}

}  // namespace

INDUCT_PLUGIN("gru", "1.0.0", register_components)
