#include "store/store.hpp"

#include <sqlite3.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <set>
#include <stdexcept>

#include "store/json.hpp"
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
  kind    TEXT NOT NULL,     -- the study kind
  label   TEXT NOT NULL,
  value   TEXT NOT NULL,     -- YAML (docs/store.md)
  created TEXT NOT NULL
);
)sql";

// Version 2: the numbers of each row as columns, histories and per-length metrics as tables
// (docs/store.md). Applied to a fresh store and, in one transaction, to a version-1 store
// (its columns filled from the rows' YAML).
const char* kSchemaV2 = R"sql(
ALTER TABLE trials ADD COLUMN task_options TEXT;   -- JSON: the resolved task section, less its name
ALTER TABLE trials ADD COLUMN model_options TEXT;  -- JSON: the resolved model section, less its name
ALTER TABLE trials ADD COLUMN max_steps INTEGER;
ALTER TABLE trials ADD COLUMN epsilon REAL;
ALTER TABLE trials ADD COLUMN stopped_by TEXT;     -- the failure detector's rule, NULL when none stopped it
ALTER TABLE trials ADD COLUMN resumed_at INTEGER;  -- the saved step it went on from, 0: from the start
ALTER TABLE trials ADD COLUMN chance_loss REAL;    -- the detector's plateau level (NULL: no detector)
ALTER TABLE outcomes ADD COLUMN cell_key TEXT;     -- trials.cell_key of its cell (NULL: several cells)
ALTER TABLE outcomes ADD COLUMN task TEXT;
ALTER TABLE outcomes ADD COLUMN task_options TEXT;
ALTER TABLE outcomes ADD COLUMN model TEXT;
ALTER TABLE outcomes ADD COLUMN model_options TEXT;
ALTER TABLE outcomes ADD COLUMN format TEXT;
ALTER TABLE outcomes ADD COLUMN distribution TEXT;
ALTER TABLE outcomes ADD COLUMN L INTEGER;
ALTER TABLE outcomes ADD COLUMN learned INTEGER;   -- filled by the kinds (OutcomeTables::write)
ALTER TABLE outcomes ADD COLUMN nstar INTEGER;
ALTER TABLE outcomes ADD COLUMN n_max INTEGER;
ALTER TABLE outcomes ADD COLUMN certified INTEGER;
ALTER TABLE outcomes ADD COLUMN n INTEGER;         -- a single trained model's N, lr, seed
ALTER TABLE outcomes ADD COLUMN lr REAL;
ALTER TABLE outcomes ADD COLUMN seed INTEGER;
ALTER TABLE outcomes ADD COLUMN max_steps INTEGER;
ALTER TABLE outcomes ADD COLUMN epsilon REAL;
ALTER TABLE outcomes ADD COLUMN settings TEXT;     -- JSON: the settings it was found with (NULL: not recorded)
CREATE TABLE IF NOT EXISTS histories (
  trial      TEXT NOT NULL,  -- trials.key
  step       INTEGER NOT NULL,
  train_loss REAL,
  val_loss   REAL,
  PRIMARY KEY (trial, step)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS per_length (
  trial          TEXT NOT NULL,  -- trials.key
  length         INTEGER NOT NULL,
  sequences      INTEGER,
  loss           REAL,
  token_accuracy REAL,
  final_accuracy REAL,
  PRIMARY KEY (trial, length)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS outcomes_by_cell ON outcomes (cell_key);
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

// Why a store cannot be written, in words a user can act on ("" when the folder and the file
// are writable and the file system has room): SQLite says only "attempt to write a readonly
// database", "unable to open database file" (no inode left for its journal) or "database or
// disk is full".
std::string unwritable_reason(const std::filesystem::path& file) {
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  if (::access(dir.c_str(), W_OK) != 0)
    return "the folder " + dir.string() +
           " is read-only for this user (the store writes its journal beside it): copy the "
           "folder somewhere writable and run the command on the copy";
  if (::access(file.c_str(), F_OK) == 0 && ::access(file.c_str(), W_OK) != 0)
    return "the file is read-only for this user: copy the folder somewhere writable and run "
           "the command on the copy";
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0) {
    if (fs.f_files > 0 && fs.f_favail == 0)
      return "the file system of " + dir.string() +
             " has no free inodes (`df -i`): the store needs files for its journal; free some "
             "and run the same command";
    if (fs.f_bavail == 0)
      return "the file system of " + dir.string() +
             " is full (`df`): free some space and run the same command";
  }
  return "";
}

// SQLite's `message` for result `code`, with the reason when the store cannot write.
std::string with_reason(const std::string& message, int code, const std::filesystem::path& file) {
  code &= 0xFF;  // the primary code of an extended one
  if (code == SQLITE_CANTOPEN || code == SQLITE_FULL || code == SQLITE_READONLY ||
      code == SQLITE_IOERR)
    if (const std::string reason = unwritable_reason(file); !reason.empty())
      return message + ": " + reason;
  return message;
}

// The message of the last error on `db`, with the reason when the store cannot write.
std::string sqlite_error(sqlite3* db, const std::filesystem::path& file) {
  return db ? with_reason(sqlite3_errmsg(db), sqlite3_extended_errcode(db), file) : "out of memory";
}

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
  Statement& null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Statement& value(int i, const Store::Value& v) {
    switch (v.type) {
      case Store::Value::Type::kInteger:
        return integer(i, v.integer);
      case Store::Value::Type::kReal:
        return real(i, v.real);
      case Store::Value::Type::kText:
        return text(i, v.text);
      case Store::Value::Type::kNull:
        break;
    }
    return null(i);
  }
  // Ready to run again (the same SQL, new bindings): one prepared statement for many rows.
  Statement& reset() {
    sqlite3_reset(stmt_);
    started_ = false;
    return *this;
  }
  // Text, or NULL when empty.
  Statement& text_or_null(int i, const std::string& v) { return v.empty() ? null(i) : text(i, v); }
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
    throw std::runtime_error("store " + file_.string() + ": " + sqlite_error(db_, file_));
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

// A section's options as JSON, less its name.
std::string options_json(const YAML::Node& section) {
  // Written directly: a map built key by key compares keys through yaml-cpp's conversions
  // (a quarter of a put's time).
  std::string out = "{";
  for (const auto& entry : section) {
    if (entry.first.Scalar() == "name") continue;
    if (out.size() > 1) out += ',';
    out += json_string(entry.first.Scalar()) + ':' + to_json(entry.second);
  }
  return out + '}';
}

// The columns and tables of schema 2 that a trial's YAML fills (put, and the upgrade).
void write_trial_details(sqlite3* db, const std::filesystem::path& file, const std::string& key,
                         const TrialSpec& spec, const TrialResult& result) {
  Statement columns(db,
                    "UPDATE trials SET task_options = ?, model_options = ?, max_steps = ?, "
                    "epsilon = ?, stopped_by = ?, resumed_at = ?, chance_loss = ? WHERE key = ?",
                    file);
  columns.text(1, options_json(spec.cell.task))
      .text(2, options_json(spec.cell.model))
      .integer(3, spec.training.max_steps)
      .real(4, spec.training.epsilon)
      .text_or_null(5, result.stalled ? result.stopped_by : std::string())
      .integer(6, result.resumed_at);
  if (result.finished() && result.chance_loss > 0)  // measured only with the failure detector on
    columns.real(7, result.chance_loss);
  else
    columns.null(7);
  columns.text(8, key).step();
  for (const char* table : {"histories", "per_length"}) {
    Statement clear(db, (std::string("DELETE FROM ") + table + " WHERE trial = ?").c_str(), file);
    clear.text(1, key).step();
  }
  Statement history(db, "INSERT OR REPLACE INTO histories VALUES (?, ?, ?, ?)", file);
  for (const EvalPoint& point : result.history)
    history.reset()
        .text(1, key)
        .integer(2, point.step)
        .real(3, point.train_loss)
        .real(4, point.val_loss)
        .step();
  if (!result.finished()) return;  // a record's metrics are not measured
  Statement q(db, "INSERT OR REPLACE INTO per_length VALUES (?, ?, ?, ?, ?, ?)", file);
  for (const LengthMetrics& m : result.last.per_length) {
    q.reset()
        .text(1, key)
        .integer(2, m.length)
        .integer(3, m.count)
        .real(4, m.loss)
        .real(5, m.token_accuracy)
        .real(6, m.final_accuracy)
        .step();
  }
}

// The columns of schema 2 that every outcome's YAML fills (its kind fills the rest).
void fill_outcome_details(sqlite3* db, const std::filesystem::path& file, const std::string& key,
                          const YAML::Node& value) {
  Statement q(db,
              "UPDATE outcomes SET cell_key = ?, task = ?, task_options = ?, model = ?, "
              "model_options = ?, format = ?, distribution = ?, L = ?, learned = ?, nstar = ?, "
              "n_max = ?, certified = ?, n = ?, lr = ?, seed = ?, max_steps = ?, epsilon = ?, "
              "settings = ? WHERE key = ?",
              file);
  for (int i = 1; i <= 18; ++i) q.null(i);
  q.text(19, key);
  YAML::Node task, model;
  if (value["cell"]) {
    const Cell cell = Cell::from_yaml(value["cell"]);
    q.text(1, cell_key(cell));
    task = cell.task;
    model = cell.model;
    q.text(6, cell.format_label()).text(7, cell.distribution).integer(8, cell.L);
  } else if (value["task"] && value["model"]) {  // sharing: a base cell over lengths
    task = value["task"];
    model = value["model"];
    if (value["format"]) q.text(6, value["format"].as<std::string>());
  }
  if (task) q.text(2, task["name"].as<std::string>()).text(3, options_json(task));
  if (model) q.text(4, model["name"].as<std::string>()).text(5, options_json(model));
  if (value["n"]) q.integer(13, value["n"].as<int64_t>());
  if (value["lr"]) q.real(14, value["lr"].as<double>());
  if (value["seed"]) q.integer(15, value["seed"].as<int64_t>());
  if (const YAML::Node settings = value["settings"]) {
    if (settings["training"]) {
      q.integer(16, settings["training"]["max_steps"].as<int64_t>());
      q.real(17, settings["training"]["epsilon"].as<double>());
    }
    q.text(18, to_json(settings));
  }
  q.step();
}

}  // namespace

OutcomeWriter::OutcomeWriter(sqlite3* db, const std::filesystem::path& file, std::string key)
    : db_(db), file_(file), key_(std::move(key)) {}

void OutcomeWriter::set(const std::string& column, const Store::Value& value) {
  Statement q(db_, ("UPDATE outcomes SET " + column + " = ? WHERE key = ?").c_str(), file_);
  q.value(1, value).text(2, key_).step();
}

void OutcomeWriter::insert(const std::string& table, const std::vector<Store::Value>& values) {
  std::string sql = "INSERT OR REPLACE INTO " + table + " VALUES (?";
  for (size_t i = 0; i < values.size(); ++i) sql += ", ?";
  Statement q(db_, (sql + ")").c_str(), file_);
  q.text(1, key_);
  for (size_t i = 0; i < values.size(); ++i) q.value(static_cast<int>(i) + 2, values[i]);
  q.step();
}

const OutcomeTables* Store::find_kind(const std::string& kind) const {
  for (const OutcomeTables& tables : kinds_)
    if (tables.kind == kind) return &tables;
  return nullptr;
}

// A value whose fields do not read (a record written by hand, or by another version) leaves
// the columns it would fill NULL: the row itself is stored whatever its YAML holds.
void Store::write_outcome_details(const std::string& key, const std::string& kind,
                                  const YAML::Node& value) const {
  const auto clear_rows = [&](const OutcomeTables& tables) {
    for (const std::string& table : tables.tables) {
      Statement rows(db_, ("DELETE FROM " + table + " WHERE outcome = ?").c_str(), file_);
      rows.text(1, key).step();
    }
  };
  const OutcomeTables* own = find_kind(kind);
  try {
    fill_outcome_details(db_, file_, key, value);
    if (own) {
      clear_rows(*own);
      OutcomeWriter out(db_, file_, key);
      if (own->write) own->write(value, out);
    }
  } catch (const YAML::Exception&) {
    Statement clear(db_,
                    "UPDATE outcomes SET cell_key = NULL, task = NULL, task_options = NULL, "
                    "model = NULL, model_options = NULL, format = NULL, distribution = NULL, "
                    "L = NULL, learned = NULL, nstar = NULL, n_max = NULL, certified = NULL, "
                    "n = NULL, lr = NULL, seed = NULL, max_steps = NULL, epsilon = NULL, "
                    "settings = NULL WHERE key = ?",
                    file_);
    clear.text(1, key).step();
    if (own) clear_rows(*own);
  }
}

Store::Store(const std::filesystem::path& file, std::vector<OutcomeTables> kinds)
    : file_(file), kinds_(std::move(kinds)) {
  if (sqlite3_open(file.c_str(), &db_) != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    const std::string reason = unwritable_reason(file);
    throw std::runtime_error(
        file.string() + ": cannot open the results store: " + (reason.empty() ? message : reason));
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  try {
    // WAL: a killed writer never corrupts the database; committed trials survive.
    exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    exec(kSchema);
    // A kind's tables that this store did not have yet (a kind that gained its own tables
    // after outcomes of it were stored) are filled from those outcomes' YAML.
    std::vector<std::string> fresh;
    for (const OutcomeTables& tables : kinds_) {
      if (!tables.tables.empty()) {
        Statement exists(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                         file_);
        exists.text(1, tables.tables.front());
        if (!exists.step()) fresh.push_back(tables.kind);
      }
      exec(tables.schema);
    }
    if (version() != kSchemaVersion)
      upgrade();
    else if (!fresh.empty())
      fill_kind_tables(fresh);
  } catch (const std::exception& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    const std::string reason = unwritable_reason(file);
    throw std::runtime_error(
        file.string() + ": " +
        (reason.empty() ? std::string(e.what()) : "cannot open the results store: " + reason));
  }
}

int Store::version() const {
  Statement get(db_, "SELECT value FROM meta WHERE key = 'schema_version'", file_);
  if (!get.step()) return 0;  // a fresh store
  const std::string text = get.column_text(0);
  if (text == "1") return 1;
  if (text == std::to_string(kSchemaVersion)) return kSchemaVersion;
  throw std::runtime_error("schema version " + text + "; this induct reads versions 1 and " +
                           std::to_string(kSchemaVersion));
}

template <class Body>
void Store::transaction(Body body) const {
  exec("BEGIN IMMEDIATE");
  try {
    body();
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  exec("COMMIT");
}

void Store::upgrade() {
  transaction([&] {
    const int from = version();  // again, under the write lock: another process may have upgraded
    if (from == kSchemaVersion) return;
    exec(kSchemaV2);
    // A version-1 store's rows: their columns and tables filled from their YAML. A row that
    // does not decode keeps its YAML and empty columns (reading it names it, as before).
    for (const StoredTrial& trial : rows(true))
      write_trial_details(db_, file_, trial.key, trial.spec, trial.result);
    Statement outcomes(db_, "SELECT key, kind, value FROM outcomes", file_);
    while (outcomes.step()) {
      try {
        write_outcome_details(outcomes.column_text(0), outcomes.column_text(1),
                              YAML::Load(outcomes.column_text(2)));
      } catch (const YAML::Exception&) {
      }
    }
    Statement set(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                  file_);
    set.text(1, std::to_string(kSchemaVersion)).step();
    if (from == 1)
      std::cerr << "store " << file_.string() << ": upgraded to schema version " << kSchemaVersion
                << "\n";
  });
}

void Store::fill_kind_tables(const std::vector<std::string>& kinds) {
  transaction([&] {
    for (const std::string& kind : kinds) {
      Statement outcomes(db_, "SELECT key, value FROM outcomes WHERE kind = ?", file_);
      outcomes.text(1, kind);
      while (outcomes.step()) {
        try {
          write_outcome_details(outcomes.column_text(0), kind, YAML::Load(outcomes.column_text(1)));
        } catch (const YAML::Exception&) {
        }
      }
    }
  });
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
    if (rc != SQLITE_BUSY)
      throw std::runtime_error("store " + file_.string() + ": " + with_reason(message, rc, file_));
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
  transaction([&] { put_row(study, spec, result); });
}

void Store::put_row(const std::string& study, const TrialSpec& spec, const TrialResult& result) {
  if (!result.finished() && find_finished(spec.key())) return;
  Statement q(db_, R"sql(
    INSERT OR REPLACE INTO trials (key, cell_key, study, task, model, format, distribution, L,
      n, lr, seed, status, steps, best_loss, val_loss, token_accuracy, final_accuracy, seconds,
      spec, result, created)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql",
              file_);
  q.text(1, spec.key())
      .text(2, cell_key(spec.cell))
      .text(3, study)
      .text(4, spec.cell.task_name())
      .text(5, spec.cell.model_name())
      .text(6, spec.cell.format_label())
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
  q.step();
  write_trial_details(db_, file_, spec.key(), spec, result);
}

void Store::put_outcome(const StoredOutcome& o) {
  transaction([&] { put_outcome_row(o); });
  if (outcome_listener_) outcome_listener_(o);
}

void Store::put_outcome_row(const StoredOutcome& o) {
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
  write_outcome_details(o.key, o.kind, o.value);
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

std::vector<StoredTrial> Store::all() const { return rows(false); }

std::vector<StoredTrial> Store::rows(bool skip_undecodable) const {
  Statement q(db_, "SELECT key, study, spec, result, created FROM trials ORDER BY rowid", file_);
  std::vector<StoredTrial> rows;
  while (q.step()) {
    const std::string key = q.column_text(0);
    try {
      rows.push_back(
          {key, q.column_text(1),
           decode_row(file_, "trials", key, "spec", q.column_text(2), TrialSpec::from_yaml),
           decode_row(file_, "trials", key, "result", q.column_text(3), TrialResult::from_yaml),
           q.column_text(4)});
    } catch (const std::runtime_error&) {
      if (!skip_undecodable) throw;
    }
  }
  return rows;
}

void Store::select(const std::string& sql, std::vector<std::string>& columns,
                   const std::function<void(const std::vector<Value>& row)>& row) const {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK || !stmt) {
    const std::string message = sqlite_error(db_, file_);
    sqlite3_finalize(stmt);
    throw std::runtime_error("store " + file_.string() + ": " + message);
  }
  if (!sqlite3_stmt_readonly(stmt)) {
    sqlite3_finalize(stmt);
    throw std::logic_error("Store::select: not a read-only query");
  }
  const int n = sqlite3_column_count(stmt);
  columns.clear();
  for (int i = 0; i < n; ++i) columns.push_back(sqlite3_column_name(stmt, i));
  std::vector<Value> values(static_cast<size_t>(n));
  BusyWait wait(file_);
  bool started = false;
  for (;;) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) break;
    if (rc == SQLITE_BUSY && !started) {
      sqlite3_reset(stmt);
      wait.once_more();
      continue;
    }
    if (rc != SQLITE_ROW) {
      const std::string message = sqlite_error(db_, file_);
      sqlite3_finalize(stmt);
      throw std::runtime_error("store " + file_.string() + ": " + message);
    }
    started = true;
    for (int i = 0; i < n; ++i) {
      Value& v = values[static_cast<size_t>(i)];
      switch (sqlite3_column_type(stmt, i)) {
        case SQLITE_INTEGER:
          v = {Value::Type::kInteger, sqlite3_column_int64(stmt, i), 0, {}};
          break;
        case SQLITE_FLOAT:
          v = {Value::Type::kReal, 0, sqlite3_column_double(stmt, i), {}};
          break;
        case SQLITE_NULL:
          v = {};
          break;
        default: {
          const auto* text = sqlite3_column_text(stmt, i);
          v = {Value::Type::kText, 0, 0, text ? reinterpret_cast<const char*>(text) : ""};
        }
      }
    }
    try {
      row(values);
    } catch (...) {
      sqlite3_finalize(stmt);
      throw;
    }
  }
  sqlite3_finalize(stmt);
}

std::string cell_key(const Cell& cell) { return content_key(dump(cell.to_yaml())); }

}  // namespace induct
