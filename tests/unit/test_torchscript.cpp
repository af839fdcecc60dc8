// The torchscript model plugin: scripted PyTorch modules (tests/fixtures/torchscript/
// make_fixtures.py writes them with Debian's python3-torch) as SequenceModels. Without
// /usr/bin/python3 and its torch this test exits 77, which ctest reports as skipped.
#define BOOST_TEST_MODULE torchscript
#include <torch/torch.h>

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "options_yaml.hpp"
#include "support.hpp"
#include "train/cell_setup.hpp"
#include "train/checkpoint.hpp"
#include "train/run_trial.hpp"
#include "train/trial.hpp"
#include "util/process.hpp"

using namespace induct;
namespace bdata = boost::unit_test::data;

namespace {

// The fixture files, written once per test binary.
std::string fixtures;

struct Setup {
  Setup() {
    configure_process(1);
    fixtures = test::python_fixtures("tests/fixtures/torchscript/make_fixtures.py", "torchscript");
  }
};
BOOST_TEST_GLOBAL_FIXTURE(Setup);

std::string file(const std::string& name) { return fixtures + "/" + name + ".pt"; }

Options model_options(const std::string& name) {
  return yaml::from_node(YAML::Load("{name: torchscript, file: '" + file(name) + "'}"),
                         "model.yaml");
}

const int64_t kVocab = 12, kLength = 10;

std::shared_ptr<SequenceModel> make(const Options& options, uint64_t seed = 1) {
  return make_model_checked(test::plugins(), options, {kVocab, kLength, kVocab - 2}, seed,
                            torch::kCPU);
}

// The message of what `make` throws for the fixture `name` ("" when it does not throw).
std::string refusal(const std::string& name) {
  try {
    auto model = make(model_options(name));
    check_causal(*model, {kVocab, kLength, kVocab - 2}, torch::kCPU, "model 'torchscript'");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

torch::Tensor tokens() {
  torch::manual_seed(3);
  return torch::randint(0, kVocab - 2, {3, kLength}, torch::kLong);
}

}  // namespace

// The scripted LSTM given the in-tree LSTM's weights computes the in-tree LSTM's logits.
BOOST_AUTO_TEST_CASE(scripted_lstm_matches_the_in_tree_lstm) {
  auto ours = make(yaml::from_node(YAML::Load("{name: lstm, hidden: 16}"), "model.yaml"), 5);
  auto scripted = make(model_options("lstm"), 6);
  const auto theirs = scripted->named_parameters();
  BOOST_REQUIRE_EQUAL(theirs.size(), ours->named_parameters().size());
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : ours->named_parameters()) {
      BOOST_REQUIRE_MESSAGE(theirs.contains(p.key()), "no parameter " << p.key());
      BOOST_TEST(!theirs[p.key()].equal(p.value()), p.key() << ": same weights before the copy");
      theirs[p.key()].copy_(p.value());
    }
  }
  ours->eval();
  scripted->eval();
  const auto a = ours->forward(tokens()), b = scripted->forward(tokens());
  BOOST_REQUIRE(a.sizes() == b.sizes());
  const double difference = (a - b).abs().max().item<double>();
  BOOST_TEST(difference < 1e-5 * (1 + a.abs().max().item<double>()),
             "largest difference " << difference);
}

// reset_parameters sizes the vocabulary and length, and draws from the seeded generator: the
// same seed gives the same weights, another seed others.
BOOST_AUTO_TEST_CASE(initialisation_is_sized_and_seeded) {
  auto a = make(model_options("transformer"), 7), b = make(model_options("transformer"), 7),
       c = make(model_options("transformer"), 8);
  const auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
  BOOST_TEST(pa["tok.weight"].sizes().vec() == std::vector<int64_t>({kVocab, 32}));
  BOOST_TEST(pa["pos.weight"].sizes().vec() == std::vector<int64_t>({kLength, 32}));
  for (const auto& p : pa) {
    BOOST_TEST(p.value().equal(pb[p.key()]), p.key());
    BOOST_TEST(p.value().requires_grad(), p.key());
    if (p.key().find("norm") == std::string::npos)  // norms start at 1 and 0 for every seed
      BOOST_TEST(!p.value().equal(pc[p.key()]), p.key());
  }
}

// Hook points: the names the module passes through torch.ops.induct.hook, in order, and a
// replaced activation changes the logits (ablation), with gradients through the hook.
BOOST_AUTO_TEST_CASE(hooks_read_and_replace_activations) {
  auto model = make(model_options("transformer"));
  model->eval();
  std::vector<std::string> names;
  model->hooks.set_handler([&](const std::string& name, const torch::Tensor& x) {
    names.push_back(name);
    return x;
  });
  const auto plain = model->forward(tokens());
  BOOST_TEST(names == std::vector<std::string>({"embed", "block.0", "block.1", "norm"}),
             boost::test_tools::per_element());
  model->hooks.set_handler([](const std::string& name, const torch::Tensor& x) {
    return name == "norm" ? torch::zeros_like(x) : x;
  });
  const auto ablated = model->forward(tokens());
  // The head of a zero vector is its bias, at every position.
  const auto bias = model->named_parameters()["head.bias"];
  BOOST_TEST((ablated - bias).abs().max().item<double>() < 1e-6);
  BOOST_TEST(!ablated.equal(plain));
  model->hooks.clear();
  model->train();
  model->forward(tokens()).sum().backward();
  for (const auto& p : model->named_parameters())
    BOOST_TEST(p.value().grad().defined(), p.key() << " has no gradient");
}

// A trial on a scripted model trains and gives the same numbers twice.
BOOST_AUTO_TEST_CASE(training_is_deterministic_per_seed) {
  TrialSpec t;
  t.cell.task = YAML::Load("{name: modular, m: 2}");
  t.cell.model = yaml::resolved([&] {  // as a study resolves it: the path and its digest
    auto options = model_options("lstm");
    options.get<std::string>("name", "");
    options.get_file("file");
    return options;
  }());
  BOOST_TEST(t.cell.model["file_digest"].as<std::string>().size() == 32u);
  t.cell.format = "acot";
  t.cell.distribution = "uniform";
  t.cell.L = 6;
  t.cell.n_cap = 16'000'000;
  t.n = 102;
  t.lr = 3e-3;
  t.seed = 10;
  t.training.max_steps = 200;
  t.training.eval_every = 100;
  t.max_length = 6;
  const TrialResult a = run_trial(t, test::plugins()), b = run_trial(t, test::plugins());
  BOOST_REQUIRE_EQUAL(a.history.size(), 2u);
  BOOST_TEST(a.history.back().train_loss < a.history.front().train_loss * 0.9,
             "the loss fell from " << a.history.front().train_loss << " to "
                                   << a.history.back().train_loss);
  BOOST_TEST(a.history.back().train_loss == b.history.back().train_loss);
  BOOST_TEST(a.history.back().val_loss == b.history.back().val_loss);
  BOOST_TEST(a.best_loss == b.best_loss);
}

// Each broken file is refused with a message that says what is wrong.
BOOST_DATA_TEST_CASE(
    broken_files_are_refused,
    bdata::make(std::vector<std::string>{"not_torchscript", "state_dict", "newer_version",
                                         "no_reset", "wrong_signature", "wrong_shape", "not_causal",
                                         "returns_tuple", "keeps_weights", "reset_fails"}) ^
        bdata::make(std::vector<std::string>{
            "not a TorchScript file", "not a TorchScript file", "cannot read (",
            "has no method reset_parameters", "reset_parameters has the signature",
            "forward returned logits of shape [2, 12]", "not causal", "not a Tensor of logits",
            "left the parameter 'middle.weight'", "reset_parameters(12, 10, seed) failed: "}),
    name, expected) {
  const std::string message = refusal(name);
  BOOST_TEST(message.find(expected) != std::string::npos, name << ": " << message);
  BOOST_TEST(message.find('\n') == std::string::npos, name << ": " << message);
}

// The file is read relative to the study file's folder (the working directory for a --set);
// its digest pins it: another file under the same name is refused where the digest is given.
BOOST_AUTO_TEST_CASE(files_resolve_against_the_study_and_are_pinned) {
  const std::string dir = test::temp_dir("torchscript-paths");
  std::filesystem::create_directories(dir + "/models");
  std::filesystem::copy_file(file("lstm"), dir + "/models/m.pt");
  { std::ofstream(dir + "/study.yaml") << "model: {name: torchscript, file: models/m.pt}\n"; }
  const Options model = yaml::load_file(dir + "/study.yaml").section("model");
  BOOST_TEST(model.get_file("file") == dir + "/models/m.pt");
  const auto digest = yaml::resolved(model)["file_digest"].as<std::string>();
  const Options set =
      yaml::load_file(dir + "/study.yaml", {"model.file=" + dir + "/models/m.pt"}).section("model");
  BOOST_TEST(set.get_file("file") == dir + "/models/m.pt");

  std::filesystem::copy_file(file("transformer"), dir + "/models/m.pt",
                             std::filesystem::copy_options::overwrite_existing);
  const Options pinned = yaml::from_node(YAML::Load("{name: torchscript, file: '" + dir +
                                                    "/models/m.pt', file_digest: " + digest + "}"),
                                         "trial.yaml");
  try {
    pinned.get_file("file");
    BOOST_FAIL("a changed file was accepted");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("it changed since") != std::string::npos, e.what());
  }
  try {
    yaml::load_file(dir + "/study.yaml", {"model.file=missing.pt"})
        .section("model")
        .get_file("file");
    BOOST_FAIL("a missing file was accepted");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("--set model.file=missing.pt") != std::string::npos,
               e.what());
    BOOST_TEST(std::string(e.what()).find("no such file") != std::string::npos, e.what());
  }
}

// Through the command line: an nstar study and a probe study on scripted models, with the model
// file beside the study file; the probe reads the module's own hook points.
BOOST_AUTO_TEST_CASE(nstar_and_probe_studies_run_on_a_scripted_model) {
  const std::string dir = test::temp_dir("torchscript-cli");
  std::filesystem::copy_file(file("lstm"), dir + "/lstm.pt");
  std::filesystem::copy_file(file("transformer"), dir + "/transformer.pt");
  {
    std::ofstream(dir + "/nstar.yaml")
        << "study: nstar\ntask: {name: modular, m: 2}\n"
           "model: {name: torchscript, file: lstm.pt}\n"
           "data: {format: acot, distribution: uniform, L: 3}\n"
           "training: {learning_rates: [3.0e-3], seeds: [1], max_steps: 600, eval_every: 100}\n";
    std::ofstream(dir + "/probe.yaml")
        << "study: probe\ntask: {name: modular, m: 2}\n"
           "model: {name: torchscript, file: transformer.pt}\n"
           "data: {format: acot, distribution: uniform, L: 4, N: max}\n"
           "training: {learning_rates: [3.0e-3], seeds: [1], max_steps: 100, eval_every: 50}\n"
           "probe: {multiples: [1], samples: 100, configurations: 1}\n"
           // 100 steps learn nothing: summarise the model anyway (the hooks are the point).
           "report: {min_accuracy: 0}\n";
  }
  // Run from elsewhere: the model files are found beside the study files.
  for (const std::string study : {"nstar", "probe"}) {
    const auto run = test::run_command("cd / && " + std::string(INDUCT_BINARY) + " run " + dir +
                                       "/" + study + ".yaml --out " + dir + "/" + study);
    BOOST_TEST_REQUIRE(run.exit_code == 0, study << ":\n" << run.output);
  }
  const std::string nstar = test::read(dir + "/nstar/nstar_table.csv");
  BOOST_TEST(nstar.find("torchscript") != std::string::npos, nstar);
  const std::string probe = test::read(dir + "/probe/probe_table.csv");
  for (const char* hook : {"embed", "block.0", "block.1", "norm"})
    BOOST_TEST(probe.find(hook) != std::string::npos, hook << " not in\n" << probe);
}

// A checkpoint of a scripted model loads into another build of it (another seed) and the
// scripted forward then computes with the loaded weights: the host's parameters are the
// module's own tensors.
BOOST_AUTO_TEST_CASE(checkpoints_round_trip_through_the_scripted_module) {
  auto a = make(model_options("transformer"), 1), b = make(model_options("transformer"), 2);
  a->eval();
  b->eval();
  torch::NoGradGuard no_grad;
  const auto expected = a->forward(tokens());
  BOOST_TEST(!b->forward(tokens()).equal(expected));
  const std::string path = test::temp_dir("torchscript-checkpoint") + "/model.pt";
  save_checkpoint(*a, path);
  load_checkpoint(*b, path);
  BOOST_TEST(b->forward(tokens()).equal(expected));
}
