#include "report/certificates.hpp"

#include <functional>
#include <vector>

namespace induct {

namespace {

std::string text(const YAML::Node& section, const char* key, const std::string& otherwise) {
  return section[key] ? section[key].as<std::string>() : otherwise;
}
long number(const YAML::Node& section, const char* key, long otherwise) {
  return section[key] ? section[key].as<long>() : otherwise;
}
bool flag(const YAML::Node& section, const char* key) {
  return section[key] && section[key].as<bool>();
}

// The options a construction needs (sizes aside).
bool one_layer(const YAML::Node& o) { return number(o, "layers", 1) == 1; }
bool negative_eigenvalues(const YAML::Node& o) {
  return flag(o, "negative_eigenvalues") && !flag(o, "gate");
}
bool deltaproduct(const YAML::Node& o) {
  return negative_eigenvalues(o) && number(o, "householder", 1) >= 2;
}
bool full_form(const YAML::Node& o) {
  return number(o, "rank", 0) == 0 && number(o, "block", 0) == 0;
}
bool has_slstm(const YAML::Node& o) {
  return text(o, "blocks", "msms").find('s') != std::string::npos;
}

// One construction: the model it is for (the options it needs; sizes at least the test's, the
// rest of a larger model's weights zero), the task, and the test case that checks it.
struct Certificate {
  std::string model, task;
  std::vector<long> m;  // the task's m
  std::function<bool(const YAML::Node&)> fits;
  std::string test;
};

const std::vector<Certificate>& certificates() {
  static const std::vector<Certificate> all = {
      {"lstm", "modular", {2}, one_layer, "lstm_parity"},
      {"gru", "modular", {2}, one_layer, "gru_parity"},
      {"deltanet", "modular", {2}, negative_eigenvalues, "deltanet_negative_eigenvalues_parity"},
      {"deltanet", "permutation", {3}, deltaproduct, "deltaproduct_negative_eigenvalues_s3_and_z3"},
      {"deltanet", "modular", {3}, deltaproduct, "deltaproduct_negative_eigenvalues_s3_and_z3"},
      {"dense_ssm", "modular", {2, 3, 5}, full_form, "dense_ssm_full_s3_and_z_m"},
      {"dense_ssm", "permutation", {3}, full_form, "dense_ssm_full_s3_and_z_m"},
      {"xlstm", "modular", {2}, has_slstm, "slstm_parity"},
  };
  return all;
}

}  // namespace

const std::string kRepresentableMark = "representable";
const std::string kRepresentableLegend =
    "(representable): not learned, although the model can represent the task: weights set by "
    "hand compute it exactly at L and 4L (tests/unit/test_certificates.cpp, docs/models.md); "
    "training did not find them";

std::string certificate_for(const YAML::Node& model, const YAML::Node& task,
                            const std::string& format) {
  if (format != "outcome" && format != "acot") return "";
  if (!model.IsMap() || !task.IsMap() || !model["name"] || !task["name"]) return "";
  const std::string name = model["name"].as<std::string>();
  const std::string task_name = task["name"].as<std::string>();
  const long m = number(task, "m", 0);
  for (const auto& c : certificates())
    if (c.model == name && c.task == task_name && c.fits(model))
      for (long each : c.m)
        if (each == m) return c.test;
  return "";
}

}  // namespace induct
