// The plugin loader: loads the real plugins; refuses broken libraries with a message that
// names the file and the problem, and keeps the good ones.
#define BOOST_TEST_MODULE plugins
#include <boost/test/unit_test.hpp>

#include "induct/model.hpp"
#include "options_yaml.hpp"
#include "support.hpp"

using namespace induct;

namespace {
std::string refusal(const std::string& file) {
  PluginRegistry registry;
  try {
    registry.load(file);
  } catch (const PluginError& e) {
    BOOST_TEST(registry.components().empty());
    return e.what();
  }
  return "";
}
const std::string kFixtures = INDUCT_FIXTURE_PLUGIN_DIR;
}  // namespace

BOOST_AUTO_TEST_CASE(loads_the_real_plugins) {
  PluginRegistry& registry = test::plugins();
  BOOST_TEST(registry.problems().empty());
  const ComponentInfo* lstm = registry.find("model", "lstm");
  BOOST_REQUIRE(lstm);
  BOOST_TEST(lstm->plugin_name == "lstm");
  BOOST_TEST(lstm->library.find("libinduct_lstm.so") != std::string::npos);
  BOOST_TEST(registry.find("task", "modular") != nullptr);
  BOOST_TEST(registry.find("model", "modular") == nullptr);
}

BOOST_AUTO_TEST_CASE(refuses_a_missing_file) {
  std::string message = refusal("/nonexistent/libnothing.so");
  BOOST_TEST(message == "/nonexistent/libnothing.so: no such plugin file");
}

BOOST_AUTO_TEST_CASE(refuses_a_library_without_the_entry_point) {
  std::string file = kFixtures + "/libfixture_no_entry.so";
  std::string message = refusal(file);
  BOOST_TEST(message.find(file + ": not an induct plugin (no 'induct_plugin_entry'") == 0u, message);
}

BOOST_AUTO_TEST_CASE(refuses_a_plugin_of_another_api_version) {
  std::string file = kFixtures + "/libfixture_wrong_api.so";
  std::string message = refusal(file);
  BOOST_TEST(message.find(file + ": built for plugin API version " +
                          std::to_string(INDUCT_PLUGIN_API_VERSION + 1) +
                          ", but this induct uses version " +
                          std::to_string(INDUCT_PLUGIN_API_VERSION)) == 0u,
             message);
}

BOOST_AUTO_TEST_CASE(refused_libraries_do_not_hide_the_good_ones) {
  PluginRegistry registry;
  registry.load_all({kFixtures, INDUCT_PLUGIN_DIR});
  BOOST_TEST(registry.problems().size() == 2u);
  BOOST_TEST(registry.find("model", "lstm") != nullptr);
  BOOST_TEST(registry.find("task", "modular") != nullptr);
}

BOOST_AUTO_TEST_CASE(loading_the_same_library_twice_is_harmless) {
  PluginRegistry registry;
  registry.load_all({INDUCT_PLUGIN_DIR, INDUCT_PLUGIN_DIR});
  BOOST_TEST(registry.problems().empty());
  BOOST_TEST(registry.components().size() == 8u);  // 6 models, 2 tasks
}

BOOST_AUTO_TEST_CASE(unknown_model_lists_the_available_ones) {
  ModelContext ctx;
  ctx.vocab_size = 4;
  ctx.max_length = 4;
  try {
    test::plugins().make_model("transformer", ctx);
    BOOST_FAIL("no error");
  } catch (const PluginError& e) {
    std::string message = e.what();
    BOOST_TEST(message.find("unknown model 'transformer' (available models: dense_ssm, gpt2, llama, lstm, mamba, pythia)") == 0u, message);
  }
}

BOOST_AUTO_TEST_CASE(models_outlive_nothing_they_need) {
  // A model made by a plugin keeps its library loaded through the host-side deleter, even
  // after the registry that loaded it is gone (BUILD-NOTES.md: the lifetime crash).
  std::shared_ptr<SequenceModel> model;
  {
    PluginRegistry registry;
    registry.load_all({INDUCT_PLUGIN_DIR});
    ModelContext ctx;
    ctx.vocab_size = 6;
    ctx.max_length = 5;
    ctx.options = yaml::load_string("hidden: 8", "model.yaml");
    model = registry.make_model("lstm", ctx);
  }
  auto copy = model->shared_from_this();
  torch::Tensor logits = model->forward(torch::zeros({1, 5}, torch::kLong));
  BOOST_TEST(logits.size(2) == 6);
}
