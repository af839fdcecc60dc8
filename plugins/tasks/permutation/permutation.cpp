// Permutation composition S_m: actions and states are the m! permutations of {0..m-1}, numbered
// in lexicographic order of their one-line notation (0 is the identity, the initial state).
// Convention: taking action a in state s gives a o s, the permutation i -> a(s(i)): the state is
// the product of the actions so far, the latest applied last.
#include <algorithm>
#include <induct/plugin.hpp>
#include <induct/task.hpp>
#include <numeric>
#include <vector>

namespace {

class Permutation final : public induct::Task {
 public:
  explicit Permutation(int m) : m_(m) {
    std::vector<int> p(m);
    std::iota(p.begin(), p.end(), 0);
    do perms_.push_back(p);
    while (std::next_permutation(p.begin(), p.end()));
    factorial_.assign(m + 1, 1);
    for (int i = 1; i <= m; ++i) factorial_[i] = factorial_[i - 1] * i;
  }

  int64_t num_actions() const override { return static_cast<int64_t>(perms_.size()); }
  int64_t num_states() const override { return static_cast<int64_t>(perms_.size()); }
  int64_t initial_state() const override { return 0; }

  int64_t step(int64_t state, int64_t action) const override {
    const auto& s = perms_[state];
    const auto& a = perms_[action];
    int composed[16];
    for (int i = 0; i < m_; ++i) composed[i] = a[s[i]];
    return rank(composed);
  }

  std::string action_name(int64_t action) const override { return one_line(perms_[action]); }
  std::string state_name(int64_t state) const override { return one_line(perms_[state]); }

 private:
  // The lexicographic index of a permutation (its Lehmer code in the factorial base).
  int64_t rank(const int* p) const {
    int64_t r = 0;
    for (int i = 0; i < m_; ++i) {
      int smaller = 0;
      for (int j = i + 1; j < m_; ++j) smaller += p[j] < p[i];
      r += smaller * factorial_[m_ - 1 - i];
    }
    return r;
  }

  static std::string one_line(const std::vector<int>& p) {
    std::string out = "[";
    for (size_t i = 0; i < p.size(); ++i) out += (i ? " " : "") + std::to_string(p[i]);
    return out + "]";
  }

  int m_;
  std::vector<std::vector<int>> perms_;
  std::vector<int64_t> factorial_;
};

std::unique_ptr<induct::Task> make(const induct::TaskContext& ctx) {
  const auto m = ctx.options.require<long>("m");
  if (m < 3 || m > 7) ctx.options.fail("m", "must be between 3 and 7 (S_3 .. S_7)");
  return std::make_unique<Permutation>(static_cast<int>(m));
}

void register_components(induct::Registrar& registrar) {
  registrar.add_task("permutation",
                     "permutation composition S_m, m = 3..7 (actions and states in lexicographic "
                     "order; state' = action o state)",
                     make);
}

}  // namespace

INDUCT_PLUGIN("permutation", "1.0.0", register_components)
