// The execution layer's one seam: what runs a study's trials, chosen from its run settings.
// core/exec/ owns the runners, the worker processes and their wire protocol; core/train/ the
// training itself (a worker calls run_trial).
#pragma once

#include <memory>

#include "exec/pool.hpp"
#include "exec/run_settings.hpp"

namespace induct {

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
