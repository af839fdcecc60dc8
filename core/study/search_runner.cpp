// The N* searches of a study, side by side on the workers (docs/method.md section 5).
//
// Each cell's search is a state machine (NstarSearch); each tested size is a step that runs
// the configurations of the grid until one succeeds (or all end). The workers are shared by
// every search: an idle worker first takes the most promising configuration of a step that
// has nothing running (in cell order), and only when no step is waiting runs a second
// configuration of a step beside the first. So a success rarely has a neighbour to cancel.
// Within a step, configurations that succeeded at a size tested before come first (the most
// recent success first), the others in the grid's order: replaying the mini studies' trials,
// this ordering saved 3% over the grid's order, while ordering failures by their best
// validation loss cost 8% (a low learning rate fails slowly with a low loss). None of this
// changes N*: a step succeeds when any configuration does, whatever the order.
#include "study/search_runner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "options_yaml.hpp"
#include "report/reports.hpp"
#include "study/nstar/marks.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"

namespace induct {

YAML::Node nstar_settings(const StudyConfig& config, const SearchSettings& search) {
  YAML::Node settings;
  settings["training"] = to_yaml(config.training);
  for (double lr : config.learning_rates) settings["learning_rates"].push_back(yaml::exact(lr));
  for (uint64_t seed : config.seeds) settings["seeds"].push_back(seed);
  settings["search"]["factor"] = yaml::exact(search.factor);
  settings["search"]["max_steps"] = search.max_steps;
  settings["search"]["tolerance"] = yaml::exact(search.tolerance);
  // Not part of N*, but of the recorded cost: a search without cancellation is its own record.
  if (!search.cancel_on_success) settings["search"]["cancel_on_success"] = false;
  // Certification can lower N*: a certified search is a search of its own.
  if (search.certify) settings["search"]["certify"] = true;
  return settings;
}

std::string nstar_key(const StudyConfig& config, const SearchSettings& search,
                      const PreparedCell& cell) {
  YAML::Node identity;
  identity["kind"] = "nstar";
  identity["cell"] = cell.key();
  for (const auto& entry : nstar_settings(config, search)) identity[entry.first] = entry.second;
  return content_key(yaml::flow(identity));
}

std::string describe(const SearchRecord& s) {
  if (!s.complete) return "incomplete (a trial stopped with an error; rerun to retry)";
  std::string text = s.learned ? (s.certified ? "N* = " : "N* <= ") + std::to_string(s.nstar)
                               : "not learned at N_max = " + std::to_string(s.n_max);
  if (!s.certified)
    text += s.learned ? " (a failure on its search's path is the failure detector's verdict)"
                      : " (the failure detector's verdict)";
  return s.stored ? text + " (stored)" : text;
}

namespace {

enum class SlotState { kPending, kRunning, kDone };

struct Slot {
  size_t config = 0;  // index into the grid (learning rate major, seed minor)
  TrialSpec trial;
  SlotState state = SlotState::kPending;
  bool judged = false;    // the failure detector stopped it (TrialResult::stalled)
  int64_t live_step = 0;  // last evaluation reported while running
  double live_best = std::numeric_limits<double>::infinity();
};

struct Step {
  uint64_t n = 0;
  int number = 0;           // 1-based within its search
  bool certifying = false;  // a failure re-run without the detector (search.certify)
  std::vector<Slot> slots;  // most promising first
  int running = 0;
  size_t errors = 0;
  bool decided = false, success = false;
};

// How promising a configuration is: the step number of its latest success in this search
// (later first: the sizes a search tests after a success are smaller, so the latest success is
// the nearest); 0 when it has not succeeded (after every success, in grid order).
struct Rank {
  int success_step = 0;
  bool operator<(const Rank& o) const { return success_step > o.success_step; }
};

struct CellSearch {
  const PreparedCell* cell = nullptr;
  size_t index = 0;
  std::string key, context;
  std::unique_ptr<NstarSearch> machine;  // null: decided without searching (stored, N_max 0)
  std::vector<std::unique_ptr<Step>> steps;
  std::vector<Rank> ranks;
  SearchRecord record;
  int running = 0;  // trials in flight, cancelled ones of earlier steps included
  bool over = false, reported = false;
  Step* current() const {
    return steps.empty() || steps.back()->decided ? nullptr : steps.back().get();
  }
};

class Searches final : public TrialSource {
 public:
  Searches(StudyRun& run, const std::vector<PreparedCell>& cells, const SearchSettings& search)
      : run_(run), config_(run.config), search_(search) {
    grid_.reserve(config_.learning_rates.size() * config_.seeds.size());
    for (double lr : config_.learning_rates)
      for (uint64_t seed : config_.seeds) grid_.emplace_back(lr, seed);
    std::map<std::string, size_t> first_of_key;
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string key = nstar_key(config_, search_, cells[i]);
      // Two cells that resolve to the same cell (a grid listing it twice) share one search.
      auto [first, inserted] = first_of_key.emplace(key, i);
      alias_.push_back(first->second);
      if (!inserted) continue;
      auto s = std::make_unique<CellSearch>();
      s->cell = &cells[i];
      s->index = i;
      s->key = key;
      s->context = cell_context(config_, i, cells.size(), cells[i].label);
      s->ranks.assign(grid_.size(), Rank{});
      s->record.n_max = cells[i].plan.n_max;
      auto stored = run_.store.find_outcome(s->key);
      // An outcome stored before each failure on its path was checked (it has no `failures`)
      // may rest on a detector's verdict it calls proven: searched again from the stored
      // trainings (nothing is trained again; with certify, the unproven failures are).
      if (stored && !stored->value["failures"] && config_.training.stall_window > 0) {
        run_.progress.log(s->context +
                          ": the stored outcome checked only its deciding failure; "
                          "searching again from the stored trainings");
        stored.reset();
      }
      if (stored) {
        s->record.stored = true;
        s->record.learned = stored->value["learned"].as<bool>();
        s->record.nstar = stored->value["nstar"].as<uint64_t>();
        s->record.steps = stored->value["steps"].size();
        s->record.optimisation_steps = stored->value["optimisation_steps"].as<int64_t>();
        s->record.certified = nstar_certified(stored->value);
        s->record.certification_steps =
            stored->value["certification"] ? stored->value["certification"].size() : 0;
        s->over = true;
        if (!stored->value["settings"]) {  // stored before outcomes recorded their settings
          stored->value["settings"] = nstar_settings(config_, search_);
          run_.store.put_outcome(*stored);
        }
      } else if (cells[i].plan.n_max > 0) {
        s->machine = std::make_unique<NstarSearch>(cells[i].plan.n_max, search_);
      } else {
        s->over = true;  // nothing to train on: not learned
      }
      searches_.push_back(std::move(s));
    }
  }

  void run() {
    for (auto& s : searches_) settle(*s);
    run_.runner.run(*this);
    run_.progress.clear();
  }

  std::vector<SearchRecord> records() const {
    std::map<size_t, const SearchRecord*> by_cell;
    for (const auto& s : searches_) by_cell[s->index] = &s->record;
    std::vector<SearchRecord> out;
    for (size_t first : alias_) out.push_back(*by_cell.at(first));
    return out;
  }

  std::optional<Job> next() override {
    // A step with nothing running first, in cell order; then a second trial beside one.
    for (int pass = 0; pass < 2; ++pass)
      for (auto& s : searches_) {
        Step* step = s->current();
        if (!step || (pass == 0 && step->running > 0)) continue;
        for (size_t k = 0; k < step->slots.size(); ++k) {
          Slot& slot = step->slots[k];
          if (slot.state != SlotState::kPending) continue;
          slot.state = SlotState::kRunning;
          ++step->running;
          ++s->running;
          const size_t ticket = next_ticket_++;
          tickets_[ticket] = Ref{s.get(), step, k};
          return Job{ticket, &slot.trial};
        }
      }
    return std::nullopt;
  }

  void on_start(size_t) override { show(); }

  void on_progress(size_t ticket, const EvalPoint& point, double best_loss) override {
    const Ref& ref = tickets_.at(ticket);
    Slot& slot = ref.step->slots[ref.slot];
    slot.live_step = point.step;
    slot.live_best = best_loss;
    show();
  }

  void on_abandoned(size_t ticket, const TrialResult& result) override {
    const Ref ref = tickets_.at(ticket);
    run_.store.put(config_.name, ref.step->slots[ref.slot].trial,
                   result);  // a record: rerun on resume
  }

  std::vector<size_t> on_done(size_t ticket, const TrialResult& result) override {
    const Ref ref = tickets_.at(ticket);
    tickets_.erase(ticket);
    CellSearch& s = *ref.search;
    Step& step = *ref.step;
    Slot& slot = step.slots[ref.slot];
    slot.state = SlotState::kDone;
    slot.judged = result.stalled;
    --step.running;
    --s.running;
    if (record_result(run_, slot.trial, result, s.context + " | N=" + std::to_string(step.n)))
      ++s.record.trained;
    s.record.optimisation_steps += result.trained_steps();
    if (result.status == TrialStatus::kError) ++step.errors;
    std::vector<size_t> cancel;
    if (!step.decided) {  // a late result of a cancelled step says little about the order
      learn(s, slot.config, step.number, result);
      step.success = step.success || result.succeeded();
      if (step.success && search_.cancel_on_success) {
        for (auto& [t, r] : tickets_)
          if (r.step == &step) cancel.push_back(t);
        for (auto& other : step.slots)
          if (other.state == SlotState::kPending) other.state = SlotState::kDone;  // never run
        decide(s, step);
      } else if (step.running == 0 &&
                 std::none_of(step.slots.begin(), step.slots.end(),
                              [](const Slot& o) { return o.state == SlotState::kPending; })) {
        decide(s, step);
      }
    }
    settle(s);
    show();
    return cancel;
  }

 private:
  struct Ref {
    CellSearch* search = nullptr;
    Step* step = nullptr;
    size_t slot = 0;
  };

  void learn(CellSearch& s, size_t config, int step_number, const TrialResult& result) {
    if (result.succeeded()) s.ranks[config] = Rank{step_number};
  }

  // A decided step tells the search its outcome. With search.certify, a failure the failure
  // detector had a hand in is first re-run without it (its stopped configurations go on from
  // their saved states): the search learns only proven failures, so it takes the paper's path
  // and tests no size that path would not (docs/method.md section 5a).
  void decide(CellSearch& s, Step& step) {
    step.decided = true;
    if (!step.success && step.errors > 0) {
      s.record.complete = false;  // undecided: a rerun retries the failed trials
      s.over = true;
      return;
    }
    if (step.certifying) {
      ++s.record.certification_steps;
      if (step.success)
        run_.progress.log(s.context + " | N=" + std::to_string(step.n) +
                          " succeeds without the failure detector: the search goes on below it");
    } else if (!step.success && search_.certify && proof_of(s, step.n) == Proof::kVerdict) {
      const auto judged = std::count_if(step.slots.begin(), step.slots.end(),
                                        [](const Slot& o) { return o.judged; });
      run_.progress.log(s.context + " | N=" + std::to_string(step.n) + ": " +
                        std::to_string(judged) + " of " + std::to_string(step.slots.size()) +
                        " configurations were stopped by the failure detector; certifying "
                        "without it");
      open_step(s, step.n, &step);
      return;
    }
    s.machine->report(step.success);
  }

  // The step that tested size n (the certifying one, or the search's own).
  static const Step* step_at(const CellSearch& s, uint64_t n, bool certifying) {
    for (const auto& step : s.steps)
      if (step->n == n && step->certifying == certifying) return step.get();
    return nullptr;
  }

  // How a failure on the search's path is known (docs/method.md section 5a).
  enum class Proof {
    kRan,      // no configuration was stopped by the failure detector
    kRerun,    // those it stopped failed again without it (search.certify)
    kVerdict,  // the failure detector's verdict: the paper's procedure might see a success
  };
  static const char* to_string(Proof proof) {
    return proof == Proof::kRan ? "ran" : proof == Proof::kRerun ? "rerun" : "verdict";
  }
  static Proof proof_of(const CellSearch& s, uint64_t n) {
    const Step* own = step_at(s, n, false);
    if (!own ||
        std::none_of(own->slots.begin(), own->slots.end(), [](const Slot& o) { return o.judged; }))
      return Proof::kRan;
    const Step* rerun = step_at(s, n, true);
    return rerun && rerun->decided && !rerun->success ? Proof::kRerun : Proof::kVerdict;
  }

  // Every failure on a search's path steered it (the sizes it tested after depend on it), so
  // its N* is the paper's only when each is proven.
  static bool all_proven(const CellSearch& s) {
    const auto& tested = s.machine->outcome().steps;
    return std::none_of(tested.begin(), tested.end(), [&](const SearchStep& t) {
      return !t.success && proof_of(s, t.n) == Proof::kVerdict;
    });
  }

  // Opens the next step of a search whose current one is decided (reusing stored trials, which
  // may decide it at once), and finishes the search when its machine is done and nothing of
  // it runs any more.
  void settle(CellSearch& s) {
    while (!s.over && !s.current()) {
      if (auto n = s.machine->next()) {  // never a size tested before (NstarSearch)
        open_step(s, *n);
      } else {
        s.record.certified = all_proven(s);
        s.over = true;
      }
    }
    if (s.over && s.running == 0 && !s.reported) finish(s);
  }

  // A step of the search at size n; with `judged_by`, the certification of that failed step:
  // its configurations the detector stopped, with the detector off.
  void open_step(CellSearch& s, uint64_t n, const Step* judged_by = nullptr) {
    auto step = std::make_unique<Step>();
    step->n = n;
    step->number = static_cast<int>(s.steps.size()) + 1;
    step->certifying = judged_by != nullptr;
    std::vector<size_t> order;
    if (judged_by) {
      for (const Slot& o : judged_by->slots)
        if (o.judged) order.push_back(o.config);
    } else {
      order.resize(grid_.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return s.ranks[a] < s.ranks[b]; });
    }
    for (size_t k : order) {
      Slot slot;
      slot.config = k;
      slot.trial = make_trial(run_, *s.cell, n, grid_[k].first, grid_[k].second);
      if (judged_by) slot.trial.training.stall_window = 0;  // the paper's procedure
      if (auto stored = reusable_result(run_, slot.trial, StepOptions::Checkpoints::kNone)) {
        slot.state = SlotState::kDone;
        slot.judged = stored->stalled;
        s.record.optimisation_steps += stored->trained_steps();
        learn(s, k, step->number, *stored);
        step->success = step->success || stored->succeeded();
      }
      step->slots.push_back(std::move(slot));
    }
    Step& ref = *step;
    s.steps.push_back(std::move(step));
    const bool all_stored = std::all_of(ref.slots.begin(), ref.slots.end(),
                                        [](const Slot& o) { return o.state == SlotState::kDone; });
    if (all_stored || (ref.success && search_.cancel_on_success)) decide(s, ref);
  }

  void finish(CellSearch& s) {
    s.reported = true;
    // A certified search has used the states its detector's stops left (run.keep_states):
    // nothing of it goes on from them any more. Without certify they stay, for a later run
    // with search.certify to go on from.
    if (search_.certify && s.record.complete)
      for (const auto& step : s.steps)
        for (const Slot& slot : step->slots) slot.trial.discard_state();
    if (!s.record.stored && s.record.complete) {
      // N_max = 0 (nothing to train on): not learned, without a step.
      const SearchOutcome outcome = s.machine ? s.machine->outcome() : SearchOutcome{};
      s.record.learned = outcome.learned;
      s.record.nstar = outcome.nstar;
      s.record.steps = outcome.steps.size();
      YAML::Node value;
      value["cell"] = s.cell->cell.to_yaml();
      value["plugins"] = s.cell->plugin_versions;
      value["learned"] = s.record.learned;
      value["nstar"] = s.record.nstar;
      value["n_max"] = s.record.n_max;
      value["states"] = s.cell->num_states;
      value["largest_failure"] = outcome.largest_failure;
      value["optimisation_steps"] = s.record.optimisation_steps;
      // The settings that change the cost but not N*, for the search-cost table.
      value["cancel_on_success"] = search_.cancel_on_success;
      value["stall_window"] = config_.training.stall_window;
      value["failure_detector"] = describe_detector(config_.training);
      value["certify"] = search_.certify;
      value["certified"] = s.record.certified;
      value["settings"] = nstar_settings(config_, search_);
      // [N, succeeded] per tested size, in flow style.
      auto sizes = [](const std::vector<SearchStep>& steps) {
        YAML::Node list(YAML::NodeType::Sequence);
        for (const auto& step : steps) {
          YAML::Node row(YAML::NodeType::Sequence);
          row.SetStyle(YAML::EmitterStyle::Flow);
          row.push_back(step.n);
          row.push_back(step.success);
          list.push_back(row);
        }
        return list;
      };
      std::vector<SearchStep> certification;
      for (const auto& step : s.steps)
        if (step->certifying) certification.push_back({step->n, step->success});
      value["certification"] = sizes(certification);
      value["steps"] = sizes(outcome.steps);
      // How each failure on the path is known: ran (no detector stop), rerun (failed again
      // without the detector) or verdict (the detector's, unproven).
      YAML::Node failures(YAML::NodeType::Sequence);
      for (const SearchStep& tested : outcome.steps) {
        if (tested.success) continue;
        YAML::Node row(YAML::NodeType::Sequence);
        row.SetStyle(YAML::EmitterStyle::Flow);
        row.push_back(tested.n);
        row.push_back(to_string(proof_of(s, tested.n)));
        failures.push_back(row);
      }
      value["failures"] = failures;
      run_.store.put_outcome({s.key, config_.name, "nstar", s.cell->label, value, ""});
    }
    ++finished_;
    run_.progress.clear();
    std::string line = s.context + ": " + describe(s.record);
    const size_t total = searches_.size();
    if (finished_ < total && run_.progress.elapsed() > 0 && !s.record.stored)
      line += ", about " +
              format_duration(run_.progress.elapsed() / finished_ * (total - finished_)) + " left";
    run_.progress.log(line);
  }

  void show() {
    std::string line = "[" + config_.name + "] " + std::to_string(finished_) + "/" +
                       std::to_string(searches_.size()) + " searches done";
    for (const auto& [ticket, ref] : tickets_) {
      const Slot& slot = ref.step->slots[ref.slot];
      line += " | cell " + std::to_string(ref.search->index + 1) + " step " +
              std::to_string(ref.step->number) + (ref.step->certifying ? " (certify)" : "") +
              " N=" + std::to_string(ref.step->n) + " " + slot.trial.configuration() + " at " +
              std::to_string(slot.live_step);
      if (std::isfinite(slot.live_best)) line += " loss " + format_number(slot.live_best, 3);
    }
    line += " | " + format_duration(run_.progress.elapsed());
    run_.progress.status(line);
  }

  StudyRun& run_;
  const StudyConfig& config_;
  const SearchSettings& search_;
  std::vector<std::pair<double, uint64_t>> grid_;
  std::vector<std::unique_ptr<CellSearch>> searches_;  // one per distinct cell
  std::vector<size_t> alias_;  // per cell: the index of the first cell with its key
  std::map<size_t, Ref> tickets_;
  size_t next_ticket_ = 1, finished_ = 0;
};

}  // namespace

std::vector<SearchRecord> run_searches(StudyRun& run, const std::vector<PreparedCell>& cells,
                                       const SearchSettings& search) {
  Searches searches(run, cells, search);
  searches.run();
  return searches.records();
}

}  // namespace induct
