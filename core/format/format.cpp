#include "format/format.hpp"

#include <memory>
#include <stdexcept>

namespace induct {

namespace {

class Outcome final : public Format {
 public:
  std::string name() const override { return "outcome"; }
  std::string description() const override { return "x_1..x_n; the final state at position n"; }
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
};

class AlignedCoT final : public Format {
 public:
  std::string name() const override { return "acot"; }
  std::string description() const override { return "x_1..x_n; state s_k at every position k"; }
  int64_t sequence_length(int n) const override { return n; }
  void encode(const int32_t* actions, const int32_t* states, int n, const Vocabulary& vocab,
              int64_t* tokens, int64_t* targets) const override {
    for (int k = 0; k < n; ++k) {
      tokens[k] = vocab.action_token(actions[k]);
      targets[k] = vocab.state_token(states[k]);
    }
  }
  int64_t final_position(int n) const override { return n - 1; }
};

class CoT final : public Format {
 public:
  std::string name() const override { return "cot"; }
  std::string description() const override {
    return "x_1..x_n SEP s_1..s_{n-1}; predicts s_1..s_n after the actions (teacher forcing)";
  }
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
  bool generates_states() const override { return true; }
};

const std::vector<std::unique_ptr<Format>>& registry() {
  static const auto* all = [] {
    auto* list = new std::vector<std::unique_ptr<Format>>();
    list->push_back(std::make_unique<Outcome>());
    list->push_back(std::make_unique<CoT>());
    list->push_back(std::make_unique<AlignedCoT>());
    return list;
  }();
  return *all;
}

}  // namespace

const Format& format_named(const std::string& name) {
  for (const auto& f : registry())
    if (f->name() == name) return *f;
  std::string known;
  for (const auto& f : registry()) known += (known.empty() ? "" : ", ") + f->name();
  throw std::invalid_argument("unknown format '" + name + "' (known: " + known + ")");
}

std::vector<std::string> format_names() {
  std::vector<std::string> names;
  for (const auto& f : registry()) names.push_back(f->name());
  return names;
}

int32_t ExampleSet::encode(size_t i, int64_t* tokens, int64_t* targets) const {
  thread_local std::vector<int32_t> actions, states;
  const int n = length(i);
  actions.resize(n);
  states.resize(n);
  sequences_.decode(i, actions.data());
  transitions_->prefix_states(actions.data(), n, states.data());
  format_->encode(actions.data(), states.data(), n, vocab_, tokens, targets);
  return states[n - 1];
}

}  // namespace induct
