// The results store's schema 2: the upgrade of a version-1 store, its columns and tables,
// `induct export`, and why a cell was not learned.
#define BOOST_TEST_MODULE store
#include <sqlite3.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <limits>
#include <map>

#include "probe/measure.hpp"
#include "store/export.hpp"
#include "store/json.hpp"
#include "store/store.hpp"
#include "study/nstar/not_learned.hpp"
#include "study/registry.hpp"
#include "support.hpp"

using namespace induct;

namespace {

const std::string kFixture = std::string(INDUCT_SOURCE_DIR) + "/tests/fixtures/stores/v1.sqlite";

// Every row of a table as text, by its key column (SQLite's own view, not the Store's).
std::map<std::string, std::vector<std::string>> raw_rows(const std::string& file,
                                                         const std::string& sql) {
  sqlite3* db = nullptr;
  BOOST_REQUIRE(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  BOOST_REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
  std::map<std::string, std::vector<std::string>> rows;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      if (sqlite3_column_type(stmt, i) == SQLITE_FLOAT) {  // every digit (SQLite's text has 15)
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "%.17g", sqlite3_column_double(stmt, i));
        row.push_back(buffer);
        continue;
      }
      const auto* text = sqlite3_column_text(stmt, i);
      row.push_back(text ? reinterpret_cast<const char*>(text) : "NULL");
    }
    rows[row[0]] = row;
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rows;
}

std::string one(const std::string& file, const std::string& sql) {
  auto rows = raw_rows(file, sql);
  return rows.empty() ? "" : rows.begin()->first;
}

std::string upgraded_copy(const std::string& name) {
  const std::string dir = test::temp_dir(name);
  BOOST_REQUIRE(test::run_command("cp '" + kFixture + "' '" + dir + "/results.sqlite'").exit_code ==
                0);
  return dir;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_version_1_store_is_upgraded_in_place_keeping_every_row) {
  const std::string dir = upgraded_copy("upgrade");
  const std::string file = dir + "/results.sqlite";
  BOOST_REQUIRE(one(file, "SELECT value FROM meta WHERE key = 'schema_version'") == "1");
  const std::string trials_sql =
      "SELECT key, cell_key, study, task, model, format, distribution, L, n, lr, seed, status, "
      "steps, best_loss, val_loss, token_accuracy, final_accuracy, seconds, spec, result, created "
      "FROM trials";
  const std::string outcomes_sql = "SELECT key, study, kind, label, value, created FROM outcomes";
  const auto trials_before = raw_rows(file, trials_sql);
  const auto outcomes_before = raw_rows(file, outcomes_sql);
  BOOST_REQUIRE(trials_before.size() == 24u);
  BOOST_REQUIRE(outcomes_before.size() == 9u);
  {
    Store store(file, study_outcome_tables());
    // Every row and every value of version 1, unchanged.
    BOOST_TEST(raw_rows(file, trials_sql) == trials_before);
    BOOST_TEST(raw_rows(file, outcomes_sql) == outcomes_before);
    BOOST_TEST(one(file, "SELECT value FROM meta WHERE key = 'schema_version'") == "2");
    // The new columns and tables hold what the YAML says.
    size_t evaluations = 0, lengths = 0;
    for (const StoredTrial& t : store.all()) {
      evaluations += t.result.history.size();
      if (t.result.finished()) lengths += t.result.last.per_length.size();  // a record's are not
      const auto row = raw_rows(file,
                                "SELECT key, task_options, model_options, max_steps, epsilon, "
                                "cell_key FROM trials WHERE key = '" +
                                    t.key + "'")
                           .at(t.key);
      BOOST_TEST(row[1] == "{\"m\":2}");
      BOOST_TEST(row[2] == "{\"hidden\":8}");
      BOOST_TEST(row[3] == std::to_string(t.spec.training.max_steps));
      BOOST_TEST(std::stod(row[4]) == t.spec.training.epsilon);
      BOOST_TEST(row[5] == cell_key(t.spec.cell));
      const auto first =
          raw_rows(file, "SELECT trial, step, val_loss FROM histories WHERE trial = '" + t.key +
                             "' AND step = " + std::to_string(t.result.history.front().step));
      BOOST_REQUIRE(first.size() == 1u);
      BOOST_TEST(std::stod(first.begin()->second[2]) == t.result.history.front().val_loss);
    }
    BOOST_TEST(one(file, "SELECT count(*) FROM histories") == std::to_string(evaluations));
    BOOST_TEST(one(file, "SELECT count(*) FROM per_length") == std::to_string(lengths));
    for (const StoredOutcome& o : store.outcomes()) {
      const auto row = raw_rows(file,
                                "SELECT key, learned, nstar, n_max, certified, cell_key, L "
                                "FROM outcomes WHERE key = '" +
                                    o.key + "'")
                           .at(o.key);
      if (o.kind == "nstar") {
        const bool learned = o.value["learned"].as<bool>();
        BOOST_TEST(row[1] == (learned ? "1" : "0"));
        BOOST_TEST(row[2] == (learned ? o.value["nstar"].as<std::string>() : "NULL"));
        BOOST_TEST(row[3] == o.value["n_max"].as<std::string>());
        BOOST_TEST(row[4] == "1");  // no failure detector: every failure proven
        BOOST_TEST(row[5] == cell_key(Cell::from_yaml(o.value["cell"])));
        BOOST_TEST(row[6] == o.value["cell"]["L"].as<std::string>());
      }
      if (o.kind == "sharing") {
        BOOST_TEST(row[5] == "NULL");  // several cells
        BOOST_TEST(one(file, "SELECT count(*) FROM kappas WHERE outcome = '" + o.key + "'") ==
                   std::to_string(o.value["lengths"].size()));
      }
      if (o.kind == "lengthgen")
        BOOST_TEST(one(file, "SELECT count(*) FROM curves WHERE outcome = '" + o.key + "'") ==
                   std::to_string(o.value["curve"].size()));
    }
    // The cell keys of outcomes and trials meet: N* outcomes find their trials in SQL.
    BOOST_TEST(one(file,
                   "SELECT count(*) FROM outcomes o JOIN trials t ON t.cell_key = o.cell_key "
                   "AND t.n = o.n_max WHERE o.kind = 'nstar'") != "0");
  }
  // Opened again: nothing to upgrade, nothing changed.
  const auto trials_after = raw_rows(file, trials_sql);
  { Store again(file); }
  BOOST_TEST(raw_rows(file, trials_sql) == trials_after);
  // A store of a later version is refused, naming the version.
  BOOST_REQUIRE(test::run_command("sqlite3 '" + file +
                                  "' \"UPDATE meta SET value = '3' WHERE key = 'schema_version'\"")
                    .exit_code == 0);
  try {
    Store later(file);
    BOOST_FAIL("a version-3 store was opened");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()).find("schema version 3") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(yaml_becomes_typed_json) {
  const YAML::Node node = YAML::Load(
      "{m: 2, lr: 1.0e-3, name: \"10\", on: true, none: ~, label: a\"b, rows: [[0, 1], [1, 0]], "
      "weird: .5}");
  BOOST_TEST(
      to_json(node) ==
      "{\"m\":2,\"lr\":1.0e-3,\"name\":\"10\",\"on\":true,\"none\":null,\"label\":\"a\\\"b\","
      "\"rows\":[[0,1],[1,0]],\"weird\":\".5\"}");
  BOOST_TEST(json_number(0.1) == "0.1");
  BOOST_TEST(std::stod(json_number(1.0 / 3.0)) == 1.0 / 3.0);
  BOOST_TEST(json_number(std::numeric_limits<double>::infinity()) == "null");
}

// Every exported file read back by Python's csv module (types and values against the store,
// read with Python's sqlite3): tests/fixtures/check_export.py.
BOOST_AUTO_TEST_CASE(
    export_writes_tidy_tables_with_the_stores_numbers,
    *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
      return test::run_command("python3 -c 'import csv, sqlite3, json'").exit_code == 0;
    })) {
  const std::string dir = upgraded_copy("export");
  { Store store(dir + "/results.sqlite", study_outcome_tables()); }  // the upgrade
  for (const char* format : {"csv", "jsonl"}) {
    const test::CommandResult r =
        test::run_command(std::string(INDUCT_BINARY) + " export " + dir + " --format " + format);
    BOOST_TEST(r.exit_code == 0, r.output);
    BOOST_TEST(r.output.find("trials." + std::string(format) + ": 24 row(s)") != std::string::npos,
               r.output);
  }
  const test::CommandResult check = test::run_command("python3 " + std::string(INDUCT_SOURCE_DIR) +
                                                      "/tests/fixtures/check_export.py " + dir);
  BOOST_TEST(check.exit_code == 0, check.output);
  BOOST_TEST(check.output.find("checked 6 csv and 6 jsonl files") != std::string::npos,
             check.output);
}

namespace {

// A not-learned N* outcome of parity at L = 3 (N_max 7) and its trials, written by hand.
struct Scripted {
  Cell cell;
  YAML::Node outcome;
  std::vector<StoredTrial> trials;
  Scripted() {
    cell.task = YAML::Load("{name: modular, m: 2}");
    cell.model = YAML::Load("{name: lstm, hidden: 8}");
    cell.format = "acot";
    cell.distribution = "fixed";
    cell.L = 3;
    cell.n_cap = 16'000'000;
    outcome["cell"] = cell.to_yaml();
    outcome["learned"] = false;
    outcome["nstar"] = 0;
    outcome["n_max"] = 7;
    outcome["states"] = 2;
    outcome["certified"] = true;
    outcome["settings"] = YAML::Load(
        "{training: {max_steps: 100, epsilon: 1.0e-4}, learning_rates: [0.01], seeds: [1, 2]}");
  }
  void trial(uint64_t n, uint64_t seed, double final_accuracy, int64_t max_steps = 100) {
    StoredTrial t;
    t.spec.cell = cell;
    t.spec.n = n;
    t.spec.lr = 0.01;
    t.spec.seed = seed;
    t.spec.training.max_steps = max_steps;
    t.spec.training.epsilon = 1e-4;
    t.result.status = TrialStatus::kFailed;
    t.result.best_loss = 0.01;
    t.result.last.final_accuracy = final_accuracy;
    trials.push_back(t);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_cell_not_learned_says_why) {
  {  // some configuration has every final state right: the step budget decided
    Scripted s;
    s.trial(7, 1, 0.5);
    s.trial(7, 2, 1.0);
    const NotLearnedReason r = not_learned_reason(s.outcome, trials_by_cell(s.trials));
    BOOST_TEST(static_cast<int>(r.why) == static_cast<int>(NotLearned::kBudget));
    BOOST_TEST(r.configurations == 2u);
    BOOST_TEST(r.best_final_accuracy == 1.0);
    BOOST_TEST(not_learned_mark(r.why) == "budget");
  }
  {  // every configuration at chance (0.5 of 2 states; 0.54 is within 0.1 normalized)
    Scripted s;
    s.trial(7, 1, 0.5);
    s.trial(7, 2, 0.54);
    BOOST_TEST(not_learned_mark(not_learned_reason(s.outcome, trials_by_cell(s.trials)).why) ==
               "chance");
  }
  {  // above chance, not perfect
    Scripted s;
    s.trial(7, 1, 0.5);
    s.trial(7, 2, 0.8);
    BOOST_TEST(not_learned_mark(not_learned_reason(s.outcome, trials_by_cell(s.trials)).why) ==
               "partial");
  }
  {  // a perfect trial at another N, or under another max_steps, does not count
    Scripted s;
    s.trial(7, 1, 0.5);
    s.trial(4, 2, 1.0);
    s.trial(7, 2, 1.0, 200);
    const NotLearnedReason r = not_learned_reason(s.outcome, trials_by_cell(s.trials));
    BOOST_TEST(not_learned_mark(r.why) == "chance");
    BOOST_TEST(r.configurations == 1u);
  }
  {  // the detector's verdict, not proven
    Scripted s;
    s.outcome["stall_window"] = 100;
    s.outcome["certified"] = false;
    s.outcome["failures"].push_back(YAML::Load("[7, verdict]"));
    s.trial(7, 1, 1.0);
    BOOST_TEST(not_learned_mark(not_learned_reason(s.outcome, trials_by_cell(s.trials)).why) ==
               "detector");
  }
  {  // no trial at N_max: unknown, no mark
    Scripted s;
    s.trial(4, 1, 1.0);
    BOOST_TEST(not_learned_mark(not_learned_reason(s.outcome, trials_by_cell(s.trials)).why) == "");
  }
  {  // an outcome without the number of states (stored earlier) is never "chance"
    Scripted s;
    s.outcome.remove("states");
    s.trial(7, 1, 0.5);
    BOOST_TEST(not_learned_mark(not_learned_reason(s.outcome, trials_by_cell(s.trials)).why) ==
               "partial");
  }
}

// A study kind brings its own tables: the store creates and fills them and the export writes
// them, with no line of the store or the export naming the kind (a toy kind here).
BOOST_AUTO_TEST_CASE(a_kind_brings_its_own_table_and_export) {
  OutcomeTables toy;
  toy.kind = "toy";
  toy.schema =
      "CREATE TABLE IF NOT EXISTS toy_points (outcome TEXT NOT NULL, x INTEGER, y REAL, "
      "PRIMARY KEY (outcome, x)) WITHOUT ROWID;";
  toy.tables = {"toy_points"};
  toy.write = [](const YAML::Node& value, OutcomeWriter& out) {
    out.set("n", Store::Value::of(value["n"].as<int64_t>()));
    for (const auto& point : value["points"])
      out.insert("toy_points", {Store::Value::of(point[0].as<int64_t>()),
                                Store::Value::of(point[1].as<double>())});
  };
  toy.exports = {{"toy", "one point of a toy outcome",
                  "SELECT p.outcome, o.label, {cell}, o.n, p.x, p.y FROM toy_points p JOIN "
                  "outcomes o ON o.key = p.outcome ORDER BY o.rowid, p.x"}};
  const std::string dir = test::temp_dir("toy-kind");
  Store store(dir + "/results.sqlite", {toy});
  StoredOutcome outcome{
      "k1",
      "s",
      "toy",
      "cell one",
      YAML::Load("{n: 64, task: {name: modular, m: 2}, model: {name: lstm, hidden: 8}, "
                 "points: [[1, 0.5], [2, 0.25]]}"),
      ""};
  store.put_outcome(outcome);
  outcome.value["points"] = YAML::Load("[[3, 0.125]]");  // a rewrite replaces its rows
  store.put_outcome(outcome);
  const auto files = export_store(store, dir + "/export", ExportFormat::kCsv);
  BOOST_REQUIRE_EQUAL(files.size(), 1u);
  BOOST_TEST(files[0].path.filename().string() == "toy.csv");
  BOOST_TEST(files[0].rows == 1u);
  BOOST_TEST(
      test::read(files[0].path.string()) ==
      "outcome,label,task,task.m,model,model.hidden,n,x,y\nk1,cell one,modular,2,lstm,8,64,3,"
      "0.125\n");
  // Without the kind, the outcome keeps its row and the store names no table of it.
  Store plain(dir + "/plain.sqlite");
  plain.put_outcome(outcome);
  BOOST_TEST(plain.outcomes().size() == 1u);
  BOOST_TEST(export_store(plain, dir + "/plain", ExportFormat::kCsv).empty());
  // Opened again with the kind, the store fills its new table from the outcome stored before.
  {
    Store again(dir + "/plain.sqlite", {toy});
    const auto refilled = export_store(again, dir + "/again", ExportFormat::kCsv);
    BOOST_REQUIRE_EQUAL(refilled.size(), 1u);
    BOOST_TEST(refilled[0].rows == 1u);
  }
  test::run_command("rm -rf '" + dir + "'");
}

// A probe outcome's measurement in probe_hooks and probe_convs, exported one row per hook
// point (with its relative depth) and per convolution; the nullspace columns empty where it
// was not measured.
BOOST_AUTO_TEST_CASE(probe_outcomes_are_exported_per_hook_and_convolution) {
  const std::string dir = test::temp_dir("probe-export");
  Store store(dir + "/results.sqlite", study_outcome_tables());
  ProbeMeasurement m;
  LengthMeasurement l;
  l.length = 8;
  l.sequences = 40;
  l.probed = true;
  l.final_accuracy = 0.9;
  l.final_chance = 0.5;
  for (const char* name : {"embed", "block.0", "block.1", "norm"}) {
    HookMeasurement h;
    h.name = name;
    h.probe = name == std::string("block.1") ? 1.0 : 0.25;
    h.patch_readout = 0.5;
    if (name == std::string("block.0"))
      h.nullspace = HookMeasurement::Nullspace{3, 2, 0.01, 0.6, 0.85};
    l.hooks.push_back(h);
  }
  l.convs.push_back({"block.0.conv", 0.7, 0.125});
  m.lengths.push_back(l);
  YAML::Node value = YAML::Load(
      "{cell: {task: {name: modular, m: 2}, model: {name: mamba, layers: 2}, format: acot, "
      "distribution: uniform, L: 8, validation: {max_size: 2000, fraction: 0.2}, n_cap: 100}, "
      "n: 100, lr: 0.001, seed: 10}");
  value["lengths"] = m.to_yaml();
  store.put_outcome({"p1", "s", "probe", "cell", value, ""});
  const auto files = export_store(store, dir + "/export", ExportFormat::kCsv);
  std::map<std::string, ExportedFile> by_name;
  for (const auto& f : files) by_name[f.path.filename().string()] = f;
  BOOST_REQUIRE(by_name.count("probe.csv"));
  BOOST_REQUIRE(by_name.count("probe_convs.csv"));
  BOOST_TEST(by_name["probe.csv"].rows == 4u);
  BOOST_TEST(by_name["probe_convs.csv"].rows == 1u);
  const std::string hooks = test::read(by_name["probe.csv"].path.string());
  BOOST_TEST(hooks.find(",8,1,block.0,0.5,0.9,0.5,0.25,0,0,0,3,2,0.01,0.6,0.85,0,0.5,") !=
                 std::string::npos,
             hooks);
  BOOST_TEST(hooks.find(",8,2,block.1,1,0.9,0.5,1,0,0,0,,,,,,0,0.5,") != std::string::npos, hooks);
  BOOST_TEST(hooks.find(",8,3,norm,,0.9,") != std::string::npos, hooks);  // the norm: no depth
  const std::string convs = test::read(by_name["probe_convs.csv"].path.string());
  BOOST_TEST(convs.find(",8,block.0.conv,0.7,0.125,") != std::string::npos, convs);
  test::run_command("rm -rf '" + dir + "'");
}
