#include "exec/runner.hpp"

#include <torch/cuda.h>

#include <cstdlib>
#include <set>

#include "exec/pool.hpp"

#ifdef INDUCT_HAVE_MPI
#include "exec/mpi.hpp"
#endif

namespace induct {

int visible_gpus() {
  return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

int launcher_tasks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (const char* value = std::getenv(name))
      if (const int tasks = std::atoi(value); tasks > 0) return tasks;
  return 1;
}

std::unique_ptr<TrialRunner> make_runner(const RunSettings& run, size_t trials_per_step) {
#ifdef INDUCT_HAVE_MPI
  if (auto cluster = make_mpi_runner(run, trials_per_step)) return cluster;
#endif
  return std::make_unique<WorkerPool>(default_pool_settings(
      run.workers, run.threads, run.blas_threads, trials_per_step, run.device, visible_gpus()));
}

void TrialRunner::run_list(const std::vector<TrialSpec>& trials, const RunCallbacks& callbacks) {
  struct InOrder final : TrialSource {
    const std::vector<TrialSpec>& trials;
    const RunCallbacks& callbacks;
    size_t next_index = 0;
    std::set<size_t> running;
    bool cancelling = false;
    InOrder(const std::vector<TrialSpec>& t, const RunCallbacks& c) : trials(t), callbacks(c) {}
    std::optional<Job> next() override {
      if (cancelling || next_index >= trials.size()) return std::nullopt;
      running.insert(next_index);
      const size_t i = next_index++;
      return Job{i, &trials[i]};
    }
    void on_start(size_t i) override {
      if (callbacks.on_start) callbacks.on_start(i);
    }
    void on_progress(size_t i, const EvalPoint& point, double best) override {
      if (callbacks.on_progress) callbacks.on_progress(i, point, best);
    }
    std::vector<size_t> on_done(size_t i, const TrialResult& result) override {
      running.erase(i);
      const bool cancel = callbacks.on_done ? callbacks.on_done(i, result) : false;
      if (!cancel || cancelling) return {};
      cancelling = true;
      for (; next_index < trials.size(); ++next_index)
        if (callbacks.on_done) callbacks.on_done(next_index, TrialResult::cancelled());
      return {running.begin(), running.end()};
    }
  } source(trials, callbacks);
  run(source);
}

}  // namespace induct
