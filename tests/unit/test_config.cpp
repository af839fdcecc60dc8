// Study files: errors name the key with file, line and column; overrides; resolution.
#define BOOST_TEST_MODULE config
#include <boost/test/unit_test.hpp>

#include "config/study_config.hpp"
#include "options_yaml.hpp"
#include "study/study.hpp"
#include "support.hpp"

using namespace induct;

namespace {

const char* kStudy = R"(study: train
task:
  name: modular
  m: 2
model:
  name: lstm
  hidden: 16
data:
  format: acot
  distribution: uniform
  L: 6
  N: 32
training:
  seeds: [1, 2]
)";

std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    StudyConfig study = read_study(yaml::load_string(text, "study.yaml", sets), "study.yaml");
    prepare_cell(study, test::plugins());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_valid_study_reads_back) {
  StudyConfig study = read_study(yaml::load_string(kStudy, "study.yaml"), "study.yaml");
  BOOST_TEST(study.kind == "train");
  BOOST_TEST(study.name == "study");
  BOOST_TEST(study.cell.L == 6);
  BOOST_TEST(study.n == 32u);
  BOOST_TEST(study.learning_rates.size() == 3u);  // the paper's default grid
  BOOST_TEST(study.seeds == (std::vector<uint64_t>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(study.training.max_steps == 250000);
  BOOST_TEST(error_of(kStudy) == "");
}

BOOST_AUTO_TEST_CASE(misspelt_top_level_key_names_key_and_line) {
  std::string message = error_of(replace(kStudy, "training:", "trainig:"));
  BOOST_TEST(message.find("study.yaml:13:1: unknown key 'trainig'") != std::string::npos, message);
  BOOST_TEST(message.find("did you mean 'training'") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(misspelt_plugin_key_names_key_line_and_plugin) {
  std::string message = error_of(replace(kStudy, "hidden: 16", "hiden: 16"));
  BOOST_TEST(message.find("study.yaml:7:3: unknown key 'model.hiden'") != std::string::npos,
             message);
  BOOST_TEST(message.find("did you mean 'hidden'") != std::string::npos, message);
  BOOST_TEST(message.find("model 'lstm'") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(impossible_values_name_key_and_line) {
  BOOST_TEST(error_of(replace(kStudy, "L: 6", "L: 1")).find("study.yaml:11:6: data.L: must be at least 2") != std::string::npos);
  BOOST_TEST(error_of(replace(kStudy, "N: 32", "N: 0")).find("study.yaml:12:6: data.N: must be at least 1") != std::string::npos);
  BOOST_TEST(error_of(replace(kStudy, "m: 2", "m: 1")).find("study.yaml:4:6: task.m: must be at least 2") != std::string::npos);
  std::string lr = error_of(replace(kStudy, "seeds: [1, 2]", "learning_rates: [1e-3, -1e-4]"));
  BOOST_TEST(lr.find("training.learning_rates: every learning rate must be a positive number") != std::string::npos, lr);
  std::string type = error_of(replace(kStudy, "hidden: 16", "hidden: wide"));
  BOOST_TEST(type.find("study.yaml:7:11: model.hidden: expected an integer, got 'wide'") != std::string::npos, type);
  std::string list = error_of(replace(kStudy, "seeds: [1, 2]", "seeds: [1, x]"));
  BOOST_TEST(list.find("study.yaml:14:14: training.seeds[1]: expected a non-negative integer, got 'x'") != std::string::npos, list);
  std::string format = error_of(replace(kStudy, "format: acot", "format: acto"));
  BOOST_TEST(format.find("data.format: 'acto' is not one of: outcome, cot, acot") != std::string::npos, format);
}

BOOST_AUTO_TEST_CASE(syntax_errors_and_duplicate_keys_are_located) {
  std::string syntax = error_of("study: train\ntask: [unclosed\n");
  BOOST_TEST(syntax.find("study.yaml:") == 0u, syntax);
  BOOST_TEST(syntax.find("YAML syntax error") != std::string::npos, syntax);
  std::string duplicate = error_of(std::string(kStudy) + "task: {name: modular, m: 3}\n");
  BOOST_TEST(duplicate.find("study.yaml:15:1: duplicate key 'task' (first at line 2)") != std::string::npos, duplicate);
}

BOOST_AUTO_TEST_CASE(overrides_apply_and_are_named_in_errors) {
  StudyConfig study = read_study(
      yaml::load_string(kStudy, "study.yaml", {"data.L=8", "training.seeds=[5,6,7]"}), "study.yaml");
  BOOST_TEST(study.cell.L == 8);
  BOOST_TEST(study.seeds.size() == 3u);
  std::string message = error_of(kStudy, {"data.L=1"});
  BOOST_TEST(message.find("--set data.L=1: data.L: must be at least 2") != std::string::npos, message);
  std::string unknown = error_of(kStudy, {"model.layers=2"});
  BOOST_TEST(unknown.find("--set model.layers=2: unknown key 'model.layers'") != std::string::npos, unknown);
}

BOOST_AUTO_TEST_CASE(integers_may_be_written_in_scientific_notation) {
  StudyConfig study = read_study(yaml::load_string(replace(kStudy, "N: 32", "N: 1e3"), "s.yaml"), "s.yaml");
  BOOST_TEST(study.n == 1000u);
  std::string message = error_of(replace(kStudy, "N: 32", "N: 1.5"));
  BOOST_TEST(message.find("data.N: expected a non-negative integer, got '1.5'") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(resolved_config_holds_defaults) {
  Options root = yaml::load_string(kStudy, "study.yaml");
  StudyConfig study = read_study(root, "study.yaml");
  prepare_cell(study, test::plugins());
  YAML::Node resolved = yaml::resolved(root);
  BOOST_TEST(resolved["training"]["max_steps"].as<long>() == 250000);
  BOOST_TEST(resolved["training"]["epsilon"].as<double>() == 1e-4);
  BOOST_TEST(resolved["model"]["hidden"].as<long>() == 16);
  BOOST_TEST(resolved["data"]["validation"]["fraction"].as<double>() == 0.2);
}
