// The `probe` study (docs/method.md section 8): where a trained model keeps the state it
// tracks, and whether what a linear probe reads there is what the model uses. Each cell trains
// as lengthgen does (N_max by default; the first success, else the best configuration); then,
// from that configuration's checkpoint, on fresh sequences of round(m x L) actions for each
// multiple m of probe.multiples, at every hook point the model marks (induct/hooks.hpp):
//   probe     a linear probe (core/probe) for the state s_t at every action position t, fitted
//             on half of the sequences; its accuracy on the other half, 0 = the majority class;
//   ablation  the model's final-state accuracy on that half with the probe's directions set to
//             their mean at every position of the hook;
//   nullspace the same with the whole subspace linear probes read removed (iterative nullspace
//             projection until a probe is at chance), and with a random subspace of that
//             dimension removed (the control);
//   patching  each held-out sequence with its middle action changed (to the first other action
//             that keeps it valid and changes the final state): the clean activation of the hook
//             at one position patched into the corrupted run, and the share of the clean-corrupted
//             gap in logit(clean final state) - logit(corrupted final state) at the readout it
//             recovers, patching at the changed position and at the readout;
//   convolution for a model whose blocks mark their causal convolution (the inner hook point
//             "<block>.conv"), its clean output patched in at every position (the share of the
//             gap carried through it) and its output set to its mean (the accuracy drop).
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ostream>
#include <set>

#include "data/language.hpp"
#include "data/length_stream.hpp"
#include "exec/signals.hpp"
#include "options_yaml.hpp"
#include "probe/measure.hpp"
#include "probe/probe.hpp"
#include "report/context.hpp"
#include "report/reports.hpp"
#include "study/kind.hpp"
#include "study/step.hpp"
#include "train/archive_file.hpp"
#include "train/cell_setup.hpp"
#include "train/checkpoint.hpp"
#include "train/generalization.hpp"
#include "train/measurement.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/rng.hpp"
#include "util/table.hpp"
#include "util/text.hpp"

namespace induct {

namespace {

using yaml::exact;

struct ProbeStudySettings {
  LengthMultiples lengths{"probe", "multiples", {1, 2}};  // 1: the trained maximum
  int64_t configurations = 3;    // analysed per cell: the best finished ones of the step
  ProbeMeasureSettings measure;  // its lengths from `lengths` per cell
};

class ProbeStudy final : public Study {
 public:
  void read(const Options& root) override;
  CellKeys cell_keys() const override { return {true, CellKeys::N::kMaxByDefault}; }
  void check_cell(const Options& root, const CellSpec& cell) const override {
    settings_.lengths.check(root, cell.L);
  }
  std::vector<PreparedCell> expand(const CellSpec& spec,
                                   const PluginRegistry& registry) const override {
    PreparedCell cell = settings_.lengths.prepare(spec, registry);
    if (!cell.action_positions)
      spec.root.section("data").fail(
          "format", "format '" + spec.format_name +
                        "' does not say where each action's token is (Format::action_position), "
                        "which the probe study reads and patches");
    return {cell};
  }
  int run(StudyRun& run, const std::vector<PreparedCell>& cells) const override;
  void report(ReportContext& report) const override;

 private:
  // The measurement's settings for a cell of maximum length L (its YAML is part of the
  // outcome's key).
  ProbeMeasureSettings measurement(int L) const {
    ProbeMeasureSettings m = settings_.measure;
    m.lengths = settings_.lengths.lengths(L);
    return m;
  }
  ProbeStudySettings settings_;
};

void ProbeStudy::read(const Options& root) {
  const Options section = root.section("probe");
  ProbeStudySettings& s = settings_;
  ProbeMeasureSettings& m = s.measure;
  s.lengths.read(root);
  m.samples = static_cast<uint64_t>(
      get_in_range(section, "samples", static_cast<long>(m.samples), 4, 1'000'000));
  m.fit.iterations = get_in_range(section, "iterations", m.fit.iterations, 1, 100'000);
  m.fit.l2 = section.get<double>("l2", m.fit.l2);
  if (!(m.fit.l2 >= 0 && std::isfinite(m.fit.l2))) section.fail("l2", "must be 0 or positive");
  s.configurations = get_in_range(section, "configurations", s.configurations, 1, 10'000);
  m.nullspace_rounds = get_in_range(section, "nullspace_rounds", m.nullspace_rounds, 0, 1000);
  m.nullspace_margin = section.get<double>("nullspace_margin", m.nullspace_margin);
  if (!(m.nullspace_margin >= 0 && m.nullspace_margin < 1))
    section.fail("nullspace_margin", "must be in [0, 1)");
}

// One analysed configuration's numbers at one (length, hook): drops are the model's normalized
// final-state accuracy minus the same with the hook edited; NaN where not measured.
struct HookNumbers {
  std::string name;
  double depth = NAN;  // relative: the embedding 0, the last block or recurrent layer 1; NaN: norm
  double probe = 0, ablation = 0, nullspace = NAN, random = NAN, dims = NAN, changed = 0,
         readout = 0;
  bool capped = false;  // the nullspace rounds ran out before a probe was within the margin
};

// A probed length's hooks in forward order (settings: the outcome's). Relative depth is the same
// for every model; a final norm, between the last layer and the readout, has none.
// The relative depth of each hook of a length, in order (NaN: the final norm).
std::vector<double> relative_depths(const LengthMeasurement& length) {
  size_t layers = 0;
  for (const HookMeasurement& hook : length.hooks) layers += hook.name != "norm";
  std::vector<double> out;
  size_t depth = 0;
  for (const HookMeasurement& hook : length.hooks)
    out.push_back(hook.name == "norm" ? NAN
                  : layers > 1 ? static_cast<double>(depth++) / static_cast<double>(layers - 1)
                               : 1.0);
  return out;
}

std::vector<HookNumbers> read_hooks(const LengthMeasurement& length, double clean, double chance,
                                    const ProbeMeasureSettings& settings) {
  const std::vector<double> depths = relative_depths(length);
  std::vector<HookNumbers> out;
  for (size_t i = 0; i < length.hooks.size(); ++i) {
    const HookMeasurement& hook = length.hooks[i];
    HookNumbers h;
    h.name = hook.name;
    h.depth = depths[i];
    h.probe = hook.probe;
    h.ablation = clean - above_chance(hook.ablated_accuracy, chance);
    if (hook.nullspace) {
      h.nullspace = clean - above_chance(hook.nullspace->accuracy, chance);
      h.random = clean - above_chance(hook.nullspace->random_accuracy, chance);
      h.dims = static_cast<double>(hook.nullspace->dims);
      h.capped = hook.nullspace->probe * (1 - hook.probe_chance) > settings.nullspace_margin + 1e-9;
    }
    h.changed = hook.patch_changed;
    h.readout = hook.patch_readout;
    out.push_back(h);
  }
  return out;
}

// One analysed configuration's numbers at a block's convolution (an inner hook point
// "<block>.conv"): at its block's relative depth, the share of the gap recovered by its clean
// output and the drop with its output set to the mean.
struct ConvNumbers {
  std::string name;
  double depth = NAN, patch = 0, ablation = 0;
};

std::vector<ConvNumbers> read_convs(const LengthMeasurement& length, double clean, double chance,
                                    const std::vector<HookNumbers>& hooks) {
  std::vector<ConvNumbers> out;
  for (const ConvMeasurement& conv : length.convs) {
    ConvNumbers c;
    c.name = conv.name;
    const std::string block = c.name.substr(0, c.name.rfind('.'));
    for (const HookNumbers& h : hooks)
      if (h.name == block) c.depth = h.depth;
    c.patch = conv.patch;
    c.ablation = clean - above_chance(conv.ablated_accuracy, chance);
    out.push_back(c);
  }
  return out;
}

// "1.14 (1.08 to 1.20) [32+ dims]": the nullspace drops and their mean dimension, + where some
// configuration's rounds ran out first ("" where not measured).
std::string nullspace_text(const std::vector<double>& drops, const std::vector<double>& dims,
                           bool capped) {
  const std::string text = format_spread(drops);
  if (text.empty()) return text;
  return text + " [" + format_number(mean_of_finite(dims), 3) + (capped ? "+" : "") + " dims]";
}

// The measurement on the chosen configuration's trained model, read from its checkpoint.
ProbeMeasurement probe_checkpoint(const StudyRun& run, const PreparedCell& cell,
                                  const TrialSpec& trial, const ProbeMeasureSettings& settings) {
  const CellData data = make_cell_data(run.registry, cell.cell);
  const torch::Device device(trial.device);
  auto model = make_model_checked(run.registry, yaml::from_node(cell.cell.model, "<trial model>"),
                                  {data.vocab.size(), trial.max_length, data.vocab.pad()},
                                  trial.seed, device);
  load_checkpoint(*model, checkpoint_file(run, trial));
  // A stop signal ends the probing between hook points (it runs here, in the coordinator,
  // where no runner drains): the study then stops as after a drain, nothing in flight.
  const auto check_stop = [] {
    if (stop_signal() != 0) throw Interrupted(stop_signal(), 0, stop_signals_received() > 1);
  };
  return measure_probe({*model, data, trial, device, check_stop}, settings);
}

int ProbeStudy::run(StudyRun& run, const std::vector<PreparedCell>& cells) const {
  const StudyConfig& config = run.config;
  Table table;
  table.header = {"cell",          "chosen",        "length",         "hook",
                  "probe",         "ablation drop", "nullspace drop", "random drop",
                  "patch changed", "patch readout"};
  size_t errors = 0;
  for (size_t c = 0; c < cells.size(); ++c) {
    const PreparedCell& cell = cells[c];
    const uint64_t n = training_size(config, cell);
    const std::string context = cell_context(config, c, cells.size(), cell.label);
    StepOptions options;
    // One configuration: the step ends at its first success; several: every one trains.
    options.first_success = settings_.configurations == 1;
    options.checkpoints = StepOptions::Checkpoints::kRequire;
    StepResult step = run_step(run, cell, n, options, context + " N=" + std::to_string(n));
    run.progress.clear();
    errors += step.errors;
    std::vector<size_t> ranked = ranked_configurations(step, [&](size_t i) {
      return archive_file_problem(checkpoint_file(run, step.trials[i])).empty();
    });
    if (ranked.empty()) {
      run.progress.log(context + ": no configuration finished (errors); rerun to retry");
      table.rows.push_back({cell.label, "-", "-", "-", "error", "", "", "", "", ""});
      continue;
    }
    if (ranked.size() > static_cast<size_t>(settings_.configurations))
      ranked.resize(static_cast<size_t>(settings_.configurations));
    for (const size_t chosen : ranked) {
      const TrialSpec& trial = step.trials[chosen];
      const TrialResult& result = step.results[chosen];
      const ProbeMeasureSettings settings = measurement(cell.cell.L);
      const std::string key =
          content_key("probe " + trial.key() + " " + yaml::flow(settings.to_yaml()));
      YAML::Node value;
      bool stored = false;
      if (auto found = run.store.find_outcome(key)) {
        value = found->value;
        stored = true;
      } else {
        run.progress.status(context + " | probing " + trial.configuration() + " | " +
                            format_duration(run.progress.elapsed()));
        value["cell"] = cell.cell.to_yaml();
        value["plugins"] = cell.plugin_versions;
        value["n"] = n;
        value["lr"] = exact(trial.lr);
        value["seed"] = trial.seed;
        value["status"] = to_string(result.status);
        value["best_loss"] = exact(result.best_loss);
        // The analysed model (the final weights): its validation loss and final-state accuracy.
        value["final_loss"] = exact(result.last.loss);
        value["final_accuracy"] = exact(result.last.final_accuracy);
        value["states"] = cell.num_states;
        value["settings"] = settings.to_yaml();
        try {
          value["lengths"] = probe_checkpoint(run, cell, trial, settings).to_yaml();
        } catch (const Interrupted&) {
          throw;
        } catch (const std::exception& e) {
          // A model whose hooks the probes cannot read (or an unreadable checkpoint) is this
          // cell's error, not the study's end.
          run.progress.clear();
          run.progress.log(context + ": probing " + trial.configuration() + " failed: " + e.what());
          table.rows.push_back(
              {cell.label, trial.configuration(), "-", "-", "error", "", "", "", "", ""});
          ++errors;
          continue;
        }
        run.store.put_outcome({key, config.name, "probe", cell.label, value, ""});
        run.progress.clear();
      }
      std::string line = context + ": " + trial.configuration() + " (" + to_string(result.status) +
                         ")" + (stored ? " (probes stored)" : "");
      const ProbeMeasureSettings stored_settings =
          ProbeMeasureSettings::from_yaml(value["settings"]);
      for (const LengthMeasurement& length :
           ProbeMeasurement::from_yaml(value["lengths"]).lengths) {
        if (!length.probed) continue;  // a length with one sequence: nothing probed
        const int at = length.length;
        const double chance = length.final_chance;
        const double clean = above_chance(length.final_accuracy, chance);
        std::string best_hook;
        double best = -1e9;
        for (const HookNumbers& h : read_hooks(length, clean, chance, stored_settings)) {
          if (h.probe > best) best = h.probe, best_hook = h.name;
          table.rows.push_back({cell.label, trial.configuration(), multiple_label(at, cell.cell.L),
                                h.name, format_fraction(h.probe), format_fraction(h.ablation),
                                nullspace_text({h.nullspace}, {h.dims}, h.capped),
                                format_spread({h.random}), format_fraction(h.changed),
                                format_fraction(h.readout)});
        }
        line += "; " + multiple_label(at, cell.cell.L) + ": model " + format_fraction(clean) +
                (best_hook.empty() ? ", no hook points to probe"
                                   : ", best probe " + format_fraction(best) + " at " + best_hook);
        std::string conv_shares;
        for (const ConvNumbers& conv : read_convs(length, clean, chance, {}))
          conv_shares += (conv_shares.empty() ? "" : " ") + format_fraction(conv.patch);
        if (!conv_shares.empty()) line += ", conv patch by block " + conv_shares;
      }
      run.progress.log(line);
    }
  }
  const std::string note =
      "probe: the linear probe's held-out accuracy for the state at every action position "
      "(0 = the majority class, 1 = perfect); ablation drop: the model's normalized final-state "
      "accuracy minus the same with the probe's directions ablated at that hook; nullspace drop: "
      "the same with the whole subspace a linear probe reads removed (iterative nullspace "
      "projection; its dimension in square brackets, + where the rounds ran out before a probe "
      "was at chance), random drop: with a random subspace of that "
      "dimension removed (the control); patch: the share "
      "of the clean-corrupted logit gap recovered by patching the clean activation at the changed "
      "position or at the readout.";
  run.out << "\n" << table.text() << "\n" << note << "\n";
  write_file_atomically((run.out_dir / (config.name + ".md")).string(),
                        "# " + config.name + ": layerwise probes, ablation and patching\n\n" +
                            note + "\n\n" + table.markdown());
  write_file_atomically((run.out_dir / (config.name + ".csv")).string(), table.csv());
  return errors > 0 ? 1 : 0;
}

void ProbeStudy::report(ReportContext& report) const {
  Table table;
  table.header = {
      "model",          "format",      "task",          "distribution", "L",     "analysed",
      "length",         "model acc",   "hook",          "depth",        "probe", "ablation drop",
      "nullspace drop", "random drop", "patch changed", "patch readout"};
  Table depth_table;
  depth_table.header = {"model",       "format",     "task",     "distribution",
                        "L",           "analysed",   "length",   "model acc",
                        "readable at", "probe area", "formed at"};
  Table conv_table;
  conv_table.header = {"model",       "format",   "task",       "distribution",
                       "L",           "analysed", "length",     "model acc",
                       "convolution", "depth",    "conv patch", "conv ablation drop"};
  size_t unlearned_cells = 0, none_counted = 0;
  // Per (task, format, length as a multiple of L) two figures against relative depth, one line
  // per model and cell at the mean over its analysed configurations: the probe's accuracy (what
  // is readable) and the patching recovery at the readout (where the answer is formed).
  std::map<std::tuple<int, int, std::string, std::string, std::string>, std::pair<Figure, Figure>>
      figures;
  // And for models with convolutions, the conv patch against depth.
  std::map<std::tuple<int, int, std::string, std::string, std::string>, Figure> conv_figures;
  for (const auto& [label, outcomes] : report.latest_per_configuration("probe")) {
    const YAML::Node cell = outcomes.front()->value["cell"];
    const RowKey row = report.row_of(cell["task"], cell["model"], format_label(cell["format"]));
    const std::string distribution = cell["distribution"].as<std::string>();
    const int L = cell["L"].as<int>();
    // The succeeded configurations when there are any (a model that learned nothing has no
    // solution to read), else every analysed one, marked.
    const Counted counted = counted_configurations(outcomes, report.min_accuracy);
    const bool learned = counted.learned;
    const std::string& analysed = counted.text;
    if (!counted.any()) {  // no model to read: one row that says so, no curves
      ++none_counted;
      const std::vector<std::string> head{row.model,    row.format,        row.task,
                                          distribution, std::to_string(L), analysed};
      std::vector<std::string> line = head, depth_line = head;
      line.resize(table.header.size(), "–");
      depth_line.resize(depth_table.header.size(), "–");
      table.rows.push_back(line);
      depth_table.rows.push_back(depth_line);
      continue;
    }
    unlearned_cells += !learned;
    std::vector<const StoredOutcome*> used;
    for (size_t i = 0; i < outcomes.size(); ++i)
      if (counted.counted[i]) used.push_back(outcomes[i]);
    // Per length: the hooks in forward order, each configuration's numbers.
    std::map<int, std::vector<std::string>> hook_order;
    std::map<int, std::map<std::string, std::vector<HookNumbers>>> numbers;
    std::map<int, std::vector<double>> model_acc;
    std::map<int, std::vector<double>> readable_at, area, formed_at;
    std::map<int, std::vector<std::string>> conv_order;
    std::map<int, std::map<std::string, std::vector<ConvNumbers>>> conv_numbers;
    for (const StoredOutcome* o : used) {
      const ProbeMeasureSettings settings = ProbeMeasureSettings::from_yaml(o->value["settings"]);
      for (const LengthMeasurement& length :
           ProbeMeasurement::from_yaml(o->value["lengths"]).lengths) {
        if (!length.probed) continue;
        const int at = length.length;
        const double chance = length.final_chance;
        const double clean = above_chance(length.final_accuracy, chance);
        model_acc[at].push_back(clean);
        double first_readable = NAN, first_formed = NAN, area_sum = 0, last_x = NAN, last_p = 0;
        size_t points = 0;
        const std::vector<HookNumbers> hooks = read_hooks(length, clean, chance, settings);
        for (const ConvNumbers& conv : read_convs(length, clean, chance, hooks)) {
          if (conv_numbers[at].find(conv.name) == conv_numbers[at].end())
            conv_order[at].push_back(conv.name);
          conv_numbers[at][conv.name].push_back(conv);
        }
        for (const HookNumbers& h : hooks) {
          if (numbers[at].find(h.name) == numbers[at].end()) hook_order[at].push_back(h.name);
          numbers[at][h.name].push_back(h);
          if (std::isnan(h.depth)) continue;  // the final norm
          if (!std::isnan(last_x)) area_sum += (h.depth - last_x) * (h.probe + last_p) / 2;
          last_x = h.depth, last_p = h.probe, ++points;
          if (!std::isfinite(first_readable) && h.probe >= 0.9) first_readable = h.depth;
          if (!std::isfinite(first_formed) && h.readout >= 0.9) first_formed = h.depth;
        }
        readable_at[at].push_back(first_readable);
        area[at].push_back(points > 1 ? area_sum : last_p);  // one layer: its probe there
        formed_at[at].push_back(first_formed);
      }
    }
    const std::string marked = learned ? "" : " (failed)";
    for (const auto& [at, order] : hook_order) {
      const std::string multiple = multiple_label(at, L);
      const auto key =
          std::make_tuple(row.task_rank, row.format_rank, row.task, row.format, multiple);
      // The figures of one (task, format, length), against the same depth axis.
      const std::string stem = safe(row.task) + "_" + safe(row.format) + "_" + safe(multiple);
      const std::string where = paper_task_name(cell["task"]) + ", " + row.format + ", length " +
                                (multiple == "x1" ? std::string("L") : multiple.substr(1) + "L");
      const std::string axes =
          "set yrange [-0.1:1.1]\nset xrange [-0.05:1.05]\nset key bottom right\n";
      const std::string depth = "relative depth (embedding 0, last block or recurrent layer 1)";
      auto& [probe_figure, patch_figure] = figures[key];
      if (probe_figure.stem.empty()) {
        probe_figure = {"probe_" + stem,
                        "Linear probe of the state by depth: " + where,
                        depth,
                        "normalized probe accuracy (mean over the analysed configurations)",
                        "",
                        false,
                        axes,
                        {}};
        patch_figure = {"patch_" + stem,
                        "Patching at the readout by depth: " + where,
                        depth,
                        "share of the logit gap recovered (mean)",
                        "",
                        false,
                        axes,
                        {}};
      }
      const std::string series = model_legend(cell["model"], row.model) + " " + distribution +
                                 " L=" + std::to_string(L) + marked;
      Figure::Series probes{series, {}, false}, patches{series, {}, false};
      for (const auto& name : order) {
        const auto& list = numbers[at][name];
        std::vector<double> probe, ablation, nullspace, random, dims, changed, readout;
        bool capped = false;
        for (const auto& h : list) {
          probe.push_back(h.probe), ablation.push_back(h.ablation);
          nullspace.push_back(h.nullspace), random.push_back(h.random), dims.push_back(h.dims);
          changed.push_back(h.changed), readout.push_back(h.readout);
          capped = capped || h.capped;
        }
        const double x = list.front().depth;
        if (!std::isnan(x)) {
          probes.points.push_back({x, mean_of_finite(probe)});
          patches.points.push_back({x, mean_of_finite(readout)});
        }
        table.rows.push_back({row.model, row.format, row.task, distribution, std::to_string(L),
                              analysed, multiple, format_spread(model_acc[at]), name,
                              std::isnan(x) ? std::string("norm") : format_number(x, 3),
                              format_spread(probe), format_spread(ablation),
                              nullspace_text(nullspace, dims, capped), format_spread(random),
                              format_spread(changed), format_spread(readout)});
      }
      probe_figure.series.push_back(probes);
      patch_figure.series.push_back(patches);
      const auto depths = [](const std::vector<double>& values) {
        size_t never = 0;
        for (double v : values) never += !std::isfinite(v);
        std::string text = format_spread(values);
        if (never == values.size()) return std::string("never");
        if (never > 0) text += " (never in " + std::to_string(never) + ")";
        return text;
      };
      depth_table.rows.push_back({row.model, row.format, row.task, distribution, std::to_string(L),
                                  analysed, multiple, format_spread(model_acc[at]),
                                  depths(readable_at[at]), format_spread(area[at]),
                                  depths(formed_at[at])});
      if (conv_order[at].empty()) continue;
      Figure& conv_figure = conv_figures[key];
      if (conv_figure.stem.empty())
        conv_figure = {"conv_" + stem,
                       "Patching each block's convolution: " + where,
                       depth,
                       "share of the logit gap recovered (mean)",
                       "",
                       false,
                       axes,
                       {}};
      Figure::Series shares{series, {}, false};
      for (const auto& name : conv_order[at]) {
        std::vector<double> patch, ablation;
        const auto& list = conv_numbers[at][name];
        for (const auto& c : list) patch.push_back(c.patch), ablation.push_back(c.ablation);
        const double x = list.front().depth;
        if (!std::isnan(x)) shares.points.push_back({x, mean_of_finite(patch)});
        conv_table.rows.push_back({row.model, row.format, row.task, distribution, std::to_string(L),
                                   analysed, multiple, format_spread(model_acc[at]), name,
                                   std::isnan(x) ? std::string("-") : format_number(x, 3),
                                   format_spread(patch), format_spread(ablation)});
      }
      conv_figure.series.push_back(shares);
    }
  }
  if (table.rows.empty()) return;
  const std::string analysed_note =
      " analysed: the configurations read for the cell (`probe.configurations`, the best "
      "finished ones of its N by final validation loss, successes first); the numbers are over "
      "those that succeeded, or over all of them, marked failed, when none did; each is the "
      "mean, with the range (lowest to highest) in brackets when they differ." +
      (report.min_accuracy > 0
           ? " A configuration whose final-state accuracy on the validation set is below " +
                 format_number(report.min_accuracy, 3) + " (report.min_accuracy) is left out" +
                 (none_counted ? std::string("; a cell with none at or above it has one row of "
                                             "dashes and no curve")
                               : std::string()) +
                 "."
           : std::string());
  report.write_table(
      "probe_table", "Layerwise probes, ablation and patching",
      "probe: held-out accuracy of a linear probe for the current state at every "
      "action position, normalized (0 = the majority class, 1 = perfect). ablation "
      "drop: the model's normalized final-state accuracy minus the same with the "
      "probe's directions ablated at that hook. nullspace drop: the same with the whole subspace "
      "a linear probe reads removed by iterative nullspace projection (its mean dimension in "
      "square brackets, + where probe.nullspace_rounds ran out before a probe was at chance); "
      "random drop: with a random subspace of that dimension removed, the control. "
      "patch changed / readout: the share "
      "of the clean-corrupted logit gap recovered by patching the clean activation "
      "at the changed action's position / at the readout. depth: the embedding 0, each block "
      "or recurrent layer its index over the last one's (the last 1, for every model; a final "
      "norm is marked norm and left out of the figures). model acc: the analysed models' "
      "normalized final-state accuracy on the probed sequences of that length." +
          analysed_note +
          std::string(unlearned_cells ? " A cell marked failed has no model that learned a "
                                        "solution: its rows describe unlearned models."
                                      : ""),
      table);
  report.write_table(
      "probe_depth", "Where the state becomes readable and where the answer is formed",
      "readable at: the relative depth (embedding 0, last block or recurrent layer 1) of the "
      "first hook whose probe reaches 0.9; probe area: the area under the probe's curve over "
      "relative depth (1: readable from the embedding on; a model with one layer: its probe "
      "there); formed at: the first hook whose patch at the readout recovers 0.9 of the gap; "
      "never: no hook reaches it (in how many configurations, where only some do)." +
          analysed_note,
      depth_table);
  if (!conv_table.rows.empty())
    report.write_table(
        "probe_conv", "Attribution through each block's convolution",
        "For models whose blocks mark their causal convolution (Mamba's, Mamba-2's: the inner "
        "hook point <block>.conv, the convolution's output after its SiLU, all the block's scan "
        "reads of the sequence). conv patch: the share of the clean-corrupted logit gap at the "
        "readout recovered by patching the clean convolution output into the corrupted run at "
        "every position: what of the change reaches the answer through this block's "
        "convolution (1 - it: around it, through the residual stream and the gate). conv "
        "ablation drop: the model's normalized final-state accuracy minus the same with the "
        "convolution's output set to its mean over the fitting half at each position. depth: "
        "the block's relative depth." +
            analysed_note,
        conv_table);
  for (auto& [which, f] : conv_figures) {
    distinguish_series(f);
    report.figures.push_back(f);
  }
  // Identical curves (a recurrent layer's readout patched, 1 by construction) stay visible.
  for (auto& [which, pair] : figures)
    for (Figure* f : {&pair.first, &pair.second}) {
      distinguish_series(*f);
      report.figures.push_back(*f);
    }
}

}  // namespace

std::unique_ptr<Study> make_probe_study() { return std::make_unique<ProbeStudy>(); }

OutcomeTables probe_outcome_tables() {
  OutcomeTables t;
  t.kind = "probe";
  t.schema = R"sql(
CREATE TABLE IF NOT EXISTS probe_hooks (
  outcome            TEXT NOT NULL,     -- outcomes.key (kind probe): one analysed configuration
  length             INTEGER NOT NULL,  -- the probed length
  position           INTEGER NOT NULL,  -- the hook's place in the forward pass, from 0
  hook               TEXT NOT NULL,
  depth              REAL,              -- relative: embedding 0, last layer 1; NULL: the norm
  final_accuracy     REAL,              -- the model's at this length (held-out half)
  final_chance       REAL,
  probe              REAL,              -- the probe's accuracy above chance (0: majority)
  probe_accuracy     REAL,
  probe_chance       REAL,
  ablated_accuracy   REAL,              -- the model's, the probe's directions ablated
  nullspace_dims     INTEGER,           -- NULL where the nullspace was not measured
  nullspace_rounds   INTEGER,
  nullspace_probe    REAL,
  nullspace_accuracy REAL,
  random_accuracy    REAL,
  patch_changed      REAL,              -- gap share recovered patching at the changed action
  patch_readout      REAL,              -- ... at the readout
  PRIMARY KEY (outcome, length, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS probe_convs (
  outcome          TEXT NOT NULL,
  length           INTEGER NOT NULL,
  conv             TEXT NOT NULL,       -- "<block>.conv"
  ablated_accuracy REAL,                -- the model's, the convolution's output at its mean
  patch            REAL,                -- gap share its clean output carries
  PRIMARY KEY (outcome, length, conv)
) WITHOUT ROWID;
)sql";
  t.tables = {"probe_hooks", "probe_convs"};
  t.write = [](const YAML::Node& value, OutcomeWriter& out) {
    using V = Store::Value;
    const auto real = [](double x) { return std::isfinite(x) ? V::of(x) : V{}; };
    for (const LengthMeasurement& l : ProbeMeasurement::from_yaml(value["lengths"]).lengths) {
      const std::vector<double> depths = relative_depths(l);
      for (size_t i = 0; i < l.hooks.size(); ++i) {
        const HookMeasurement& h = l.hooks[i];
        const auto& n = h.nullspace;
        out.insert("probe_hooks",
                   {V::of(int64_t{l.length}), V::of(static_cast<int64_t>(i)), V::of(h.name),
                    real(depths[i]), real(l.final_accuracy), real(l.final_chance), real(h.probe),
                    real(h.probe_accuracy), real(h.probe_chance), real(h.ablated_accuracy),
                    n ? V::of(n->dims) : V{}, n ? V::of(n->rounds) : V{}, n ? real(n->probe) : V{},
                    n ? real(n->accuracy) : V{}, n ? real(n->random_accuracy) : V{},
                    real(h.patch_changed), real(h.patch_readout)});
      }
      for (const ConvMeasurement& c : l.convs)
        out.insert("probe_convs", {V::of(int64_t{l.length}), V::of(c.name),
                                   real(c.ablated_accuracy), real(c.patch)});
    }
  };
  const std::string cell =
      "o.study, o.label, o.cell_key, {cell}, o.format, o.distribution, o.L, o.n AS N, o.lr, "
      "o.seed, ";
  t.exports = {
      {"probe",
       "one hook point of one analysed configuration at one length: probe, ablation, nullspace "
       "and patching",
       "SELECT h.outcome, " + cell +
           "h.length, h.position, h.hook, h.depth, h.final_accuracy, h.final_chance, h.probe, "
           "h.probe_accuracy, h.probe_chance, h.ablated_accuracy, h.nullspace_dims, "
           "h.nullspace_rounds, h.nullspace_probe, h.nullspace_accuracy, h.random_accuracy, "
           "h.patch_changed, h.patch_readout, o.created FROM probe_hooks h JOIN outcomes o ON "
           "o.key = h.outcome ORDER BY o.rowid, h.length, h.position"},
      {"probe_convs", "one block's convolution of one analysed configuration at one length",
       "SELECT c.outcome, " + cell +
           "c.length, c.conv, c.ablated_accuracy, c.patch, o.created FROM probe_convs c JOIN "
           "outcomes o ON o.key = c.outcome ORDER BY o.rowid, c.length, c.conv"}};
  return t;
}

}  // namespace induct
