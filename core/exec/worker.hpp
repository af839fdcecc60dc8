// The worker's side of the pool (`induct __worker`), and the runner that runs trials in this
// process instead (tests): both run trials with run_trial (core/exec/worker.cpp).
#pragma once

#include "exec/runner.hpp"
#include "train/measurement.hpp"

namespace induct {

class PluginRegistry;

// Runs trials one after another in this process (tests; `run.workers: 0` is not this), with
// the measurements the study layer's registry hands it.
class InProcessRunner final : public TrialRunner {
 public:
  InProcessRunner(const PluginRegistry& registry, Measurements measurements)
      : registry_(registry), measurements_(std::move(measurements)) {}
  void run(TrialSource& source) override;
  int parallelism() const override { return 1; }

 private:
  const PluginRegistry& registry_;
  Measurements measurements_;
};

// The entry point of `induct __worker`: reads jobs on stdin, writes results on fd 3; takes the
// measurements its trials may name.
int worker_main(int threads, const Measurements& measurements);

}  // namespace induct
