#include "report/reference.hpp"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "induct/options.hpp"
#include "util/table.hpp"
#include "util/text.hpp"

namespace induct {

namespace {

// One RFC 4180 record from `in` (quoted fields may hold commas, quotes and newlines); false at
// the end. `line` counts physical lines.
bool read_record(std::istream& in, std::vector<std::string>& fields, int& line,
                 const std::string& file) {
  fields.clear();
  std::string field;
  bool quoted = false, any = false, was_quoted = false;
  const int start = line + 1;
  for (int c; (c = in.get()) != EOF;) {
    any = true;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') {
          field += '"';
          in.get();
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += static_cast<char>(c);
      }
    } else if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
      was_quoted = false;
    } else if (c == '\n') {
      ++line;
      if (!field.empty() && field.back() == '\r') field.pop_back();
      fields.push_back(field);
      return true;
    } else {
      field += static_cast<char>(c);
    }
  }
  if (quoted)
    throw ConfigError(file + ":" + std::to_string(start) + ": a quoted field is not closed");
  if (!any) return false;
  ++line;
  if (!field.empty() && field.back() == '\r') field.pop_back();
  fields.push_back(field);
  return true;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// Option values compare as numbers when both read as numbers (1e-3 == 0.001), else as text.
bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a), y = std::strtod(b.c_str(), &end_b);
  return !a.empty() && !b.empty() && *end_a == '\0' && *end_b == '\0' && x == y;
}

bool options_match(const ReferenceValue& r, const YAML::Node& task, const YAML::Node& model) {
  for (const auto& [column, wanted] : r.options) {
    const bool is_task = column.rfind("task.", 0) == 0;
    const YAML::Node section = is_task ? task : model;
    const std::string key = column.substr(is_task ? 5 : 6);
    const YAML::Node value = section[key];
    if (!value || !value.IsScalar() || !same_value(value.Scalar(), wanted)) return false;
  }
  return true;
}

}  // namespace

Reference read_reference(const std::string& file, double factor,
                         const std::vector<ReferenceMetric>& metrics) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file + ": cannot read the reference values");
  Reference reference;
  reference.file = file;
  reference.factor = factor;
  std::string names;
  for (const ReferenceMetric& m : metrics) {
    reference.metrics[m.name] = m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  int line = 0;
  std::vector<std::string> header, fields;
  if (!read_record(in, header, line, file))
    throw ConfigError(file +
                      ": empty (expected a header: task,model,format,distribution,L,"
                      "metric,value,source)");
  for (auto& h : header) h = trim(h);
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& h = header[i];
    static const std::set<std::string> known = {"task", "model",  "format", "distribution",
                                                "L",    "metric", "value",  "source"};
    if (!known.count(h) && h.rfind("task.", 0) != 0 && h.rfind("model.", 0) != 0)
      throw ConfigError(file + ":1: unknown column '" + h +
                        "' (columns: task, model, format, distribution, L, metric, value, source, "
                        "task.OPTION, model.OPTION)");
    if (!column.emplace(h, i).second)
      throw ConfigError(file + ":1: column '" + h + "' appears twice");
  }
  for (const char* required : {"task", "model", "format", "L", "metric", "value"})
    if (!column.count(required))
      throw ConfigError(file + ":1: no column '" + std::string(required) + "'");
  constexpr size_t kMaxRows = 1'000'000;
  while (read_record(in, fields, line, file)) {
    const std::string where = file + ":" + std::to_string(line);
    if (fields.size() == 1 && trim(fields[0]).empty()) continue;  // a blank line
    if (fields.size() != header.size())
      throw ConfigError(where + ": " + std::to_string(fields.size()) + " fields, the header has " +
                        std::to_string(header.size()));
    if (reference.values.size() == kMaxRows)
      throw ConfigError(where + ": more than " + std::to_string(kMaxRows) + " rows");
    auto get = [&](const std::string& name) {
      auto found = column.find(name);
      return found == column.end() ? std::string() : trim(fields[found->second]);
    };
    ReferenceValue r;
    r.task = get("task");
    r.model = get("model");
    r.format = get("format");
    r.distribution = get("distribution");
    r.metric = get("metric");
    r.source = get("source");
    r.where = where;
    const auto metric = reference.metrics.find(r.metric);
    if (metric == reference.metrics.end())
      throw ConfigError(where + ": metric '" + r.metric + "': expected one of " + names);
    const bool ratio = metric->second.compare == ReferenceMetric::Compare::kRatio;
    if (r.task.empty() || r.model.empty() || r.format.empty())
      throw ConfigError(where + ": task, model and format must not be empty");
    try {
      size_t used = 0;
      const long L = std::stol(get("L"), &used);
      if (used != get("L").size() || L < 2) throw std::invalid_argument("L");
      r.L = static_cast<int>(L);
    } catch (const std::exception&) {
      throw ConfigError(where + ": L '" + get("L") + "' is not a length (an integer >= 2)");
    }
    const std::string value = get("value");
    if (!value.empty() && value != "-" && value != kNotLearned) {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !std::isfinite(v) || (ratio && v <= 0))
        throw ConfigError(where + ": value '" + value + "' is not a " + (ratio ? "positive " : "") +
                          "number (empty, - or – for not learned)");
      r.value = v;
    }
    for (const auto& [name, index] : column)
      if ((name.rfind("task.", 0) == 0 || name.rfind("model.", 0) == 0) &&
          !trim(fields[index]).empty())
        r.options[name] = trim(fields[index]);
    reference.values.push_back(r);
  }
  return reference;
}

std::vector<const ReferenceValue*> Reference::find(const std::string& metric,
                                                   const YAML::Node& task, const YAML::Node& model,
                                                   const std::string& format,
                                                   const std::string& distribution, int L) const {
  std::vector<const ReferenceValue*> out;
  for (const ReferenceValue& r : values)
    if (r.metric == metric && r.L == L && r.format == format &&
        (r.distribution.empty() || distribution.empty() || r.distribution == distribution) &&
        r.task == task["name"].as<std::string>() && r.model == model["name"].as<std::string>() &&
        options_match(r, task, model))
      out.push_back(&r);
  return out;
}

bool Reference::differs(const ReferenceValue& published, std::optional<double> ours) const {
  if (!published.value || !ours) return published.value.has_value() != ours.has_value();
  const ReferenceMetric& metric = metric_of(published);
  if (metric.compare == ReferenceMetric::Compare::kDifference)
    return std::abs(*ours - *published.value) > metric.tolerance + 1e-12;
  const double ratio = *ours / *published.value;
  return ratio > factor || ratio < 1.0 / factor;
}

std::string Reference::compare(const std::vector<const ReferenceValue*>& published,
                               std::optional<double> ours) const {
  std::string text;
  for (const ReferenceValue* r : published) {
    std::string one = r->value ? format_number(*r->value, 4) : kNotLearned;
    if (!r->source.empty()) one += " " + r->source;
    if (r->value && ours) {
      if (metric_of(*r).compare == ReferenceMetric::Compare::kDifference) {
        const double d = *ours - *r->value;
        one += ", " + std::string(d >= 0 ? "+" : "") + format_number(d, 2);
      } else {
        one += ", x" + format_number(*ours / *r->value, 3);
      }
    }
    if (differs(*r, ours)) one += " !";
    text += (text.empty() ? "" : "; ") + one;
  }
  return text;
}

}  // namespace induct
