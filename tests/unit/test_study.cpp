// Studies without training: the N* search against known thresholds, the nstar and sharing
// drivers with a fake trainer (kappa arithmetic, first-success cancellation, reuse of stored
// trials), normalization, and the report's number formatting.
#define BOOST_TEST_MODULE study
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <sstream>

#include "report/format.hpp"
#include "study/search.hpp"
#include "study/study.hpp"
#include "support.hpp"
#include "train/generalization.hpp"

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
  explicit FakeRunner(std::function<uint64_t(const Cell&)> threshold) : threshold_(std::move(threshold)) {}
  void run(const std::vector<TrialSpec>& trials, const RunCallbacks& callbacks) override {
    bool cancelled = false;
    for (size_t i = 0; i < trials.size(); ++i) {
      TrialResult r = TrialResult::cancelled();
      if (!cancelled) {
        ++trained;
        // Only the first seed can succeed: the others fail, so a success must cancel them.
        const bool ok = trials[i].n >= threshold_(trials[i].cell) && trials[i].seed == 10;
        r.status = ok ? TrialStatus::kSucceeded : TrialStatus::kFailed;
        r.steps = 100;
        r.best_loss = ok ? 1e-5 : 0.5;
      }
      if (callbacks.on_done(i, r)) cancelled = true;
    }
  }
  int parallelism() const override { return 1; }
  size_t trained = 0;

 private:
  std::function<uint64_t(const Cell&)> threshold_;
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
      : config(read_study_text(text, "study.yaml")),
        cells(prepare_study(config, test::plugins())),
        dir(test::temp_dir(name)),
        store(std::make_unique<Store>(dir + "/results.sqlite")) {}
  int go(TrialRunner& runner) {
    StudyRun run{config, test::plugins(), *store, runner, progress, dir, out};
    return run_study(run, cells);
  }
};

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
      BOOST_TEST(o.value["lengths"][i]["kappa"].as<double>() == expected[i], boost::test_tools::tolerance(1e-12));
      BOOST_TEST(o.value["lengths"][i]["sum_fixed"].as<double>() == sums[i]);
    }
  }
  BOOST_TEST(found == 1u);
  BOOST_TEST(run.out.str().find("3.6") != std::string::npos, run.out.str());
  // The kappa table is written in the paper's layout.
  BOOST_TEST(test::run_command("grep -q 'L=4' " + run.dir + "/kappa_table.md").exit_code == 0);
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
  BOOST_TEST(first.go(runner) == 0);
  const size_t trained = runner.trained;
  BOOST_TEST(trained > 0u);
  bool seen = false;
  for (const auto& o : first.store->outcomes())
    if (o.kind == "nstar") {
      seen = true;
      BOOST_TEST(o.value["nstar"].as<uint64_t>() == 37u);
      BOOST_TEST(o.value["learned"].as<bool>());
      BOOST_TEST(o.value["n_max"].as<uint64_t>() == 500u);
    }
  BOOST_TEST(seen);
  // A success cancels the configurations after it: every success step trained one trial.
  size_t cancelled = 0;
  for (const auto& t : first.store->all()) cancelled += t.result.status == TrialStatus::kCancelled;
  BOOST_TEST(cancelled > 0u);
  // Rerun into the same store: nothing is trained again.
  FakeRunner again([](const Cell&) { return 37; });
  StudyRun run{first.config, test::plugins(), *first.store, again, first.progress, first.dir, first.out};
  BOOST_TEST(run_study(run, first.cells) == 0);
  BOOST_TEST(again.trained == 0u);
}
