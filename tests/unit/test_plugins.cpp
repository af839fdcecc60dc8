// The plugin loader: loads the real plugins; refuses broken libraries with a message that
// names the file and the problem, and keeps the good ones.
#define BOOST_TEST_MODULE plugins
#include <boost/test/unit_test.hpp>
#include <fstream>

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
  BOOST_TEST(message.find(file + ": not an induct plugin (no 'induct_plugin_entry'") == 0u,
             message);
}

BOOST_AUTO_TEST_CASE(refuses_plugins_of_other_api_versions) {
  for (auto [fixture, version] : {std::pair<const char*, int>{"api_older", 0},
                                  {"api_newer", INDUCT_PLUGIN_API_VERSION + 1}}) {
    std::string file = kFixtures + "/libfixture_" + fixture + ".so";
    std::string message = refusal(file);
    BOOST_TEST(message == file + ": built for plugin API version " + std::to_string(version) +
                              ", but this induct uses version " +
                              std::to_string(INDUCT_PLUGIN_API_VERSION) +
                              " (rebuild the plugin against this SDK)");
  }
}

// dlopen of a truncated library maps pages past the end of the file: touching them is SIGBUS
// in the host. Every cut of a real plugin must be refused before dlopen, with a message.
BOOST_AUTO_TEST_CASE(refuses_truncated_and_foreign_files_before_loading_them) {
  const std::string real = std::string(INDUCT_PLUGIN_DIR) + "/libinduct_lstm.so";
  std::ifstream in(real, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_REQUIRE(bytes.size() > 30000);
  const std::string dir = test::temp_dir("truncated");
  for (size_t cut : {size_t{10}, size_t{64}, size_t{100}, size_t{4096}, size_t{28344},
                     bytes.size() / 2, bytes.size() - 1}) {
    const std::string file = dir + "/libcut_" + std::to_string(cut) + ".so";
    std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
    std::string message = refusal(file);
    BOOST_TEST(message.find(file + ": cannot load the library: ") == 0u, message);
  }
  BOOST_TEST(refusal(dir + "/libcut_28344.so").find("truncated or damaged (28344 bytes; ") !=
             std::string::npos);
  BOOST_TEST(refusal(dir + "/libcut_10.so").find("no ELF header") != std::string::npos);
  BOOST_TEST(refusal("/etc/passwd") ==
             "/etc/passwd: cannot load the library: not a shared library (no ELF header)");
  BOOST_TEST(refusal(dir) == dir + ": not a file");
  // The whole file still loads.
  PluginRegistry registry;
  registry.load(real);
  BOOST_TEST(registry.find("model", "lstm") != nullptr);
}

BOOST_AUTO_TEST_CASE(refuses_a_plugin_info_of_another_size) {
  std::string file = kFixtures + "/libfixture_struct_size.so";
  const auto size = sizeof(InductPluginInfo);
  BOOST_TEST(refusal(file) == file + ": plugin info is " + std::to_string(size - 8) +
                                  " bytes, expected " + std::to_string(size) +
                                  " (built against a different SDK header)");
}

BOOST_AUTO_TEST_CASE(refuses_a_plugin_built_against_another_libtorch) {
  std::string file = kFixtures + "/libfixture_torch_version.so";
  BOOST_TEST(refusal(file) == file + ": built against libtorch 1.12, but induct uses libtorch " +
                                  std::to_string(TORCH_VERSION_MAJOR) + "." +
                                  std::to_string(TORCH_VERSION_MINOR));
}

BOOST_AUTO_TEST_CASE(refuses_a_plugin_built_with_another_cxx_abi) {
  std::string file = kFixtures + "/libfixture_cxx_abi.so";
  std::string message = refusal(file);
  BOOST_TEST(message.find(file + ": built with another C++ ABI (GXX ABI ") == 0u, message);
  BOOST_TEST(message.find("CXX11 ABI 0; induct: ") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(refuses_a_plugin_whose_registration_throws) {
  std::string file = kFixtures + "/libfixture_register_throws.so";
  BOOST_TEST(refusal(file) == file +
                                  " (plugin 'behaviour'): registration threw: cannot find my "
                                  "configuration file");
}

BOOST_AUTO_TEST_CASE(refuses_a_second_library_registering_the_same_name) {
  PluginRegistry registry;
  const std::string a = kFixtures + "/libfixture_twin_a.so",
                    b = kFixtures + "/libfixture_twin_b.so";
  registry.load(a);
  try {
    registry.load(b);
    BOOST_FAIL("no error");
  } catch (const PluginError& e) {
    BOOST_TEST(std::string(e.what()) ==
               b + " (plugin 'behaviour'): model 'twin' is registered by both " + a + " and " + b +
                   " (keep one of them on the plugin path)");
  }
  BOOST_TEST(registry.find("model", "twin")->library == a);
}

BOOST_AUTO_TEST_CASE(a_throwing_factory_is_reported_with_its_plugin) {
  PluginRegistry registry;
  const std::string file = kFixtures + "/libfixture_factory_throws.so";
  registry.load(file);
  ModelContext ctx;
  try {
    registry.make_model("exploding", ctx);
    BOOST_FAIL("no error");
  } catch (const PluginError& e) {
    BOOST_TEST(std::string(e.what()) == "model 'exploding' (" + file + "): out of coffee");
  }
}

BOOST_AUTO_TEST_CASE(refused_libraries_do_not_hide_the_good_ones) {
  PluginRegistry registry;
  registry.load_all({kFixtures, INDUCT_PLUGIN_DIR});
  // no_entry, api_older, api_newer, struct_size, torch_version, cxx_abi, register_throws,
  // truncated, twin_b
  BOOST_TEST(registry.problems().size() == 9u);
  for (const char* good : {"lstm", "gpt2", "mamba", "twin", "exploding", "wrong_shape", "leaky"})
    BOOST_TEST(registry.find("model", good) != nullptr, good);
  BOOST_TEST(registry.find("task", "modular") != nullptr);
}

BOOST_AUTO_TEST_CASE(loading_the_same_library_twice_is_harmless) {
  PluginRegistry once, twice;
  once.load_all({INDUCT_PLUGIN_DIR});
  twice.load_all({INDUCT_PLUGIN_DIR, INDUCT_PLUGIN_DIR});
  BOOST_TEST(twice.problems().empty());
  BOOST_TEST(twice.components().size() == once.components().size());
  for (const char* model :
       {"lstm", "gru", "gpt2", "llama", "pythia", "dense_ssm", "mamba", "mamba2"})
    BOOST_TEST(twice.find("model", model) != nullptr, model);
  for (const char* task : {"modular", "permutation", "dyck", "cayley"})
    BOOST_TEST(twice.find("task", task) != nullptr, task);
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
    BOOST_TEST(message.find("unknown model 'transformer' (available models: ") == 0u, message);
    BOOST_TEST(test::lists_the_in_tree_models(test::listed_after(message, "(available models: ")),
               message);
  }
}

BOOST_AUTO_TEST_CASE(models_outlive_nothing_they_need) {
  // A model made by a plugin keeps its library loaded through the host-side deleter, even
  // after the registry that loaded it is gone (docs/design.md, "The plugin boundary").
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

// A symlink loop in a plugin folder is a refused library naming itself; the good plugins
// still load (it used to end every command with a filesystem error).
BOOST_AUTO_TEST_CASE(a_symlink_loop_in_a_plugin_folder_is_refused_not_fatal) {
  const std::string dir = test::temp_dir("plugin_loop");
  BOOST_REQUIRE(
      test::run_command("ln -s a.so " + dir + "/b.so && ln -s b.so " + dir + "/a.so").exit_code ==
      0);
  PluginRegistry registry;
  registry.load_all({dir, INDUCT_PLUGIN_DIR});
  BOOST_REQUIRE(registry.problems().size() == 2u);
  BOOST_TEST(registry.problems()[0].message == dir +
                                                   "/a.so: cannot read it: Too many levels of "
                                                   "symbolic links",
             registry.problems()[0].message);
  BOOST_TEST(registry.find("model", "lstm") != nullptr);
}
