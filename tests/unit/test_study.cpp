// Studies without training: the N* search against known thresholds, the nstar and sharing
// drivers with a fake trainer (kappa arithmetic, first-success cancellation, reuse of stored
// trials), normalization, and the report's number formatting.
#define BOOST_TEST_MODULE study
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "exec/pool.hpp"
#include "exec/signals.hpp"
#include "exec/status.hpp"
#include "exec/worker.hpp"
#include "options_yaml.hpp"
#include "probe/measure.hpp"
#include "report/certificates.hpp"
#include "report/reference.hpp"
#include "report/reports.hpp"
#include "study/nstar/marks.hpp"
#include "study/nstar_search.hpp"
#include "study/prepare.hpp"
#include "study/registry.hpp"
#include "study/sample.hpp"
#include "study/step.hpp"
#include "support.hpp"
#include "train/cell_setup.hpp"
#include "train/generalization.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

using namespace induct;
namespace bdata = boost::unit_test::data;

BOOST_DATA_TEST_CASE(search_finds_the_threshold_within_tolerance,
                     bdata::make(std::vector<uint64_t>{1, 2, 17, 999, 1000, 1001, 5000, 123457,
                                                       15'999'999, 16'000'000}),
                     threshold) {
  SearchSettings settings;  // M = 1000, 20 steps, 2%
  int calls = 0;
  SearchOutcome out = search_nstar(16'000'000, settings, [&](uint64_t n) {
    ++calls;
    return n >= threshold;
  });
  BOOST_TEST(out.learned);
  BOOST_TEST(out.nstar >= threshold);  // N* is a success
  BOOST_TEST(out.nstar - threshold <= std::max<uint64_t>(1, out.nstar / 50), "N* " << out.nstar);
  BOOST_TEST(out.steps.size() <= 20u);
  BOOST_TEST(calls == static_cast<int>(out.steps.size()));
  BOOST_TEST(out.steps.front().n == 16'000'000u);
  std::set<uint64_t> sizes;  // each size tested once (Searches relies on it)
  for (const auto& step : out.steps) sizes.insert(step.n);
  BOOST_TEST(sizes.size() == out.steps.size());
}

BOOST_AUTO_TEST_CASE(search_reports_not_learned_when_n_max_fails) {
  SearchOutcome out = search_nstar(500, {}, [](uint64_t n) { return n > 500; });
  BOOST_TEST(!out.learned);
  BOOST_TEST(out.steps.size() == 1u);
  BOOST_TEST(format_count(out.nstar) == "0");
}

BOOST_AUTO_TEST_CASE(search_follows_the_geometric_then_binary_schedule) {
  SearchOutcome out = search_nstar(16'000'000, {}, [](uint64_t n) { return n >= 5000; });
  // 16M, then /1000 while it succeeds: 16000, 16 (fails); then bisection of [16, 16000].
  BOOST_TEST(out.steps[0].n == 16'000'000u);
  BOOST_TEST(out.steps[1].n == 16'000u);
  BOOST_TEST(out.steps[2].n == 16u);
  BOOST_TEST(!out.steps[2].success);
  BOOST_TEST(out.steps[3].n == 8008u);
}

BOOST_AUTO_TEST_CASE(search_never_goes_below_one_and_respects_the_step_cap) {
  SearchOutcome one = search_nstar(5'000'000, {}, [](uint64_t) { return true; });
  BOOST_TEST(one.nstar == 1u);
  SearchSettings tight;
  tight.max_steps = 4;
  SearchOutcome capped = search_nstar(16'000'000, tight, [](uint64_t n) { return n >= 5000; });
  BOOST_TEST(capped.steps.size() == 4u);
  BOOST_TEST(capped.nstar == 8008u);  // the smallest success so far
}

BOOST_AUTO_TEST_CASE(normalized_accuracy_puts_chance_at_zero) {
  BOOST_TEST(normalized_accuracy(0.5, 2) == 0.0);
  BOOST_TEST(normalized_accuracy(1.0, 5) == 1.0);
  BOOST_TEST(normalized_accuracy(0.2, 5) == 0.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(normalized_accuracy(0.6, 5) == 0.5, boost::test_tools::tolerance(1e-12));
}

// Several configurations' numbers: the mean, and the range where it prints differently.
BOOST_AUTO_TEST_CASE(spreads_print_the_mean_and_the_range) {
  BOOST_TEST(format_spread({0.5}) == "0.50");
  BOOST_TEST(format_spread({0.2, 0.4, 0.9}) == "0.50 (0.20 to 0.90)");
  BOOST_TEST(format_spread({0.501, 0.502}) == "0.50");  // the same to two decimals
  BOOST_TEST(format_spread({-0.2, -0.04}) == "-0.12 (-0.20 to -0.04)");
  BOOST_TEST(format_spread({std::nan(""), 0.3}) == "0.30");  // not measured: left out
  BOOST_TEST(format_spread({}) == "");
  BOOST_TEST(std::isnan(mean_of_finite({std::nan("")})));
}

BOOST_AUTO_TEST_CASE(counts_print_as_in_the_paper) {
  BOOST_TEST(format_count(14) == "14");
  BOOST_TEST(format_count(999) == "999");
  BOOST_TEST(format_count(1000) == "1K");
  BOOST_TEST(format_count(1300) == "1.3K");
  BOOST_TEST(format_count(1700) == "1.7K");
  BOOST_TEST(format_count(15'984) == "16K");
  BOOST_TEST(format_count(250'000) == "250K");
  BOOST_TEST(format_count(999'999) == "1M");
  BOOST_TEST(format_count(2'000'000) == "2M");
  BOOST_TEST(format_count(16'000'000) == "16M");
  BOOST_TEST(kNotLearned == "\u2013");
  BOOST_TEST(format_fraction(0.004) == "0.00");
  BOOST_TEST(format_fraction(-0.001) == "0.00");
  BOOST_TEST(format_fraction(0.996) == "1.00");
}

namespace {

// Succeeds at N >= threshold(cell); every trial is recorded as having run 100 steps (or, when
// cancelled before it started, none).
class FakeRunner final : public TrialRunner {
 public:
  explicit FakeRunner(std::function<uint64_t(const Cell&)> threshold)
      : threshold_(std::move(threshold)) {}
  void run(TrialSource& source) override {
    while (auto job = source.next()) {
      ++trained;
      const TrialSpec& trial = *job->trial;
      // Only one seed can succeed (and comes closest when it fails): the others fail.
      const bool good = trial.seed == good_seed;
      const bool ok = trial.n >= threshold_(trial.cell) && good;
      TrialResult r;
      r.status = ok ? TrialStatus::kSucceeded : TrialStatus::kFailed;
      r.steps = 100;
      r.best_loss = ok ? 1e-5 : good ? 0.3 : 0.5;
      source.on_done(job->ticket, r);
    }
  }
  int parallelism() const override { return 1; }
  size_t trained = 0;
  uint64_t good_seed = 10;

 private:
  std::function<uint64_t(const Cell&)> threshold_;
};

// Two trials at a time, each ending after a fixed number of rounds (so a success can meet a
// running neighbour and cancel it), results as FakeRunner's. Records which cells the trials
// running side by side belong to.
class PairRunner final : public TrialRunner {
 public:
  explicit PairRunner(std::function<uint64_t(const Cell&)> threshold)
      : threshold_(std::move(threshold)) {}
  void run(TrialSource& source) override {
    struct Running {
      TrialSource::Job job;
      int rounds_left;
    };
    std::vector<Running> running;
    std::set<size_t> cancelled;
    for (;;) {
      while (running.size() < 2) {
        auto job = source.next();
        if (!job) break;
        ++trained;
        // As a worker that has saved a training state does.
        std::filesystem::create_directories(job->trial->state_dir);
        std::ofstream(job->trial->state_path()) << "state";
        // Failures take 3 rounds, successes 2: the one beside a success is still running.
        const bool ok = succeeds(*job->trial);
        running.push_back({*job, ok ? 2 : 3});
        source.on_start(job->ticket);
      }
      if (running.empty()) break;
      if (running.size() == 2) {
        pairs.emplace_back(running[0].job.trial->cell.L, running[1].job.trial->cell.L);
        distinct_pairs += running[0].job.trial->cell.L != running[1].job.trial->cell.L;
      }
      for (auto& r : running) --r.rounds_left;
      for (size_t k = 0; k < running.size();) {
        if (running[k].rounds_left > 0 && !cancelled.count(running[k].job.ticket)) {
          ++k;
          continue;
        }
        const TrialSource::Job job = running[k].job;
        running.erase(running.begin() + static_cast<long>(k));
        TrialResult r;
        if (cancelled.count(job.ticket)) {
          r = TrialResult::cancelled();
          r.steps = 10;
        } else {
          r.status = succeeds(*job.trial) ? TrialStatus::kSucceeded : TrialStatus::kFailed;
          r.steps = 100;
          r.best_loss = r.succeeded() ? 1e-5 : 0.5;
        }
        for (size_t t : source.on_done(job.ticket, r)) cancelled.insert(t);
      }
    }
  }
  int parallelism() const override { return 2; }
  size_t trained = 0, distinct_pairs = 0;
  std::vector<std::pair<int, int>> pairs;

 private:
  bool succeeds(const TrialSpec& t) const { return t.n >= threshold_(t.cell) && t.seed == 10; }
  std::function<uint64_t(const Cell&)> threshold_;
};

// A failure detector that cuts slow learners: with training.stall_window set, every trial below
// `judged` sizes is stopped by the detector; without it, trials at N >= `truth` succeed.
class DetectorRunner final : public TrialRunner {
 public:
  DetectorRunner(uint64_t truth, uint64_t judged) : truth_(truth), judged_(judged) {}
  void run(TrialSource& source) override {
    while (auto job = source.next()) {
      const TrialSpec& trial = *job->trial;
      const bool detector = trial.training.stall_window > 0;
      ++(detector ? trained : trained_without);
      // As a worker that kept the state of a training its detector stopped does.
      std::filesystem::create_directories(trial.state_dir);
      std::ofstream(trial.state_path()) << "state";
      TrialResult r;
      const bool ok = trial.n >= (detector ? judged_ : truth_);
      r.status = ok ? TrialStatus::kSucceeded : TrialStatus::kFailed;
      r.stalled = detector && !ok;
      r.stopped_by = r.stalled ? "plateau" : "";
      r.steps = ok ? 100 : detector ? 50 : 1000;
      r.best_loss = ok ? 1e-5 : 0.69;
      source.on_done(job->ticket, r);
    }
  }
  int parallelism() const override { return 1; }
  size_t trained = 0, trained_without = 0;

 private:
  uint64_t truth_, judged_;
};

const char* kSharing = R"(study: sharing
task: {name: modular, m: 5}
model: {name: lstm, hidden: 8}
data: {format: acot}
training: {learning_rates: [1e-3], seeds: [10, 20]}
search: {tolerance: 0}
sharing: {lengths: [2, 3, 4]}
)";

struct Run {
  StudyConfig config;
  std::vector<PreparedCell> cells;
  std::string dir;
  std::unique_ptr<Store> store;
  std::ostringstream out, log;
  Progress progress{log, false};
  explicit Run(const std::string& text, const std::string& name)
      : config(load_study_text(text, "study.yaml")),
        cells(prepare_study(config, test::plugins())),
        dir(test::temp_dir(name)),
        store(std::make_unique<Store>(dir + "/results.sqlite")) {}
  // As `induct run`: the study, then the report.
  int go(TrialRunner& runner) {
    StudyRun run{config, test::plugins(), *store, runner, progress, dir, out};
    const int rc = run_study(run, cells);
    write_reports(*store, dir, study_reports(), &out, nullptr, config.report.min_accuracy);
    return rc;
  }
};

// The values of the stored outcomes of one kind, in the order stored.
std::vector<YAML::Node> outcome_values(const Store& store, const std::string& kind) {
  std::vector<YAML::Node> values;
  for (const auto& o : store.outcomes())
    if (o.kind == kind) values.push_back(o.value);
  return values;
}

// Fixed n needs 4n sequences, Uniform 2..L needs 10.
uint64_t thresholds(const Cell& cell) { return cell.distribution == "fixed" ? 4 * cell.L : 10; }

}  // namespace

BOOST_AUTO_TEST_CASE(sharing_factor_is_the_sum_over_the_joint) {
  Run run(kSharing, "sharing");
  FakeRunner runner(thresholds);
  BOOST_TEST(run.go(runner) == 0);
  // kappa(2) = 8/8, kappa(3) = (8 + 12)/10, kappa(4) = (8 + 12 + 16)/10.
  std::vector<double> expected{1.0, 2.0, 3.6};
  std::vector<double> sums{8, 20, 36};
  size_t found = 0;
  for (const auto& o : run.store->outcomes()) {
    if (o.kind != "sharing") continue;
    ++found;
    BOOST_REQUIRE(o.value["lengths"].size() == 3u);
    for (size_t i = 0; i < 3; ++i) {
      BOOST_TEST(o.value["lengths"][i]["kappa"].as<double>() == expected[i],
                 boost::test_tools::tolerance(1e-12));
      BOOST_TEST(o.value["lengths"][i]["sum_fixed"].as<double>() == sums[i]);
    }
  }
  BOOST_TEST(found == 1u);
  BOOST_TEST(run.out.str().find("3.6") != std::string::npos, run.out.str());
  // The kappa table is written in the paper's layout.
  BOOST_TEST(test::run_command("grep -q 'L=4' " + run.dir + "/kappa_table.md").exit_code == 0);
}

BOOST_AUTO_TEST_CASE(searches_share_the_workers_and_a_success_cancels_its_neighbour) {
  Run run(kSharing, "sharing_pairs");
  PairRunner runner(thresholds);
  BOOST_TEST(run.go(runner) == 0);
  // The same N* as one trial at a time (sharing_factor_is_the_sum_over_the_joint).
  for (const auto& o : run.store->outcomes())
    if (o.kind == "sharing") {
      BOOST_TEST(o.value["lengths"][1]["kappa"].as<double>() == 2.0,
                 boost::test_tools::tolerance(1e-12));
      BOOST_TEST(o.value["lengths"][2]["kappa"].as<double>() == 3.6,
                 boost::test_tools::tolerance(1e-12));
    }
  // Different cells' searches ran side by side; once one search was left, two configurations
  // of its steps ran together and the success cancelled the other.
  BOOST_TEST(runner.distinct_pairs > 0u);
  size_t cancelled = 0;
  for (const auto& t : run.store->all()) {
    cancelled += t.result.status == TrialStatus::kCancelled && t.result.steps == 10;
    // A training cancelled because its step was decided leaves no state; the others keep
    // theirs (a worker removes them as run.keep_states says).
    BOOST_REQUIRE(!t.spec.state_dir.empty());
    BOOST_TEST(std::filesystem::exists(t.spec.state_path()) ==
                   (t.result.status != TrialStatus::kCancelled),
               t.spec.configuration() << " N=" << t.spec.n << " " << to_string(t.result.status));
  }
  BOOST_TEST(cancelled > 0u);
  // Nothing is left to train on a rerun.
  PairRunner again(thresholds);
  BOOST_TEST(run.go(again) == 0);
  BOOST_TEST(again.trained == 0u);
}

BOOST_AUTO_TEST_CASE(a_cell_listed_twice_is_searched_once) {
  const char* text = R"(study: nstar
task: {name: modular, m: 5}
model: {name: lstm, hidden: 8}
data: {format: acot, distribution: fixed}
grid: {data.L: [4, 3, 4]}
training: {learning_rates: [1e-3], seeds: [10, 20]}
search: {tolerance: 0}
)";
  Run twice(text, "nstar_twice");
  FakeRunner runner(thresholds);
  BOOST_TEST(twice.go(runner) == 0);
  const std::string table = twice.out.str();
  Run once(std::string(text).replace(std::string(text).find("[4, 3, 4]"), 9, "[4, 3]"),
           "nstar_once");
  FakeRunner single(thresholds);
  BOOST_TEST(once.go(single) == 0);
  BOOST_TEST(runner.trained == single.trained);
  // Both rows of L = 4 carry its N* (16).
  size_t rows = 0;
  for (size_t at = table.find("L=4"); at != std::string::npos; at = table.find("L=4", at + 1)) {
    const auto end = table.find('\n', at);
    rows += table.substr(at, end - at).find("16") != std::string::npos;
  }
  BOOST_TEST(rows == 2u, table);
}

BOOST_AUTO_TEST_CASE(nstar_reuses_stored_trials_and_outcomes) {
  const std::string text = std::string(R"(study: nstar
task: {name: modular, m: 5}
model: {name: lstm, hidden: 8}
data: {format: acot, distribution: fixed, L: 4}
training: {learning_rates: [1e-3], seeds: [10, 20]}
search: {tolerance: 0}
)");
  Run first(text, "nstar");
  FakeRunner runner([](const Cell&) { return 37; });
  runner.good_seed = 20;
  BOOST_TEST(first.go(runner) == 0);
  bool seen = false;
  for (const auto& o : first.store->outcomes())
    if (o.kind == "nstar") {
      seen = true;
      BOOST_TEST(o.value["nstar"].as<uint64_t>() == 37u);
      BOOST_TEST(o.value["learned"].as<bool>());
      BOOST_TEST(o.value["n_max"].as<uint64_t>() == 500u);
      BOOST_TEST(o.value["steps"].size() == 11u);  // 500, 1, 250, 125, 63, 32, 47, 39, 35, 37, 36
    }
  BOOST_TEST(seen);
  // A success ends its step, and the configuration that came closest runs first: N_max trains
  // seed 10 (fails) then seed 20 (succeeds); from then on each of the 6 other successes trains
  // seed 20 alone, and each of the 4 failing sizes both seeds: 2 + 6 + 8 = 16 trials (22 in
  // the grid's order).
  BOOST_TEST(runner.trained == 16u);
  // Rerun into the same store: nothing is trained again.
  FakeRunner again([](const Cell&) { return 37; });
  StudyRun run{first.config,   test::plugins(), *first.store, again,
               first.progress, first.dir,       first.out};
  BOOST_TEST(run_study(run, first.cells) == 0);
  BOOST_TEST(again.trained == 0u);
}

namespace {
const std::string kCertify = R"(study: nstar
task: {name: modular, m: 5}
model: {name: lstm, hidden: 8}
data: {format: acot, distribution: fixed, L: 4}
training: {learning_rates: [1e-3], seeds: [10, 20], stall_window: 100}
search: {tolerance: 0, certify: true}
)";
StoredOutcome nstar_outcome(const std::vector<StoredOutcome>& outcomes) {
  for (const auto& o : outcomes)
    if (o.kind == "nstar") return o;
  throw std::runtime_error("no nstar outcome");
}
}  // namespace

BOOST_AUTO_TEST_CASE(an_uncertified_nstar_is_an_upper_bound_and_says_so) {
  std::string text = kCertify;
  text.replace(text.find(", certify: true"), 15, "");
  Run run(text, "uncertified");
  DetectorRunner runner(20, 37);
  BOOST_TEST(run.go(runner) == 0);
  const auto o = nstar_outcome(run.store->outcomes());
  BOOST_TEST(o.value["nstar"].as<uint64_t>() == 37u);
  BOOST_TEST(!o.value["certified"].as<bool>());
  BOOST_TEST(runner.trained_without == 0u);
  BOOST_TEST(run.out.str().find("<=37") != std::string::npos, run.out.str());
  BOOST_TEST(run.log.str().find("N* <= 37") != std::string::npos, run.log.str());
  // Without certify the detector's states stay, for a later certified run to go on from.
  BOOST_TEST(!std::filesystem::is_empty(run.dir + "/states"));
  BOOST_TEST(test::run_command("grep -q '<=37' " + run.dir + "/nstar_table.md").exit_code == 0);
  // Not learned at N_max by the detector's verdict.
  Run none(text, "uncertified_none");
  DetectorRunner never(20, 1000);
  BOOST_TEST(none.go(never) == 0);
  BOOST_TEST(none.out.str().find("– (detector)") != std::string::npos, none.out.str());
}

BOOST_AUTO_TEST_CASE(certification_reruns_the_deciding_failures_without_the_detector) {
  Run run(kCertify, "certify");
  DetectorRunner runner(20, 37);
  BOOST_TEST(run.go(runner) == 0);
  const auto o = nstar_outcome(run.store->outcomes());
  // The paper's N* (the detector alone said 37), proven: 19 failed without the detector.
  BOOST_TEST(o.value["nstar"].as<uint64_t>() == 20u);
  BOOST_TEST(o.value["largest_failure"].as<uint64_t>() == 19u);
  BOOST_TEST(o.value["certified"].as<bool>());
  BOOST_REQUIRE(o.value["certification"].size() > 1u);
  const YAML::Node last = o.value["certification"][o.value["certification"].size() - 1];
  BOOST_TEST(last[0].as<uint64_t>() == 19u);
  BOOST_TEST(!last[1].as<bool>());
  BOOST_TEST(run.out.str().find("<=") == std::string::npos, run.out.str());
  // Only the decisive failures ran without the detector, never the whole search.
  BOOST_TEST(runner.trained_without < runner.trained);
  // A certified search removes its trainings' states when it ends.
  BOOST_TEST(std::filesystem::is_empty(run.dir + "/states"));
  // A rerun trains nothing.
  DetectorRunner again(20, 37);
  StudyRun rerun{run.config, test::plugins(), *run.store, again, run.progress, run.dir, run.out};
  BOOST_TEST(run_study(rerun, run.cells) == 0);
  BOOST_TEST(again.trained + again.trained_without == 0u);
  // N_max judged a failure by the detector, learned without it.
  Run all(kCertify, "certify_n_max");
  DetectorRunner late(300, 1000);
  BOOST_TEST(all.go(late) == 0);
  const auto learned = nstar_outcome(all.store->outcomes());
  BOOST_TEST(learned.value["learned"].as<bool>());
  BOOST_TEST(learned.value["nstar"].as<uint64_t>() == 300u);
  BOOST_TEST(learned.value["certified"].as<bool>());
}

namespace {

// Scripted, non-monotone outcomes for the certification property. Whether a configuration
// succeeds at N without the failure detector is a coin per (script, N, lr, seed), likelier at
// larger N but never monotone; with the detector on, a coin per trial stops it early as
// `stalled` (a success too, before it succeeds, as a too-strict detector does). A training the
// detector stopped leaves its state, and the same configuration run without the detector goes
// on from it (resumed_at), as the trainer does.
class ScriptRunner final : public TrialRunner {
 public:
  ScriptRunner(uint64_t script, uint64_t n_max, std::map<std::string, int64_t>& states)
      : script_(script), n_max_(n_max), states_(states) {}
  void run(TrialSource& source) override {
    while (auto job = source.next()) {
      const TrialSpec& t = *job->trial;
      const bool detector = t.training.stall_window > 0;
      const std::string trajectory =
          std::to_string(t.n) + " " + format_number(t.lr, 6) + " " + std::to_string(t.seed);
      const bool truth = coin(trajectory, 0.15 + 0.7 * static_cast<double>(t.n) / n_max_);
      TrialResult r;
      r.best_loss = 0.3;
      if (detector && coin(trajectory + " stop", 0.5)) {
        r.status = TrialStatus::kFailed;
        r.stalled = true;
        r.stopped_by = "stalled";
        r.steps = 30;
        states_[trajectory] = 30;
      } else {
        r.status = truth ? TrialStatus::kSucceeded : TrialStatus::kFailed;
        r.steps = truth ? 60 : 100;
        if (!detector && states_.count(trajectory)) r.resumed_at = states_[trajectory];
        if (truth) r.best_loss = 1e-5;
      }
      ++trained;
      source.on_done(job->ticket, r);
    }
  }
  int parallelism() const override { return 1; }
  size_t trained = 0;

 private:
  bool coin(const std::string& what, double p) const {
    const uint64_t h = std::hash<std::string>{}(std::to_string(script_) + " " + what);
    return static_cast<double>(h % 1'000'000) / 1e6 < p;
  }
  uint64_t script_, n_max_;
  std::map<std::string, int64_t>& states_;
};

}  // namespace

// The property behind search.certify (docs/method.md section 5a): whatever the outcomes over N
// (non-monotone) and wherever the detector stops, a certified search tests the paper's path and
// ends at its N*; an uncertified one is an upper bound, marked so unless nothing it rests on is
// a verdict; each step is counted once in the cost.
BOOST_AUTO_TEST_CASE(certify_always_ends_at_the_paper_nstar) {
  const std::string base = R"(study: nstar
task: {name: modular, m: 2}
model: {name: lstm, hidden: 8}
data: {format: outcome, distribution: fixed, L: 6}
training: {learning_rates: [1e-3, 1e-4], seeds: [10, 20], stall_window: 0}
)";
  // Per first-success cancellation (on, off): the paper's procedure, the detector alone, and
  // the detector with certify.
  std::vector<std::vector<std::unique_ptr<Run>>> variants(2);
  for (int cancel = 0; cancel < 2; ++cancel) {
    const std::string off_text =
        base + "search: {tolerance: 0, cancel_on_success: " + (cancel ? "true" : "false") + "}\n";
    std::string on_text = off_text;
    on_text.replace(on_text.find("stall_window: 0"), 15, "stall_window: 100");
    std::string certify_text = on_text;
    certify_text.replace(certify_text.find("}\n", certify_text.find("search:")), 2,
                         ", certify: true}\n");
    for (const auto& [text, name] :
         {std::pair{off_text, "off"}, {on_text, "on"}, {certify_text, "certify"}})
      variants[cancel].push_back(
          std::make_unique<Run>(text, "prop_" + std::string(name) + std::to_string(cancel)));
  }
  const int cases = 200;
  int overturned = 0, upper_bounds = 0;
  for (int c = 0; c < cases; ++c) {
    std::map<std::string, int64_t> states;
    auto outcome = [&](Run& run) {
      YAML::Node value;
      {
        Store store(run.dir + "/results.sqlite", study_outcome_tables());
        ScriptRunner runner(c, run.cells.at(0).plan.n_max, states);
        StudyRun study{run.config, test::plugins(), store, runner, run.progress, run.dir, run.out};
        BOOST_REQUIRE(run_study(study, run.cells) == 0);
        value = nstar_outcome(store.outcomes()).value;
        if (c % 10 == 0) {  // the cost counts each step once (reading every trial is slow)
          int64_t trained = 0;
          for (const auto& t : store.all()) trained += t.result.trained_steps();
          BOOST_TEST(value["optimisation_steps"].as<int64_t>() == trained, "case " << c);
        }
      }
      test::run_command("rm -rf '" + run.dir + "'/*");
      return value;
    };
    auto& runs = variants[c % 2];
    const YAML::Node off = outcome(*runs[0]);
    const YAML::Node on = outcome(*runs[1]);
    const YAML::Node certified = outcome(*runs[2]);
    const auto nstar = [](const YAML::Node& v) {
      return v["learned"].as<bool>() ? v["nstar"].as<uint64_t>()
                                     : std::numeric_limits<uint64_t>::max();
    };
    // Certified: the paper's N*, on the paper's path, marked proven.
    BOOST_TEST(nstar(certified) == nstar(off), "case " << c);
    BOOST_TEST(YAML::Dump(certified["steps"]) == YAML::Dump(off["steps"]), "case " << c);
    BOOST_TEST(nstar_certified(certified), "case " << c);
    for (const auto& f : certified["failures"])
      BOOST_TEST(f[1].as<std::string>() != "verdict", "case " << c);
    overturned += certified["certification"].size() > 0 &&
                  std::any_of(certified["certification"].begin(), certified["certification"].end(),
                              [](const YAML::Node& r) { return r[1].as<bool>(); });
    // Uncertified: never below the paper's N*; marked proven only when it is the paper's.
    BOOST_TEST(nstar(on) >= nstar(off), "case " << c);
    if (nstar_certified(on)) BOOST_TEST(nstar(on) == nstar(off), "case " << c);
    upper_bounds += nstar(on) > nstar(off);
  }
  // The cases test what they are meant to: certification turned failures into successes, and
  // the detector alone often ended above the paper's N*.
  BOOST_TEST(overturned > cases / 4, overturned);
  BOOST_TEST(upper_bounds > cases / 10, upper_bounds);
}

// lengthgen and probe read a configuration's final weights: they are chosen by the final
// validation loss (a success first), never by a best loss the weights have since left.
BOOST_AUTO_TEST_CASE(the_configuration_read_is_chosen_by_its_final_weights) {
  auto result = [](TrialStatus status, double best, double final_loss) {
    TrialResult r;
    r.status = status;
    r.best_loss = best;
    r.last.loss = final_loss;
    return r;
  };
  StepResult step;
  step.results = {result(TrialStatus::kFailed, 0.0176, 0.69),  // best early, at chance at the end
                  result(TrialStatus::kFailed, 0.10, 0.12),
                  result(TrialStatus::kDiverged, 0.01, std::nan(""))};
  const auto all = [](size_t) { return true; };
  BOOST_TEST(chosen_configuration(step, all) == 1);
  step.results.push_back(result(TrialStatus::kSucceeded, 5e-5, 5e-5));
  step.results.push_back(result(TrialStatus::kCancelled, 0, 0));
  BOOST_TEST(chosen_configuration(step, all) == 3);
  BOOST_TEST(chosen_configuration(step, [](size_t i) { return i != 1 && i != 3; }) == 0);
  // The order several are read in: the success, then by final loss, a diverged one last.
  BOOST_TEST(ranked_configurations(step, all) == (std::vector<size_t>{3, 1, 0, 2}));
}

// `induct status` reads what a run wrote; a damaged file names itself, and a run is running
// only while it holds its folder's lock (its pid may since belong to another process).
BOOST_AUTO_TEST_CASE(status_names_a_damaged_file_and_knows_a_run_by_its_lock) {
  const std::string dir = test::temp_dir("status");
  auto error_of = [&] {
    try {
      describe_status(dir);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  test::run_command("touch '" + dir + "/status.yaml'");
  BOOST_TEST(error_of().find(dir + "/status.yaml: not a readable status file") == 0u, error_of());
  test::run_command("rm '" + dir + "/status.yaml' && mkdir '" + dir + "/status.yaml'");
  BOOST_TEST(error_of().find("is a folder") != std::string::npos, error_of());
  test::run_command("rmdir '" + dir + "/status.yaml'");
  {
    RunLock lock(dir);
    StatusFile status(
        dir, "s", "nstar", 1, 1, [] { return size_t{0}; }, std::cerr);
    // Running, by this process, which holds the lock.
    BOOST_TEST(describe_status(dir).find("process is gone") == std::string::npos);
  }
  // The lock released, the file still says running (a killed run): gone, whatever the pid.
  test::run_command("sed -i 's/^state: .*/state: running/; s/^pid: .*/pid: 1/' '" + dir +
                    "/status.yaml'");
  BOOST_TEST(describe_status(dir).find("process is gone") != std::string::npos,
             describe_status(dir));
  test::run_command("sed -i 's/^elapsed_s: .*/elapsed_s: .inf/' '" + dir + "/status.yaml'");
  BOOST_TEST(error_of().find("elapsed_s is not a finite number") != std::string::npos, error_of());
}

// The event log: each event one whole line; a line cut by a full disk is left for the next read
// while the run lives, then skipped and said; a resumed run's first event starts a line of its
// own; a newer schema is said, not misread.
BOOST_AUTO_TEST_CASE(events_are_whole_lines_and_a_cut_line_is_skipped_and_said) {
  const std::string dir = test::temp_dir("events");
  Run run(R"(study: train
task: {name: modular, m: 2}
model: {name: lstm, hidden: 8}
data: {format: outcome, distribution: uniform, L: 4, N: 10}
)",
          "events_run");
  const TrialSpec trial = make_trial(run.config, run.cells.at(0), 10, 1e-2, 10);
  {
    EventLog log(dir, std::cerr);
    log.run_started("s", "nstar", 1, 1, {"induct", "run", "s.yaml"});
    log.trial_started(7, trial);
    log.evaluated(7, EvalPoint{50, 0.7, 0.69}, 0.69);
  }
  uint64_t offset = 0;
  EventLines read = read_events(dir + "/events.jsonl", offset, false);
  BOOST_REQUIRE_EQUAL(read.lines.size(), 3u);
  BOOST_TEST(
      read.lines[2].find("trial 7 step 50: validation loss 0.69 (best 0.69)") != std::string::npos,
      read.lines[2]);
  BOOST_TEST(!read.ended);
  std::ofstream(dir + "/events.jsonl", std::ios::app) << "{\"event\": \"trial_en";  // cut
  read = read_events(dir + "/events.jsonl", offset, false);
  BOOST_TEST(read.lines.empty());  // the cut line may yet be finished
  const uint64_t before_final = offset;
  read = read_events(dir + "/events.jsonl", offset, true);
  BOOST_REQUIRE_EQUAL(read.lines.size(), 1u);
  BOOST_TEST(read.lines[0].find("its last line is cut (19 bytes), skipped") != std::string::npos,
             read.lines[0]);
  BOOST_TEST(offset == before_final + 19);
  {
    EventLog log(dir, std::cerr);  // a resumed run
    log.run_ended("finished");
  }
  read = read_events(dir + "/events.jsonl", offset, true);
  BOOST_REQUIRE_EQUAL(read.lines.size(), 1u);
  BOOST_TEST(read.lines[0].find("run ended: finished") != std::string::npos, read.lines[0]);
  BOOST_TEST(read.ended);
  std::ofstream(dir + "/events.jsonl", std::ios::app)
      << "{\"event\": \"run_started\", \"time\": \"x\", \"schema\": 99}\n";
  read = read_events(dir + "/events.jsonl", offset, true);
  BOOST_REQUIRE_EQUAL(read.lines.size(), 1u);
  BOOST_TEST(read.lines[0].find("newer schema (99)") != std::string::npos, read.lines[0]);
}

// `induct sample`: a cell's sequences as its trials see them. Parity with Outcome: one scored
// position, the final state, equal to the parity of the actions; with ACoT every action's
// position is scored with the state after it; the training set is the trials' (its size N,
// the same sequences for the same seed, others for another).
BOOST_AUTO_TEST_CASE(sample_shows_the_sequences_a_cell_trains_on) {
  Run run(R"(study: train
task: {name: modular, m: 2}
model: {name: lstm, hidden: 8}
data: {format: outcome, distribution: uniform, L: 5, N: 20}
grid: {data.format: [outcome, acot]}
)",
          "sample");
  SampleOptions options;
  options.count = 50;
  options.seed = 10;
  options.jsonl = true;
  const auto lines_of = [](const std::string& text) {
    std::vector<YAML::Node> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(YAML::Load(line));
    return out;
  };
  const std::vector<YAML::Node> outcome =
      lines_of(sample_cell(run.config, test::plugins(), run.cells.at(0), options));
  BOOST_REQUIRE_EQUAL(outcome.size(), 20u);  // N = 20: the whole training set
  for (const YAML::Node& s : outcome) {
    int parity = 0;
    for (const auto& a : s["actions"]) parity ^= a.as<int>();
    BOOST_TEST(s["final_state"].as<int>() == parity);
    const auto position = s["final_position"].as<size_t>();
    for (size_t p = 0; p < s["targets"].size(); ++p)
      BOOST_TEST(s["targets"][p].IsNull() == (p != position), "position " << p);
    BOOST_TEST(s["targets"][position].as<std::string>() == "=" + std::to_string(parity));
  }
  const std::vector<YAML::Node> acot =
      lines_of(sample_cell(run.config, test::plugins(), run.cells.at(1), options));
  for (const YAML::Node& s : acot)
    for (size_t k = 0; k < s["actions"].size(); ++k)
      BOOST_TEST(s["targets"][k].as<std::string>() == "=" + s["states"][k].as<std::string>());
  // The same seed, the same sequences; another seed, another set.
  BOOST_TEST(sample_cell(run.config, test::plugins(), run.cells.at(0), options) ==
             sample_cell(run.config, test::plugins(), run.cells.at(0), options));
  SampleOptions other = options;
  other.seed = 20;
  BOOST_TEST(sample_cell(run.config, test::plugins(), run.cells.at(0), other) !=
             sample_cell(run.config, test::plugins(), run.cells.at(0), options));
  options.split = SampleOptions::Split::kValidation;
  options.jsonl = false;
  const std::string text = sample_cell(run.config, test::plugins(), run.cells.at(0), options);
  BOOST_TEST(text.find("validation set of ") != std::string::npos, text);
  BOOST_TEST(text.find("* the final state's position") != std::string::npos, text);
}

// Another process holding the store longer than SQLite's own busy wait (10 s) delays a
// write; it never fails it, so a trained result is never dropped.
BOOST_AUTO_TEST_CASE(a_locked_store_is_waited_for_and_the_write_kept) {
  const std::string dir = test::temp_dir("locked_store");
  const std::string file = dir + "/results.sqlite";
  Store store(file, study_outcome_tables());
  sqlite3* other = nullptr;
  BOOST_REQUIRE(sqlite3_open(file.c_str(), &other) == SQLITE_OK);
  BOOST_REQUIRE(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK);
  std::thread holder([&] {
    std::this_thread::sleep_for(std::chrono::seconds(12));
    sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  });
  StoredOutcome outcome;
  outcome.key = "k1";
  outcome.study = "s";
  outcome.kind = "nstar";
  outcome.label = "cell";
  outcome.value["nstar"] = 42;
  const auto start = std::chrono::steady_clock::now();
  std::ostringstream said;
  auto* old = std::cerr.rdbuf(said.rdbuf());
  try {
    store.put_outcome(outcome);
  } catch (...) {
    std::cerr.rdbuf(old);
    holder.join();
    sqlite3_close(other);
    throw;
  }
  std::cerr.rdbuf(old);
  holder.join();
  sqlite3_close(other);
  BOOST_TEST(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > 11);
  auto found = store.find_outcome("k1");
  BOOST_REQUIRE(found.has_value());
  BOOST_TEST(found->value["nstar"].as<int>() == 42);
  BOOST_TEST(said.str().find("store " + file + ": locked by another process for 10 s") == 0u,
             said.str());
  BOOST_TEST(said.str().find("no longer locked") != std::string::npos, said.str());
}

// A cancelled or error record (what a second coordinator, or a rerun stopped early, writes
// for a trial it did not finish) never replaces a finished result of the same trial.
BOOST_AUTO_TEST_CASE(a_cancelled_record_never_replaces_a_finished_result) {
  const std::string dir = test::temp_dir("record_after_result");
  Store store(dir + "/results.sqlite", study_outcome_tables());
  TrialSpec spec;
  spec.cell.task = YAML::Load("{name: modular, m: 2}");
  spec.cell.model = YAML::Load("{name: lstm, hidden: 8}");
  spec.cell.format = "outcome";
  spec.cell.distribution = "fixed";
  spec.cell.L = 3;
  spec.n = 5;
  spec.lr = 1e-3;
  spec.seed = 10;
  TrialResult failed;
  failed.status = TrialStatus::kFailed;
  failed.steps = 250000;
  failed.best_loss = 1.3;
  store.put("s", spec, failed);
  store.put("s", spec, TrialResult::cancelled());
  store.put("s", spec, TrialResult::failure("worker lost"));
  auto found = store.find_finished(spec.key());
  BOOST_REQUIRE(found.has_value());
  BOOST_TEST(found->steps == 250000);
  BOOST_TEST(store.all().size() == 1u);
  // A finished result replaces a record.
  Store other(dir + "/other.sqlite");
  other.put("s", spec, TrialResult::cancelled());
  other.put("s", spec, failed);
  BOOST_TEST(other.find_finished(spec.key())->best_loss == 1.3);
}

// One `induct run` per output folder: a second lock on the folder fails, naming the holder;
// the lock goes with its holder.
BOOST_AUTO_TEST_CASE(a_second_run_into_a_folder_is_refused_while_the_first_holds_it) {
  const std::string dir = test::temp_dir("run_lock");
  {
    RunLock first(dir);
    try {
      RunLock second(dir);
      BOOST_FAIL("a second lock on " + dir);
    } catch (const std::runtime_error& e) {
      const std::string message = e.what();
      BOOST_TEST(
          message.find("another `induct run` (pid " + std::to_string(::getpid()) + " on ") == 0u,
          message);
      BOOST_TEST(message.find("give this one another --out") != std::string::npos, message);
    }
  }
  RunLock again(dir);  // released with the first
}

// A row another program damaged is named (file, table, key, column), not a crash.
BOOST_AUTO_TEST_CASE(a_corrupt_row_names_its_table_key_and_column) {
  const std::string dir = test::temp_dir("corrupt_row");
  const std::string file = dir + "/results.sqlite";
  {
    Store store(file, study_outcome_tables());
    StoredOutcome outcome;
    outcome.key = "k1";
    outcome.study = "s";
    outcome.kind = "nstar";
    outcome.label = "cell";
    outcome.value["nstar"] = 42;
    store.put_outcome(outcome);
  }
  sqlite3* other = nullptr;
  BOOST_REQUIRE(sqlite3_open(file.c_str(), &other) == SQLITE_OK);
  BOOST_REQUIRE(sqlite3_exec(other, "UPDATE outcomes SET value = '{nstar: [' WHERE key = 'k1'",
                             nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(other);
  Store store(file, study_outcome_tables());
  try {
    store.find_outcome("k1");
    BOOST_FAIL("no error");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    BOOST_TEST(
        message.find(file + ": outcomes row k1: column value is not a readable record") == 0u,
        message);
  }
}

// The N* figure compares: every model of a (task, format, distribution) on one plot, a
// model that learned nothing drawn at N_max with its own legend entry, and the ceiling.
BOOST_AUTO_TEST_CASE(the_nstar_figure_puts_every_model_on_one_plot,
                     *boost::unit_test::precondition(test::has_gnuplot)) {
  Run run(R"(study: nstar
task: {name: modular, m: 2}
data: {format: acot, distribution: fixed}
grid:
  model: [{name: lstm, hidden: 8}, {name: gpt2, layers: 1, d_model: 8, heads: 2, d_ff: 8}]
  data.L: [3, 4]
training: {learning_rates: [1e-3], seeds: [10, 20]}
)",
          "nstar_figure");
  FakeRunner runner([](const Cell& cell) {
    return cell.model_name() == "gpt2" ? std::numeric_limits<uint64_t>::max() : 2;
  });
  BOOST_TEST(run.go(runner) == 0);
  std::ifstream in(run.dir + "/figures/nstar_modular_m_2__acot_fixed.dat");
  std::stringstream data;
  data << in.rdbuf();
  // N_max = 2^L minus the validation set (20%, at most 20% per length): 7 and 13.
  // gpt2 (the first model) has its markers a little left of L, lstm would be right: no model hides
  // another.
  BOOST_TEST(data.str() ==
                 "# lstm 8\n3 2\n4 2\n\n\n"
                 "# gpt2 1L d8: not learned (at N_max)\n2.94 7\n3.94 13\n\n\n"
                 "# sequences available (N_max)\n3 7\n4 13\n\n\n",
             data.str());
  std::ifstream script(run.dir + "/figures/nstar_modular_m_2__acot_fixed.gp");
  std::stringstream gp;
  gp << script.rdbuf();
  BOOST_TEST(gp.str().find("set ytics 10") != std::string::npos);  // a label at every decade
  BOOST_TEST(gp.str().find("set xrange [3-0.5:4+0.5]") != std::string::npos);  // the lengths run
  BOOST_TEST(gp.str().find("N* against L: parity (Z_2), acot, fixed") != std::string::npos);
}

// kappa(L) of every model of a (format, task) on one plot, beside each model's own figure.
BOOST_AUTO_TEST_CASE(the_kappa_figure_compares_the_models,
                     *boost::unit_test::precondition(test::has_gnuplot)) {
  std::string text = kSharing;
  text.replace(text.find("model: {name: lstm, hidden: 8}"), 30,
               "grid: {model: [{name: lstm, hidden: 8}, {name: gpt2, layers: 1, d_model: 8, "
               "heads: 2, d_ff: 8}]}");
  Run run(text, "kappa_figure");
  FakeRunner runner(thresholds);
  BOOST_TEST(run.go(runner) == 0);
  std::ifstream in(run.dir + "/figures/kappa_acot_modular_m_5_.dat");
  std::stringstream data;
  data << in.rdbuf();
  // Both models meet the same thresholds here: kappa 1, 2, 3.6 for each.
  BOOST_TEST(data.str() == "# gpt2 1L d8\n2 1\n3 2\n4 3.6\n\n\n# lstm 8\n2 1\n3 2\n4 3.6\n\n\n",
             data.str());
  // ... drawn with their own dash and marks, so that one does not hide the other.
  const std::string gp = test::read(run.dir + "/figures/kappa_acot_modular_m_5_.gp");
  BOOST_TEST(gp.find("dashtype 1") != std::string::npos, gp);
  BOOST_TEST(gp.find("dashtype 2") != std::string::npos, gp);
  // ... and drawn: every figure of the report, the kappa one with its second axis.
  BOOST_TEST(run.out.str().find("was not drawn") == std::string::npos, run.out.str());
  for (const auto& entry : std::filesystem::directory_iterator(run.dir + "/figures"))
    if (entry.path().extension() == ".png")
      BOOST_TEST(std::filesystem::file_size(entry.path()) > 0u, entry.path());
  BOOST_TEST(std::filesystem::file_size(run.dir + "/figures/kappa_acot_modular_m_5_.png") > 0u);
}

BOOST_AUTO_TEST_CASE(gpu_pools_spread_workers_per_visible_gpu) {
  // CPU: never more workers than trials.
  BOOST_TEST(default_pool_settings(8, 1, 1, 3).workers == 3);
  BOOST_TEST(default_pool_settings(8, 1, 1, 3).gpus.empty());
  // cuda: run.workers per visible GPU, spread over them (worker slot k on gpus[k % size]).
  unsetenv("CUDA_VISIBLE_DEVICES");
  PoolSettings two = default_pool_settings(3, 1, 1, 100, "cuda", 2);
  BOOST_TEST(two.workers == 6);
  BOOST_TEST((two.gpus == std::vector<std::string>{"0", "1"}));
  BOOST_TEST(default_pool_settings(0, 1, 1, 100, "cuda", 2).workers == 2 * kDefaultWorkersPerGpu);
  BOOST_TEST(default_pool_settings(0, 1, 1, 5, "cuda", 2).workers == 5);
  // The coordinator's own CUDA_VISIBLE_DEVICES decides which GPUs those are.
  setenv("CUDA_VISIBLE_DEVICES", "3,GPU-5f2a,7", 1);
  BOOST_TEST((default_pool_settings(1, 1, 1, 100, "cuda", 3).gpus ==
              std::vector<std::string>{"3", "GPU-5f2a", "7"}));
  unsetenv("CUDA_VISIBLE_DEVICES");
  // cuda:N: every worker on that GPU, the environment left alone.
  PoolSettings one = default_pool_settings(2, 1, 1, 100, "cuda:1", 2);
  BOOST_TEST(one.workers == 2);
  BOOST_TEST(one.gpus.empty());
  BOOST_TEST((visible_gpu_ids("", 2).empty()));
  BOOST_TEST((visible_gpu_ids(nullptr, 2) == std::vector<std::string>{"0", "1"}));
}

// Threads are lowered to the cores and to what the process's limits hold, and the first line
// says so (a worker asked for 1,000 threads under an address-space limit hung starting them).
BOOST_AUTO_TEST_CASE(thread_counts_are_bounded_by_cores_and_limits) {
  BOOST_TEST(thread_limit(3) <= 3);
  BOOST_TEST(thread_limit(3) >= 1);
  const PoolSettings many = default_pool_settings(1, 1000, 500, 4, "cpu", 0, 2);
  BOOST_TEST(many.threads <= 2);
  BOOST_TEST(many.blas_threads <= 2);
  BOOST_TEST(many.lowered.find("run.threads 1000 lowered to ") == 0u, many.lowered);
  BOOST_TEST(many.lowered.find("run.blas_threads 500 lowered to ") != std::string::npos);
  BOOST_TEST(default_pool_settings(1, 2, 0, 4, "cpu", 0, 2).lowered.empty());
  const pid_t child = ::fork();  // the limits stay in the child
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    const rlimit stack{rlim_t{8} << 20, rlim_t{8} << 20};
    const rlimit space{rlim_t{1} << 30, rlim_t{1} << 30};
    int failed = ::setrlimit(RLIMIT_STACK, &stack) != 0 || ::setrlimit(RLIMIT_AS, &space) != 0;
    failed |= (thread_limit(1000) != 32) << 1;  // a quarter of 1 GiB at 8 MiB a thread
    ::_exit(failed);
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);  // 1: setrlimit failed; 2: the limit not applied
}

// study: probe trains an LSTM on parity, probes its checkpoint and stores the outcome; a
// rerun reuses both the trial and the probes, and other probe settings probe again without
// retraining, unless the checkpoint is gone.
BOOST_AUTO_TEST_CASE(probe_study_probes_the_checkpoint_and_reuses_it) {
  const std::string text = R"(study: probe
task: {name: modular, m: 2}
model: {name: lstm, hidden: 16}
data: {format: acot, distribution: uniform, L: 8}
training: {learning_rates: [1.0e-2], seeds: [10], max_steps: 3000, eval_every: 100}
probe: {multiples: [1, 2], samples: 200}
)";
  Run run(text, "probe_study");
  InProcessRunner runner(test::plugins(), study_measurements());
  auto rerun = [&](const std::vector<std::string>& overrides) {
    run.config = load_study_text(text, "study.yaml", overrides);
    run.cells = prepare_study(run.config, test::plugins());
    run.log.str("");
    return run.go(runner);
  };
  auto probes = [&] {
    std::vector<StoredOutcome> found;
    for (const auto& o : run.store->outcomes())
      if (o.kind == "probe") found.push_back(o);
    return found;
  };
  BOOST_TEST(run.go(runner) == 0, run.log.str());
  BOOST_REQUIRE_EQUAL(probes().size(), 1u);
  const YAML::Node value = probes()[0].value;
  BOOST_TEST(value["status"].as<std::string>() == "succeeded", run.log.str());
  BOOST_REQUIRE_EQUAL(value["lengths"].size(), 2u);
  BOOST_TEST(value["lengths"][0]["length"].as<int>() == 8);
  BOOST_TEST(value["lengths"][1]["length"].as<int>() == 16);
  const YAML::Node at_L = value["lengths"][0];
  BOOST_TEST(at_L["sequences"].as<int>() == 200);
  BOOST_TEST(at_L["pairs"].as<int>() == 100);  // parity: every change flips the final state
  BOOST_TEST(at_L["final_accuracy"].as<double>() > 0.95);
  BOOST_REQUIRE_EQUAL(at_L["hooks"].size(), 2u);
  const YAML::Node embed = at_L["hooks"][0], lstm = at_L["hooks"][1];
  BOOST_TEST(embed["name"].as<std::string>() == "embed");
  BOOST_TEST(lstm["name"].as<std::string>() == "lstm.0");
  // The token alone does not tell the prefix parity; the recurrent state does.
  BOOST_TEST(embed["probe"].as<double>() < 0.3);
  BOOST_TEST(lstm["probe"].as<double>() > 0.9);
  // (Ablation is read as measured: with 2 states a probe has one direction, and a 16-wide
  // state may carry the parity in others too; test_probe checks ablation where it is not.)
  BOOST_TEST(lstm["ablated_accuracy"].as<double>() >= 0.0);
  BOOST_TEST(lstm["ablated_accuracy"].as<double>() <= 1.0);
  // The whole subspace probes read, removed from the recurrent state at every step: a probe is
  // then at chance and the model falls to chance; a random subspace of that dimension (the
  // control), removed from the state at every step too, leaves more of it (it takes about half
  // of a 16-wide state, so it costs the model much as well).
  BOOST_TEST_MESSAGE("lstm.0: nullspace "
                     << lstm["nullspace_dims"] << " dims in " << lstm["nullspace_rounds"]
                     << " rounds, probe after " << lstm["nullspace_probe"] << ", model "
                     << lstm["nullspace_accuracy"] << " (random " << lstm["random_accuracy"]
                     << ")");
  BOOST_TEST(lstm["nullspace_dims"].as<int>() >= 1);
  BOOST_TEST(lstm["nullspace_probe"].as<double>() < 0.1);
  BOOST_TEST(lstm["nullspace_accuracy"].as<double>() < 0.7);
  BOOST_TEST(lstm["random_accuracy"].as<double>() > lstm["nullspace_accuracy"].as<double>() + 0.1);
  // Patching the clean embedding at the changed action undoes the corruption; at the readout
  // the embedding (of an unchanged token) recovers nothing, the LSTM's state all of it.
  BOOST_TEST(std::abs(embed["patch_changed"].as<double>() - 1.0) < 1e-6,
             embed["patch_changed"].as<double>());
  BOOST_TEST(std::abs(embed["patch_readout"].as<double>()) < 1e-6,
             embed["patch_readout"].as<double>());
  BOOST_TEST(std::abs(lstm["patch_readout"].as<double>() - 1.0) < 1e-6,
             lstm["patch_readout"].as<double>());
  // At the changed action the clean hidden state flows on (the cell state stays corrupted):
  // not 0 by construction, as a patch of the layer's output copy alone would be.
  BOOST_TEST_MESSAGE("lstm.0: patch at the changed action recovers "
                     << lstm["patch_changed"].as<double>());
  BOOST_TEST(std::abs(lstm["patch_changed"].as<double>()) > 0.05,
             lstm["patch_changed"].as<double>());
  const size_t trained = run.store->all().size();
  BOOST_TEST(std::filesystem::exists(run.dir + "/probe_table.md"));
  BOOST_TEST(std::filesystem::exists(run.dir + "/study.md"));

  // A rerun: nothing trained, the probes read from the store.
  BOOST_TEST(rerun({}) == 0);
  BOOST_TEST(run.log.str().find("(probes stored)") != std::string::npos, run.log.str());
  BOOST_TEST(run.store->all().size() == trained);
  // Other probe settings: probed again from the checkpoint, not trained again.
  BOOST_TEST(rerun({"probe.samples=100"}) == 0, run.log.str());
  BOOST_TEST(run.store->all().size() == trained);
  BOOST_TEST(probes().size() == 2u);
  // With the checkpoint gone, the configuration trains again (the same result, now saved).
  for (const auto& entry : std::filesystem::directory_iterator(run.dir + "/checkpoints"))
    std::filesystem::remove(entry.path());
  BOOST_TEST(rerun({"probe.samples=50"}) == 0, run.log.str());
  BOOST_TEST(!std::filesystem::is_empty(run.dir + "/checkpoints"));
  BOOST_TEST(probes().size() == 3u);
  BOOST_TEST(probes()[2].value["best_loss"].as<double>() == value["best_loss"].as<double>());
  // With a byte of the checkpoint flipped, the same: detected by its digest, said, trained again.
  for (const auto& entry : std::filesystem::directory_iterator(run.dir + "/checkpoints")) {
    std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(entry.path()) / 2));
    f.put('\x5a');
  }
  BOOST_TEST(rerun({"probe.samples=60"}) == 0, run.log.str());
  BOOST_TEST(run.log.str().find("not a usable checkpoint (damaged") != std::string::npos,
             run.log.str());
  BOOST_TEST(probes().size() == 4u);
  BOOST_TEST(probes()[3].value["best_loss"].as<double>() == value["best_loss"].as<double>());
}

// A study's trainings keep their states in OUT/states/: a configuration the failure detector
// stopped leaves its state (run.keep_states: stopped), and the same configuration without the
// detector (as search.certify runs it) goes on from there to the result of a run from the start.
BOOST_AUTO_TEST_CASE(without_the_detector_a_stopped_training_goes_on_from_its_state) {
  const std::string text = R"(study: train
task: {name: modular, m: 2}
model: {name: lstm, hidden: 16}
data: {format: acot, distribution: uniform, L: 6, N: 40}
training: {learning_rates: [1.0e-4], seeds: [10], max_steps: 400, eval_every: 50,
           stall_window: 100, plateau_patience: 100}
)";
  std::string off = text;  // the same study without the detector
  off.replace(off.find(",\n           stall_window"),
              std::string(",\n           stall_window: 100, plateau_patience: 100").size(), "");
  InProcessRunner runner(test::plugins(), study_measurements());
  auto only_trial = [](const Run& run) {
    const auto all = run.store->all();
    BOOST_REQUIRE_EQUAL(all.size(), 1u);
    return all.front();
  };
  Run fresh(off, "states_fresh");
  BOOST_TEST(fresh.go(runner) == 0, fresh.log.str());
  const TrialResult whole = only_trial(fresh).result;
  BOOST_TEST(whole.resumed_at == 0);
  BOOST_TEST((!std::filesystem::exists(fresh.dir + "/states") ||
              std::filesystem::is_empty(fresh.dir + "/states")));

  Run run(text, "states");
  BOOST_TEST(run.go(runner) == 0, run.log.str());
  const TrialResult stopped = only_trial(run).result;
  BOOST_REQUIRE(stopped.stalled);
  BOOST_REQUIRE(stopped.steps < whole.steps);
  BOOST_REQUIRE_EQUAL(std::distance(std::filesystem::directory_iterator(run.dir + "/states"),
                                    std::filesystem::directory_iterator()),
                      1);
  run.config = load_study_text(off, "study.yaml");
  run.cells = prepare_study(run.config, test::plugins());
  BOOST_TEST(run.go(runner) == 0, run.log.str());
  TrialResult extended;
  for (const auto& t : run.store->all())
    if (!t.result.stalled) extended = t.result;
  BOOST_TEST(extended.resumed_at == stopped.steps);
  BOOST_TEST(extended.steps == whole.steps);
  BOOST_TEST(extended.best_loss == whole.best_loss);
  BOOST_REQUIRE_EQUAL(extended.history.size(), whole.history.size());
  for (size_t i = 0; i < whole.history.size(); ++i)
    BOOST_TEST(extended.history[i].val_loss == whole.history[i].val_loss);
}

// One cell searched under two step budgets into one store: the N* table shows the latest and
// names its settings, and the other budget's N* is listed beside it, not dropped.
BOOST_AUTO_TEST_CASE(a_table_names_its_settings_and_the_results_under_others) {
  const std::string text = R"(study: nstar
task: {name: modular, m: 2}
model: {name: lstm, hidden: 8}
data: {format: acot, distribution: fixed, L: 4}
training: {learning_rates: [1e-3], seeds: [10, 20], max_steps: 800}
)";
  Run run(text, "two_budgets");
  FakeRunner runner([](const Cell&) { return uint64_t{5}; });
  BOOST_TEST(run.go(runner) == 0);
  run.config = load_study_text(text, "study.yaml", {"training.max_steps=1500"});
  run.cells = prepare_study(run.config, test::plugins());
  FakeRunner later([](const Cell&) { return uint64_t{3}; });
  BOOST_TEST(run.go(later) == 0);
  size_t nstar = 0;
  for (const auto& o : run.store->outcomes()) nstar += o.kind == "nstar";
  BOOST_TEST(nstar == 2u);
  const std::string table = test::read(run.dir + "/nstar_table.md");
  BOOST_TEST(table.find("Settings: max_steps 1500, epsilon 0.0001, lr [0.001], seeds [10, 20], "
                        "no failure detector.") != std::string::npos,
             table);
  BOOST_TEST(
      table.find(
          "- modular(m=2) lstm(hidden=8,layers=1) acot fixed L=4: N* 5 with max_steps 800,") !=
          std::string::npos,
      table);
  BOOST_TEST(table.find("| 3 ") != std::string::npos, table);  // the latest N*
}

// Two settings of one format (a code trace printing every state and every third) are two rows
// of the N* table, each with its own N*, and their figures' files are named safely.
BOOST_AUTO_TEST_CASE(formats_with_options_are_rows_of_their_own) {
  Run run(R"(study: nstar
task: {name: modular, m: 2}
model: {name: lstm, hidden: 8}
data: {distribution: fixed, L: 3}
grid: {data.format.every: [1, 3], data.format.name: [code_trace]}
training: {learning_rates: [1e-3], seeds: [10, 20]}
)",
          "trace_rows");
  FakeRunner runner([](const Cell& cell) {
    return cell.format["every"].as<int>() == 1 ? uint64_t{2} : uint64_t{7};
  });
  BOOST_TEST(run.go(runner) == 0);
  const std::string table = test::read(run.dir + "/nstar_table.md");
  BOOST_TEST(table.find("| lstm  | code_trace(every=1) | modular(m=2) | 2 ") != std::string::npos,
             table);
  BOOST_TEST(table.find("| lstm  | code_trace(every=3) | modular(m=2) | 7 ") != std::string::npos,
             table);
  BOOST_TEST(
      test::run_command("ls " + run.dir + "/figures | grep -q 'code_trace_every_3_'").exit_code ==
      0);
}

// Published values (written here, not the paper's) beside ours: the value, the ratio, a mark
// beyond the factor, a not-learned mismatch, a row that matches no cell; a bad file names its
// line.
BOOST_AUTO_TEST_CASE(published_values_are_set_beside_ours) {
  Run run(R"(study: nstar
task: {name: modular, m: 2}
model: {name: lstm, hidden: 8}
data: {format: acot, distribution: fixed}
grid: {data.L: [3, 4]}
training: {learning_rates: [1e-3], seeds: [10, 20]}
)",
          "reference");
  FakeRunner runner([](const Cell& cell) { return cell.L == 3 ? uint64_t{4} : uint64_t{6}; });
  BOOST_TEST(run.go(runner) == 0);
  const std::string csv = run.dir + "/published.csv";
  std::ofstream(csv) << "task,task.m,model,model.hidden,format,distribution,L,metric,value,source\n"
                        "modular,2,lstm,8,acot,fixed,3,nstar,3,notes A\n"
                        "modular,2,lstm,,acot,fixed,4,nstar,24,\"notes, B\"\n"
                        "modular,2,lstm,8,acot,fixed,4,nstar,-,notes C\n"
                        "modular,3,lstm,8,acot,fixed,4,nstar,7,notes D\n";
  const Reference reference = read_reference(csv, 2, study_reference_metrics());
  std::ostringstream log;
  write_reports(*run.store, run.dir, study_reports(), &log, &reference);
  const std::string table = test::read(run.dir + "/nstar_table.md");
  BOOST_TEST(table.find("| 4 [3 notes A, x1.33] ") != std::string::npos, table);
  BOOST_TEST(table.find("| 6 [24 notes, B, x0.25 !; – notes C !] ") != std::string::npos, table);
  const std::string compared = test::read(run.dir + "/reference_comparison.csv");
  BOOST_TEST(compared.find("nstar,4,3,1.333,,false,notes A,") != std::string::npos, compared);
  BOOST_TEST(compared.find("nstar,6,24,0.25,,true,\"notes, B\",") != std::string::npos, compared);
  BOOST_TEST(compared.find("nstar,6,,,,true,notes C,") != std::string::npos, compared);
  BOOST_TEST(
      log.str().find("1 of 4 published value(s) in " + csv + " match no cell") != std::string::npos,
      log.str());
  std::ofstream(run.dir + "/bad.csv") << "task,model,format,distribution,L,metric,value\n"
                                         "modular,lstm,acot,fixed,4,nstar,24\n"
                                         "modular,lstm,acot,fixed,4,accuracy,0.5\n";
  try {
    read_reference(run.dir + "/bad.csv", 2, study_reference_metrics());
    BOOST_FAIL("a bad metric was read");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()) ==
               run.dir +
                   "/bad.csv:3: metric 'accuracy': expected one of nstar, kappa, "
                   "lengthgen_normalized_accuracy_2L");
  }
}

// probe.configurations: the best finished configurations of the N are each probed (their
// own outcomes); the report's rows give the mean over them with the range, and the depth
// summary where the state becomes readable.
BOOST_AUTO_TEST_CASE(probe_reads_several_configurations_and_reports_their_spread) {
  const std::string text = R"(study: probe
task: {name: modular, m: 2}
model: {name: lstm, hidden: 16}
data: {format: acot, distribution: uniform, L: 6}
training: {learning_rates: [1.0e-2], seeds: [10, 20, 30], max_steps: 3000, eval_every: 100}
probe: {multiples: [1], samples: 100, configurations: 2, nullspace_rounds: 0}
)";
  Run run(text, "probe_replicas");
  InProcessRunner runner(test::plugins(), study_measurements());
  BOOST_TEST(run.go(runner) == 0, run.log.str());
  BOOST_TEST(run.store->all().size() == 3u);  // every configuration trained (none cancelled)
  const std::vector<YAML::Node> probed = outcome_values(*run.store, "probe");
  BOOST_REQUIRE_EQUAL(probed.size(), 2u);
  BOOST_TEST(probed[0]["seed"].as<int>() != probed[1]["seed"].as<int>());
  // The table's embedding probe: the two configurations' mean and range.
  std::vector<double> values;
  bool succeeded = true;
  for (const auto& v : probed) {
    values.push_back(v["lengths"][0]["hooks"][0]["probe"].as<double>());
    succeeded = succeeded && v["status"].as<std::string>() == "succeeded";
  }
  BOOST_REQUIRE(succeeded);
  const std::string lo = format_fraction(std::min(values[0], values[1])),
                    hi = format_fraction(std::max(values[0], values[1])),
                    mean = format_fraction((values[0] + values[1]) / 2);
  const std::string expected = lo == hi ? mean : mean + " (" + lo + " to " + hi + ")";
  const std::string table = test::read(run.dir + "/probe_table.md");
  BOOST_TEST(table.find("| 2 succeeded | x1     | ") != std::string::npos, table);
  BOOST_TEST(table.find("| embed  | 0     | " + expected + " |") != std::string::npos,
             expected << "\n"
                      << table);
  const std::string depth = test::read(run.dir + "/probe_depth.md");
  BOOST_TEST(depth.find("readable at") != std::string::npos, depth);
  BOOST_TEST(depth.find("| 2 succeeded | x1 ") != std::string::npos, depth);
}

// lengthgen.configurations: each analysed configuration its own outcome; Table 2's cell is the
// mean over them with the range, and lengthgen_models lists each.
BOOST_AUTO_TEST_CASE(lengthgen_reads_several_configurations_and_reports_their_spread) {
  const std::string text = R"(study: lengthgen
task: {name: modular, m: 2}
model: {name: lstm, hidden: 16}
data: {format: acot, distribution: uniform, L: 6}
training: {learning_rates: [1.0e-2], seeds: [10, 20, 30], max_steps: 3000, eval_every: 100}
lengthgen: {multiples: [1, 2], samples: 100, configurations: 2}
)";
  Run run(text, "lengthgen_replicas");
  InProcessRunner runner(test::plugins(), study_measurements());
  BOOST_TEST(run.go(runner) == 0, run.log.str());
  BOOST_TEST(run.store->all().size() == 3u);
  const std::vector<YAML::Node> read = outcome_values(*run.store, "lengthgen");
  BOOST_REQUIRE_EQUAL(read.size(), 2u);
  BOOST_TEST(read[0]["seed"].as<int>() != read[1]["seed"].as<int>());
  std::vector<double> at_2L;
  for (const auto& v : read) {
    BOOST_REQUIRE(v["status"].as<std::string>() == "succeeded");
    BOOST_REQUIRE_EQUAL(v["curve"].size(), 2u);
    BOOST_TEST(v["curve"][1][0].as<int>() == 12);
    at_2L.push_back(v["curve"][1][3].as<double>());
  }
  const std::string table = test::read(run.dir + "/lengthgen_table.md");
  BOOST_TEST(table.find("| " + format_spread(at_2L) + " ") != std::string::npos,
             format_spread(at_2L) << "\n"
                                  << table);
  const std::string models = test::read(run.dir + "/lengthgen_models.md");
  BOOST_TEST(models.find("seed=" + read[0]["seed"].as<std::string>()) != std::string::npos, models);
  BOOST_TEST(models.find("seed=" + read[1]["seed"].as<std::string>()) != std::string::npos, models);
  const std::string curves = test::read(run.dir + "/lengthgen_curves.csv");
  BOOST_TEST(std::count(curves.begin(), curves.end(), '\n') == 5, curves);  // 2 x 2 and a header

  // Published values of Table 2 beside the mean at 2L: the difference, "!" beyond 0.1 (a row
  // without its distribution compares with every one; a negative accuracy reads).
  const double mean = mean_of_finite(at_2L);
  const std::string csv = run.dir + "/published.csv";
  std::ofstream(csv) << "task,task.m,model,format,distribution,L,metric,value,source\n"
                     << "modular,2,lstm,acot,uniform,6,lengthgen_normalized_accuracy_2L,"
                     << format_number(mean - 0.05, 6) << ",near\n"
                     << "modular,2,lstm,acot,,6,lengthgen_normalized_accuracy_2L,"
                     << format_number(mean - 0.5, 6) << ",far\n"
                     << "modular,2,lstm,acot,fixed,6,lengthgen_normalized_accuracy_2L,-0.02,none\n";
  const Reference reference = read_reference(csv, 2, study_reference_metrics());
  write_reports(*run.store, run.dir, study_reports(), nullptr, &reference);
  const std::string compared = test::read(run.dir + "/lengthgen_table.md");
  BOOST_TEST(compared.find("| " + format_spread(at_2L) + " [" + format_number(mean - 0.05, 4) +
                           " near, +0.05; " + format_number(mean - 0.5, 4) + " far, +0.5 !] ") !=
                 std::string::npos,
             compared);
  BOOST_TEST(compared.find("ours - published for accuracies") != std::string::npos, compared);
  const std::string listed = test::read(run.dir + "/reference_comparison.csv");
  BOOST_TEST(listed.find(",lengthgen_normalized_accuracy_2L,") != std::string::npos, listed);
  BOOST_TEST(listed.find(",0.05,false,near,") != std::string::npos, listed);
}

// Which analysed configurations a summary counts: the successes, else the failures, in both
// cases only those at report.min_accuracy or above (an accuracy not recorded counts).
BOOST_AUTO_TEST_CASE(summaries_count_successes_then_failures_above_the_accuracy) {
  const double nan = std::nan("");
  Counted c = counted_configurations({true, false, true}, {1.0, 0.95, 1.0}, 0.9);
  BOOST_TEST(c.learned);
  BOOST_TEST((c.counted == std::vector<bool>{true, false, true}));
  BOOST_TEST(c.text == "2 succeeded of 3");
  c = counted_configurations({false, false, false}, {0.5, 0.95, nan}, 0.9);
  BOOST_TEST(!c.learned);
  BOOST_TEST((c.counted == std::vector<bool>{false, true, true}));
  BOOST_TEST((c.below == std::vector<bool>{true, false, false}));
  BOOST_TEST(c.text == "2 failed of 3 (1 below accuracy 0.9)");
  c = counted_configurations({false, false}, {0.5, 0.51}, 0.9);
  BOOST_TEST(!c.any());
  BOOST_TEST(c.text == "none of 2 reaches accuracy 0.9");
  c = counted_configurations({false, false}, {0.5, 0.51}, 0);
  BOOST_TEST((c.counted == std::vector<bool>{true, true}));
  BOOST_TEST(c.text == "2 failed");
}

// With report.min_accuracy 0.9 a model at chance (10 steps) is marked and left out of the
// summaries; with the default (0) its numbers come back, marked as failed.
BOOST_AUTO_TEST_CASE(a_model_below_the_accuracy_is_left_out_of_the_summaries) {
  const std::string text = R"(study: lengthgen
task: {name: modular, m: 2}
model: {name: lstm, hidden: 16}
data: {format: outcome, distribution: uniform, L: 6}
training: {learning_rates: [1.0e-3], seeds: [10], max_steps: 10, eval_every: 10}
lengthgen: {multiples: [1, 2], samples: 100, configurations: 1}
report: {min_accuracy: 0.9}
)";
  Run run(text, "lengthgen_below");
  InProcessRunner runner(test::plugins(), study_measurements());
  BOOST_TEST(run.go(runner) == 0, run.log.str());
  const std::vector<YAML::Node> read = outcome_values(*run.store, "lengthgen");
  BOOST_REQUIRE_EQUAL(read.size(), 1u);
  BOOST_REQUIRE(read[0]["final_accuracy"].as<double>() < 0.9);
  const std::string table = test::read(run.dir + "/lengthgen_table.md");
  // Not learned, although a one-layer LSTM can represent parity (test_certificates): marked.
  BOOST_TEST(table.find("| – (representable) ") != std::string::npos, table);
  BOOST_TEST(table.find("(–: none reaches it)") != std::string::npos, table);
  BOOST_TEST(table.find(kRepresentableLegend) != std::string::npos, table);
  const std::string models = test::read(run.dir + "/lengthgen_models.md");
  BOOST_TEST(models.find("failed (below accuracy 0.9, not in the means)") != std::string::npos,
             models);
  // No curve of a model at chance: no length generalization figure at all.
  if (std::filesystem::exists(run.dir + "/figures"))
    for (const auto& entry : std::filesystem::directory_iterator(run.dir + "/figures"))
      BOOST_TEST(entry.path().filename().string().rfind("lengthgen_", 0) != 0, entry.path());
  // The same store reported at the default, no threshold: the failed model's mean, marked *.
  write_reports(*run.store, run.dir, study_reports(), nullptr, nullptr, 0.0);
  const std::string all = test::read(run.dir + "/lengthgen_table.md");
  const std::string at_2L =
      format_spread({read[0]["curve"][1][3].as<double>()}) + "* (" + kRepresentableMark + ")";
  BOOST_TEST(all.find("| " + at_2L) != std::string::npos, at_2L << "\n" << all);
}

namespace {
// Probe measurement settings for the tests below: one length, no nullspace rounds.
ProbeMeasureSettings probe_settings(int length, int samples) {
  ProbeMeasureSettings settings;
  settings.lengths = {length};
  settings.samples = static_cast<uint64_t>(samples);
  settings.fit.iterations = 20;
  settings.fit.l2 = 1e-3;
  settings.nullspace_rounds = 0;
  return settings;
}
}  // namespace

// The probe measurement asks whether to stop before each hook point (the probe study's
// coordinator throws there on a stop signal), so a stop does not wait for a whole model's probes.
BOOST_AUTO_TEST_CASE(probing_asks_to_stop_before_each_hook_point) {
  const std::string text = R"(study: probe
task: {name: modular, m: 2}
model: {name: lstm, hidden: 8, layers: 2}
data: {format: acot, distribution: uniform, L: 4}
training: {learning_rates: [1.0e-2], seeds: [10], max_steps: 20, eval_every: 10}
)";
  Run run(text, "probe_stop");
  const PreparedCell& cell = run.cells.at(0);
  const CellData data = make_cell_data(test::plugins(), cell.cell);
  const TrialSpec trial = make_trial(run.config, cell, 10, 1e-2, 10);
  auto model =
      make_model_checked(test::plugins(), yaml::from_node(cell.cell.model, "<model>"),
                         {data.vocab.size(), trial.max_length, data.vocab.pad()}, 10, torch::kCPU);
  const ProbeMeasureSettings settings = probe_settings(4, 40);
  struct Stop {};
  int calls = 0;
  const auto stop_at = [&](int at) {
    calls = 0;
    return [&calls, at] {
      if (++calls == at) throw Stop{};
    };
  };
  // embed, lstm.0, lstm.1: three hook points, asked before each.
  BOOST_CHECK_THROW(measure_probe({*model, data, trial, torch::kCPU, stop_at(2)}, settings), Stop);
  BOOST_TEST(calls == 2);
  const ProbeMeasurement whole =
      measure_probe({*model, data, trial, torch::kCPU, stop_at(99)}, settings);
  BOOST_TEST(calls == 3);
  BOOST_TEST(whole.lengths.at(0).hooks.size() == 3u);
}

// A block's convolution measured where the answer is known: in a 2-block Mamba whose second
// block reads nothing of the sequence (the convolution's input rows of its in_proj zeroed), the
// whole change at the readout flows through block 0's convolution (patch 1) and none through
// block 1's (patch 0, and setting it to its mean changes no prediction); with block 0 silenced
// instead, the other way round. The convolutions stay out of the layers' hooks.
BOOST_AUTO_TEST_CASE(conv_attribution_is_one_where_all_flows_and_zero_where_none_does) {
  const std::string text = R"(study: probe
task: {name: modular, m: 2}
model: {name: mamba, layers: 2, d_model: 16, d_state: 4, dt_rank: 2}
data: {format: outcome, distribution: uniform, L: 8}
training: {learning_rates: [1.0e-2], seeds: [10], max_steps: 20, eval_every: 10}
)";
  Run run(text, "probe_conv");
  const PreparedCell& cell = run.cells.at(0);
  const CellData data = make_cell_data(test::plugins(), cell.cell);
  const TrialSpec trial = make_trial(run.config, cell, 10, 1e-2, 10);
  // The model with block `silent`'s convolution input (the x half of its in_proj) zeroed, and
  // out_proj scaled up for wide logit gaps.
  const auto silenced = [&](int silent) {
    auto model = make_model_checked(test::plugins(), yaml::from_node(cell.cell.model, "<model>"),
                                    {data.vocab.size(), trial.max_length, data.vocab.pad()}, 10,
                                    torch::kCPU);
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      if (p.key() == "blocks." + std::to_string(silent) + ".in_proj.weight")
        p.value().narrow(0, 0, 32).zero_();
      if (p.key().find("out_proj.weight") != std::string::npos) p.value().mul_(20);
    }
    return model;
  };
  const ProbeMeasureSettings settings = probe_settings(8, 200);
  auto model = silenced(1);
  const ProbeMeasurement measured = measure_probe({*model, data, trial, torch::kCPU}, settings);
  const LengthMeasurement& length = measured.lengths.at(0);
  BOOST_REQUIRE(length.pairs > 50);
  BOOST_REQUIRE_EQUAL(length.hooks.size(), 4u);  // embed, block.0, block.1, norm
  BOOST_TEST(length.hooks[1].name == "block.0");
  BOOST_REQUIRE_EQUAL(length.convs.size(), 2u);
  const ConvMeasurement first = length.convs[0], second = length.convs[1];
  BOOST_TEST(first.name == "block.0.conv");
  BOOST_TEST(second.name == "block.1.conv");
  BOOST_TEST(std::abs(first.patch - 1) < 1e-3, first.patch);
  BOOST_TEST(std::abs(second.patch) < 1e-3, second.patch);
  BOOST_TEST(second.ablated_accuracy == length.final_accuracy);
  // The record as stored reads back as itself (the one writer and reader of the outcome).
  const YAML::Node stored = measured.to_yaml();
  BOOST_TEST(yaml::flow(ProbeMeasurement::from_yaml(YAML::Load(yaml::flow(stored))).to_yaml()) ==
             yaml::flow(stored));
  BOOST_TEST(stored[0]["convs"][0]["patch"].as<double>() == first.patch);
  // The mirror: block 0 reads nothing of the sequence, and the change reaches the answer
  // through block 1's convolution alone (from the embedding, along the residual stream).
  auto mirror = silenced(0);
  const std::vector<ConvMeasurement> other =
      measure_probe({*mirror, data, trial, torch::kCPU}, settings).lengths.at(0).convs;
  BOOST_REQUIRE_EQUAL(other.size(), 2u);
  BOOST_TEST(std::abs(other[0].patch) < 1e-3, other[0].patch);
  BOOST_TEST(std::abs(other[1].patch - 1) < 1e-3, other[1].patch);
}

// A worker that never answers the cancel (one stuck starting its thread pool) does not hold
// the run after the first signal: the drain stops it after drain_seconds, not recorded.
BOOST_AUTO_TEST_CASE(a_drain_stops_workers_that_do_not_answer) {
  const std::string dir = test::temp_dir("stuck-worker");
  const std::string script = dir + "/worker.sh";
  std::ofstream(script) << "#!/bin/sh\ntrap '' TERM INT\nexec sleep 60\n";
  BOOST_REQUIRE(::chmod(script.c_str(), 0755) == 0);
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    install_stop_signals();
    PoolSettings settings;
    settings.worker_executable = script;
    settings.drain_seconds = 1;
    WorkerPool pool(settings);
    std::thread signaller([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ::kill(::getpid(), SIGTERM);
    });
    int code = 1;
    const auto start = std::chrono::steady_clock::now();
    try {
      pool.run_list({TrialSpec{}}, RunCallbacks{[](size_t) {}, nullptr,
                                                [](size_t, const TrialResult&) { return false; }});
    } catch (const Interrupted& e) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      code = e.at_once() && e.cancelled() == 1 && seconds > 1.2 && seconds < 5 ? 0 : 2;
    }
    signaller.join();
    ::_exit(code);
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);  // 1: no Interrupted; 2: not at once, or not in time
  test::run_command("rm -rf '" + dir + "'");
}

// A stop signal delivered twice at once (`timeout` signals its command, then the command's
// process group) is one stop; a second a second or more later is a second stop.
BOOST_AUTO_TEST_CASE(a_signal_repeated_at_once_is_one_stop) {
  // In a child process: the handlers and the count stay there.
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    install_stop_signals();
    int failed = stop_signals_received() != 0;
    ::raise(SIGTERM);
    ::raise(SIGTERM);
    failed |= (stop_signals_received() != 1 || stop_signal() != SIGTERM) << 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    ::raise(SIGINT);
    failed |= (stop_signals_received() != 2 || stop_signal() != SIGINT) << 2;
    ::_exit(failed);
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_REQUIRE(WIFEXITED(status));
  // 1: a count before any signal; 2: the repeat counted; 4: the later signal not counted.
  BOOST_TEST(WEXITSTATUS(status) == 0);
}
