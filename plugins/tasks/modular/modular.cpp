// Modular addition Z_m: actions and states 0..m-1, step(s, x) = (s + x) mod m.
// m = 2 is parity.
#include <induct/plugin.hpp>
#include <induct/task.hpp>

namespace {

class Modular final : public induct::Task {
 public:
  explicit Modular(int64_t m) : m_(m) {}
  int64_t num_actions() const override { return m_; }
  int64_t num_states() const override { return m_; }
  int64_t initial_state() const override { return 0; }
  int64_t step(int64_t state, int64_t action) const override { return (state + action) % m_; }

 private:
  int64_t m_;
};

std::unique_ptr<induct::Task> make(const induct::TaskContext& ctx) {
  const auto m = ctx.options.require<long>("m");
  if (m < 2) ctx.options.fail("m", "must be at least 2 (Z_1 has a single state: nothing to track)");
  if (m > 1'000'000) ctx.options.fail("m", "must be at most 1000000");
  return std::make_unique<Modular>(m);
}

void register_components(induct::Registrar& registrar) {
  registrar.add_task("modular", "modular addition Z_m (options: m >= 2; m = 2 is parity)", make);
}

}  // namespace

INDUCT_PLUGIN("modular", "1.0.0", register_components)
