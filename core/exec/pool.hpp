// Running many trials: in worker processes (the default) or in this process (tests, debug).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/protocol.hpp"
#include "exec/signals.hpp"
#include "train/measurement.hpp"
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

struct PoolSettings {
  int workers = 1;
  int threads = 1;       // intra-op threads of each worker
  int blas_threads = 1;  // BLAS threads of each worker
  // With run.device `cuda`: the GPUs the workers are spread over, as CUDA_VISIBLE_DEVICES
  // entries; worker slot k sees only gpus[k % size] (so `cuda` is that GPU in it). Empty: the
  // workers' environment keeps the coordinator's CUDA_VISIBLE_DEVICES.
  std::vector<std::string> gpus;
  std::string worker_executable;  // the induct binary (default: this process's executable)
  // What default_pool_settings lowered to thread_limit() (empty: nothing), for the first line.
  std::string lowered;
  // Stop signals drain the pool and throw Interrupted (false: an MPI rank's relay, which
  // forwards them to rank 0 and cancels what rank 0 says).
  bool drain_on_signal = true;
  // How long a drain waits for the workers to answer the cancel before it stops them.
  long drain_seconds = kDrainSeconds;
};

// Workers per GPU when run.workers is 0 and run.device is cuda or cuda:N. Small trainings
// leave a GPU mostly idle between their kernel launches, so several share one.
inline constexpr int kDefaultWorkersPerGpu = 4;

// The worker count, threads and BLAS threads for `trials` trials on this machine, never more
// workers than trials. On the CPU (`device` cpu): one single-threaded worker per core by
// default and spare cores given to BLAS (docs/performance.md has the measurements behind
// this). With `device` cuda: `configured_workers` (default kDefaultWorkersPerGpu) workers per
// visible GPU, `visible_gpus` of them, spread over the GPUs; with cuda:N that many on GPU N.
PoolSettings default_pool_settings(int configured_workers, int configured_threads,
                                   int configured_blas_threads, size_t trials,
                                   const std::string& device = "cpu", int visible_gpus = 0,
                                   int cores = 0 /* 0: usable_cores() */);

// The CUDA_VISIBLE_DEVICES entries of `count` visible GPUs: the variable's own entries when
// it is set (`cuda_visible_devices` non-null), else 0..count-1.
std::vector<std::string> visible_gpu_ids(const char* cuda_visible_devices, int count);

// Persistent worker processes (`induct __worker`), each running one trial at a time with
// fixed OpenMP and BLAS thread counts. A worker that crashes fails only its own trial.
class WorkerPool final : public TrialRunner {
 public:
  explicit WorkerPool(PoolSettings settings);
  ~WorkerPool() override;
  void run(TrialSource& source) override;
  int parallelism() const override { return settings_.workers; }
  std::string describe() const override {
    return TrialRunner::describe() +
           (settings_.lowered.empty() ? std::string() : "; " + settings_.lowered);
  }

 private:
  struct Worker {
    pid_t pid = -1;
    int slot = -1;  // 0..workers-1, fixed for the process's life: decides its GPU
    int to_worker = -1;
    std::unique_ptr<MessageReader> reader;
    long trial = -1;  // the source's ticket of the running trial, -1 when idle
    uint64_t job = 0;
    bool cancel_sent = false;
  };
  Worker spawn(int slot);
  void stop(Worker& worker);
  std::string exit_description(pid_t pid);

  PoolSettings settings_;
  std::vector<Worker> workers_;
  uint64_t next_job_ = 1;
};

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
