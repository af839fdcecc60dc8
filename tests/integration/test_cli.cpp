// The `induct` binary as a user runs it.
#define BOOST_TEST_MODULE cli
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "induct/version.hpp"
#include "store/store.hpp"
#include "study/registry.hpp"
#include "support.hpp"

using namespace induct::test;

namespace {
const std::string kInduct = INDUCT_BINARY;
const std::string kTiny = std::string(INDUCT_SOURCE_DIR) + "/tests/fixtures/studies/tiny.yaml";

// DIR/events.jsonl, one event per line; a line that is not one fails the test. With
// /usr/bin/python3, also read by Python's json module (the format a notebook reads).
std::vector<YAML::Node> events_of(const std::string& dir) {
  std::vector<YAML::Node> events;
  std::ifstream in(dir + "/events.jsonl");
  for (std::string line; std::getline(in, line);) {
    YAML::Node e;
    BOOST_CHECK_NO_THROW(e = YAML::Load(line));
    BOOST_TEST((e.IsMap() && e["event"] && e["time"]), line);
    events.push_back(e);
  }
  if (std::filesystem::exists("/usr/bin/python3")) {
    CommandResult json = run_command(
        "/usr/bin/python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' " + dir +
        "/events.jsonl");
    BOOST_TEST(json.exit_code == 0, json.output);
  }
  return events;
}

size_t count_events(const std::vector<YAML::Node>& events, const std::string& name) {
  return static_cast<size_t>(std::count_if(events.begin(), events.end(), [&](const YAML::Node& e) {
    return e["event"].as<std::string>() == name;
  }));
}

}  // namespace

BOOST_AUTO_TEST_CASE(version_and_help) {
  CommandResult version = run_command(kInduct + " --version");
  BOOST_TEST(version.exit_code == 0);
  BOOST_TEST(version.output.find("plugin API " + std::to_string(INDUCT_PLUGIN_API_VERSION)) !=
                 std::string::npos,
             version.output);
  CommandResult help = run_command(kInduct + " --help");
  BOOST_TEST(help.exit_code == 0);
  BOOST_TEST(help.output.find("validate STUDY.yaml") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(plugins_lists_the_components) {
  CommandResult r = run_command(kInduct + " plugins");
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(r.output.find("model   lstm") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("task    modular") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("format  code_trace") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("format  outcome") != std::string::npos, r.output);
}

BOOST_AUTO_TEST_CASE(misspelt_key_exits_nonzero_naming_key_and_line) {
  std::string dir = temp_dir("misspelt");
  std::string study = read(kTiny);
  study.replace(study.find("max_steps"), 9, "max_step");
  std::ofstream(dir + "/bad.yaml") << study;
  CommandResult r = run_command(kInduct + " run " + dir + "/bad.yaml --out " + dir + "/out");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(
      r.output.find("bad.yaml:13:3: unknown key 'training.max_step' (did you mean 'max_steps'?)") !=
          std::string::npos,
      r.output);
}

BOOST_AUTO_TEST_CASE(unknown_model_lists_the_available_models) {
  CommandResult r = run_command(kInduct + " validate " + kTiny + " --set model.name=transformer");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find("unknown model 'transformer' (available models: ") != std::string::npos,
             r.output);
  BOOST_TEST(lists_the_in_tree_models(listed_after(r.output, "(available models: ")), r.output);
}

// A control character in a name is shown, not sent to the terminal: 'lst\x01m' is visibly not
// the 'lstm' listed beside it.
BOOST_AUTO_TEST_CASE(a_control_character_in_a_name_is_shown_escaped) {
  CommandResult r =
      run_command(kInduct + " validate " + kTiny + " --set \"$(printf 'model.name=lst\\001m')\"");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find("unknown model 'lst\\x01m'") != std::string::npos, r.output);
  BOOST_TEST(r.output.find('\x01') == std::string::npos);
}

BOOST_AUTO_TEST_CASE(missing_study_file_is_an_error) {
  CommandResult r = run_command(kInduct + " run /nonexistent.yaml");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find("/nonexistent.yaml: no such study file") != std::string::npos, r.output);
}

BOOST_AUTO_TEST_CASE(validate_prints_the_cell) {
  CommandResult r = run_command(kInduct + " validate " + kTiny);
  BOOST_TEST(r.exit_code == 0, r.output);
  // Lengths 2..5: 60 sequences, validation 0+1+3+6 = 10, N_max = 50.
  BOOST_TEST(
      r.output.find("60 sequences, validation 10, N_max 50; trains at N = 40") != std::string::npos,
      r.output);
  BOOST_TEST(r.output.find("at most 4 trainings of at most 60 steps") != std::string::npos,
             r.output);
}

// --time trains each cell a few steps and projects its failing step from the measured rate;
// run refuses it (it is validate's).
BOOST_AUTO_TEST_CASE(validate_time_projects_a_failing_step_from_the_measured_rate) {
  CommandResult r = run_command(kInduct + " validate " + kTiny + " --time");
  BOOST_TEST(r.exit_code == 0, r.output);
  const std::string marker = "at N = 40: ";
  const size_t at = r.output.find(marker);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, r.output);
  const double rate = std::stod(r.output.substr(at + marker.size()));
  BOOST_TEST(rate > 1.0, r.output);  // a tiny LSTM trains hundreds of steps a second
  BOOST_TEST(r.output.find("steps/s; a failing step ") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("a failing step is 4 x 60 steps on") != std::string::npos, r.output);
  CommandResult run =
      run_command(kInduct + " run " + kTiny + " --time --out " + temp_dir("cli_time"));
  BOOST_TEST(run.exit_code == 2, run.output);
  BOOST_TEST(run.output.find("--time and --cells are options of validate") != std::string::npos,
             run.output);
}

// --time times each step shape once: cells that differ only in their task's vocabulary share
// one timing, taken at the cell with the largest vocabulary; --cells picks cells by number.
BOOST_AUTO_TEST_CASE(validate_time_times_each_step_shape_once) {
  const std::string dir = temp_dir("cli_shapes");
  std::ofstream(dir + "/shapes.yaml") << R"(study: nstar
task: {name: modular}
model: {name: lstm, hidden: 16}
data: {format: outcome, distribution: fixed}
grid:
  task.m: [5, 7]
  data.L: [6, 8]
training: {learning_rates: [1.0e-3], seeds: [1, 2], max_steps: 60, eval_every: 20}
)";
  const std::string study = dir + "/shapes.yaml";
  CommandResult all = run_command(kInduct + " validate " + study + " --time");
  BOOST_TEST(all.exit_code == 0, all.output);
  BOOST_TEST(all.output.find("2 step shape(s) for 4 cell(s)") != std::string::npos, all.output);
  // Cells 1 and 2 (L = 6, 8 at m = 5) are timed as cells 3 and 4 (m = 7): the same rates.
  auto rate_of = [&](const std::string& output, const std::string& cell) {
    const size_t line = output.find("\n  " + cell + ". ");
    BOOST_REQUIRE_MESSAGE(line != std::string::npos, output);
    const size_t at = output.find(": ", output.find(" at N = ", line));
    return output.substr(at + 2, output.find(" steps/s", at) - at - 2);
  };
  BOOST_TEST(rate_of(all.output, "1") == rate_of(all.output, "3"));
  BOOST_TEST(rate_of(all.output, "2") == rate_of(all.output, "4"));
  BOOST_TEST(all.output.find("steps/s (timed at cell 3)") != std::string::npos, all.output);
  BOOST_TEST(all.output.find("steps/s (timed at cell 4)") != std::string::npos, all.output);
  BOOST_TEST(all.output.find("all 4 cell(s): one failing step each") != std::string::npos);
  BOOST_TEST(all.output.find("timed again at the end") != std::string::npos, all.output);
  BOOST_TEST(all.output.find("machine load while timing: load average") != std::string::npos);

  CommandResult some = run_command(kInduct + " validate " + study + " --time --cells 1,2-2");
  BOOST_TEST(some.exit_code == 0, some.output);
  BOOST_TEST(some.output.find("2 step shape(s) for 2 cell(s)") != std::string::npos, some.output);
  BOOST_TEST(some.output.find("timed at cell") == std::string::npos, some.output);
  BOOST_TEST(some.output.find("outcome fixed L=6 at N = 640") != std::string::npos, some.output);
  BOOST_TEST(some.output.find("(m=7) lstm(hidden=16,layers=1) outcome fixed L=6 at N") ==
                 std::string::npos,
             some.output);

  for (const auto& [cells, message] : std::map<std::string, std::string>{
           {"5", "--cells: cell 5 does not exist (the study has 4)"},
           {"3-1", "--cells: the range '3-1' runs backwards"},
           {"x", "--cells: 'x' is not a cell number or a range a-b"},
           {"0", "--cells: cell 0 does not exist (the study has 4)"}}) {
    CommandResult bad = run_command(kInduct + " validate " + study + " --time --cells " + cells);
    BOOST_TEST(bad.exit_code == 2, bad.output);
    BOOST_TEST(bad.output.find(message) != std::string::npos, bad.output);
  }
  CommandResult alone = run_command(kInduct + " validate " + study + " --cells 1");
  BOOST_TEST(alone.exit_code == 2, alone.output);
  BOOST_TEST(alone.output.find("--cells needs --time") != std::string::npos, alone.output);
}

namespace {
// Commands as a user who cannot write a folder: as root (who can write anything), `nobody`
// through su; otherwise this user. "" when neither can run the binary.
std::string as_restricted_user(const std::string& command) {
  if (::geteuid() != 0) return command;
  if (run_command("su nobody -s /bin/sh -c 'test -x " + kInduct + "'").exit_code != 0) return "";
  return "su nobody -s /bin/sh -c '" + command + "'";
}
}  // namespace

// A store in a folder the user cannot write is refused naming the folder as read-only and what
// to do, not with SQLite's "attempt to write a readonly database".
BOOST_AUTO_TEST_CASE(a_read_only_folder_is_named_as_such,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       boost::test_tools::assertion_result ok(!as_restricted_user("true").empty());
                       ok.message() << "no user without write access can run " << kInduct;
                       return ok;
                     })) {
  const std::string dir = temp_dir("read-only");
  CommandResult made = run_command(kInduct + " run " + kTiny + " --out " + dir + "/out");
  BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.output);
  run_command("chmod -R a+rX '" + dir + "' && chmod a-w '" + dir + "/out'");
  CommandResult r = run_command(as_restricted_user(kInduct + " report " + dir + "/out"));
  BOOST_TEST(r.exit_code == 1, r.output);
  BOOST_TEST(r.output.find("cannot open the results store: the folder " + dir +
                           "/out is read-only for this user") != std::string::npos,
             r.output);
  run_command("chmod -R u+w '" + dir + "'");
}

BOOST_AUTO_TEST_CASE(run_writes_results_and_resumes_without_retraining) {
  std::string dir = temp_dir("run");
  CommandResult first = run_command(kInduct + " run " + kTiny + " --out " + dir);
  BOOST_TEST(first.exit_code == 0, first.output);
  BOOST_TEST(first.output.find("1 cell(s), 2 worker(s)") != std::string::npos, first.output);
  BOOST_TEST(first.output.find("N=40: 0 stored, 4 trained") != std::string::npos, first.output);
  std::string csv = read(dir + "/train.csv");
  BOOST_TEST(std::count(csv.begin(), csv.end(), '\n') == 5, csv);
  BOOST_TEST(csv.find("N,lr,seed,status,steps") == 0u, csv);
  std::string config = read(dir + "/config.yaml");
  BOOST_TEST(config.find("epsilon: 0.0001") != std::string::npos, config);  // defaults resolved
  CommandResult count =
      run_command("sqlite3 " + dir + "/results.sqlite 'SELECT count(*) FROM trials'");
  if (count.exit_code == 0) BOOST_TEST(count.output == "4\n");

  CommandResult second = run_command(kInduct + " run " + kTiny + " --out " + dir);
  BOOST_TEST(second.exit_code == 0, second.output);
  BOOST_TEST(second.output.find("N=40: 4 stored, 0 trained") != std::string::npos, second.output);
  BOOST_TEST(read(dir + "/train.csv") == csv);  // same table, nothing retrained
  // A train study has a report too, and `induct report` redraws it from the store.
  BOOST_TEST(read(dir + "/report.md").find("[Every training in the store](trials.md)") !=
             std::string::npos);
  std::filesystem::remove(dir + "/trials.csv");
  CommandResult report = run_command(kInduct + " report " + dir);
  BOOST_TEST(report.exit_code == 0, report.output);
  BOOST_TEST(report.output.find("report: " + dir + "/report.md") == 0u, report.output);
  std::string trials = read(dir + "/trials.csv");
  BOOST_TEST(std::count(trials.begin(), trials.end(), '\n') == 5, trials);
  BOOST_TEST(trials.find("study,cell,N,lr,seed,status") == 0u, trials);

  // The events of both runs: the first trained 4 trials (each started, evaluated every 20 of
  // its steps, ended and recorded), the second none; each run started and ended.
  const std::vector<YAML::Node> events = events_of(dir);
  BOOST_TEST(count_events(events, "run_started") == 2u);
  BOOST_TEST(count_events(events, "run_ended") == 2u);
  BOOST_TEST(count_events(events, "trial_started") == 4u);
  BOOST_TEST(count_events(events, "trial_ended") == 4u);
  BOOST_TEST(events.front()["event"].as<std::string>() == "run_started");
  BOOST_TEST(events.front()["schema"].as<int>() == 1);
  BOOST_TEST(events.back()["state"].as<std::string>() == "finished");
  std::map<std::string, int64_t> evaluated;  // trial -> evaluations
  for (const auto& e : events)
    if (e["event"].as<std::string>() == "evaluation") ++evaluated[e["trial"].as<std::string>()];
  for (const auto& e : events) {
    if (e["event"].as<std::string>() != "trial_ended") continue;
    BOOST_TEST(e["recorded"].as<bool>());
    BOOST_TEST(evaluated[e["trial"].as<std::string>()] == e["steps"].as<int64_t>() / 20,
               e["trial"].as<std::string>());
  }
  // `induct status --follow` on the finished run: the second run's events, then it returns.
  CommandResult follow = run_command(kInduct + " status " + dir + " --follow");
  BOOST_TEST(follow.exit_code == 0, follow.output);
  BOOST_TEST(follow.output.find("run started: train study 'tiny'") != std::string::npos,
             follow.output);
  BOOST_TEST(follow.output.find("run ended: finished") != std::string::npos, follow.output);
  BOOST_TEST(follow.output.find("trial 0 started") == std::string::npos, follow.output);
}

// A study in shards (`--shard I/N`, each into its own folder) merged with `induct merge` gives
// the N* table of one run; a folder whose trial has another result is refused by name, and
// nothing of it is merged.
BOOST_AUTO_TEST_CASE(shards_merge_to_the_table_of_one_run) {
  const std::string study =
      std::string(INDUCT_SOURCE_DIR) + "/tests/fixtures/studies/tiny_grid.yaml";
  const std::string dir = temp_dir("shards");
  BOOST_REQUIRE(run_command(kInduct + " run " + study + " --out " + dir + "/all").exit_code == 0);
  for (const char* shard : {"0", "1"}) {
    CommandResult part = run_command(kInduct + " run " + study + " --shard " + shard + "/2 --out " +
                                     dir + "/shard" + shard);
    BOOST_REQUIRE_MESSAGE(part.exit_code == 0, part.output);
    BOOST_TEST(part.output.find(std::string(shard) == "0" ? "2 cell(s)" : "1 cell(s)") !=
                   std::string::npos,
               part.output);
  }
  CommandResult merged =
      run_command(kInduct + " merge " + dir + "/merged " + dir + "/shard0 " + dir + "/shard1");
  BOOST_REQUIRE_MESSAGE(merged.exit_code == 0, merged.output);
  BOOST_TEST(read(dir + "/merged/nstar_table.md") == read(dir + "/all/nstar_table.md"));
  BOOST_TEST(merged.output.find("2 outcome(s) added") != std::string::npos, merged.output);
  // Merging a shard again adds nothing.
  CommandResult again = run_command(kInduct + " merge " + dir + "/merged " + dir + "/shard0");
  BOOST_TEST(again.output.find("0 trial(s) added") != std::string::npos, again.output);
  // A copy of shard 1 with one result changed: refused, naming both folders.
  run_command("cp -r " + dir + "/shard1 " + dir + "/bad && rm -f " + dir + "/bad/run.lock");
  CommandResult edit = run_command("sqlite3 " + dir + "/bad/results.sqlite \"UPDATE trials SET " +
                                   "result = replace(result, 'best_loss: ', 'best_loss: 1') " +
                                   "WHERE rowid = (SELECT min(rowid) FROM trials WHERE status " +
                                   "IN ('succeeded', 'failed'))\"");
  if (edit.exit_code != 0) return;  // no sqlite3 command here
  CommandResult refused = run_command(kInduct + " merge " + dir + "/merged " + dir + "/bad");
  BOOST_TEST(refused.exit_code != 0, refused.output);
  BOOST_TEST(refused.output.find("has different results in " + dir + "/merged and " + dir +
                                 "/bad: ") != std::string::npos,
             refused.output);
  CommandResult bad_shard = run_command(kInduct + " run " + study + " --shard 2/2");
  BOOST_TEST(bad_shard.output.find("--shard: '2/2': I must be in 0..N-1") != std::string::npos,
             bad_shard.output);
}

// `induct report DIR` takes report.min_accuracy from the run's config.yaml unless told
// otherwise, and a config.yaml it cannot read is an error naming it, not a default.
BOOST_AUTO_TEST_CASE(report_reads_the_runs_min_accuracy_and_names_a_bad_config) {
  std::string dir = temp_dir("report_config");
  CommandResult first = run_command(kInduct + " run " + kTiny + " --out " + dir);
  BOOST_REQUIRE(first.exit_code == 0);
  const std::string config = read(dir + "/config.yaml");
  std::ofstream(dir + "/config.yaml") << config << "report:\n  min_accuracy: 2\n";
  CommandResult bad = run_command(kInduct + " report " + dir);
  BOOST_TEST(bad.exit_code != 0, bad.output);
  BOOST_TEST(bad.output.find(dir + "/config.yaml: report.min_accuracy: must be in [0, 1]") !=
                 std::string::npos,
             bad.output);
  // An explicit --min-accuracy is used as given.
  BOOST_TEST(run_command(kInduct + " report " + dir + " --min-accuracy 0").exit_code == 0);
  // Without --reference, the run's own published values (report.reference, as config.yaml
  // records it: an absolute path).
  std::ofstream(dir + "/published.csv") << "task,model,format,distribution,L,metric,value\n"
                                           "modular,lstm,acot,uniform,5,nstar,12\n";
  std::ofstream(dir + "/config.yaml")
      << config << "report:\n  reference: " << dir << "/published.csv\n";
  CommandResult kept = run_command(kInduct + " report " + dir);
  BOOST_TEST(kept.exit_code == 0, kept.output);
  BOOST_TEST(kept.output.find("reference: 1 of 1 published value(s) in " + dir +
                              "/published.csv match no cell") != std::string::npos,
             kept.output);
  BOOST_TEST(std::filesystem::exists(dir + "/reference_comparison.md"));
  std::ofstream(dir + "/config.yaml") << config << "report: [\n";
  CommandResult broken = run_command(kInduct + " report " + dir);
  BOOST_TEST(broken.exit_code != 0, broken.output);
  BOOST_TEST(
      broken.output.find(dir + "/config.yaml: report.min_accuracy: yaml-cpp") != std::string::npos,
      broken.output);
}

// The default worker count follows the cores the process may use (taskset, Slurm's binding),
// not every core of the machine.
BOOST_AUTO_TEST_CASE(default_workers_follow_the_cpu_affinity) {
  std::string dir = temp_dir("affinity");
  CommandResult r = run_command("taskset -c 0 " + kInduct + " run " + kTiny +
                                " --set run.workers=0 --out " + dir);
  BOOST_TEST(r.exit_code == 0, r.output);
  BOOST_TEST(r.output.find("1 cell(s), 1 worker(s)") != std::string::npos, r.output);
}

// Started as one of several tasks (srun without an MPI plugin, or a build without MPI), each
// copy would run the whole study into one folder: refused before anything runs.
BOOST_AUTO_TEST_CASE(several_tasks_that_are_not_one_mpi_job_are_refused) {
  const std::string dir = temp_dir("tasks") + "/out";
  CommandResult r =
      run_command("SLURM_STEP_NUM_TASKS=3 " + kInduct + " run " + kTiny + " --out " + dir);
  BOOST_TEST(r.exit_code != 0, r.output);
  const bool named = r.output.find("one of 3 tasks") != std::string::npos ||  // no MPI in the build
                     r.output.find("started 3 tasks") != std::string::npos;   // MPI sees one task
  BOOST_TEST(named, r.output);
  BOOST_TEST(!std::filesystem::exists(dir));
}

// A study killed mid-way (SIGKILL, no chance to clean up) and run again completes with the
// same table as an uninterrupted run, and trials finished before the kill are not retrained.
BOOST_AUTO_TEST_CASE(killed_study_resumes_without_retraining) {
  const std::string study =
      std::string(INDUCT_SOURCE_DIR) + "/tests/fixtures/studies/tiny_nstar.yaml";
  const std::string clean = temp_dir("resume-clean"), killed = temp_dir("resume-killed");
  CommandResult reference = run_command(kInduct + " run " + study + " --out " + clean);
  BOOST_REQUIRE_MESSAGE(reference.exit_code == 0, reference.output);

  run_command(kInduct + " run " + study + " --out " + killed + " > " + killed +
              "/log 2>&1 & echo $! > " + killed + "/pid");
  const std::string pid = read(killed + "/pid");
  size_t stored = 0;
  for (int i = 0; i < 600 && stored < 3; ++i) {
    ::usleep(20'000);
    if (std::ifstream(killed + "/results.sqlite").good()) {
      try {
        induct::Store store(killed + "/results.sqlite", induct::study_outcome_tables());
        stored = store.all().size();
      } catch (const std::exception&) {
      }
    }
  }
  BOOST_REQUIRE_MESSAGE(stored >= 3, "the study stored no trials in time");
  run_command("kill -9 " + pid);
  ::usleep(200'000);
  std::map<std::string, std::string> before;  // key -> created + result, finished trials only
  {
    induct::Store store(killed + "/results.sqlite", induct::study_outcome_tables());
    for (const auto& t : store.all())
      if (t.result.finished()) before[t.key] = t.created + YAML::Dump(t.result.to_yaml());
  }
  BOOST_TEST(!before.empty());
  BOOST_TEST(!std::ifstream(killed + "/tiny_nstar.md").good());       // it did not finish
  CommandResult status = run_command(kInduct + " status " + killed);  // from the status file
  BOOST_TEST(status.output.find("state: running") != std::string::npos, status.output);
  BOOST_TEST(status.output.find("its process is gone") != std::string::npos, status.output);
  // Its events up to the kill are whole lines; no run_ended, and following them says so.
  const std::vector<YAML::Node> killed_events = events_of(killed);
  BOOST_TEST(count_events(killed_events, "run_ended") == 0u);
  BOOST_TEST(count_events(killed_events, "trial_ended") >= 3u);
  CommandResult follow = run_command(kInduct + " status " + killed + " --follow");
  BOOST_TEST(follow.output.find("the run's process is gone") != std::string::npos, follow.output);

  CommandResult resumed = run_command(kInduct + " run " + study + " --out " + killed);
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
  BOOST_TEST(read(killed + "/tiny_nstar.md") == read(clean + "/tiny_nstar.md"));
  induct::Store store(killed + "/results.sqlite", induct::study_outcome_tables());
  size_t unchanged = 0;
  for (const auto& t : store.all()) {
    auto found = before.find(t.key);
    if (found == before.end()) continue;
    unchanged += found->second == t.created + YAML::Dump(t.result.to_yaml());
  }
  BOOST_TEST(unchanged == before.size());
}

// SIGTERM (Slurm's walltime, `kill`, `timeout`) drains a study: no new trials, those in flight
// cancelled and recorded as such, a last line saying what is stored, exit 128 + 15, no worker left;
// the same command then resumes to the table of an uninterrupted run without retraining.
BOOST_AUTO_TEST_CASE(a_terminated_study_drains_and_resumes) {
  const std::string study =
      std::string(INDUCT_SOURCE_DIR) + "/tests/fixtures/studies/tiny_nstar.yaml";
  const std::string clean = temp_dir("drain-clean"), dir = temp_dir("drain");
  CommandResult reference = run_command(kInduct + " run " + study + " --out " + clean);
  BOOST_REQUIRE_MESSAGE(reference.exit_code == 0, reference.output);

  run_command("(" + kInduct + " run " + study + " --out " + dir + " > " + dir +
              "/log 2>&1 & echo $! > " + dir + "/pid; wait $!; echo $? > " + dir +
              "/rc) > /dev/null 2>&1 &");
  std::string pid;
  for (int i = 0; i < 500 && pid.empty(); ++i, ::usleep(10'000)) pid = read(dir + "/pid");
  size_t stored = 0;
  for (int i = 0; i < 600 && stored < 2; ++i) {
    ::usleep(20'000);
    if (std::ifstream(dir + "/results.sqlite").good()) {
      try {
        stored =
            induct::Store(dir + "/results.sqlite", induct::study_outcome_tables()).all().size();
      } catch (const std::exception&) {
      }
    }
  }
  BOOST_REQUIRE_MESSAGE(stored >= 2, "the study stored no trials in time");
  const std::string workers = run_command("pgrep -P " + pid).output;  // its worker processes
  BOOST_TEST(!workers.empty());
  // Twice at once, as `timeout` delivers it (to the command, then to its process group): one
  // stop, not a second signal's stop at once.
  pid.erase(pid.find_last_not_of(" \n") + 1);
  run_command("kill -TERM " + pid + "; kill -TERM " + pid);
  std::string rc;
  for (int i = 0; i < 3000 && rc.empty(); ++i, ::usleep(10'000)) rc = read(dir + "/rc");
  BOOST_REQUIRE_MESSAGE(!rc.empty(), "the study did not stop within 30 s of SIGTERM");
  BOOST_TEST(rc == "143\n");
  const std::string log = read(dir + "/log");
  const std::string last = log.substr(log.rfind('\n', log.size() - 2) + 1);
  BOOST_TEST(last.find("induct: stopped by SIGTERM after ") == 0u, log);
  BOOST_TEST(last.find("no new trials started") != std::string::npos, last);
  BOOST_TEST(last.find("the same command resumes without retraining them") != std::string::npos,
             last);
  std::istringstream pids(workers);
  for (std::string worker; pids >> worker;)
    BOOST_TEST(run_command("kill -0 " + worker).exit_code != 0,
               "worker " + worker + " outlived the study");

  std::map<std::string, std::string> before;  // key -> created + result, finished trials only
  {
    induct::Store store(dir + "/results.sqlite", induct::study_outcome_tables());
    for (const auto& t : store.all())
      if (t.result.finished()) before[t.key] = t.created + YAML::Dump(t.result.to_yaml());
  }
  BOOST_TEST(last.find(std::to_string(before.size()) + " finished trial(s) stored in") !=
                 std::string::npos,
             last);
  BOOST_TEST(!std::ifstream(dir + "/tiny_nstar.md").good());  // it did not finish
  // ... but the report of what it stored is written, and the last line says where.
  BOOST_TEST(last.find("their report in " + dir + "/report.md") != std::string::npos, last);
  BOOST_TEST(read(dir + "/trials.md").find("Every training in the store") != std::string::npos);
  CommandResult stopped = run_command(kInduct + " status " + dir);
  BOOST_TEST(stopped.exit_code == 0, stopped.output);
  BOOST_TEST(stopped.output.find("state: stopped by SIGTERM") != std::string::npos, stopped.output);
  BOOST_TEST(stopped.output.find("running: 0") != std::string::npos, stopped.output);

  CommandResult resumed = run_command(kInduct + " run " + study + " --out " + dir);
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
  BOOST_TEST(read(dir + "/tiny_nstar.md") == read(clean + "/tiny_nstar.md"));
  CommandResult finished = run_command(kInduct + " status " + dir);
  BOOST_TEST(finished.output.find("state: finished") != std::string::npos, finished.output);
  BOOST_TEST(finished.output.find("outcomes stored: 1\n") != std::string::npos, finished.output);
  // Each run into the folder is in its run log: the command line, overrides, resolved study.
  const std::vector<YAML::Node> runs = YAML::LoadAll(read(dir + "/runs.yaml"));
  BOOST_REQUIRE(runs.size() == 2u);
  for (const YAML::Node& r : runs) {
    BOOST_TEST(r["command"].as<std::string>() == "induct run " + study + " --out " + dir);
    BOOST_TEST(r["overrides"].size() == 0u);
    BOOST_TEST(r["config"]["study"].as<std::string>() == "nstar");
    BOOST_TEST(!r["started"].as<std::string>().empty());
  }
  induct::Store store(dir + "/results.sqlite", induct::study_outcome_tables());
  size_t unchanged = 0;
  for (const auto& t : store.all()) {
    auto found = before.find(t.key);
    if (found != before.end())
      unchanged += found->second == t.created + YAML::Dump(t.result.to_yaml());
  }
  BOOST_TEST(unchanged == before.size());
}

namespace {
// Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN; most containers may not).
bool can_mount_tmpfs() {
  static const bool can = [] {
    if (::geteuid() != 0) return false;
    const std::string dir = temp_dir("mount-probe");
    const bool ok = run_command("mount -t tmpfs -o size=4k tmpfs '" + dir + "'").exit_code == 0;
    if (ok) run_command("umount '" + dir + "'");
    return ok;
  }();
  return can;
}

// Every stored trial's numbers, by key, without the seconds it took.
std::map<std::string, std::string> stored_numbers(const std::string& dir) {
  std::map<std::string, std::string> out;
  induct::Store store(dir + "/results.sqlite", induct::study_outcome_tables());
  for (const auto& t : store.all()) {
    YAML::Node result = t.result.to_yaml();
    result.remove("seconds");
    out[t.key] = YAML::Dump(result);
  }
  return out;
}
}  // namespace

// A full disk where the training states go (a 4 KiB tmpfs mounted on OUT/states, too small for
// any state): every save fails, each training says so once, no partial file is left, no worker
// dies, and the results are those of a run with room (docs/store.md).
BOOST_AUTO_TEST_CASE(a_full_disk_under_the_states_costs_the_states_only,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       return can_mount_tmpfs();
                     })) {
  const std::string full = temp_dir("full-disk"), roomy = temp_dir("roomy-disk");
  BOOST_REQUIRE(run_command("mkdir -p '" + full + "/states' && mount -t tmpfs -o size=4k tmpfs '" +
                            full + "/states'")
                    .exit_code == 0);
  const std::string settings = " --set run.state_every=20 --set run.keep_states=failed";
  CommandResult r = run_command(kInduct + " run " + kTiny + settings + " --out " + full);
  const std::string left = run_command("ls -A '" + full + "/states'").output;
  run_command("umount '" + full + "/states'");
  BOOST_TEST(r.exit_code == 0, r.output);
  BOOST_TEST(r.output.find("terminate called") == std::string::npos, r.output);
  size_t reports = 0;
  for (size_t at = 0;
       (at = r.output.find("could not save the training state", at)) != std::string::npos; ++at)
    ++reports;
  BOOST_TEST(reports >= 1u, r.output);
  BOOST_TEST(reports <= 4u, r.output);  // once per training at most: 2 rates x 2 seeds
  BOOST_TEST(r.output.find("cannot write it (disk full, or not writable)") != std::string::npos,
             r.output);
  BOOST_TEST(left.find("partial") == std::string::npos, left);
  CommandResult with_room = run_command(kInduct + " run " + kTiny + settings + " --out " + roomy);
  BOOST_TEST(with_room.exit_code == 0, with_room.output);
  const auto numbers = stored_numbers(full);
  BOOST_TEST(numbers.size() == 4u);
  BOOST_TEST((numbers == stored_numbers(roomy)));
}

BOOST_AUTO_TEST_CASE(plugins_lists_good_plugins_and_each_refusal) {
  CommandResult r =
      run_command(kInduct + " --plugin-path " + INDUCT_FIXTURE_PLUGIN_DIR + " plugins");
  BOOST_TEST(r.exit_code == 1);  // the good ones are listed, and the refusals are an error
  BOOST_TEST(r.output.find("model   lstm") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("model   exploding") != std::string::npos, r.output);
  const std::string newer =
      "built for plugin API version " + std::to_string(INDUCT_PLUGIN_API_VERSION + 1);
  for (const char* refusal :
       {"not an induct plugin", "built for plugin API version 0", newer.c_str(), "bytes, expected",
        "built against libtorch 1.12", "built with another C++ ABI", "registration threw",
        "is registered by both", "libfixture_truncated.so: cannot load the library: truncated"})
    BOOST_TEST(r.output.find(refusal) != std::string::npos, refusal);
}

BOOST_AUTO_TEST_CASE(a_model_with_the_wrong_output_shape_stops_before_training) {
  std::string dir = temp_dir("shape");
  CommandResult r = run_command(kInduct + " --plugin-path " + INDUCT_FIXTURE_PLUGIN_DIR + " run " +
                                kTiny + " --set 'model={name: wrong_shape}' --out " + dir);
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find("forward returned logits of shape [2, 5, 5], expected [2, 5, 6]") !=
                 std::string::npos,
             r.output);
  BOOST_TEST(!std::ifstream(dir + "/results.sqlite").good());  // nothing ran
}

BOOST_AUTO_TEST_CASE(a_format_that_disagrees_with_itself_is_refused_before_training) {
  for (const auto& [name, problem] : std::vector<std::pair<std::string, std::string>>{
           {"short_format", "at 1 action, encode left token 1 unwritten"},
           {"misplaced_final", "at 2 actions, the target at final_position 0 is"}}) {
    std::string dir = temp_dir(name);
    CommandResult r = run_command(kInduct + " --plugin-path " + INDUCT_FIXTURE_PLUGIN_DIR +
                                  " run " + kTiny + " --set data.format=" + name + " --out " + dir);
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.output.find("format '" + name + "' (") != std::string::npos, r.output);
    BOOST_TEST(r.output.find(problem) != std::string::npos, r.output);
    BOOST_TEST(!std::ifstream(dir + "/results.sqlite").good());  // nothing ran
  }
}

// A format without action positions trains, and the probe study, which reads the state at each
// action's token, refuses it where it is named.
BOOST_AUTO_TEST_CASE(a_format_without_action_positions_trains_but_is_not_probed) {
  const std::string fixtures = kInduct + " --plugin-path " + INDUCT_FIXTURE_PLUGIN_DIR;
  CommandResult train =
      run_command(fixtures + " validate " + kTiny + " --set data.format=unplaced_acot");
  BOOST_TEST(train.exit_code == 0, train.output);
  CommandResult probe =
      run_command(fixtures + " validate " + kTiny +
                  " --set study=probe --set data.format=unplaced_acot" + " --set data.N=max");
  BOOST_TEST(probe.exit_code == 2);
  BOOST_TEST(probe.output.find("data.format: format 'unplaced_acot' does not say where each "
                               "action's token is") != std::string::npos,
             probe.output);
}

BOOST_AUTO_TEST_CASE(a_model_that_sees_the_future_is_refused_before_training) {
  std::string dir = temp_dir("leaky");
  CommandResult r = run_command(kInduct + " --plugin-path " + INDUCT_FIXTURE_PLUGIN_DIR + " run " +
                                kTiny + " --set 'model={name: leaky}' --out " + dir);
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find("model 'leaky' (") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("not causal: its logits at position 0 change when only the token at "
                           "position 1 changes") != std::string::npos,
             r.output);
  BOOST_TEST(!std::ifstream(dir + "/results.sqlite").good());  // nothing ran
}

// Skipped where the LibTorch has CUDA (a CUDA build on a GPU machine accepts the device).
BOOST_AUTO_TEST_CASE(a_device_this_libtorch_cannot_use_is_refused_up_front,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       return !torch::cuda::is_available();
                     })) {
  CommandResult r = run_command(kInduct + " validate " + kTiny + " --set run.device=cuda");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find("run.device: 'cuda' asked for, but this LibTorch has no CUDA support") !=
                 std::string::npos,
             r.output);
}
