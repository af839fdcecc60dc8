// A study file, read and checked (docs/config-reference.md). Torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "exec/run_settings.hpp"
#include "induct/options.hpp"
#include "train/settings.hpp"

namespace induct {

class Study;  // study/kind.hpp: the reader makes and holds it through StudyKinds, never calls it

// Which keys of a cell's `data:` section the kind reads (the others are unknown keys).
struct CellKeys {
  bool distribution_and_L = true;  // false: the study sets them per cell it expands (sharing)
  enum class N { kNone, kRequired, kMaxByDefault };
  N n = N::kNone;  // kRequired: `N` (a number or "max"); kMaxByDefault: the same, "max" if absent
};

struct CellSpec;

// What the reader needs of the study kinds; the study layer's registry hands it
// (study/registry.hpp: load_study).
struct StudyKinds {
  std::vector<std::string> names;  // the values of `study:`
  // The kind `name` with its own sections of `root` read (e.g. `search:`).
  std::function<std::shared_ptr<const Study>(const std::string& name, const Options& root)> make;
  // Which keys of a cell's `data:` section it reads.
  std::function<CellKeys(const Study& study)> cell_keys;
  // Its limits on one cell (a ConfigError naming the key).
  std::function<void(const Study& study, const Options& root, const CellSpec& cell)> check_cell;
};

// One cell: what is learned (task), by what (model), from what data. Read from the study
// document with one grid point applied.
struct CellSpec {
  Options root;   // that document
  Options task;   // its `task:` section; the task plugin reads its keys from it
  Options model;  // its `model:` section
  // Its `data.format` (a format's name, or a section with its name and options); the format
  // plugin reads its options from it.
  Options format;
  std::string task_name, model_name, format_name;
  std::string distribution;  // empty when the study sets it (CellKeys::distribution_and_L)
  int L = 0;                 // 0 then
  ValidationPolicy validation;
  uint64_t n_cap = 16'000'000;
  uint64_t n = 0;          // studies that read N (CellKeys::n): the training-set size; 0 = N_max
  std::string grid_label;  // "task.m=5, data.L=10": the grid point, empty without a grid
};

// report.min_accuracy's default (StudyConfig::ReportSettings; `induct report --min-accuracy`):
// a model whose final-state accuracy is below it has not learned the task in distribution, and
// its numbers leave the summaries.
inline constexpr double kDefaultMinAccuracy = 0.9;

struct StudyConfig {
  std::string file;
  std::string kind;  // StudyKinds::names: train | nstar | sharing | lengthgen | probe
  std::shared_ptr<const Study> study;  // the kind, with its own sections read (study/kind.hpp)
  std::string name;
  Options root;  // the study document without grid values
  std::vector<CellSpec> cells;
  std::vector<double> learning_rates;
  std::vector<uint64_t> seeds;
  TrainSettings training;
  RunSettings run;
  // `report:`: published values to compare with (a CSV, docs/store.md "Published values"; a
  // relative path is taken from the study file's folder) and the factor that marks a difference;
  // the final-state accuracy below which the studies that read trained models (lengthgen, probe)
  // mark a configuration and leave it out of their summaries.
  struct ReportSettings {
    std::string reference;
    double factor = 2;
    double min_accuracy = kDefaultMinAccuracy;
  } report;
};

// The longest sequence a study may train or evaluate on: what a data set stores (lengths as
// 16-bit values), far past the paper (L <= 40); asking for more is an error naming the key.
inline constexpr long kMaxLength = SequenceSet::kMaxLength;

// Reads and checks every key the core owns, expanding `grid:` into cells (each from the file
// re-read with that grid point applied). Keys of the task and model sections are read by
// their plugins later (study/prepare.hpp, prepare_study, checks them); everything else unknown is
// an error here.
StudyConfig read_study(const std::string& file, const std::vector<std::string>& overrides,
                       const StudyKinds& kinds);
// The same from text (tests).
StudyConfig read_study_text(const std::string& text, const std::string& name,
                            const std::vector<std::string>& overrides, const StudyKinds& kinds);

}  // namespace induct
