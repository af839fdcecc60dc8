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
      {"lstm",
       "modular",
       {2},
       [](const YAML::Node& o) { return number(o, "layers", 1) == 1; },
       "lstm_parity"},
      {"gru",
       "modular",
       {2},
       [](const YAML::Node& o) { return number(o, "layers", 1) == 1; },
       "gru_parity"},
      {"deltanet",
       "modular",
       {2},
       [](const YAML::Node& o) { return flag(o, "negative_eigenvalues") && !flag(o, "gate"); },
       "deltanet_negative_eigenvalues_parity"},
      {"deltanet",
       "permutation",
       {3},
       [](const YAML::Node& o) {
         return flag(o, "negative_eigenvalues") && !flag(o, "gate") &&
                number(o, "householder", 1) >= 2;
       },
       "deltaproduct_negative_eigenvalues_s3_and_z3"},
      {"deltanet",
       "modular",
       {3},
       [](const YAML::Node& o) {
         return flag(o, "negative_eigenvalues") && !flag(o, "gate") &&
                number(o, "householder", 1) >= 2;
       },
       "deltaproduct_negative_eigenvalues_s3_and_z3"},
      {"dense_ssm",
       "modular",
       {2, 3, 5},
       [](const YAML::Node& o) { return number(o, "rank", 0) == 0 && number(o, "block", 0) == 0; },
       "dense_ssm_full_s3_and_z_m"},
      {"dense_ssm",
       "permutation",
       {3},
       [](const YAML::Node& o) { return number(o, "rank", 0) == 0 && number(o, "block", 0) == 0; },
       "dense_ssm_full_s3_and_z_m"},
      {"xlstm",
       "modular",
       {2},
       [](const YAML::Node& o) { return text(o, "blocks", "msms").find('s') != std::string::npos; },
       "slstm_parity"},
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
