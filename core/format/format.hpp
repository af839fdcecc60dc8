// Supervision formats: how (actions, states) become model tokens and targets
// (docs/method.md section 3).
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
  virtual void encode(const int32_t* actions, const int32_t* states, int n, const Vocabulary& vocab,
                      int64_t* tokens, int64_t* targets) const = 0;
  // The position whose target is the final state s_n.
  virtual int64_t final_position(int n) const = 0;
  // Whether the model writes the states itself after the actions (CoT): then the final
  // state is read by greedy decoding when no teacher forcing is wanted.
  virtual bool generates_states() const { return false; }
};

const Format& format_named(const std::string& name);  // throws, listing the names
std::vector<std::string> format_names();

// A set of sequences in one format: tokens and targets are encoded when a batch asks for
// them, so a set costs its sequences' codes only (data/sequences.hpp).
class ExampleSet {
 public:
  ExampleSet() = default;
  ExampleSet(SequenceSet sequences, const Transitions& transitions, const Format& format,
             const Vocabulary& vocab)
      : sequences_(std::move(sequences)),
        transitions_(&transitions),
        format_(&format),
        vocab_(vocab) {}

  size_t size() const { return sequences_.size(); }
  int length(size_t i) const { return sequences_.length(i); }  // n, the number of actions
  int64_t width(size_t i) const { return format_->sequence_length(length(i)); }  // tokens
  int64_t final_position(size_t i) const { return format_->final_position(length(i)); }
  const SequenceSet& sequences() const { return sequences_; }
  // Writes width(i) tokens and targets of example i; returns its final state s_n.
  int32_t encode(size_t i, int64_t* tokens, int64_t* targets) const;

 private:
  SequenceSet sequences_;
  const Transitions* transitions_ = nullptr;
  const Format* format_ = nullptr;
  Vocabulary vocab_;
};

}  // namespace induct
