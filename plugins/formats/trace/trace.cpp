// A code trace (docs/method.md section 3, "Code trace"): each action is a statement that
// updates a variable, `x = x * a ;`, and the state is revealed only where the trace prints it,
// as in a REPL: `print x` followed by the printed value. The model is scored at each reveal
// (the value after `print x`) and at the final `print x`, whose value is the final state.
//
//   statement k (action a_k):      x = x * a_k ;     6 tokens, no targets
//   reveal after statement k < n:  print x s_k       3 tokens, target s_k at x
//   end:                           print x           2 tokens, target s_n at x
//
// Which statements are revealed: every `every`-th (the default, every: 4), or, with `fraction:
// p`, each statement k with probability p drawn once from `seed` (the same statements in every
// sequence, so a length's token count is fixed and the reveals of a shorter sequence are those
// of a longer one's start).
#include <cmath>
#include <induct/format.hpp>
#include <induct/plugin.hpp>
#include <vector>

namespace {

using induct::kNoTarget;
using induct::Vocabulary;

enum Keyword : int64_t { kX, kAssign, kTimes, kEnd, kPrint, kKeywords };
const char* const kKeywordNames[kKeywords] = {"x", "=", "*", ";", "print"};
constexpr int64_t kStatement = 6, kReveal = 3, kFinal = 2;

uint64_t mix(uint64_t z) {  // SplitMix64's finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Trace final : public induct::Format {
 public:
  Trace(int64_t every, double fraction, uint64_t seed)
      : every_(every), fraction_(fraction), seed_(seed) {
    if (every_ > 0) return;
    // By fraction: the running count of the drawn reveals, once, so that lengths and action
    // positions cost no redraws (the host's longest sequence is 100,000 actions).
    before_.assign(kCounted + 1, 0);
    for (int k = 1; k < kCounted; ++k) before_[k + 1] = before_[k] + revealed(k);
  }

  int64_t extra_tokens() const override { return kKeywords; }
  std::string extra_token_name(int64_t i) const override { return kKeywordNames[i]; }

  int64_t sequence_length(int n) const override {
    return kStatement * n + kReveal * reveals_before(n) + kFinal;
  }
  void encode(const int32_t* actions, const int32_t* states, int n, const Vocabulary& vocab,
              int64_t* tokens, int64_t* targets) const override {
    int64_t at = 0;
    auto put = [&](int64_t token, int64_t target) {
      tokens[at] = token;
      targets[at] = target;
      ++at;
    };
    const auto word = [&](Keyword w) { return vocab.extra_token(w); };
    for (int k = 1; k <= n; ++k) {
      put(word(kX), kNoTarget);
      put(word(kAssign), kNoTarget);
      put(word(kX), kNoTarget);
      put(word(kTimes), kNoTarget);
      put(vocab.action_token(actions[k - 1]), kNoTarget);
      put(word(kEnd), kNoTarget);
      if (k < n && revealed(k)) {
        put(word(kPrint), kNoTarget);
        put(word(kX), vocab.state_token(states[k - 1]));
        put(vocab.state_token(states[k - 1]), kNoTarget);
      }
    }
    put(word(kPrint), kNoTarget);
    put(word(kX), vocab.state_token(states[n - 1]));
  }
  int64_t final_position(int n) const override { return sequence_length(n) - 1; }
  // a_{k+1}: the fifth token of statement k + 1.
  int64_t action_position(int, int k) const override {
    return kStatement * k + 4 + kReveal * reveals_before(k + 1);
  }

 private:
  // Whether statement k (1-based) is followed by a reveal when it is not the last.
  bool revealed(int k) const {
    if (every_ > 0) return k % every_ == 0;
    const uint64_t draw = mix(seed_ ^ mix(static_cast<uint64_t>(k)));
    return static_cast<double>(draw >> 11) * 0x1.0p-53 < fraction_;
  }
  // Reveals among statements 1..n-1.
  int64_t reveals_before(int n) const {
    if (every_ > 0) return (n - 1) / every_;
    if (n <= kCounted) return before_[n];
    int64_t count = before_[kCounted];
    for (int k = kCounted; k < n; ++k) count += revealed(k);
    return count;
  }

  static constexpr int kCounted = 100'000;  // statements whose reveals are counted up front

  int64_t every_;  // 0: by fraction
  double fraction_;
  uint64_t seed_;
  std::vector<int32_t> before_;  // by fraction: before_[n] = reveals among statements 1..n-1
};

std::unique_ptr<induct::Format> make(const induct::FormatContext& ctx) {
  const induct::Options& o = ctx.options;
  if (o.has("fraction")) {
    if (o.has("every")) o.fail("every", "give either every or fraction, not both");
    const double fraction = o.require<double>("fraction");
    if (!(fraction >= 0 && fraction <= 1)) o.fail("fraction", "must be in [0, 1]");
    const auto seed = o.get<unsigned long>("seed", 0);
    return std::make_unique<Trace>(0, fraction, seed);
  }
  if (o.has("seed")) o.fail("seed", "only with fraction (the seed draws which statements print)");
  const auto every = induct::get_in_range(o, "every", 4, 1, 1'000'000);
  return std::make_unique<Trace>(every, 0.0, 0);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_format("code_trace",
                       "code trace: `x = x * a ;` per action, `print x` reveals the state every "
                       "k statements (every: 4) or a seeded fraction (fraction: p, seed) and at "
                       "the end",
                       make);
}

}  // namespace

INDUCT_PLUGIN("trace", "1.0.0", register_components)
