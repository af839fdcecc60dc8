// GRU (Cho et al. 2014) of `layers` layers, embedding = hidden, a linear head on every step:
// the recurrent shape of the paper's LSTM with PyTorch's GRU cell (gates r, z, n;
// n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) n + z h).
#include <induct/model.hpp>
#include <induct/nn/linear.hpp>
#include <induct/plugin.hpp>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>

namespace {

class Gru final : public induct::SequenceModel {
 public:
  Gru(int64_t vocab, int64_t hidden, int64_t layers)
      : embed_(register_module("embed", torch::nn::Embedding(vocab, hidden))),
        gru_(register_module("gru", torch::nn::GRU(torch::nn::GRUOptions(hidden, hidden)
                                                        .num_layers(layers)
                                                        .batch_first(true)))),
        head_(register_module("head", torch::nn::Linear(hidden, vocab))) {}

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    auto h = std::get<0>(gru_->forward(embed_(tokens)));         // [B, T, H]
    return induct::nn::linear(h, head_->weight, head_->bias);
  }

 private:
  torch::nn::Embedding embed_;
  torch::nn::GRU gru_;
  torch::nn::Linear head_;
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto hidden = induct::get_in_range(ctx.options, "hidden", 256, 1, induct::kMaxModelDimension);
  const auto layers = induct::get_in_range(ctx.options, "layers", 1, 1, 64);
  return std::make_unique<Gru>(ctx.vocab_size, hidden, layers);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_model(
      "gru", "GRU, embedding = hidden, linear head (options: hidden=256, layers=1)", make);
}

}  // namespace

INDUCT_PLUGIN("gru", "1.0.0", register_components)
