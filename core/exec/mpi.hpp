// Cluster execution over MPI (Open MPI through Boost.MPI; docs/cluster.md). Started as
// `mpirun -np K induct run STUDY.yaml` or `srun induct run STUDY.yaml`: rank 0 is the
// coordinator (reads the study, runs the searches, owns the store, writes the reports); every
// other rank runs the trials rank 0 sends it in its own worker processes (a WorkerPool) and
// relays their progress and results back. Built when CMake finds MPI (INDUCT_HAVE_MPI).
#pragma once

#include <memory>

#include "exec/run_settings.hpp"
#include "exec/runner.hpp"

namespace induct {

// Starts MPI (in a process launcher_tasks() says is one of several); returns this process's
// rank. Throws when MPI does not see the launcher's tasks as one job.
int start_mpi();
// Rank 0: tells every other rank to end (idempotent) and finalises MPI.
void stop_mpi();
// Ranks other than 0: run trials for rank 0 until it says stop; the exit status.
int mpi_rank_main();
// Rank 0's runner over the other ranks (null when MPI is not running with several ranks).
std::unique_ptr<TrialRunner> make_mpi_runner(const RunSettings& run, size_t trials_per_step);

}  // namespace induct
