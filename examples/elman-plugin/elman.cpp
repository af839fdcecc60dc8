// An Elman RNN sequence model for induct: embedding, `layers` tanh RNN layers
// (h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)), a linear head on every step.
// Written only against the installed SDK (<induct/...>) and LibTorch.
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>

#include <induct/model.hpp>
#include <induct/plugin.hpp>

namespace {

class Elman final : public induct::SequenceModel {
 public:
  Elman(int64_t vocab, int64_t hidden, int64_t layers)
      : embed_(register_module("embed", torch::nn::Embedding(vocab, hidden))),
        rnn_(register_module("rnn", torch::nn::RNN(torch::nn::RNNOptions(hidden, hidden)
                                                       .num_layers(layers)
                                                       .nonlinearity(torch::kTanh)
                                                       .batch_first(true)))),
        head_(register_module("head", torch::nn::Linear(hidden, vocab))) {}

  // tokens [B, T] -> logits [B, T, V]; an RNN only looks back, so it is causal.
  torch::Tensor forward(const torch::Tensor& tokens) override {
    // `hooks` shows layer outputs to the studies that read them (probes); a no-op otherwise.
    auto x = hooks("embed", embed_(tokens));                    // [B, T, H]
    return head_(hooks("rnn", std::get<0>(rnn_->forward(x))));  // the last layer's states
  }

 private:
  torch::nn::Embedding embed_;
  torch::nn::RNN rnn_;
  torch::nn::Linear head_;
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  // Every option the model reads; the host rejects any other key under `model:`.
  const auto hidden = ctx.options.get<long>("hidden", 128);
  const auto layers = ctx.options.get<long>("layers", 1);
  if (hidden < 1) ctx.options.fail("hidden", "must be at least 1");
  if (layers < 1) ctx.options.fail("layers", "must be at least 1");
  return std::make_unique<Elman>(ctx.vocab_size, hidden, layers);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_model("elman",
                      "Elman (tanh) RNN with a linear head (options: hidden=128, layers=1)", make);
}

}  // namespace

INDUCT_PLUGIN("elman", "1.0.0", register_components)
