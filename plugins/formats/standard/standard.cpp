// The paper's three supervision formats (docs/method.md section 3): Outcome, chain of thought
// (CoT) and aligned chain of thought (ACoT). None has options.
#include <induct/format.hpp>
#include <induct/plugin.hpp>

namespace {

using induct::kNoTarget;
using induct::Vocabulary;

// x_1..x_n; the final state s_n is the target at position n.
class Outcome final : public induct::Format {
 public:
  int64_t sequence_length(int n) const override { return n; }
  void encode(const int32_t* actions, const int32_t* states, int n, const Vocabulary& vocab,
              int64_t* tokens, int64_t* targets) const override {
    for (int k = 0; k < n; ++k) {
      tokens[k] = vocab.action_token(actions[k]);
      targets[k] = kNoTarget;
    }
    targets[n - 1] = vocab.state_token(states[n - 1]);
  }
  int64_t final_position(int n) const override { return n - 1; }
  int64_t action_position(int, int k) const override { return k; }
};

// x_1..x_n; the state s_k is the target at every position k.
class AlignedCoT final : public induct::Format {
 public:
  int64_t sequence_length(int n) const override { return n; }
  void encode(const int32_t* actions, const int32_t* states, int n, const Vocabulary& vocab,
              int64_t* tokens, int64_t* targets) const override {
    for (int k = 0; k < n; ++k) {
      tokens[k] = vocab.action_token(actions[k]);
      targets[k] = vocab.state_token(states[k]);
    }
  }
  int64_t final_position(int n) const override { return n - 1; }
  int64_t action_position(int, int k) const override { return k; }
};

// x_1..x_n SEP s_1..s_{n-1}: after the actions the model writes s_1..s_n, one per position
// from SEP on (teacher forcing in training; greedy decoding from the prompt x_1..x_n SEP where
// a study measures without it).
class CoT final : public induct::Format {
 public:
  int64_t sequence_length(int n) const override { return 2 * int64_t{n}; }
  void encode(const int32_t* actions, const int32_t* states, int n, const Vocabulary& vocab,
              int64_t* tokens, int64_t* targets) const override {
    for (int k = 0; k < n; ++k) {
      tokens[k] = vocab.action_token(actions[k]);
      targets[k] = kNoTarget;
    }
    tokens[n] = vocab.sep();
    for (int k = 1; k < n; ++k) tokens[n + k] = vocab.state_token(states[k - 1]);
    for (int k = 0; k < n; ++k) targets[n + k] = vocab.state_token(states[k]);
  }
  int64_t final_position(int n) const override { return 2 * int64_t{n} - 1; }
  int64_t prompt_length(int n) const override { return int64_t{n} + 1; }
  int64_t action_position(int, int k) const override { return k; }
};

template <class F>
induct::FormatFactory factory() {
  return [](const induct::FormatContext&) { return std::make_unique<F>(); };
}

void register_components(induct::Registrar& registrar) {
  registrar.add_format("outcome", "x_1..x_n; the final state at position n", factory<Outcome>());
  registrar.add_format(
      "cot", "x_1..x_n SEP s_1..s_{n-1}; predicts s_1..s_n after the actions (teacher forcing)",
      factory<CoT>());
  registrar.add_format("acot", "x_1..x_n; state s_k at every position k", factory<AlignedCoT>());
}

}  // namespace

INDUCT_PLUGIN("formats", "1.0.0", register_components)
