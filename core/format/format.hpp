// Examples in a supervision format: how (actions, states) become model tokens and targets
// (docs/method.md section 3). The formats themselves are plugins (induct/format.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/sequences.hpp"
#include "data/transitions.hpp"
#include "induct/format.hpp"

namespace induct {

// Whether the model writes tokens itself after a prompt (Format::prompt_length): then the
// studies that measure without teacher forcing decode greedily.
inline bool generates_tokens(const Format& format, int n) {
  return format.prompt_length(n) < format.sequence_length(n);
}

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
