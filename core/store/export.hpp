// `induct export`: the store as tidy tables (docs/store.md, "Export"): one file per kind of
// observation, one row per observation, one column per variable, numbers as numbers (empty
// where missing), booleans as true/false, a cell's task and model options as columns of their
// own (task.m, model.hidden, ...). Torch-free.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace induct {

enum class ExportFormat { kCsv, kJsonLines };

struct ExportedFile {
  std::filesystem::path path;
  size_t rows = 0;
  std::string what;  // one line: what a row is
};

// Writes trials, histories, per_length and each kind's files (nstar, kappa, lengthgen, probe,
// probe_convs) as .csv or .jsonl into `dir` (created), each only when the store has rows of it;
// returns what it wrote.
std::vector<ExportedFile> export_store(const Store& store, const std::filesystem::path& dir,
                                       ExportFormat format);

}  // namespace induct
