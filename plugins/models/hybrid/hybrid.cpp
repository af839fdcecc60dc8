// hybrid: a stack whose `pattern` picks each layer's block (plugins/models/blocks/composed.hpp):
// A = attention (a Llama block), M = Mamba, 2 = Mamba-2. Embedding N(0, 0.02), final RMSNorm,
// head tied to the embedding (as Mamba's). Hook points "<kind>.<layer>": attn.1, mamba.0,
// mamba2.3, and embed, norm; a Mamba or Mamba-2 block's convolution "<point>.conv".
#include <torch/nn/modules/container/modulelist.h>

#include <induct/model.hpp>
#include <induct/plugin.hpp>
#include <string>
#include <vector>

#include "blocks/composed.hpp"
#include "blocks/stack.hpp"

namespace {

using induct::blocks::make_block;
using induct::blocks::run_block;
using induct::blocks::Shape;

class Hybrid final : public induct::blocks::Stack {
 public:
  Hybrid(const Shape& s, std::string pattern)
      : Stack(s.vocab, s.d_model), pattern_(std::move(pattern)) {
    auto list = register_module("blocks", torch::nn::ModuleList());
    for (char kind : pattern_) {
      blocks_.push_back(make_block(kind, s));
      list->push_back(blocks_.back());
    }
    finish(s.vocab, s.d_model,
           s.tie_embeddings ? induct::blocks::Head::kTied : induct::blocks::Head::kLinear);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    auto x = embed(tokens);
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const std::string point =
          std::string(induct::blocks::kind_name(pattern_[i])) + "." + std::to_string(i);
      x = hooks(point, run_block(pattern_[i], *blocks_[i], x, hooks, point));
    }
    return head(x);
  }

 private:
  std::string pattern_;
  std::vector<std::shared_ptr<torch::nn::Module>> blocks_;
};

std::unique_ptr<induct::SequenceModel> make_hybrid(const induct::ModelContext& ctx) {
  const auto pattern = ctx.options.get<std::string>("pattern", "MAMA");
  induct::blocks::check_kinds(ctx.options, "pattern", pattern);
  const Shape s = induct::blocks::read_shape(ctx, pattern, static_cast<int64_t>(pattern.size()));
  return std::make_unique<Hybrid>(s, pattern);
}

void register_components(induct::Registrar& r) {
  r.add_model("hybrid",
              "attention / Mamba / Mamba-2 stack (pattern=MAMA: A attention, M Mamba, 2 Mamba-2; "
              "d_model=256, tie_embeddings=true; sections attention, mamba, mamba2 with their "
              "models' options)",
              make_hybrid);
}

}  // namespace

INDUCT_PLUGIN("hybrid", "1.1.0", register_components)
