// `induct run` as an MPI job (docs/cluster.md): 3 ranks on this machine, rank 0 coordinating.
// Built when the build has MPI; otherwise ctest reports this test as skipped.
#define BOOST_TEST_MODULE mpi
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "store/store.hpp"
#include "study/registry.hpp"
#include "support.hpp"

using namespace induct::test;

namespace {
const std::string kInduct = INDUCT_BINARY;
const std::string kStudy =
    std::string(INDUCT_SOURCE_DIR) + "/tests/fixtures/studies/tiny_nstar.yaml";
const std::string kMpirun =
    std::string(INDUCT_MPIEXEC) + " --allow-run-as-root --oversubscribe -np 3 ";

// The results of the finished trials (not cancelled, no error), by key, without their time.
std::map<std::string, std::string> finished_trials(const std::string& dir,
                                                   bool with_created = false) {
  std::map<std::string, std::string> out;
  induct::Store store(dir + "/results.sqlite", induct::study_outcome_tables());
  for (auto t : store.all()) {
    if (t.result.status == induct::TrialStatus::kCancelled ||
        t.result.status == induct::TrialStatus::kError)
      continue;
    if (!with_created) t.result.seconds = 0;
    out[t.key] = (with_created ? t.created : "") + YAML::Dump(t.result.to_yaml());
  }
  return out;
}

size_t stored_trials(const std::string& dir) {
  if (!std::ifstream(dir + "/results.sqlite").good()) return 0;
  try {
    return induct::Store(dir + "/results.sqlite", induct::study_outcome_tables()).all().size();
  } catch (const std::exception&) {
    return 0;
  }
}

// The pid of MPI rank `rank` of the job writing `dir` (0 when it is not running).
long rank_pid(const std::string& dir, int rank) {
  std::istringstream pids(run_command("pgrep -f -- '--out " + dir + "$'").output);
  for (long pid; pids >> pid;) {
    const std::string env = read("/proc/" + std::to_string(pid) + "/environ");
    if (env.find(std::string(1, '\0') + "OMPI_COMM_WORLD_RANK=" + std::to_string(rank) + '\0') !=
        std::string::npos)
      return pid;
  }
  return 0;
}

// Starts the study on 3 ranks in the background; its exit status goes to dir/rc.
void start_job(const std::string& dir) {
  run_command("(" + kMpirun + kInduct + " run " + kStudy + " --out " + dir + " > " + dir +
              ".log 2>&1; echo $? > " + dir + ".rc) > /dev/null 2>&1 &");
}

// Waits for the job to store `trials` trials; returns the pid of `rank`.
long wait_for_trials(const std::string& dir, size_t trials, int rank) {
  for (int i = 0; i < 1500; ++i, ::usleep(20'000))
    if (stored_trials(dir) >= trials)
      if (long pid = rank_pid(dir, rank)) return pid;
  return 0;
}

std::string wait_for_exit(const std::string& dir) {
  std::string rc;
  for (int i = 0; i < 6000 && rc.empty(); ++i, ::usleep(10'000)) rc = read(dir + ".rc");
  return rc;
}

struct Reference {
  std::string dir = temp_dir("mpi-reference");
  std::string table;
  std::map<std::string, std::string> trials;
  Reference() {
    CommandResult r = run_command(kInduct + " run " + kStudy + " --out " + dir);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    table = read(dir + "/tiny_nstar.md");
    trials = finished_trials(dir);
  }
};

const Reference& reference() {
  static Reference r;
  return r;
}
}  // namespace

// The same study on 3 ranks: the same table, and every trial both runs finished has the same
// result (which trials a success cancels mid-way depends on timing, on one machine as on many).
BOOST_AUTO_TEST_CASE(three_ranks_give_the_single_machine_table_and_trials) {
  const std::string dir = temp_dir("mpi");
  CommandResult r = run_command(kMpirun + kInduct + " run " + kStudy + " --out " + dir);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  BOOST_TEST(r.output.find("1 cell(s), 4 worker(s) on 2 MPI rank(s)") != std::string::npos,
             r.output);
  BOOST_TEST(read(dir + "/tiny_nstar.md") == reference().table);
  size_t common = 0, same = 0;
  for (const auto& [key, result] : finished_trials(dir)) {
    auto found = reference().trials.find(key);
    if (found == reference().trials.end()) continue;
    ++common;
    same += found->second == result;
  }
  BOOST_TEST(common >= 10u);
  BOOST_TEST(same == common);
}

// kill -9 of rank 1 mid-study ends the job (mpirun names the rank); the store is intact, no
// process of the job is left, and the rerun on 3 ranks completes to the same table without
// retraining what was stored.
BOOST_AUTO_TEST_CASE(a_killed_rank_ends_the_job_and_the_rerun_resumes) {
  const std::string dir = temp_dir("mpi-killed");
  start_job(dir);
  const long pid = wait_for_trials(dir, 2, 1);
  BOOST_REQUIRE_MESSAGE(pid > 0, "the job stored no trials in time: " + read(dir + ".log"));
  run_command("kill -9 " + std::to_string(pid));
  const std::string rc = wait_for_exit(dir);
  BOOST_REQUIRE_MESSAGE(!rc.empty(), "the job did not end within 60 s of killing rank 1");
  BOOST_TEST(rc != "0\n");
  BOOST_TEST(read(dir + ".log").find("rank 1") != std::string::npos, read(dir + ".log"));
  BOOST_TEST(run_command("pgrep -f '[i]nduct-test-mpi-killed'").output.empty());
  BOOST_TEST(run_command("sqlite3 " + dir + "/results.sqlite 'PRAGMA integrity_check'").output ==
             "ok\n");
  BOOST_TEST(!std::ifstream(dir + "/tiny_nstar.md").good());  // it did not finish
  const auto before = finished_trials(dir, true);

  CommandResult resumed = run_command(kMpirun + kInduct + " run " + kStudy + " --out " + dir);
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
  BOOST_TEST(read(dir + "/tiny_nstar.md") == reference().table);
  const auto after = finished_trials(dir, true);
  size_t unchanged = 0;
  for (const auto& [key, result] : before) {
    auto found = after.find(key);
    unchanged += found != after.end() && found->second == result;
  }
  BOOST_TEST(unchanged == before.size());
}

// SIGTERM to rank 0 (or to any rank: Slurm's walltime signals them all) drains the study
// across the ranks: the drain's last line, exit 143, no process of the job left, resumable.
BOOST_AUTO_TEST_CASE(sigterm_drains_the_job_across_ranks) {
  for (int rank : {0, 1}) {
    const std::string dir = temp_dir("mpi-term" + std::to_string(rank));
    start_job(dir);
    const long pid = wait_for_trials(dir, 2, rank);
    BOOST_REQUIRE_MESSAGE(pid > 0, "the job stored no trials in time: " + read(dir + ".log"));
    run_command("kill -TERM " + std::to_string(pid));
    const std::string rc = wait_for_exit(dir);
    BOOST_REQUIRE_MESSAGE(!rc.empty(), "the job did not stop within 60 s of SIGTERM");
    BOOST_TEST(rc == "143\n");
    const std::string log = read(dir + ".log");
    const size_t line = log.find("induct: stopped by SIGTERM after ");
    BOOST_REQUIRE_MESSAGE(line != std::string::npos, log);
    const std::string last = log.substr(line, log.find('\n', line) - line);
    BOOST_TEST(last.find("no new trials started") != std::string::npos, last);
    BOOST_TEST(last.find(std::to_string(finished_trials(dir).size()) +
                         " finished trial(s) stored") != std::string::npos,
               last);
    BOOST_TEST(last.find("the same command resumes without retraining them") != std::string::npos,
               last);
    BOOST_TEST(run_command("pgrep -f '[i]nduct-test-mpi-term'").output.empty());
    BOOST_TEST(run_command(kInduct + " status " + dir).output.find("state: stopped by SIGTERM") !=
               std::string::npos);

    CommandResult resumed = run_command(kMpirun + kInduct + " run " + kStudy + " --out " + dir);
    BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
    BOOST_TEST(read(dir + "/tiny_nstar.md") == reference().table);
  }
}
