#include "store/export.hpp"

#include <set>

#include "store/json.hpp"
#include "util/files.hpp"

namespace induct {

namespace fs = std::filesystem;

namespace {

// Columns whose 0/1 are booleans.
const std::set<std::string> kBooleans = {"learned", "certified"};

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string render(const Store::Value& v, bool boolean, ExportFormat format) {
  using Type = Store::Value::Type;
  const bool json = format == ExportFormat::kJsonLines;
  switch (v.type) {
    case Type::kNull:
      return json ? "null" : "";
    case Type::kInteger:
      if (boolean) return v.integer ? "true" : "false";
      return std::to_string(v.integer);
    case Type::kReal: {
      const std::string number = json_number(v.real);
      return number == "null" && !json ? "" : number;
    }
    case Type::kText:
      return json ? json_string(v.text) : csv_field(v.text);
  }
  return "";
}

std::string quoted_identifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string sql_string(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The option names of a JSON column, in order of first appearance.
std::vector<std::string> option_keys(const Store& store, const std::string& table,
                                     const std::string& column, const std::string& where) {
  std::vector<std::string> columns, keys;
  std::set<std::string> seen;
  store.select("SELECT j.key FROM " + table + ", json_each(" + table + "." + column + ") j" +
                   (where.empty() ? "" : " WHERE " + where) + " ORDER BY " + table + ".rowid, j.id",
               columns, [&](const std::vector<Store::Value>& row) {
                 if (row[0].type == Store::Value::Type::kText && seen.insert(row[0].text).second)
                   keys.push_back(row[0].text);
               });
  return keys;
}

// "o.task, json_extract(o.task_options, '$."m"') AS "task.m", ...": a component's name and its
// options as columns.
std::string component_columns(const Store& store, const std::string& table,
                              const std::string& alias, const std::string& component,
                              const std::string& where) {
  std::string sql = alias + "." + component;
  for (const std::string& key : option_keys(store, table, component + "_options", where))
    sql += ", json_extract(" + alias + "." + component + "_options, " +
           sql_string("$." + quoted_identifier(key)) + ") AS " +
           quoted_identifier(component + "." + key);
  return sql;
}

}  // namespace

std::vector<ExportedFile> export_store(const Store& store, const fs::path& dir,
                                       ExportFormat format) {
  struct Query {
    std::string stem, what, sql;
  };
  const std::string trial_cell = component_columns(store, "trials", "t", "task", "") + ", " +
                                 component_columns(store, "trials", "t", "model", "");
  auto outcome_cell = [&](const std::string& kind) {
    const std::string where = "outcomes.kind = " + sql_string(kind);
    return component_columns(store, "outcomes", "o", "task", where) + ", " +
           component_columns(store, "outcomes", "o", "model", where);
  };
  std::vector<Query> queries = {
      {"trials", "one training (cell, N, learning rate, seed)",
       "SELECT t.key AS trial, t.cell_key, t.study, " + trial_cell +
           ", t.format, t.distribution, t.L, t.n AS N, t.lr, t.seed, t.max_steps, t.epsilon, "
           "t.status, t.steps, t.stopped_by, t.resumed_at, t.best_loss, t.val_loss AS "
           "final_val_loss, t.token_accuracy, t.final_accuracy, t.seconds, t.created "
           "FROM trials t ORDER BY t.rowid"},
      {"histories", "one evaluation of a training",
       "SELECT h.trial, h.step, h.train_loss, h.val_loss FROM histories h JOIN trials t ON "
       "t.key = h.trial ORDER BY t.rowid, h.step"},
      {"per_length", "one length of a training's last evaluation",
       "SELECT p.trial, p.length, p.sequences, p.loss, p.token_accuracy, p.final_accuracy "
       "FROM per_length p JOIN trials t ON t.key = p.trial ORDER BY t.rowid, p.length"},
  };
  for (const OutcomeTables& kind : store.kinds())  // each kind's own files, in the kinds' order
    for (const OutcomeTables::Export& e : kind.exports) {
      std::string sql = e.sql;
      if (const size_t at = sql.find("{cell}"); at != std::string::npos)
        sql.replace(at, 6, outcome_cell(kind.kind));
      queries.push_back({e.stem, e.what, sql});
    }
  fs::create_directories(dir);
  std::vector<ExportedFile> written;
  const bool json = format == ExportFormat::kJsonLines;
  for (const Query& q : queries) {
    std::vector<std::string> columns;
    std::string text;
    size_t rows = 0;
    store.select(q.sql, columns, [&](const std::vector<Store::Value>& row) {
      if (rows++ == 0 && !json) {
        for (size_t i = 0; i < columns.size(); ++i) text += (i ? "," : "") + csv_field(columns[i]);
        text += "\n";
      }
      if (json) text += "{";
      for (size_t i = 0; i < row.size(); ++i) {
        const std::string value = render(row[i], kBooleans.count(columns[i]) > 0, format);
        if (json)
          text += (i ? "," : "") + json_string(columns[i]) + ":" + value;
        else
          text += (i ? "," : "") + value;
      }
      text += json ? "}\n" : "\n";
    });
    if (rows == 0) continue;
    const fs::path path = dir / (q.stem + (json ? ".jsonl" : ".csv"));
    write_file_atomically(path.string(), text);
    written.push_back({path, rows, q.what});
  }
  return written;
}

}  // namespace induct
