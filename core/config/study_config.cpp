#include "config/study_config.hpp"

#include <cmath>
#include <filesystem>
#include <set>

#include "format/format.hpp"
#include "options_yaml.hpp"

namespace induct {

namespace {

const std::vector<std::string> kStudyKinds = {"train"};

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

CellSpec read_cell(const Options& root) {
  CellSpec cell;
  cell.task = root.section("task");
  cell.task_name = cell.task.require<std::string>("name");
  cell.model = root.section("model");
  cell.model_name = cell.model.require<std::string>("name");

  Options data = root.section("data");
  cell.format = one_of(data, "format", "", format_names());
  cell.distribution = one_of(data, "distribution", "", distribution_names());
  cell.L = static_cast<int>(data.require<long>("L"));
  if (cell.L < 2) data.fail("L", "must be at least 2 (lengths run over 2..L)");
  if (cell.L > 100'000) data.fail("L", "must be at most 100000");
  cell.n_cap = data.get<unsigned long>("n_cap", cell.n_cap);
  if (cell.n_cap < 1) data.fail("n_cap", "must be at least 1");
  Options validation = data.section("validation");
  cell.validation.max_size = validation.get<unsigned long>("max_size", cell.validation.max_size);
  cell.validation.fraction = validation.get<double>("fraction", cell.validation.fraction);
  if (!(cell.validation.fraction >= 0 && cell.validation.fraction < 1))
    validation.fail("fraction", "must be in [0, 1)");
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
  s.batch_size = at_least(training, "batch_size", s.batch_size, 1);
  s.max_steps = at_least(training, "max_steps", s.max_steps, 1);
  s.eval_every = at_least(training, "eval_every", s.eval_every, 1);
  s.eval_batch_size = at_least(training, "eval_batch_size", s.eval_batch_size, 1);
  s.epsilon = training.get<double>("epsilon", s.epsilon);
  if (!(s.epsilon > 0)) training.fail("epsilon", "must be positive");
  s.curriculum = training.get<bool>("curriculum", s.curriculum);
  return s;
}

RunSettings read_run(const Options& run) {
  RunSettings r;
  r.workers = static_cast<int>(at_least(run, "workers", r.workers, 0));
  r.threads = static_cast<int>(at_least(run, "threads", r.threads, 1));
  r.blas_threads = static_cast<int>(at_least(run, "blas_threads", r.blas_threads, 0));
  r.device = run.get<std::string>("device", r.device);
  if (r.device != "cpu" && r.device.rfind("cuda", 0) != 0)
    run.fail("device", "must be cpu, cuda or cuda:N");
  r.plugin_path = run.get_list<std::string>("plugin_path", {});
  return r;
}

}  // namespace

StudyConfig read_study(const Options& root, const std::string& file) {
  StudyConfig study;
  study.file = file;
  study.root = root;
  study.kind = one_of(root, "study", "train", kStudyKinds);
  study.name = root.get<std::string>("name", std::filesystem::path(file).stem().string());
  if (study.name.empty() || study.name.find('/') != std::string::npos)
    root.fail("name", "must be a non-empty name without '/'");
  study.cell = read_cell(root);
  Options data = root.section("data");
  // N: a number, or "max" for N_max of the cell.
  if (data.has("N") && data.get<std::string>("N", "") == "max") {
    study.n = 0;
  } else {
    study.n = data.require<unsigned long>("N");
    if (study.n < 1) data.fail("N", "must be at least 1 (or 'max')");
  }
  study.training = read_training(root.section("training"), study.learning_rates, study.seeds);
  study.run = read_run(root.section("run"));
  return study;
}

StudyConfig load_study(const std::string& file, const std::vector<std::string>& overrides) {
  return read_study(yaml::load_file(file, overrides), file);
}

}  // namespace induct
