// The Format interface: how a sequence of actions and the states they lead to become the
// tokens a model reads and the targets it is trained on (supervision; docs/method.md
// section 3). Torch-free.
//
// A format plugin says only how one sequence is laid out. The core draws the sequences,
// computes their prefix states, batches, pads and trains; every study reads the final state at
// final_position(n). The host checks a format when it is built (for every n it uses: encode()
// writes exactly sequence_length(n) tokens, each in the vocabulary, and a target at
// final_position(n) that is the final state) and refuses one that disagrees with itself.
#pragma once

#include <cstdint>
#include <string>

#include "induct/export.hpp"
#include "induct/options.hpp"

namespace induct {

// The token numbering every format shares: action tokens, then state tokens, then PAD and SEP,
// then the format's own tokens (Format::extra_tokens(): keywords of a code trace, ...).
struct Vocabulary {
  int64_t actions = 0;
  int64_t states = 0;
  int64_t extras = 0;
  int64_t action_token(int64_t a) const { return a; }
  int64_t state_token(int64_t s) const { return actions + s; }
  int64_t pad() const { return actions + states; }
  int64_t sep() const { return actions + states + 1; }
  int64_t extra_token(int64_t i) const { return actions + states + 2 + i; }
  int64_t size() const { return actions + states + 2 + extras; }
};

// Target of a position that carries no loss (PyTorch's ignore_index convention).
constexpr int64_t kNoTarget = -100;

class INDUCT_SDK_API Format {
 public:
  virtual ~Format();

  // Tokens fed to the model for a sequence of n >= 1 actions. Nondecreasing in n.
  virtual int64_t sequence_length(int n) const = 0;
  // Writes sequence_length(n) tokens and targets (kNoTarget where a position carries no loss)
  // of the actions a_1..a_n (actions[k] = a_{k+1}) and their prefix states
  // (states[k] = s_{k+1}, the state after a_{k+1}; states[n-1] is the final state).
  virtual void encode(const int32_t* actions, const int32_t* states, int n, const Vocabulary& vocab,
                      int64_t* tokens, int64_t* targets) const = 0;
  // The position whose target is the final state s_n: where every study reads the answer.
  virtual int64_t final_position(int n) const = 0;

  // Tokens of the format's own (the vocabulary's extras; default none), and their names for
  // printing (default "extra<i>").
  virtual int64_t extra_tokens() const;
  virtual std::string extra_token_name(int64_t i) const;

  // For a format whose model writes states itself after a prompt (chain of thought): the
  // number of tokens given; the model then writes each next token from its own prediction
  // (greedy decoding, in studies that measure without teacher forcing: lengthgen). Default:
  // sequence_length(n), every token given (teacher forcing is the format itself).
  virtual int64_t prompt_length(int n) const;

  // The position of action a_{k+1}'s token (k = 0..n-1): where the probe study reads the
  // state s_{k+1} and patches an action. Default -1: the format does not say, and the probe
  // study refuses it (docs/sdk-reference.md, "Formats").
  virtual int64_t action_position(int n, int k) const;
};

// What the host gives a format factory.
struct FormatContext {
  // The format's section of the study file (`data: {format: {name: trace, every: 4}}`; a bare
  // `format: outcome` is a section with its name only).
  Options options;
};

}  // namespace induct
