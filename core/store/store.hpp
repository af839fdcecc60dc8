// The results store: one SQLite database per output folder, one row per trial
// (schema: docs/store.md). Every write is a transaction, so a kill loses at most the
// trials in flight; a study rerun skips the trials already stored.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "train/trial.hpp"

struct sqlite3;

namespace induct {

struct StoredTrial {
  std::string key;
  std::string study;
  TrialSpec spec;
  TrialResult result;
  std::string created;  // UTC, ISO 8601
};

// What a study concluded about one cell (an N* search, a sharing factor, a length
// generalization curve), as YAML. Reports are drawn from these and from the trials.
struct StoredOutcome {
  std::string key;  // hash of (kind, the cell, the settings that decide the outcome)
  std::string study;
  std::string kind;  // nstar | sharing | lengthgen
  std::string label;
  YAML::Node value;
  std::string created;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 1;

  // Opens or creates the database; refuses one with another schema version.
  explicit Store(const std::filesystem::path& file);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // A finished trial (succeeded, failed or diverged) with this key; cancelled and error rows
  // are records, not results, and are run again.
  std::optional<TrialResult> find_finished(const std::string& key) const;
  // Inserts or replaces the row of spec.key(); a cancelled or error record never replaces a
  // finished result (the result stays, the record is dropped).
  void put(const std::string& study, const TrialSpec& spec, const TrialResult& result);
  std::vector<StoredTrial> all() const;

  void put_outcome(const StoredOutcome& outcome);
  std::optional<StoredOutcome> find_outcome(const std::string& key) const;
  std::vector<StoredOutcome> outcomes() const;
  const std::filesystem::path& file() const { return file_; }

 private:
  void exec(const std::string& sql) const;
  std::filesystem::path file_;
  sqlite3* db_ = nullptr;
};

}  // namespace induct
