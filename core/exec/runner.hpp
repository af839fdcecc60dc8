// The execution layer's one seam: what runs a study's trials (TrialRunner, fed by a
// TrialSource), chosen from its run settings. core/exec/ owns the runners (pool.hpp: worker
// processes; mpi.hpp: ranks; worker.hpp: the worker's side and the in-process runner) and
// their wire protocol; core/train/ the training itself (a worker calls run_trial).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/run_settings.hpp"
#include "train/trial.hpp"

namespace induct {

// Where a runner gets its work and reports back: trials are handed out one at a time, as
// workers fall idle, so the source can decide what to run next from what has finished (the
// N* searches of many cells share the workers this way). All calls come on the runner's
// calling thread.
class TrialSource {
 public:
  struct Job {
    size_t ticket = 0;                 // the source's name for this trial
    const TrialSpec* trial = nullptr;  // owned by the source; valid until on_done
  };
  virtual ~TrialSource() = default;
  // The trial to start now; nullopt when there is none for now. The runner then waits for a
  // running trial to end, and with none running the run is over.
  virtual std::optional<Job> next() = 0;
  virtual void on_start(size_t /*ticket*/) {}
  virtual void on_progress(size_t /*ticket*/, const EvalPoint& /*point*/, double /*best_loss*/) {}
  // Every started trial ends here exactly once (a cancelled one too). Returns the tickets of
  // running trials to cancel.
  virtual std::vector<size_t> on_done(size_t ticket, const TrialResult& result) = 0;
  // Instead of on_done, for a trial that a stop signal cancelled (or whose worker died while
  // the run drained): a record for the store, not a result of its step.
  virtual void on_abandoned(size_t /*ticket*/, const TrialResult& /*result*/) {}
  // For a source fed from elsewhere (an MPI rank's relay, exec/mpi.cpp): the runner keeps
  // running while open() even with nothing to do, waits at most wait_ms() (-1: until a
  // trial reports) before asking again, and cancels the tickets cancels() returns.
  virtual bool open() const { return false; }
  virtual int wait_ms() const { return -1; }
  virtual std::vector<size_t> cancels() { return {}; }
};

struct RunCallbacks {
  std::function<void(size_t index)> on_start;
  std::function<void(size_t index, const EvalPoint& point, double best_loss)> on_progress;
  // Every trial ends here exactly once (queued trials that were cancelled too, with status
  // cancelled and 0 steps). Returning true cancels every trial still queued or running.
  std::function<bool(size_t index, const TrialResult& result)> on_done;
};

class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  // Runs what the source hands out until it has nothing left and nothing runs. After a stop
  // signal (exec/signals.hpp) it hands out nothing more, cancels the trials in flight, waits
  // for them and throws Interrupted; after a second one it throws at once.
  virtual void run(TrialSource& source) = 0;
  virtual int parallelism() const = 0;
  // Where the trials run, for the first line of `induct run` ("4 worker(s)").
  virtual std::string describe() const { return std::to_string(parallelism()) + " worker(s)"; }
  // Runs a fixed list in order, most promising first (the caller orders them), calling back
  // on the calling thread. Returns when every trial has ended.
  void run_list(const std::vector<TrialSpec>& trials, const RunCallbacks& callbacks);
};

// The GPUs this process sees (0 with a CPU-only LibTorch): what run.device cuda spreads the
// workers over.
int visible_gpus();

// How many tasks the parallel launcher that started this process started (mpirun, srun:
// OMPI_COMM_WORLD_SIZE, PMIX_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS), read from the environment
// before MPI starts; 1 when started alone.
int launcher_tasks();

// The runner of `induct run`: in an MPI job (exec/mpi.hpp) rank 0's runner over the other
// ranks; otherwise worker processes on this machine, sized by default_pool_settings from
// `run` for steps of `trials_per_step` configurations.
std::unique_ptr<TrialRunner> make_runner(const RunSettings& run, size_t trials_per_step);

}  // namespace induct
