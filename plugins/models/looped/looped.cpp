// looped: one block (`block`: A, M or 2; plugins/models/blocks/composed.hpp) applied `loops`
// times with its weights tied; with `inject: true` the embedding is added before every loop
// after the first (z_1 = f(e), z_{i+1} = f(z_i + e)). Embedding N(0, 0.02), final RMSNorm, head
// tied to the embedding. Hook points loop.0, loop.1, ..., embed, norm.
// The plugin's version continues the hybrid plugin's, which registered `looped` until 1.1.0:
// the same model, so trials stored under model:looped=1.1.0 are reused.
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

class Looped final : public induct::blocks::Stack {
 public:
  Looped(const Shape& s, char kind, int64_t loops, bool inject)
      : Stack(s.vocab, s.d_model), kind_(kind), loops_(loops), inject_(inject) {
    block_ = register_module("block", make_block(kind, s));
    finish(s.vocab, s.d_model,
           s.tie_embeddings ? induct::blocks::Head::kTied : induct::blocks::Head::kLinear);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    const auto e = embed(tokens);
    auto z = e;
    for (int64_t i = 0; i < loops_; ++i) {
      const std::string point = "loop." + std::to_string(i);
      z = hooks(point, run_block(kind_, *block_, i > 0 && inject_ ? z + e : z, hooks, point));
    }
    return head(z);
  }

 private:
  char kind_;
  int64_t loops_;
  bool inject_;
  std::shared_ptr<torch::nn::Module> block_;
};

std::unique_ptr<induct::SequenceModel> make_looped(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  const auto kind = o.get<std::string>("block", "A");
  if (kind.size() != 1) o.fail("block", "must be one letter: A (attention), M (Mamba) or 2");
  induct::blocks::check_kinds(o, "block", kind);
  const auto loops = induct::get_in_range(o, "loops", 4, 1, 256);
  const bool inject = o.get<bool>("inject", false);
  const Shape s = induct::blocks::read_shape(ctx, kind, loops);
  return std::make_unique<Looped>(s, kind[0], loops, inject);
}

void register_components(induct::Registrar& r) {
  r.add_model("looped",
              "one weight-tied block applied `loops` times (block=A|M|2, loops=4, inject=false; "
              "d_model=256 and the block's section as hybrid's)",
              make_looped);
}

}  // namespace

INDUCT_PLUGIN("looped", "1.1.0", register_components)
