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

class Study;  // study/kind.hpp: the study layer makes it and sets StudyConfig::study

// Which keys of a cell's `data:` section the kind reads (the others are unknown keys).
struct CellKeys {
  bool distribution_and_L = true;  // false: the study sets them per cell it expands (sharing)
  enum class N { kNone, kRequired, kMaxByDefault };
  N n = N::kNone;  // kRequired: `N` (a number or "max"); kMaxByDefault: the same, "max" if absent
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
  std::string kind;  // the value of `study:`, one of the study layer's kinds
  // The kind, with its own sections read: set by the study layer (study/registry.hpp,
  // load_study), which reads those sections; the reader here never calls it.
  std::shared_ptr<const Study> study;
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

// A study file as a document: its YAML read (yaml::load_file), the overrides applied and
// ${...} refused (induct does not interpolate).
Options read_study_document(const std::string& file, const std::vector<std::string>& overrides);
// The same from text (tests).
Options read_study_document_text(const std::string& text, const std::string& name,
                                 const std::vector<std::string>& overrides);

// The value of `study:` (train when absent), one of `kinds`.
std::string read_study_kind(const Options& root, const std::vector<std::string>& kinds);

// Shard `index` (from 0) of `shards`: cells index, index + shards, index + 2 shards, ... in the
// file's grid order, so every cell is in exactly one shard (`induct run --shard I/N`).
std::vector<CellSpec> shard_cells(const std::vector<CellSpec>& cells, size_t index, size_t shards);

// Reads and checks every key the core owns, expanding `grid:` into cells (each from the file
// re-read with that grid point applied), a cell's `data:` keys as the kind reads them
// (`keys`). The kind reads its own sections first (they are then claimed); keys of the task
// and model sections are read by their plugins later (study/prepare.hpp, prepare_study, checks
// them); everything else unknown is an error here. The kind's checks of each cell are the
// study layer's (Study::check_cell).
StudyConfig read_study(const Options& root, const std::string& file,
                       const std::vector<std::string>& overrides, const std::string& kind,
                       const CellKeys& keys);

}  // namespace induct
