// The results store: one SQLite database per output folder, one row per trial
// (schema: docs/store.md). Every write is a transaction, so a kill loses at most the
// trials in flight; a study rerun skips the trials already stored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
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
  std::string kind;  // the study kind (its OutcomeTables, if any, fill its own tables)
  std::string label;
  YAML::Node value;
  std::string created;
};

// The key of a resolved cell (trials.cell_key, outcomes.cell_key).
std::string cell_key(const Cell& cell);

class OutcomeWriter;

// What a study kind keeps beyond its row of `outcomes` (each kind's folder defines its own;
// core/study/registry.cpp hands them to the store): its tables, how its outcome's YAML fills
// them and the outcome row's columns, and the files `induct export` writes from them. The
// store and the export loop over these and name no kind.
struct OutcomeTables {
  std::string kind;
  // CREATE TABLE IF NOT EXISTS ... for each of its tables, their first column `outcome`
  // (outcomes.key); run on every open.
  std::string schema;
  std::vector<std::string> tables;  // their names: an outcome's rows are replaced on each write
  // Fills the row's columns and the tables from a stored outcome's YAML (a YAML::Exception
  // leaves them empty: the outcome row itself is stored whatever its YAML holds).
  std::function<void(const YAML::Node& value, OutcomeWriter& out)> write;
  struct Export {
    std::string stem, what;  // the file's name and what one row is
    // SELECT ... : `{cell}` is replaced by the outcome's task and model and their options as
    // columns (of this kind's outcomes; the outcomes table has the alias `o`).
    std::string sql;
  };
  std::vector<Export> exports;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 2;

  // Opens or creates the database. A version-1 store is upgraded in place, in one transaction
  // (its rows' columns and tables filled from their YAML); a newer version is refused.
  // `kinds`: the study kinds whose tables it creates and fills (and exports); outcomes of
  // other kinds keep only their row.
  explicit Store(const std::filesystem::path& file, std::vector<OutcomeTables> kinds = {});
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

  // Stores an outcome, then tells the listener (set_outcome_listener), if any.
  void put_outcome(const StoredOutcome& outcome);
  void set_outcome_listener(std::function<void(const StoredOutcome&)> listener) {
    outcome_listener_ = std::move(listener);
  }
  std::optional<StoredOutcome> find_outcome(const std::string& key) const;
  std::vector<StoredOutcome> outcomes() const;
  const std::filesystem::path& file() const { return file_; }
  const std::vector<OutcomeTables>& kinds() const { return kinds_; }

  // A read-only SQL query over the store (`induct export`): `row` gets each row's values, typed
  // as SQLite gives them; `columns` the result's column names.
  struct Value {
    enum class Type { kNull, kInteger, kReal, kText } type = Type::kNull;
    int64_t integer = 0;
    double real = 0;
    std::string text;
    static Value of(int64_t n) { return {Type::kInteger, n, 0, {}}; }
    static Value of(double x) { return {Type::kReal, 0, x, {}}; }
    static Value of(std::string s) { return {Type::kText, 0, 0, std::move(s)}; }
  };
  void select(const std::string& sql, std::vector<std::string>& columns,
              const std::function<void(const std::vector<Value>& row)>& row) const;

 private:
  void exec(const std::string& sql) const;
  int version() const;  // 0: fresh
  void upgrade();
  // Fills the tables of `kinds` from their stored outcomes (tables new to this store).
  void fill_kind_tables(const std::vector<std::string>& kinds);
  // Runs `body` as one transaction (BEGIN IMMEDIATE ... COMMIT; ROLLBACK when it throws).
  template <class Body>
  void transaction(Body body) const;
  void put_row(const std::string& study, const TrialSpec& spec, const TrialResult& result);
  void put_outcome_row(const StoredOutcome& outcome);
  std::vector<StoredTrial> rows(bool skip_undecodable) const;
  const OutcomeTables* find_kind(const std::string& kind) const;
  void write_outcome_details(const std::string& key, const std::string& kind,
                             const YAML::Node& value) const;
  std::filesystem::path file_;
  std::vector<OutcomeTables> kinds_;
  sqlite3* db_ = nullptr;
  std::function<void(const StoredOutcome&)> outcome_listener_;
};

// Handed to OutcomeTables::write inside the store's transaction, for one outcome.
class OutcomeWriter {
 public:
  OutcomeWriter(sqlite3* db, const std::filesystem::path& file, std::string key);
  // Sets a column of the outcome's row (learned, nstar, n_max, certified, ...).
  void set(const std::string& column, const Store::Value& value);
  // Adds a row to one of the kind's tables: the outcome's key, then `values` in column order.
  void insert(const std::string& table, const std::vector<Store::Value>& values);

 private:
  sqlite3* db_;
  const std::filesystem::path& file_;
  std::string key_;
};

}  // namespace induct
