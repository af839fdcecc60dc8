#include "store/store.hpp"

#include <sqlite3.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <stdexcept>

#include "util/hash.hpp"

namespace induct {

namespace {

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trials (
  key            TEXT PRIMARY KEY,   -- hash of everything that decides the result
  cell_key       TEXT NOT NULL,      -- hash of the resolved cell
  study          TEXT NOT NULL,      -- the study that ran it
  task           TEXT NOT NULL,
  model          TEXT NOT NULL,
  format         TEXT NOT NULL,
  distribution   TEXT NOT NULL,
  L              INTEGER NOT NULL,
  n              INTEGER NOT NULL,
  lr             REAL NOT NULL,
  seed           INTEGER NOT NULL,
  status         TEXT NOT NULL,      -- succeeded | failed | diverged | cancelled | error
  steps          INTEGER NOT NULL,
  best_loss      REAL,
  val_loss       REAL,
  token_accuracy REAL,
  final_accuracy REAL,
  seconds        REAL NOT NULL,
  spec           TEXT NOT NULL,      -- the trial, as YAML
  result         TEXT NOT NULL,      -- the result with per-length metrics and history, as YAML
  created        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS trials_by_cell ON trials (cell_key, n);
CREATE TABLE IF NOT EXISTS outcomes (
  key     TEXT PRIMARY KEY,  -- hash of (kind, resolved cell, settings that decide it)
  study   TEXT NOT NULL,
  kind    TEXT NOT NULL,     -- nstar | sharing | lengthgen
  label   TEXT NOT NULL,
  value   TEXT NOT NULL,     -- YAML (docs/store.md)
  created TEXT NOT NULL
);
)sql";

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

std::string dump(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return out.c_str();
}

// Waits for a store that another process holds locked. SQLite's busy handler waits up to
// kBusyTimeoutMs inside each call; after that the call is made again (a single statement in
// autocommit mode is safe to retry), forever: a trained result is never dropped because
// someone else holds the file. Says what it waits for, with the path, once a minute.
constexpr int kBusyTimeoutMs = 10'000;

class BusyWait {
 public:
  explicit BusyWait(const std::filesystem::path& file) : file_(file) {}
  ~BusyWait() {
    if (waited_ > 0) std::cerr << "store " << file_.string() << ": no longer locked; continuing\n";
  }
  void once_more() {
    waited_ += kBusyTimeoutMs / 1000;
    if (waited_ == kBusyTimeoutMs / 1000 || waited_ % 60 == 0)
      std::cerr << "store " << file_.string() << ": locked by another process for " << waited_
                << " s; waiting for it (nothing is lost; Ctrl-C stops, and the same command "
                   "resumes)\n";
  }

 private:
  const std::filesystem::path& file_;
  int waited_ = 0;
};

class Statement {
 public:
  Statement(sqlite3* db, const char* sql, const std::filesystem::path& file)
      : db_(db), file_(file) {
    BusyWait wait(file_);
    int rc;
    while ((rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr)) == SQLITE_BUSY) wait.once_more();
    if (rc != SQLITE_OK) fail();
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement& text(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& integer(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& real(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  bool step() {
    BusyWait wait(file_);
    for (;;) {
      int rc = sqlite3_step(stmt_);
      if (rc == SQLITE_ROW) return started_ = true;
      if (rc == SQLITE_DONE) return false;
      if (rc != SQLITE_BUSY || started_) fail();  // a scan that has returned rows is not retried
      sqlite3_reset(stmt_);                       // keeps the bindings
      wait.once_more();
    }
  }
  std::string column_text(int i) const {
    auto* p = sqlite3_column_text(stmt_, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }

 private:
  [[noreturn]] void fail() const {
    throw std::runtime_error("store " + file_.string() + ": " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  const std::filesystem::path& file_;
  sqlite3_stmt* stmt_ = nullptr;
  bool started_ = false;
};

// A YAML column of a stored row, decoded by `decode`; a row that does not decode names the
// file, the table, the row's key and the column.
template <class Decode>
auto decode_row(const std::filesystem::path& file, const char* table, const std::string& key,
                const char* column, const std::string& text, Decode decode) {
  try {
    return decode(YAML::Load(text));
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() + ": " + table + " row " + key + ": column " + column +
                             " is not a readable record (" + e.what() +
                             "); delete the row to run it again");
  }
}

}  // namespace

Store::Store(const std::filesystem::path& file) : file_(file) {
  if (sqlite3_open(file.c_str(), &db_) != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error(file.string() + ": cannot open the results store: " + message);
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  try {
    // WAL: a killed writer never corrupts the database; committed trials survive.
    exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    exec(kSchema);
    Statement get(db_, "SELECT value FROM meta WHERE key = 'schema_version'", file_);
    if (get.step()) {
      if (get.column_text(0) != std::to_string(kSchemaVersion))
        throw std::runtime_error("schema version " + get.column_text(0) + ", this induct writes " +
                                 std::to_string(kSchemaVersion));
    } else {
      Statement set(db_, "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", file_);
      set.text(1, std::to_string(kSchemaVersion)).step();
    }
  } catch (const std::exception& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

Store::~Store() { sqlite3_close(db_); }

void Store::exec(const std::string& sql) const {
  BusyWait wait(file_);
  for (;;) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    if (rc == SQLITE_OK) return;
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    if (rc != SQLITE_BUSY) throw std::runtime_error("store " + file_.string() + ": " + message);
    wait.once_more();  // the statements here (schema, pragmas) are safe to run again
  }
}

std::optional<TrialResult> Store::find_finished(const std::string& key) const {
  Statement q(db_,
              "SELECT result FROM trials WHERE key = ? AND status IN "
              "('succeeded', 'failed', 'diverged')",
              file_);
  q.text(1, key);
  if (!q.step()) return std::nullopt;
  return decode_row(file_, "trials", key, "result", q.column_text(0), TrialResult::from_yaml);
}

void Store::put(const std::string& study, const TrialSpec& spec, const TrialResult& result) {
  if (!result.finished() && find_finished(spec.key())) return;
  Statement q(db_, R"sql(
    INSERT OR REPLACE INTO trials (key, cell_key, study, task, model, format, distribution, L,
      n, lr, seed, status, steps, best_loss, val_loss, token_accuracy, final_accuracy, seconds,
      spec, result, created)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql",
              file_);
  q.text(1, spec.key())
      .text(2, content_key(dump(spec.cell.to_yaml())))
      .text(3, study)
      .text(4, spec.cell.task_name())
      .text(5, spec.cell.model_name())
      .text(6, spec.cell.format)
      .text(7, spec.cell.distribution)
      .integer(8, spec.cell.L)
      .integer(9, static_cast<int64_t>(spec.n))
      .real(10, spec.lr)
      .integer(11, static_cast<int64_t>(spec.seed))
      .text(12, to_string(result.status))
      .integer(13, result.steps)
      .real(14, result.best_loss)
      .real(15, result.last.loss)
      .real(16, result.last.token_accuracy)
      .real(17, result.last.final_accuracy)
      .real(18, result.seconds)
      .text(19, dump(spec.to_yaml()))
      .text(20, dump(result.to_yaml()))
      .text(21, now_utc());
  q.step();  // one statement: SQLite commits it as one transaction
}

void Store::put_outcome(const StoredOutcome& o) {
  Statement q(db_,
              "INSERT OR REPLACE INTO outcomes (key, study, kind, label, value, created) "
              "VALUES (?, ?, ?, ?, ?, ?)",
              file_);
  q.text(1, o.key)
      .text(2, o.study)
      .text(3, o.kind)
      .text(4, o.label)
      .text(5, dump(o.value))
      .text(6, now_utc());
  q.step();
}

namespace {
StoredOutcome outcome_row(const Statement& q, const std::filesystem::path& file) {
  StoredOutcome o{q.column_text(0), q.column_text(1), q.column_text(2), q.column_text(3), {},
                  q.column_text(5)};
  o.value = decode_row(file, "outcomes", o.key, "value", q.column_text(4),
                       [](const YAML::Node& node) { return node; });
  return o;
}
}  // namespace

std::optional<StoredOutcome> Store::find_outcome(const std::string& key) const {
  Statement q(db_, "SELECT key, study, kind, label, value, created FROM outcomes WHERE key = ?",
              file_);
  q.text(1, key);
  if (!q.step()) return std::nullopt;
  return outcome_row(q, file_);
}

std::vector<StoredOutcome> Store::outcomes() const {
  Statement q(db_, "SELECT key, study, kind, label, value, created FROM outcomes ORDER BY rowid",
              file_);
  std::vector<StoredOutcome> rows;
  while (q.step()) rows.push_back(outcome_row(q, file_));
  return rows;
}

std::vector<StoredTrial> Store::all() const {
  Statement q(db_, "SELECT key, study, spec, result, created FROM trials ORDER BY rowid", file_);
  std::vector<StoredTrial> rows;
  while (q.step()) {
    const std::string key = q.column_text(0);
    rows.push_back(
        {key, q.column_text(1),
         decode_row(file_, "trials", key, "spec", q.column_text(2), TrialSpec::from_yaml),
         decode_row(file_, "trials", key, "result", q.column_text(3), TrialResult::from_yaml),
         q.column_text(4)});
  }
  return rows;
}

}  // namespace induct
