// A GRU sequence model for induct: embedding, a GRU of `layers` layers, a linear head on every
// step. Written only against the installed SDK (<induct/...>) and LibTorch.
#include <induct/model.hpp>
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

  // tokens [B, T] -> logits [B, T, V]; a GRU only looks back, so it is causal.
  torch::Tensor forward(const torch::Tensor& tokens) override {
    auto states = std::get<0>(gru_->forward(embed_(tokens)));  // [B, T, H]
    return head_(states);
  }

 private:
  torch::nn::Embedding embed_;
  torch::nn::GRU gru_;
  torch::nn::Linear head_;
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  // Every option the model reads; the host rejects any other key under `model:`.
  const auto hidden = ctx.options.get<long>("hidden", 128);
  const auto layers = ctx.options.get<long>("layers", 1);
  if (hidden < 1) ctx.options.fail("hidden", "must be at least 1");
  if (layers < 1) ctx.options.fail("layers", "must be at least 1");
  return std::make_unique<Gru>(ctx.vocab_size, hidden, layers);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_model("gru", "GRU with a linear head (options: hidden=128, layers=1)", make);
}

}  // namespace

INDUCT_PLUGIN("gru", "1.0.0", register_components)
