// Bounded-depth Dyck-k: k bracket types nested at most `depth` deep. Actions 0..k-1 open a
// bracket of type i, k..2k-1 close type i. The state is the stack of open brackets (every stack
// of at most `depth` brackets is a state: sum_{d=0..depth} k^d of them; the empty stack, state
// 0, is the initial one). Opening is allowed below the maximum depth, closing only the type on
// top: the sequences are the prefix-valid strings, which the core counts and draws without
// drawing any invalid one (Task::allows).
#include <induct/plugin.hpp>
#include <induct/task.hpp>
#include <string>
#include <vector>

namespace {

constexpr long kMaxStates = 1 << 20;
const char* kOpen = "([{<";
const char* kClose = ")]}>";

// A stack of d brackets is state offset[d] + its digits in base k (the top least significant).
class Dyck final : public induct::Task {
 public:
  Dyck(int k, int depth) : k_(k), depth_(depth) {
    offset_.push_back(0);
    int64_t size = 1;
    for (int d = 0; d <= depth; ++d) {
      offset_.push_back(offset_.back() + size);
      size *= k;
    }
    for (int d = 0; d <= depth; ++d)
      for (int64_t s = offset_[d]; s < offset_[d + 1]; ++s) depth_of_.push_back(d);
  }

  int64_t num_actions() const override { return 2 * k_; }
  int64_t num_states() const override { return offset_.back(); }
  int64_t initial_state() const override { return 0; }

  bool allows(int64_t state, int64_t action) const override {
    const int d = depth_of_[state];
    if (action < k_) return d < depth_;
    return d > 0 && top(state) == action - k_;
  }

  int64_t step(int64_t state, int64_t action) const override {
    const int d = depth_of_[state];
    const int64_t digits = state - offset_[d];
    if (action < k_) return offset_[d + 1] + digits * k_ + action;  // push
    return offset_[d - 1] + digits / k_;                            // pop
  }

  std::string action_name(int64_t action) const override {
    const int type = static_cast<int>(action % k_);
    const std::string mark(1, action < k_ ? bracket(kOpen, type) : bracket(kClose, type));
    return k_ <= 4 ? mark : (action < k_ ? "open" : "close") + std::to_string(type);
  }

  // The stack, bottom first: "([" (or "0 1" for k > 4); "-" when empty.
  std::string state_name(int64_t state) const override {
    int d = depth_of_[state];
    if (d == 0) return "-";
    int64_t digits = state - offset_[d];
    std::vector<int> stack(d);
    for (int i = d - 1; i >= 0; --i, digits /= k_) stack[i] = static_cast<int>(digits % k_);
    std::string out;
    for (int i = 0; i < d; ++i)
      out += k_ <= 4 ? std::string(1, kOpen[stack[i]]) : (i ? " " : "") + std::to_string(stack[i]);
    return out;
  }

 private:
  int64_t top(int64_t state) const { return (state - offset_[depth_of_[state]]) % k_; }
  static char bracket(const char* marks, int type) { return marks[type]; }

  int k_, depth_;
  std::vector<int64_t>
      offset_;  // offset_[d]: the first state of depth d (offset_[depth+1]: the count)
  std::vector<int> depth_of_;
};

std::unique_ptr<induct::Task> make(const induct::TaskContext& ctx) {
  const long k = induct::get_in_range(ctx.options, "k", 2, 1, 64);
  const long depth = induct::get_in_range(ctx.options, "depth", 4, 1, 64);
  long states = 0;
  for (long d = 0, size = 1; d <= depth; ++d, size *= k) {
    states += size;
    if (states > kMaxStates)
      ctx.options.fail("depth", "k = " + std::to_string(k) + " and depth " + std::to_string(depth) +
                                    " give more than " + std::to_string(kMaxStates) +
                                    " stacks (states)");
  }
  return std::make_unique<Dyck>(static_cast<int>(k), static_cast<int>(depth));
}

void register_components(induct::Registrar& registrar) {
  registrar.add_task("dyck",
                     "bounded-depth Dyck-k: prefix-valid bracket strings, the state is the stack "
                     "(options: k types, default 2; depth, default 4)",
                     make);
}

}  // namespace

INDUCT_PLUGIN("dyck", "1.0.0", register_components)
