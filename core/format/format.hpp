// Supervision formats: how (actions, states) become model tokens and targets
// (SPEC.md section 3).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/sequences.hpp"
#include "data/transitions.hpp"

namespace induct {

// Action tokens, then state tokens, then the specials PAD and SEP.
struct Vocabulary {
  int64_t actions = 0;
  int64_t states = 0;
  int64_t action_token(int64_t a) const { return a; }
  int64_t state_token(int64_t s) const { return actions + s; }
  int64_t pad() const { return actions + states; }
  int64_t sep() const { return actions + states + 1; }
  int64_t size() const { return actions + states + 2; }
};

// Target of a position that carries no loss (PyTorch's ignore_index convention).
constexpr int64_t kNoTarget = -100;

class Format {
 public:
  virtual ~Format() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // Tokens fed to the model for a sequence of n actions.
  virtual int64_t sequence_length(int n) const = 0;
  // Writes sequence_length(n) tokens and targets (kNoTarget where unsupervised).
  // states[k] = s_{k+1}.
  virtual void encode(const int32_t* actions, const int32_t* states, int n,
                      const Vocabulary& vocab, int64_t* tokens, int64_t* targets) const = 0;
  // The position whose target is the final state s_n.
  virtual int64_t final_position(int n) const = 0;
  // Whether the model writes the states itself after the actions (CoT): then the final
  // state is read by greedy decoding when no teacher forcing is wanted.
  virtual bool generates_states() const { return false; }
};

const Format& format_named(const std::string& name);  // throws, listing the names
std::vector<std::string> format_names();

// A data set in one format, stored flat.
struct EncodedSet {
  std::vector<int64_t> tokens;
  std::vector<int64_t> targets;
  std::vector<int64_t> offsets{0};   // example i is [offsets[i], offsets[i+1])
  std::vector<int32_t> lengths;      // n, the number of actions of example i
  std::vector<int32_t> final_state;  // s_n as a state index
  std::vector<int64_t> final_position;  // where s_n is the target, from the example's start

  size_t size() const { return lengths.size(); }
  int64_t width(size_t i) const { return offsets[i + 1] - offsets[i]; }
};

EncodedSet encode_set(const SequenceSet& sequences, const Transitions& transitions,
                      const Format& format, const Vocabulary& vocab);

}  // namespace induct
