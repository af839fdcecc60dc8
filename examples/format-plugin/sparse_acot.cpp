// A supervision format as a plugin (docs/plugin-guide.md, "Writing a format plugin"): aligned
// chain of thought that reveals only every k-th state. The tokens are Outcome's and ACoT's
// (x_1..x_n); the target at position k is s_k when k is a multiple of `every`, and the final
// state s_n is always a target. every: 1 is ACoT; every >= L is Outcome.
//
//   data: {format: {name: sparse_acot, every: 3}, ...}
#include <induct/format.hpp>
#include <induct/plugin.hpp>

namespace {

class SparseAcot final : public induct::Format {
 public:
  explicit SparseAcot(int64_t every) : every_(every) {}

  int64_t sequence_length(int n) const override { return n; }
  void encode(const int32_t* actions, const int32_t* states, int n, const induct::Vocabulary& vocab,
              int64_t* tokens, int64_t* targets) const override {
    for (int k = 0; k < n; ++k) {
      tokens[k] = vocab.action_token(actions[k]);
      const bool revealed = (k + 1) % every_ == 0 || k == n - 1;
      targets[k] = revealed ? vocab.state_token(states[k]) : induct::kNoTarget;
    }
  }
  int64_t final_position(int n) const override { return n - 1; }
  // Each action's token is at its own position, so the probe study can read this format.
  int64_t action_position(int, int k) const override { return k; }

 private:
  int64_t every_;
};

void register_components(induct::Registrar& registrar) {
  registrar.add_format("sparse_acot", "ACoT revealing every k-th state and the last (every: k)",
                       [](const induct::FormatContext& ctx) {
                         const long every = induct::get_in_range(ctx.options, "every", 2, 1, 1000);
                         return std::make_unique<SparseAcot>(every);
                       });
}

}  // namespace

INDUCT_PLUGIN("sparse_acot", "1.0.0", register_components)
