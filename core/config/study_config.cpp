#include "config/study_config.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "options_yaml.hpp"

namespace induct {

namespace {

std::string one_of(const Options& section, const std::string& key, const std::string& fallback,
                   const std::vector<std::string>& allowed) {
  std::string value = fallback.empty() ? section.require<std::string>(key)
                                       : section.get<std::string>(key, fallback);
  for (const auto& a : allowed)
    if (a == value) return value;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  section.fail(key, "'" + value + "' is not one of: " + list);
}

int64_t at_least(const Options& section, const std::string& key, int64_t fallback,
                 int64_t minimum) {
  auto value = section.get<long>(key, fallback);
  if (value < minimum) section.fail(key, "must be at least " + std::to_string(minimum));
  return value;
}

// The largest batch: far past the paper (64), and small enough that asking for more is an error
// naming the key, not a failure in the allocator.
constexpr long kMaxBatch = 1'000'000;

int read_L(const Options& data) {
  const auto L = data.require<long>("L");
  if (L < 2) data.fail("L", "must be at least 2 (lengths run over 2..L)");
  if (L > kMaxLength) data.fail("L", "must be at most " + std::to_string(kMaxLength));
  return static_cast<int>(L);
}

// The cell keys of one document that the study kind reads (a kind that sets the distribution
// and L itself does not read them, so they are unknown keys if present).
CellSpec read_cell(const Options& root, const CellKeys& keys) {
  CellSpec cell;
  cell.root = root;
  cell.task = root.section("task");
  cell.task_name = cell.task.require<std::string>("name");
  cell.model = root.section("model");
  cell.model_name = cell.model.require<std::string>("name");
  Options data = root.section("data");
  // `format: outcome`, or a section with its options: `format: {name: code_trace, every: 4}`.
  if (const YAML::Node raw = yaml::raw(data)["format"]; raw && raw.IsMap()) {
    cell.format = data.section("format");
  } else {
    YAML::Node named(YAML::NodeType::Map);
    named["name"] = data.require<std::string>("format");
    cell.format = yaml::from_node(named, data.where("format"));
  }
  cell.format_name = cell.format.require<std::string>("name");
  if (keys.distribution_and_L) {
    cell.distribution = one_of(data, "distribution", "", distribution_names());
    cell.L = read_L(data);
  }
  cell.n_cap = data.get<unsigned long>("n_cap", cell.n_cap);
  if (cell.n_cap < 1) data.fail("n_cap", "must be at least 1");
  Options validation = data.section("validation");
  cell.validation.max_size = validation.get<unsigned long>("max_size", cell.validation.max_size);
  cell.validation.fraction = validation.get<double>("fraction", cell.validation.fraction);
  if (!(cell.validation.fraction >= 0 && cell.validation.fraction < 1))
    validation.fail("fraction", "must be in [0, 1)");
  if (keys.n != CellKeys::N::kNone) {
    // N: a number, or "max" for N_max of the cell (the default of some kinds).
    if (data.has("N") ? data.get<std::string>("N", "") == "max"
                      : keys.n == CellKeys::N::kMaxByDefault) {
      cell.n = 0;
    } else {
      cell.n = data.require<unsigned long>("N");
      if (cell.n < 1) data.fail("N", "must be at least 1 (or 'max')");
    }
  }
  return cell;
}

TrainSettings read_training(const Options& training, std::vector<double>& learning_rates,
                            std::vector<uint64_t>& seeds) {
  learning_rates = training.get_list<double>("learning_rates", {1e-3, 1e-4, 1e-5});
  if (learning_rates.empty()) training.fail("learning_rates", "must not be empty");
  for (double lr : learning_rates)
    if (!(lr > 0) || !std::isfinite(lr))
      training.fail("learning_rates", "every learning rate must be a positive number");
  seeds = training.get_list<unsigned long>("seeds", {10, 20, 30, 40, 50});
  if (seeds.empty()) training.fail("seeds", "must not be empty");
  if (std::set<uint64_t>(seeds.begin(), seeds.end()).size() != seeds.size())
    training.fail("seeds", "must not repeat a seed");
  TrainSettings s;
  s.batch_size = get_in_range(training, "batch_size", s.batch_size, 1, kMaxBatch);
  s.max_steps = at_least(training, "max_steps", s.max_steps, 1);
  s.eval_every = at_least(training, "eval_every", s.eval_every, 1);
  s.eval_batch_size = get_in_range(training, "eval_batch_size", s.eval_batch_size, 1, kMaxBatch);
  s.epsilon = training.get<double>("epsilon", s.epsilon);
  if (!(s.epsilon > 0) || !std::isfinite(s.epsilon))
    training.fail("epsilon", "must be a positive finite number");
  s.curriculum = training.get<bool>("curriculum", s.curriculum);
  s.stall_window = at_least(training, "stall_window", s.stall_window, 0);
  for (const char* key : {"stall_improvement", "stall_projection", "stall_fraction",
                          "plateau_margin", "plateau_level", "plateau_patience", "memorised_loss"})
    if (s.stall_window == 0 && training.has(key))
      training.fail(key, "needs training.stall_window (the failure detector is off without it)");
  if (s.stall_window > 0) {
    s.stall_improvement = training.get<double>("stall_improvement", s.stall_improvement);
    if (!(s.stall_improvement > 0 && s.stall_improvement < 1))
      training.fail("stall_improvement", "must be in (0, 1)");
    if (s.stall_window % s.eval_every != 0)
      training.fail("stall_window",
                    "must be a multiple of eval_every (" + std::to_string(s.eval_every) + ")");
    s.stall_projection = training.get<double>("stall_projection", s.stall_projection);
    if (!(s.stall_projection >= 0 && std::isfinite(s.stall_projection)))
      training.fail("stall_projection", "must be 0 (off) or positive");
    s.stall_fraction = training.get<double>("stall_fraction", s.stall_fraction);
    if (!(s.stall_fraction >= 0 && s.stall_fraction < 1))
      training.fail("stall_fraction", "must be in [0, 1) (0: the window is stall_window steps)");
    s.plateau_margin = training.get<double>("plateau_margin", s.plateau_margin);
    if (!(s.plateau_margin >= 0 && s.plateau_margin < 1))
      training.fail("plateau_margin", "must be in [0, 1) (0: no plateau protection)");
    const auto level = training.get<std::string>("plateau_level", to_string(s.plateau_level));
    if (level != "task" && level != "validation")
      training.fail("plateau_level",
                    "must be task (the chance loss over the cell's sequences) or validation "
                    "(over the validation set's own targets)");
    s.plateau_level = plateau_level_from(level);
    s.plateau_patience = at_least(training, "plateau_patience", s.plateau_patience, 0);
    if (s.plateau_patience % s.eval_every != 0)
      training.fail("plateau_patience",
                    "must be a multiple of eval_every (" + std::to_string(s.eval_every) + ")");
    s.memorised_loss = training.get<double>("memorised_loss", s.memorised_loss);
    if (!(s.memorised_loss >= 0 && std::isfinite(s.memorised_loss)))
      training.fail("memorised_loss", "must be 0 (off) or positive");
  }
  return s;
}

RunSettings read_run(const Options& run) {
  RunSettings r;
  // Far past any machine, and small enough that OpenMP and the pool never see a count that
  // hangs them or wraps in an int.
  constexpr long kMaxThreads = 1024;
  r.workers = static_cast<int>(get_in_range(run, "workers", r.workers, 0, kMaxThreads));
  r.threads = static_cast<int>(get_in_range(run, "threads", r.threads, 1, kMaxThreads));
  r.blas_threads =
      static_cast<int>(get_in_range(run, "blas_threads", r.blas_threads, 0, kMaxThreads));
  r.device = run.get<std::string>("device", r.device);
  const bool cuda_index = r.device.rfind("cuda:", 0) == 0 && r.device.size() > 5 &&
                          r.device.size() < 9 &&
                          r.device.find_first_not_of("0123456789", 5) == std::string::npos;
  if (r.device != "cpu" && r.device != "cuda" && !cuda_index)
    run.fail("device", "must be cpu, cuda or cuda:N (N a GPU index), not '" + r.device + "'");
  r.plugin_path = run.get_list<std::string>("plugin_path", {});
  r.state_every = at_least(run, "state_every", r.state_every, 0);
  r.keep_states = run.get<std::string>("keep_states", r.keep_states);
  if (r.keep_states != "stopped" && r.keep_states != "failed" && r.keep_states != "none")
    run.fail("keep_states", "must be stopped, failed or none, not '" + r.keep_states + "'");
  return r;
}

// The grid: a tree whose leaves are lists (or single values) of values for a dotted path under
// task, model or data. Cells are the cartesian product, the last path varying fastest.
struct GridAxis {
  std::string path;
  std::vector<YAML::Node> values;
  std::vector<std::string> where;
};

void collect_axes(const YAML::Node& node, const std::string& prefix, const Options& root,
                  const std::string& file, std::vector<GridAxis>& axes) {
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    const YAML::Node value = entry.second;
    // A grid given by --set is located at the --set, not at a line of the file.
    const std::string via = yaml::override_for(root, "grid." + path);
    auto at = [&](const YAML::Node& n) { return via.empty() ? yaml::location(file, n) : via; };
    const std::string head = path.substr(0, path.find('.'));
    if (head != "task" && head != "model" && head != "data")
      throw ConfigError(at(entry.first) + ": grid." + path +
                        ": a grid varies keys under task, model or data");
    if (value.IsMap()) {
      collect_axes(value, path, root, file, axes);
      continue;
    }
    GridAxis axis;
    axis.path = path;
    if (value.IsNull()) throw ConfigError(at(entry.first) + ": grid." + path + ": has no values");
    if (value.IsSequence()) {
      if (value.size() == 0) throw ConfigError(at(value) + ": grid." + path + ": an empty list");
      for (const auto& v : value) {
        axis.values.push_back(v);
        axis.where.push_back(at(v) + " (grid " + path + ")");
      }
    } else {
      axis.values.push_back(value);
      axis.where.push_back(at(value) + " (grid " + path + ")");
    }
    // One value per key: "data.L" and "data: {L: ...}" name the same key, and a grid of
    // "model" beside "model.hidden" would set the same key twice.
    for (const auto& other : axes) {
      const bool same = other.path == path;
      if (same || path.rfind(other.path + ".", 0) == 0 || other.path.rfind(path + ".", 0) == 0)
        throw ConfigError(
            at(entry.first) + ": grid." + path +
            (same ? ": given twice (also at " : ": overlaps grid." + other.path + " (at ") +
            other.where.front().substr(0, other.where.front().find(" (grid")) + ")");
    }
    axes.push_back(axis);
  }
}

// The study's cells are the grid's product; each holds its own copy of the document.
constexpr size_t kMaxCells = 5'000;

using yaml::flow;

// "${...}" in a value: induct does not interpolate (a Hydra habit), so such a value would be kept
// as literal text; refused, naming where it was written.
void refuse_interpolation(const Options& root, const std::string& file, const YAML::Node& node,
                          const std::string& path) {
  if (node.IsMap()) {
    for (const auto& entry : node)
      refuse_interpolation(root, file, entry.second,
                           (path.empty() ? "" : path + ".") + entry.first.Scalar());
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) refuse_interpolation(root, file, node[i], path);
  } else if (node.IsScalar() && node.Scalar().find("${") != std::string::npos) {
    const std::string via = yaml::override_for(root, path);
    throw ConfigError((via.empty() ? yaml::location(file, node) : "--set " + via) + ": " + path +
                      ": '" + node.Scalar() +
                      "' holds ${...}, and induct does not interpolate: a value is taken as "
                      "written (write it out, or vary it with grid:)");
  }
}

}  // namespace

Options read_study_document(const std::string& file, const std::vector<std::string>& overrides) {
  const Options root = yaml::load_file(file, overrides);
  refuse_interpolation(root, file, yaml::raw(root), "");
  return root;
}

Options read_study_document_text(const std::string& text, const std::string& name,
                                 const std::vector<std::string>& overrides) {
  const Options root = yaml::load_string(text, name, overrides);
  refuse_interpolation(root, name, yaml::raw(root), "");
  return root;
}

std::string read_study_kind(const Options& root, const std::vector<std::string>& kinds) {
  return one_of(root, "study", "train", kinds);
}

StudyConfig read_study(const Options& root, const std::string& file,
                       const std::vector<std::string>& overrides, const std::string& kind,
                       const CellKeys& keys) {
  StudyConfig study;
  study.file = file;
  study.root = root;
  study.kind = kind;
  study.name = root.get<std::string>("name", std::filesystem::path(file).stem().string());
  if (study.name.empty() || study.name.find('/') != std::string::npos)
    root.fail("name", "must be a non-empty name without '/'");
  study.training = read_training(root.section("training"), study.learning_rates, study.seeds);
  study.run = read_run(root.section("run"));
  if (root.has("report")) {
    const Options report = root.section("report");
    study.report.factor = report.get<double>("factor", study.report.factor);
    if (!(study.report.factor > 1)) report.fail("factor", "must be above 1");
    study.report.min_accuracy = report.get<double>("min_accuracy", study.report.min_accuracy);
    if (!(study.report.min_accuracy >= 0 && study.report.min_accuracy <= 1))
      report.fail("min_accuracy", "must be in [0, 1]");
    const auto reference = report.get<std::string>("reference", "");
    if (!reference.empty()) {
      // Relative to the study file's folder, as written there.
      const std::filesystem::path path(reference);
      study.report.reference =
          path.is_absolute() || file.empty()
              ? reference
              : (std::filesystem::path(file).parent_path() / path).lexically_normal().string();
    }
    report.reject_unknown_keys("report");
  }
  // Cells: the sections are read per grid point, from the document with that point applied.
  for (const char* section : {"task", "model", "data"}) root.claim(section);
  std::vector<GridAxis> axes;
  if (root.has("grid")) {
    YAML::Node grid = yaml::raw(root)["grid"];
    if (!grid.IsMap()) root.fail("grid", "expected a mapping of dotted keys to lists of values");
    collect_axes(grid, "", root, file, axes);
  }
  // A --set of a key the grid varies would be overwritten at every grid point.
  for (const auto& text : overrides) {
    const std::string set = text.substr(0, text.find('='));
    for (const auto& axis : axes)
      if (set == axis.path || axis.path.rfind(set + ".", 0) == 0 ||
          set.rfind(axis.path + ".", 0) == 0)
        throw ConfigError("--set " + text + ": the grid varies " + axis.path + " (" +
                          axis.where.front().substr(0, axis.where.front().find(" (grid")) +
                          "); change it in the grid, e.g. --set grid." + axis.path + "=[...]");
  }
  size_t cells = 1;
  for (const auto& axis : axes) {
    cells *= axis.values.size();
    if (cells > kMaxCells)
      root.fail("grid", "more than " + std::to_string(kMaxCells) +
                            " cells; split the study into several files");
  }
  root.claim("grid");
  root.reject_unknown_keys("induct");

  std::vector<size_t> index(axes.size(), 0);
  for (;;) {
    std::vector<yaml::Assignment> assignments;
    std::string label;
    for (size_t a = 0; a < axes.size(); ++a) {
      const YAML::Node& value = axes[a].values[index[a]];
      assignments.push_back({axes[a].path, value, axes[a].where[index[a]]});
      label += (label.empty() ? "" : ", ") + axes[a].path + "=" + flow(value);
    }
    // The grid itself is not part of a cell's document (a cell holds no copy of it).
    Options cell_root = axes.empty() ? root : yaml::derive(root, assignments, {"grid"});
    CellSpec cell = read_cell(cell_root, keys);
    cell.grid_label = label;
    study.cells.push_back(cell);
    // Next grid point (odometer, last axis fastest).
    size_t a = axes.size();
    while (a > 0 && ++index[a - 1] == axes[a - 1].values.size()) index[--a] = 0;
    if (a == 0) break;
  }
  return study;
}

std::vector<CellSpec> shard_cells(const std::vector<CellSpec>& cells, size_t index, size_t shards) {
  std::vector<CellSpec> out;
  for (size_t i = index; i < cells.size(); i += shards) out.push_back(cells[i]);
  return out;
}

}  // namespace induct
