// A study kind: what `induct run` does with a study file whose `study:` key names it
// (docs/design.md, "Adding a study kind"). Each kind lives in its own folder under core/study/
// and is one row of core/study/registry.cpp. Torch-free.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "config/study_config.hpp"
#include "induct/options.hpp"

namespace induct {

struct PreparedCell;
struct ReportContext;
struct StudyRun;
class PluginRegistry;

class Study {
 public:
  virtual ~Study() = default;
  // Reads the kind's own sections of the document (their unknown keys are errors), e.g.
  // `search:`. Called once per study file, before any cell is read.
  virtual void read(const Options& root) { (void)root; }
  virtual CellKeys cell_keys() const { return {}; }
  // Checks one cell of the file against the kind's settings (a ConfigError naming the key).
  virtual void check_cell(const Options& root, const CellSpec& cell) const {
    (void)root;
    (void)cell;
  }
  // The cells it trains for one cell of the file, prepared (default: that cell).
  virtual std::vector<PreparedCell> expand(const CellSpec& spec,
                                           const PluginRegistry& registry) const;
  // At most this many training-set sizes per prepared cell (`induct validate`'s estimate).
  virtual size_t sizes_per_cell() const { return 1; }
  // Runs the study; returns the exit code (0, or 1 when some trial stopped with an error:
  // rerunning retries it) and writes its own summary table to the output folder. The report
  // (report(), every kind's) is written by `induct run` after it, also when it was stopped.
  virtual int run(StudyRun& run, const std::vector<PreparedCell>& cells) const = 0;
  // Adds its tables and figures to `induct report` from the outcomes it stored.
  virtual void report(ReportContext& report) const { (void)report; }
};

}  // namespace induct
