// detector_check: the failure detector against ground truth (bench/detector/README.md).
//
// Reads the trials of ground-truth stores (runs with the detector off and a large step
// limit), replays the detector with the given rules on each trial's stored history (the
// trainer's own failure_verdict, after every evaluation, as a run with the detector would have
// seen it: the detector does not change what happens before it stops a run), and prints per
// configuration what the detector would have decided against what the run did:
//   ok-success   succeeded, and the detector would not have stopped it first
//   FALSE-FAIL   the detector would have stopped it, yet it succeeded later
//   ok-fail      failed within the limit, and the detector would have stopped it (steps saved)
//   ran-on       failed within the limit, and the detector would not have stopped it
// then the totals: configurations, false failures, and the fraction of optimisation steps the
// detector saves. With --project-to M (e.g. the paper's 250,000): what it would save at that
// step limit, if every configuration that failed within the ground truth's limit still failed
// by M (a failure the detector did not stop then costs M steps, a stopped one what it ran).
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>

#include "options_yaml.hpp"
#include "plugin/registry.hpp"
#include "store/store.hpp"
#include "study/registry.hpp"
#include "train/cell_setup.hpp"
#include "train/detector.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

using namespace induct;
namespace po = boost::program_options;

namespace {

struct Replay {
  int64_t stop = -1;  // step at which the detector stops the run, -1: never
  Verdict verdict = Verdict::kGoOn;
};

Replay replay(const std::vector<EvalPoint>& history, double chance, const TrainSettings& s) {
  std::vector<EvalPoint> seen;
  double best = std::numeric_limits<double>::infinity();
  for (const EvalPoint& p : history) {
    seen.push_back(p);
    best = std::min(best, p.val_loss);
    if (p.val_loss < s.epsilon) break;  // the run succeeded here: the detector is not asked
    const Verdict v = failure_verdict(seen, best, chance, s);
    if (v != Verdict::kGoOn) return {p.step, v};
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  TrainSettings rules;
  rules.stall_window = 200;
  rules.stall_improvement = 0.1;
  rules.stall_projection = 2;
  std::vector<std::string> stores;
  bool quiet = false;
  int64_t project_to = 0;
  std::string plateau_level = "task";
  po::options_description options("detector_check STORE... [rules]");
  options.add_options()("help,h", "this help")("store", po::value(&stores)->multitoken(),
                                               "ground-truth results.sqlite files")(
      "window", po::value(&rules.stall_window)->default_value(rules.stall_window),
      "training.stall_window")(
      "improvement", po::value(&rules.stall_improvement)->default_value(rules.stall_improvement),
      "training.stall_improvement")(
      "projection", po::value(&rules.stall_projection)->default_value(rules.stall_projection),
      "training.stall_projection")(
      "fraction", po::value(&rules.stall_fraction)->default_value(rules.stall_fraction),
      "training.stall_fraction")(
      "margin", po::value(&rules.plateau_margin)->default_value(rules.plateau_margin),
      "training.plateau_margin")(
      "patience", po::value(&rules.plateau_patience)->default_value(rules.plateau_patience),
      "training.plateau_patience (0: off)")(
      "memorised", po::value(&rules.memorised_loss)->default_value(rules.memorised_loss),
      "training.memorised_loss (0: off)")("plateau-level",
                                          po::value(&plateau_level)->default_value(plateau_level),
                                          "training.plateau_level: task or validation")(
      "no-plateau", "replay without the chance loss (the detector before plateaus were known)")(
      "project-to", po::value(&project_to)->default_value(0),
      "also the steps at this limit (e.g. 250000), if the failures within the ground truth's limit "
      "still failed there")("quiet,q", po::bool_switch(&quiet), "totals only");
  po::positional_options_description positional;
  positional.add("store", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(options).positional(positional).run(),
              vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "detector_check: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help") || stores.empty()) {
    std::cout << options << "\n";
    return stores.empty() ? 2 : 0;
  }
  const bool use_plateau = !vm.count("no-plateau");
  try {
    rules.plateau_level = plateau_level_from(plateau_level);
  } catch (const std::exception& e) {
    std::cerr << "detector_check: --plateau-level: " << e.what() << "\n";
    return 2;
  }
  configure_process(1);
  PluginRegistry registry;
  registry.load_all(plugin_search_path({}));

  std::map<std::string, double> chance_of;  // by cell key and seed
  size_t configs = 0, false_failures = 0, right_failures = 0, ran_on = 0, successes = 0;
  double steps_truth = 0, steps_detector = 0;
  double projected_truth = 0, projected_detector = 0;  // at --project-to
  std::printf("%-58s %7s %6s %5s  %-22s %-22s %s\n", "cell", "N", "lr", "seed", "without detector",
              "with detector", "verdict");
  // One ground truth per configuration: where a configuration (cell, N, lr, seed) was run
  // under several step limits (a long ground truth extends a 20,000-step one), the longest
  // run is the truth, and the shorter ones are its prefix (a trial is deterministic).
  std::vector<StoredTrial> runs;
  std::map<std::string, size_t> run_of;
  for (const std::string& file : stores) {
    Store store(file, study_outcome_tables());
    for (StoredTrial& t : store.all()) {
      const TrialResult& r = t.result;
      if (!r.finished()) continue;
      if (r.stalled) continue;  // not ground truth: a detector stopped it
      const std::string key = yaml::flow(t.spec.cell.to_yaml()) + " n " + std::to_string(t.spec.n) +
                              " lr " + format_number(t.spec.lr) + " seed " +
                              std::to_string(t.spec.seed);
      auto [found, added] = run_of.emplace(key, runs.size());
      if (added)
        runs.push_back(std::move(t));
      else if (t.spec.training.max_steps > runs[found->second].spec.training.max_steps)
        runs[found->second] = std::move(t);
    }
  }
  for (const StoredTrial& t : runs) {
    const TrialResult& r = t.result;
    double chance = 0;
    if (use_plateau) {
      // A store of the same level knows it; ground truth (no detector) does not.
      if (t.spec.training.stall_window > 0 && t.spec.training.plateau_level == rules.plateau_level)
        chance = r.chance_loss;
      if (chance <= 0) {
        const std::string key =
            yaml::flow(t.spec.cell.to_yaml()) + " " + std::to_string(t.spec.seed);
        auto found = chance_of.find(key);
        if (found == chance_of.end()) {
          CellData cell = make_cell_data(registry, t.spec.cell);
          Split split = make_split(cell.data, 0, t.spec.seed);
          const bool on_training = split.validation.size() == 0;
          if (on_training) split = make_split(cell.data, t.spec.n, t.spec.seed);
          ExampleSet set(on_training ? split.train : split.validation, *cell.transitions,
                         *cell.format, cell.vocab);
          found = chance_of.emplace(key, plateau_loss(cell, set, rules.plateau_level)).first;
        }
        chance = found->second;
      }
    }
    TrainSettings s = rules;
    s.max_steps = t.spec.training.max_steps;
    s.epsilon = t.spec.training.epsilon;
    const Replay d = replay(r.history, chance, s);
    ++configs;
    steps_truth += static_cast<double>(r.steps);
    steps_detector += static_cast<double>(d.stop >= 0 ? d.stop : r.steps);
    if (project_to > 0) {
      const auto limit = static_cast<double>(std::max(project_to, r.steps));
      const double full = r.succeeded() ? static_cast<double>(r.steps) : limit;
      projected_truth += full;
      projected_detector += d.stop >= 0 ? static_cast<double>(d.stop) : full;
    }
    std::string truth = std::string(to_string(r.status)) + " at " + std::to_string(r.steps);
    std::string with = d.stop >= 0
                           ? std::string(to_string(d.verdict)) + " at " + std::to_string(d.stop)
                           : "not stopped";
    const char* verdict;
    if (r.succeeded()) {
      verdict = d.stop >= 0 ? "FALSE-FAIL" : "ok-success";
      (d.stop >= 0 ? false_failures : successes) += 1;
    } else {
      verdict = d.stop >= 0 ? "ok-fail" : "ran-on";
      (d.stop >= 0 ? right_failures : ran_on) += 1;
    }
    if (!quiet) {
      std::string cell = component_label(t.spec.cell.model) + " " + t.spec.cell.format_label() +
                         " " + component_label(t.spec.cell.task) + " " + t.spec.cell.distribution +
                         " L=" + std::to_string(t.spec.cell.L);
      std::printf("%-58s %7llu %6.0e %5llu  %-22s %-22s %s\n", cell.c_str(),
                  static_cast<unsigned long long>(t.spec.n), t.spec.lr,
                  static_cast<unsigned long long>(t.spec.seed), truth.c_str(), with.c_str(),
                  verdict);
    }
  }
  std::printf("\nrules: %s%s\n", describe_detector(rules).c_str(),
              use_plateau ? "" : " (no plateau: chance loss unknown)");
  std::printf(
      "configurations %zu: %zu succeeded (%zu of them stopped first: false failures), "
      "%zu failed within the limit (%zu stopped, %zu ran on)\n",
      configs, successes + false_failures, false_failures, right_failures + ran_on, right_failures,
      ran_on);
  std::printf("optimisation steps: %.0f without the detector, %.0f with it (%.1f%% saved)\n",
              steps_truth, steps_detector,
              steps_truth > 0 ? 100.0 * (1.0 - steps_detector / steps_truth) : 0.0);
  if (project_to > 0)
    std::printf(
        "at a limit of %lld steps (failures within the limit still failing there): %.0f "
        "without the detector, %.0f with it (%.1f%% saved)\n",
        static_cast<long long>(project_to), projected_truth, projected_detector,
        projected_truth > 0 ? 100.0 * (1.0 - projected_detector / projected_truth) : 0.0);
  return false_failures > 0 ? 1 : 0;
}
