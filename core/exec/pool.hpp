// The worker processes of one machine (`induct __worker`) and how many of them, with what
// threads: the runner of a study run outside MPI (exec/runner.hpp has the seam).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/protocol.hpp"
#include "exec/runner.hpp"
#include "exec/signals.hpp"

namespace induct {

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

}  // namespace induct
