// The `induct` command line.
#include <torch/version.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "config/study_config.hpp"
#include "exec/mpi.hpp"
#include "exec/pool.hpp"
#include "exec/runner.hpp"
#include "exec/signals.hpp"
#include "exec/status.hpp"
#include "exec/worker.hpp"
#include "induct/version.hpp"
#include "options_yaml.hpp"
#include "plugin/registry.hpp"
#include "probe/hook_names.hpp"
#include "report/reference.hpp"
#include "report/reports.hpp"
#include "store/export.hpp"
#include "store/merge.hpp"
#include "study/prepare.hpp"
#include "study/progress.hpp"
#include "study/registry.hpp"
#include "study/sample.hpp"
#include "study/step.hpp"
#include "study/step_rate.hpp"
#include "train/archive_file.hpp"
#include "train/trial.hpp"
#include "util/files.hpp"
#include "util/process.hpp"
#include "util/table.hpp"
#include "util/text.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const char* kUsage = R"(usage: induct [--plugin-path PATH]... COMMAND [ARGS]

Measure how much data sequence models need to learn state tracking.

commands:
  run STUDY.yaml [--set key.path=value]... [--out DIR] [--shard I/N]
                      run a study; rerunning resumes it (stored trials are not rerun);
                      --shard: only cells I, I+N, ... (from 0), into runs/NAME.shard-I-of-N
  validate STUDY.yaml [--set key.path=value]... [--time [--cells 1,3,5-8]]
                      check a study and print the cells it would run; --time measures the
                      training steps per second of each distinct model, format and length
                      (of the cells named) and projects the cost of each cell's failures
  sample STUDY.yaml [--cell K] [-n 5] [--split train|validation] [--seed S]
                    [--format text|jsonl]
                      a cell's sequences as the model sees them: tokens by name, the targets
                      where they are scored, where the final state is read
  report DIR [--reference FILE [--factor F]] [--min-accuracy A]
                      write the paper's tables and figures from DIR/results.sqlite, with
                      published values beside ours
  merge OUT DIR...    combine the stores of several folders (a study's shards) into OUT and
                      write its report; different results for one trial are refused
  export DIR [--to PATH] [--format csv|jsonl]
                      the store as tidy tables (one row per observation, numbers as numbers)
                      in DIR/export/ or PATH: trials, histories, per_length, nstar, kappa,
                      lengthgen, probe, probe_convs
  status DIR [--follow]
                      what the study writing DIR has done and is doing (also from another
                      machine: it reads DIR/status.yaml, not the store); --follow: then its
                      events (DIR/events.jsonl) as they come
  plugins             list the models, tasks and formats of every plugin on the plugin path

global options:
  --plugin-path PATH  a plugin library or a folder of them (repeatable); searched before
                      $INDUCT_PLUGIN_PATH and the plugin folder of this installation
  --help              this help (also: induct COMMAND --help)
  --version           versions of induct, its plugin API and libtorch
)";

struct Global {
  std::vector<std::string> plugin_path;
};

// --shard "I/N": shard I (from 0) of N.
std::pair<size_t, size_t> parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  size_t index = 0, shards = 0;
  try {
    size_t used_i = 0, used_n = 0;
    if (slash == std::string::npos) throw std::invalid_argument("no /");
    index = std::stoul(text.substr(0, slash), &used_i);
    shards = std::stoul(text.substr(slash + 1), &used_n);
    if (used_i != slash || used_n != text.size() - slash - 1 || text[0] == '-' ||
        text[slash + 1] == '-')
      throw std::invalid_argument("digits");
  } catch (const std::exception&) {
    throw po::error("--shard: '" + text + "' is not I/N (e.g. 0/4; Slurm: " +
                    "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)");
  }
  if (shards < 1 || shards > 100000 || index >= shards)
    throw po::error("--shard: '" + text + "': I must be in 0..N-1 and N in 1..100000");
  return {index, shards};
}

induct::StudyConfig load(const std::vector<std::string>& args, const std::string& command,
                         const Global& global, po::variables_map& vm) {
  po::options_description options(command + " options");
  options.add_options()("study", po::value<std::string>(), "study file")(
      "set", po::value<std::vector<std::string>>()->composing(), "override key.path=value")(
      "out", po::value<std::string>(), "output folder (default runs/<study name>)")(
      "time",
      "validate: train a few steps of each distinct step shape here and project what each "
      "cell's failing search step costs")("cells", po::value<std::string>(),
                                          "validate --time: only these cells (e.g. 1,3,5-8)")(
      "shard", po::value<std::string>(),
      "run: only shard I of N (I/N, I from 0): cells I, I+N, I+2N, ... into their own folder")(
      "cell", po::value<size_t>(), "sample: the cell (numbered from 1, as validate lists them)")(
      "count,n", po::value<uint64_t>(), "sample: how many sequences (default 5)")(
      "split", po::value<std::string>(), "sample: train (default) or validation")(
      "seed", po::value<uint64_t>(), "sample: the seed (default the study's first)")(
      "format", po::value<std::string>(), "sample: text (default) or jsonl")(
      "help", "help for this command");
  po::positional_options_description positional;
  positional.add("study", 1);
  po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << options;
    std::exit(0);
  }
  if (!vm.count("study")) throw po::error("'" + command + "' needs a study file");
  const std::string file = vm["study"].as<std::string>();
  if (!fs::exists(file)) throw induct::ConfigError(file + ": no such study file");
  auto sets =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  induct::StudyConfig config = induct::load_study(file, sets);
  if (vm.count("shard")) {
    if (command != "run") throw po::error("--shard is an option of run");
    const auto [index, shards] = parse_shard(vm["shard"].as<std::string>());
    config.cells = induct::shard_cells(config.cells, index, shards);
  }
  // The command line's plugin folders come first.
  std::vector<std::string> path = global.plugin_path;
  path.insert(path.end(), config.run.plugin_path.begin(), config.run.plugin_path.end());
  config.run.plugin_path = path;
  return config;
}

// A refused library in a plugin folder is a warning (the folder's other plugins still serve);
// a library the user named itself is an error.
void report_problems(const induct::PluginRegistry& registry) {
  for (const auto& problem : registry.problems())
    if (problem.named) throw induct::PluginError("refused plugin " + problem.message);
  for (const auto& problem : registry.problems())
    std::cerr << "warning: refused plugin " << problem.message << "\n";
}

int command_plugins(const Global& global) {
  induct::PluginRegistry registry;
  auto path = induct::plugin_search_path(global.plugin_path);
  registry.load_all(path);
  induct::Table table;
  table.header = {"kind", "name", "plugin", "library", "description"};
  for (const auto& c : registry.components())
    table.rows.push_back({c.kind, c.name, c.plugin_name + " " + c.plugin_version,
                          fs::path(c.library).filename().string(), c.description});
  std::cout << table.text();
  // Each model's hook points (the layer outputs that probes read), from one forward pass at its
  // defaults; a model that cannot be built at its defaults says why.
  std::cout << "\nhook points (layer outputs and recurrent states, in forward order):\n";
  for (const auto& c : registry.components()) {
    if (c.kind != "model") continue;
    std::string hooks;
    try {
      hooks = induct::summarize_hook_names(induct::model_hook_names(registry, c.name));
      if (hooks.empty()) hooks = "none (the model marks no layer outputs)";
    } catch (const induct::ConfigError& e) {
      // A required option (torchscript's file): the hook points come with it. The message
      // without its "<default name>:1:1: " place.
      std::string message = e.what();
      if (message.rfind("<default", 0) == 0) message = message.substr(message.find(": ") + 2);
      hooks = "set by its options (" + message.substr(0, message.find('\n')) + ")";
    } catch (const std::exception& e) {
      const std::string message = e.what();
      hooks =
          "unknown: not buildable at its defaults (" + message.substr(0, message.find('\n')) + ")";
    }
    std::cout << "  " << c.name << ": " << hooks << "\n";
  }
  std::cout << "\nplugin path:";
  for (const auto& p : path) std::cout << "\n  " << p;
  std::cout << "\n";
  if (!registry.problems().empty()) {
    std::cout << "\nrefused libraries:\n";
    for (const auto& problem : registry.problems()) std::cout << "  " << problem.message << "\n";
  }
  return registry.problems().empty() ? 0 : 1;  // a refused library is an error to fix
}

// The resolved study: the base document's keys and each cell's task, model and data; the
// published values' file as an absolute path (`induct report DIR` reads it from any folder).
YAML::Node resolved_study(const induct::StudyConfig& config) {
  YAML::Node out = induct::yaml::resolved(config.root);
  if (!config.report.reference.empty())
    out["report"]["reference"] = fs::absolute(config.report.reference).lexically_normal().string();
  for (const auto& cell : config.cells) {
    YAML::Node c;
    c["task"] = induct::yaml::resolved(cell.task);
    c["model"] = induct::yaml::resolved(cell.model);
    c["data"] = induct::yaml::resolved(cell.root.section("data"));
    if (!cell.grid_label.empty()) c["grid"] = cell.grid_label;
    out["cells"].push_back(c);
  }
  return out;
}

// What a study will cost, as upper bounds.
std::string work_estimate(const induct::StudyConfig& config, size_t cells) {
  const size_t grid = config.learning_rates.size() * config.seeds.size();
  const size_t steps_per_cell = config.study->sizes_per_cell();
  const size_t trainings = cells * steps_per_cell * grid;
  std::ostringstream out;
  out << cells << " cell(s) x "
      << (steps_per_cell > 1 ? "at most " + std::to_string(steps_per_cell) + " search steps x "
                             : "")
      << grid << " configurations: at most " << trainings << " trainings of at most "
      << config.training.max_steps << " steps ("
      << induct::format_count(trainings * config.training.max_steps) << " optimisation steps)";
  if (steps_per_cell > 1)
    out << "; a search stops a step at its first success and usually needs far fewer steps, but"
        << " a failure is proven only by running all " << grid << " configurations to max_steps,"
        << " and every cell whose N* is above 1 has one such step (the largest failure below N*, or"
        << " N_max when not learned): at least "
        << induct::format_count(cells * grid * config.training.max_steps)
        << " optimisation steps to prove the study's N*";
  return out.str();
}

// The 1-minute load average (NaN where /proc/loadavg cannot be read).
double load_average() {
  std::ifstream in("/proc/loadavg");
  double load = std::nan("");
  in >> load;
  return in ? load : std::nan("");
}

// --cells "1,3,5-8": the cells it names (numbered from 1, as validate lists them).
std::vector<bool> parse_cells(const std::string& text, size_t count) {
  std::vector<bool> chosen(count, false);
  std::stringstream items(text);
  std::string item;
  auto number = [&](const std::string& digits) {
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      throw po::error("--cells: '" + item + "' is not a cell number or a range a-b");
    const size_t n = std::stoul(digits);
    if (n < 1 || n > count)
      throw po::error("--cells: cell " + digits + " does not exist (the study has " +
                      std::to_string(count) + ")");
    return n;
  };
  while (std::getline(items, item, ',')) {
    const size_t dash = item.find('-');
    const size_t first = number(item.substr(0, dash));
    const size_t last = dash == std::string::npos ? first : number(item.substr(dash + 1));
    if (last < first) throw po::error("--cells: the range '" + item + "' runs backwards");
    for (size_t i = first; i <= last; ++i) chosen[i - 1] = true;
  }
  if (std::find(chosen.begin(), chosen.end(), true) == chosen.end())
    throw po::error("--cells: '" + text + "' names no cell");
  return chosen;
}

// validate --time: each cell's step rate, measured once per distinct step shape (model, format,
// length profile, timing size) and reused by every cell that shares it, and what one failing
// search step (every configuration to max_steps, on the run's workers) costs at that rate.
void time_cells(const induct::StudyConfig& config, const induct::PluginRegistry& registry,
                const std::vector<induct::PreparedCell>& cells, const std::vector<bool>& chosen) {
  induct::configure_process(config.run.threads);
  const size_t grid = config.learning_rates.size() * config.seeds.size();
  const int workers =
      induct::default_pool_settings(config.run.workers, config.run.threads, config.run.blas_threads,
                                    grid, config.run.device, config.run.device == "cpu" ? 0 : 1)
          .workers;
  const double failing = static_cast<double>(grid) * static_cast<double>(config.training.max_steps);
  const auto rate_text = [](double rate) {
    return induct::format_number(rate, rate >= 1000 ? 4 : 3) + " steps/s";
  };
  // Each shape is timed at its cell with the largest vocabulary: an upper bound for the rest.
  std::map<std::string, size_t> timed_at;
  std::vector<std::string> shapes(cells.size());
  size_t timed_cells = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (!chosen[i]) continue;
    ++timed_cells;
    shapes[i] = induct::step_shape(config, cells[i], registry);
    auto [at, fresh] = timed_at.emplace(shapes[i], i);
    if (!fresh && cells[i].vocab_size > cells[at->second].vocab_size) at->second = i;
  }
  std::cout << "time: " << timed_at.size() << " step shape(s) for " << timed_cells
            << " cell(s), each trained here once, alone, with " << config.run.threads
            << " thread(s) (a worker beside others may be slower), at the cell with its largest "
               "vocabulary; a failing step is "
            << grid << " x " << config.training.max_steps << " steps on " << workers
            << " worker(s)\n";
  const double load_before = load_average();
  std::map<std::string, induct::StepRate> rates;
  double total = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (!chosen[i]) continue;
    const std::string& shape = shapes[i];
    const size_t source = timed_at.at(shape);
    auto found = rates.find(shape);
    if (found == rates.end())
      found =
          rates.emplace(shape, induct::measure_step_rate(config, cells[source], registry)).first;
    const induct::StepRate& measured = found->second;
    const double rate = measured.per_second;
    std::cout << "  " << i + 1 << ". " << cells[i].label << " at N = " << measured.n << ": ";
    if (!std::isfinite(rate)) {
      std::cout << "not timed (its first configuration stops at once)\n";
      continue;
    }
    const double seconds =
        failing / (rate * workers);  // default_pool_settings caps workers at the grid
    total += seconds;
    std::cout << rate_text(rate);
    if (source != i) std::cout << " (timed at cell " << source + 1 << ")";
    std::cout << "; a failing step " << induct::format_duration(seconds) << ", "
              << induct::format_duration(total) << " so far\n"
              << std::flush;
  }
  std::cout << "  all " << timed_cells << " cell(s): one failing step each, "
            << induct::format_duration(total)
            << " (what proving the N* of an nstar study takes at least, at these rates; a failure"
               " at an N below 64 trains on smaller batches, faster)\n";
  // The first shape timed again: how much the machine's speed moved while timing.
  if (!rates.empty()) {
    const size_t first =
        static_cast<size_t>(std::find(chosen.begin(), chosen.end(), true) - chosen.begin());
    const size_t source = timed_at.at(shapes[first]);
    const double before = rates.at(shapes[first]).per_second;
    const double again = induct::measure_step_rate(config, cells[source], registry).per_second;
    if (std::isfinite(before) && std::isfinite(again))
      std::cout << "  cell " << source + 1 << " timed again at the end: " << rate_text(again)
                << " against " << rate_text(before)
                << " at first (one cell's rate varies this much between two timings)\n";
  }
  const double load_after = load_average();
  if (std::isfinite(load_before) && std::isfinite(load_after))
    std::cout << "  machine load while timing: load average "
              << induct::format_number(load_before, 3) << " before, "
              << induct::format_number(load_after, 3) << " after, on " << induct::usable_cores()
              << " core(s); other work on the machine lowers the rates and raises the times\n";
}

// A study read and checked against its plugins, every cell prepared.
struct LoadedStudy {
  induct::StudyConfig config;
  std::unique_ptr<induct::PluginRegistry> registry = std::make_unique<induct::PluginRegistry>();
  std::vector<induct::PreparedCell> cells;
};

LoadedStudy load_and_prepare(const std::vector<std::string>& args, const std::string& command,
                             const Global& global, po::variables_map& vm) {
  LoadedStudy study;
  study.config = load(args, command, global, vm);
  study.registry->load_all(induct::plugin_search_path(study.config.run.plugin_path));
  report_problems(*study.registry);
  study.cells = induct::prepare_study(study.config, *study.registry);
  return study;
}

int command_validate(const std::vector<std::string>& args, const Global& global) {
  po::variables_map vm;
  auto [config, registry, cells] = load_and_prepare(args, "validate", global, vm);
  std::cout << config.file << ": " << config.kind << " study '" << config.name << "', "
            << cells.size() << " cell(s)\n";
  int rc = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& cell = cells[i];
    std::cout << "  " << i + 1 << ". " << induct::describe_cell(cell) << "\n";
    if (config.study->cell_keys().n != induct::CellKeys::N::kNone) {
      try {
        induct::training_size(config, cell);
      } catch (const induct::ConfigError& e) {
        std::cout << "     error: " << e.what() << "\n";
        rc = 2;
      }
    }
  }
  std::cout << "work: " << work_estimate(config, cells.size()) << "\n";
  if (vm.count("cells") && !vm.count("time")) throw po::error("--cells needs --time");
  if (vm.count("time"))
    time_cells(config, *registry, cells,
               vm.count("cells") ? parse_cells(vm["cells"].as<std::string>(), cells.size())
                                 : std::vector<bool>(cells.size(), true));
  YAML::Emitter resolved;
  resolved << resolved_study(config);
  std::cout << "\nresolved configuration:\n" << resolved.c_str() << "\n";
  return rc;
}

// DIR/runs.yaml: one YAML document per `induct run` into DIR, appended (config.yaml is the
// latest resolved study; this is every run's command line, overrides and resolved study).
void append_run_log(const fs::path& out_dir, const std::vector<std::string>& args,
                    const Global& global, const po::variables_map& vm,
                    const std::string& resolved) {
  YAML::Node entry;
  std::time_t now = std::time(nullptr);
  char started[32];
  std::strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  entry["started"] = started;
  entry["induct"] = INDUCT_SDK_VERSION_STRING;
  std::string command = "induct";
  for (const auto& path : global.plugin_path) command += " --plugin-path " + path;
  command += " run";
  for (const auto& arg : args) command += " " + arg;
  entry["command"] = command;
  entry["study"] = vm["study"].as<std::string>();
  entry["overrides"] = YAML::Node(YAML::NodeType::Sequence);
  if (vm.count("set"))
    for (const auto& set : vm["set"].as<std::vector<std::string>>())
      entry["overrides"].push_back(set);
  entry["config"] = YAML::Load(resolved);
  YAML::Emitter out;
  out << YAML::BeginDoc << entry;
  const std::string text = std::string(out.c_str()) + "\n";
  std::ofstream log(out_dir / "runs.yaml", std::ios::app | std::ios::binary);
  log << text;
  log.flush();
  if (!log)
    throw std::runtime_error((out_dir / "runs.yaml").string() + ": cannot append the run log");
}

int command_sample(const std::vector<std::string>& args, const Global& global) {
  po::variables_map vm;
  auto [config, registry, cells] = load_and_prepare(args, "sample", global, vm);
  for (const char* other : {"time", "cells", "out"})
    if (vm.count(other)) throw po::error(std::string("--") + other + " is not an option of sample");
  const size_t cell = vm.count("cell") ? vm["cell"].as<size_t>() : 1;
  if (cell < 1 || cell > cells.size())
    throw po::error("--cell " + std::to_string(cell) + ": the study has cells 1.." +
                    std::to_string(cells.size()) + " (`induct validate` lists them)");
  induct::SampleOptions options;
  if (vm.count("count")) options.count = vm["count"].as<uint64_t>();
  const std::string split = vm.count("split") ? vm["split"].as<std::string>() : "train";
  if (split != "train" && split != "validation")
    throw po::error("--split: '" + split + "' is not train or validation");
  options.split = split == "train" ? induct::SampleOptions::Split::kTrain
                                   : induct::SampleOptions::Split::kValidation;
  options.seed = vm.count("seed") ? vm["seed"].as<uint64_t>() : config.seeds.front();
  const std::string format = vm.count("format") ? vm["format"].as<std::string>() : "text";
  if (format != "text" && format != "jsonl")
    throw po::error("--format: '" + format + "' is not text or jsonl");
  options.jsonl = format == "jsonl";
  std::cout << induct::sample_cell(config, *registry, cells[cell - 1], options);
  return 0;
}

int command_run(const std::vector<std::string>& args, const Global& global) {
  po::variables_map vm;
  // Every cell is checked before anything trains.
  auto [config, registry, cells] = load_and_prepare(args, "run", global, vm);
  if (vm.count("time") || vm.count("cells"))
    throw po::error("--time and --cells are options of validate, not of run");

  // Published values are read before anything trains: a bad file is an error now, not at the end.
  std::optional<induct::Reference> reference;
  if (!config.report.reference.empty())
    reference = induct::read_reference(config.report.reference, config.report.factor,
                                       induct::study_reference_metrics());
  // A shard's own folder: runs/NAME.shard-I-of-N (`induct merge` combines them).
  std::string shard_suffix;
  if (vm.count("shard")) {
    const auto [index, shards] = parse_shard(vm["shard"].as<std::string>());
    shard_suffix = ".shard-" + std::to_string(index) + "-of-" + std::to_string(shards);
  }
  const fs::path out_dir = vm.count("out") ? fs::path(vm["out"].as<std::string>())
                                           : fs::path("runs") / (config.name + shard_suffix);
  fs::create_directories(out_dir);
  const induct::RunLock lock(out_dir);  // before anything in the folder is written
  const size_t stale = induct::remove_stale_partial_files(out_dir.string());
  YAML::Emitter resolved;
  resolved << resolved_study(config);
  induct::write_file_atomically((out_dir / "config.yaml").string(),
                                std::string("# resolved by induct ") + INDUCT_SDK_VERSION_STRING +
                                    " from " + config.file + "\n" + resolved.c_str() + "\n");
  append_run_log(out_dir, args, global, vm, resolved.c_str());
  induct::Store store(out_dir / "results.sqlite", induct::study_outcome_tables());
  const size_t trials = config.learning_rates.size() * config.seeds.size();
  induct::install_stop_signals();  // from here on Ctrl-C and SIGTERM drain the study
  const std::unique_ptr<induct::TrialRunner> runner = induct::make_runner(config.run, trials);
  induct::Progress progress(std::cerr, induct::stderr_is_terminal());
  progress.log(
      config.file + ": " + config.kind + " study '" + config.name + "', " +
      std::to_string(cells.size()) + " cell(s), " + runner->describe() + " -> " + out_dir.string() +
      (stale > 0 ? " (removed " + std::to_string(stale) + " partial file(s) left by killed writers)"
                 : std::string()));
  if (cells.size() <= 3)
    for (const auto& cell : cells) progress.log("  " + induct::describe_cell(cell));
  if (config.training.stall_window > 0)
    progress.log("  failure detector on (" + induct::describe_detector(config.training) +
                 "): a configuration it stops is failed by its rule, not proven at max_steps "
                 "(docs/method.md section 5a; search.certify proves the failures an N* rests on)");
  induct::StatusFile status(
      out_dir, config.name, config.kind, cells.size(), runner->parallelism(),
      [&store] { return store.outcomes().size(); }, std::cerr);
  std::vector<std::string> command = {"induct", "run"};
  command.insert(command.end(), args.begin(), args.end());
  status.events().run_started(config.name, config.kind, cells.size(), runner->parallelism(),
                              command);
  store.set_outcome_listener(
      [&status](const induct::StoredOutcome& o) { status.events().outcome_stored(o); });
  induct::StatusRunner tracked(*runner, status);
  induct::StudyRun run{config, *registry, store, tracked, progress, out_dir, std::cout};
  int rc = 0;
  try {
    rc = induct::run_study(run, cells);
  } catch (const induct::Interrupted& e) {
    // The report of what the store holds, then the closing line.
    try {
      induct::write_reports(store, out_dir, induct::study_reports(), &std::cout,
                            reference ? &*reference : nullptr, config.report.min_accuracy);
    } catch (const std::exception& report_error) {
      progress.log("induct: the report of the stored results failed: " +
                   std::string(report_error.what()));
    }
    size_t finished = 0;
    for (const auto& t : store.all()) finished += t.result.finished();
    const std::string in_flight =
        e.at_once() ? (induct::stop_signals_received() > 1
                           ? "stopped at once by a second signal, trials in flight not recorded"
                           : std::to_string(e.cancelled()) +
                                 " trial(s) in flight did not answer the "
                                 "cancel within " +
                                 std::to_string(induct::kDrainSeconds) +
                                 " s and were stopped, not recorded")
                    : "no new trials started, " + std::to_string(e.cancelled()) +
                          " in flight cancelled and recorded as cancelled";
    progress.log(
        "induct: " + std::string(e.what()) + " after " +
        induct::format_duration(progress.elapsed()) + ": " + in_flight + "; " +
        std::to_string(finished) + " finished trial(s) stored in " + store.file().string() +
        (fs::exists(out_dir / "report.md") ? ", their report in " + (out_dir / "report.md").string()
                                           : std::string()) +
        "; the same command resumes without retraining them" +
        (config.run.state_every > 0
             ? ", and trainings that were in flight go on from their last saved state"
             : std::string()));
    status.set_state(e.what());
    return 128 + e.signal();
  }
  induct::write_reports(store, out_dir, induct::study_reports(), &std::cout,
                        reference ? &*reference : nullptr, config.report.min_accuracy);
  status.set_state("finished");
  std::cout << "results in " << out_dir.string() << "; finished in "
            << induct::format_duration(progress.elapsed()) << "\n";
  return rc;
}

int command_status(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help") {
    std::cout
        << "usage: induct status DIR [--follow]\n\nPrints what the study writing DIR has done and "
           "is doing (DIR/status.yaml, which `induct run` rewrites as it runs), without opening "
           "its store. --follow: then the events of its latest run (DIR/events.jsonl, "
           "docs/store.md \"Events\") from its start and as they come, until it ends.\n";
    return args.empty() ? 2 : 0;
  }
  const bool follow = args.size() == 2 && args[1] == "--follow";
  if (args.size() > 2 || (args.size() == 2 && !follow))
    throw po::error("status takes DIR and optionally --follow");
  std::cout << induct::describe_status(args[0]);
  if (follow) {
    std::cout << "events:\n";
    induct::follow_events(args[0], std::cout);
  }
  return 0;
}

// A command on a study's output folder (report, export): its own options, the folder as the
// first argument. Empty after printing the usage (--help, or no folder: then `vm` says which);
// a ConfigError when the folder holds no results.sqlite.
fs::path study_folder(const std::vector<std::string>& args, po::options_description& options,
                      const std::string& usage, po::variables_map& vm) {
  options.add_options()("dir", po::value<std::string>(), "study output folder")(
      "help", "help for this command");
  po::positional_options_description positional;
  positional.add("dir", 1);
  po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help") || !vm.count("dir")) {
    std::cout << usage << "\n\n" << options;
    return {};
  }
  const fs::path dir = vm["dir"].as<std::string>();
  if (!fs::exists(dir / "results.sqlite"))
    throw induct::ConfigError(dir.string() + ": no results.sqlite here (run a study with --out " +
                              dir.string() + " first)");
  return dir;
}

int command_report(const std::vector<std::string>& args) {
  po::options_description options("report options");
  options.add_options()(
      "reference", po::value<std::string>(),
      "a CSV of published values to set beside ours (docs/store.md, \"Published values\")")(
      "factor", po::value<double>()->default_value(2),
      "mark a value off by more than this factor from the published one")(
      "min-accuracy", po::value<double>()->default_value(induct::kDefaultMinAccuracy),
      "lengthgen and probe summaries leave out configurations whose final-state accuracy on "
      "the validation set is below this (default: the study's report.min_accuracy in "
      "DIR/config.yaml, else 0.9)");
  po::variables_map vm;
  const fs::path dir =
      study_folder(args, options,
                   "usage: induct report DIR [--reference FILE [--factor F]] [--min-accuracy "
                   "A]\n\nWrites the paper's tables and "
                   "figures from DIR/results.sqlite into DIR (report.md lists them).",
                   vm);
  if (dir.empty()) return vm.count("help") ? 0 : 2;
  const double factor = vm["factor"].as<double>();
  if (!(factor > 1)) throw induct::ConfigError("--factor: must be above 1");
  // What the command line does not say comes from the run's own `report:` (DIR/config.yaml, as
  // `induct run` resolved it: min_accuracy, reference, factor), so that a report again gives
  // the tables the run wrote. `setting(key, T)`: its value, or `fallback` where it has none.
  const fs::path resolved = dir / "config.yaml";
  YAML::Node run_report;   // null without the file or its section
  std::string unreadable;  // why the file does not read
  if (fs::exists(resolved)) {
    try {
      run_report = YAML::LoadFile(resolved.string())["report"];
    } catch (const YAML::Exception& e) {
      unreadable = e.what();
    }
  }
  const auto setting = [&](const std::string& key, auto fallback) {
    const std::string where = resolved.string() + ": report." + key;
    if (!unreadable.empty()) throw induct::ConfigError(where + ": " + unreadable);
    if (!run_report) return fallback;
    try {
      const YAML::Node node = static_cast<const YAML::Node&>(run_report)[key];
      return node ? node.as<decltype(fallback)>() : fallback;
    } catch (const YAML::Exception& e) {
      throw induct::ConfigError(where + ": " + e.what());
    }
  };
  double min_accuracy = vm["min-accuracy"].as<double>();
  std::string source = "--min-accuracy";
  if (vm["min-accuracy"].defaulted() && fs::exists(resolved)) {
    source = resolved.string() + ": report.min_accuracy";
    min_accuracy = setting("min_accuracy", min_accuracy);
  }
  if (!(min_accuracy >= 0 && min_accuracy <= 1))
    throw induct::ConfigError(source + ": must be in [0, 1]");
  std::optional<induct::Reference> reference;
  if (vm.count("reference")) {
    reference = induct::read_reference(vm["reference"].as<std::string>(), factor,
                                       induct::study_reference_metrics());
  } else if (fs::exists(resolved)) {
    const std::string file = setting("reference", std::string());
    if (!file.empty())
      reference = induct::read_reference(
          file, vm["factor"].defaulted() ? setting("factor", factor) : factor,
          induct::study_reference_metrics());
  }
  induct::Store store(dir / "results.sqlite", induct::study_outcome_tables());
  induct::write_reports(store, dir, induct::study_reports(), &std::cout,
                        reference ? &*reference : nullptr, min_accuracy);
  return 0;
}

int command_merge(const std::vector<std::string>& args) {
  if (args.size() < 2 || args[0] == "--help") {
    std::cout << "usage: induct merge OUT DIR...\n\nAdds the trials and outcomes of each DIR's "
                 "results.sqlite (the shards of one study, `induct run --shard I/N`) to "
                 "OUT/results.sqlite, then writes OUT's report. A finished trial with different "
                 "results in two folders is an error naming both; nothing of that folder is "
                 "merged.\n";
    return args.empty() || args[0] != "--help" ? 2 : 0;
  }
  const fs::path out = args[0];
  fs::create_directories(out);
  const induct::RunLock lock(out);
  induct::Store into(out / "results.sqlite", induct::study_outcome_tables());
  std::map<std::string, std::string> origin;
  for (size_t i = 1; i < args.size(); ++i) {
    const fs::path dir = args[i];
    if (!fs::exists(dir / "results.sqlite"))
      throw induct::ConfigError(dir.string() +
                                ": no results.sqlite here (a folder of `induct "
                                "run --out`?)");
    if (fs::equivalent(dir / "results.sqlite", out / "results.sqlite"))
      throw induct::ConfigError(dir.string() + ": is OUT itself");
    const induct::Store from(dir / "results.sqlite", induct::study_outcome_tables());
    const induct::MergeCount c =
        induct::merge_store(into, out.string(), from, dir.string(), origin);
    std::cout << dir.string() << ": " << c.trials_added << " trial(s) added, " << c.trials_same
              << " already there with the same results, " << c.records_skipped
              << " cancelled or error record(s) left out; " << c.outcomes_added
              << " outcome(s) added, " << c.outcomes_same << " already there"
              << (c.outcomes_kept_first > 0
                      ? ", " + std::to_string(c.outcomes_kept_first) +
                            " already there with another record of their cost (the first kept)"
                      : std::string())
              << "\n";
  }
  // The first folder's resolved study, so that the report (here, and `induct report OUT`)
  // keeps its settings (report.min_accuracy, report.reference).
  if (!fs::exists(out / "config.yaml") && fs::exists(fs::path(args[1]) / "config.yaml"))
    fs::copy_file(fs::path(args[1]) / "config.yaml", out / "config.yaml");
  return command_report({out.string()});
}

int command_export(const std::vector<std::string>& args) {
  po::options_description options("export options");
  options.add_options()("to", po::value<std::string>(), "folder to write (default DIR/export)")(
      "format", po::value<std::string>()->default_value("csv"), "csv or jsonl");
  po::variables_map vm;
  const fs::path dir = study_folder(
      args, options,
      "usage: induct export DIR [--to PATH] [--format csv|jsonl]\n\nWrites the results in "
      "DIR/results.sqlite as tidy tables (docs/store.md, \"Export\").",
      vm);
  if (dir.empty()) return vm.count("help") ? 0 : 2;
  const std::string format = vm["format"].as<std::string>();
  if (format != "csv" && format != "jsonl")
    throw induct::ConfigError("--format " + format + ": expected csv or jsonl");
  const fs::path to = vm.count("to") ? fs::path(vm["to"].as<std::string>()) : dir / "export";
  induct::Store store(dir / "results.sqlite", induct::study_outcome_tables());
  const auto files = induct::export_store(
      store, to, format == "csv" ? induct::ExportFormat::kCsv : induct::ExportFormat::kJsonLines);
  if (files.empty()) std::cout << "export: the store holds no results yet\n";
  for (const auto& f : files)
    std::cout << f.path.string() << ": " << f.rows << " row(s), each " << f.what << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  induct::configure_process(0);
  Global global;
  std::vector<std::string> rest;
  try {
    po::options_description options("global options");
    options.add_options()("plugin-path", po::value<std::vector<std::string>>()->composing(), "")(
        "help", "")("version", "")("command", po::value<std::string>(), "")(
        "args", po::value<std::vector<std::string>>(), "");
    po::positional_options_description positional;
    positional.add("command", 1).add("args", -1);
    po::parsed_options parsed = po::command_line_parser(argc, argv)
                                    .options(options)
                                    .positional(positional)
                                    .allow_unregistered()
                                    .run();
    po::variables_map vm;
    po::store(parsed, vm);
    if (vm.count("plugin-path"))
      global.plugin_path = vm["plugin-path"].as<std::vector<std::string>>();
    if (vm.count("version")) {
      std::cout << "induct " << INDUCT_SDK_VERSION_STRING << " (plugin API "
                << INDUCT_PLUGIN_API_VERSION << ", libtorch " << TORCH_VERSION << ")\n";
      return 0;
    }
    if (!vm.count("command")) {
      std::cout << kUsage;
      return vm.count("help") ? 0 : 2;
    }
    const std::string command = vm["command"].as<std::string>();
    rest = po::collect_unrecognized(parsed.options, po::include_positional);
    rest.erase(rest.begin());  // the command itself
    if (vm.count("help")) rest.push_back("--help");

    if (command == "__worker") {
      int threads = 1;
      if (rest.size() == 2 && rest[0] == "--threads") threads = std::stoi(rest[1]);
      return induct::worker_main(threads, induct::study_measurements());
    }
    if (command == "run") {
      if (const int tasks = induct::launcher_tasks(); tasks > 1) {  // one rank of an MPI job
#ifdef INDUCT_HAVE_MPI
        if (induct::start_mpi() != 0) return induct::mpi_rank_main();  // runs rank 0's trials
        struct Stop {
          ~Stop() { induct::stop_mpi(); }
        } stop;
        return command_run(rest, global);  // rank 0 runs the study
#else
        throw induct::ConfigError(
            "induct run: started as one of " + std::to_string(tasks) +
            " tasks of a parallel launch (mpirun, srun), but this induct has no MPI runner, so "
            "each would run the whole study into the same folder; install Open MPI and Boost.MPI "
            "(scripts/setup.sh) and rebuild, or start one `induct run` (docs/cluster.md)");
#endif
      }
      return command_run(rest, global);
    }
    if (command == "validate") return command_validate(rest, global);
    if (command == "sample") return command_sample(rest, global);
    if (command == "report") return command_report(rest);
    if (command == "export") return command_export(rest);
    if (command == "merge") return command_merge(rest);
    if (command == "status") return command_status(rest);
    if (command == "plugins") {
      if (!rest.empty() && rest[0] == "--help") {
        std::cout << kUsage;
        return 0;
      }
      return command_plugins(global);
    }
    std::cerr << "induct: unknown command '" << command
              << "' (commands: run, validate, sample, report, export, merge, status, plugins)\n";
    return 2;
  } catch (const induct::ConfigError& e) {
    std::cerr << "error: " << induct::printable(e.what()) << "\n";
    return 2;
  } catch (const induct::PluginError& e) {
    std::cerr << "error: " << induct::printable(e.what()) << "\n";
    return 2;
  } catch (const po::error& e) {
    std::cerr << "induct: " << induct::printable(e.what()) << "\n(see induct --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << induct::printable(e.what()) << "\n";
    return 1;
  }
}
