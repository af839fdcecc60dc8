#include "exec/runner.hpp"

#include <torch/cuda.h>

#include <cstdlib>

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

}  // namespace induct
