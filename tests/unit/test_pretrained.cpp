// Pretrained weights: Pythia (GPT-NeoX layout) and Mamba (mamba_ssm's and Hugging Face's
// config keys) read from local checkpoint folders that tests/fixtures/pretrained/
// make_checkpoints.py writes from the PyTorch references; broken folders refused. Without
// /usr/bin/python3 and its torch this test exits 77, which ctest reports as skipped.
#define BOOST_TEST_MODULE pretrained
#include <torch/torch.h>

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <fstream>
#include <induct/checkpoint.hpp>
#include <iostream>

#include "options_yaml.hpp"
#include "support.hpp"
#include "train/cell_setup.hpp"
#include "train/optimizer.hpp"
#include "util/process.hpp"

using namespace induct;
namespace bdata = boost::unit_test::data;

namespace {

std::string fixtures;

struct Setup {
  Setup() {
    configure_process(1);
    fixtures = test::python_fixtures("tests/fixtures/pretrained/make_checkpoints.py", "pretrained");
  }
};
BOOST_TEST_GLOBAL_FIXTURE(Setup);

const int64_t kVocab = 12, kLength = 10, kCheckpointVocab = 20;

std::shared_ptr<SequenceModel> make(const std::string& yaml) {
  return make_model_checked(test::plugins(), yaml::from_node(YAML::Load(yaml), "model.yaml"),
                            {kVocab, kLength, kVocab - 2}, 1, torch::kCPU);
}

torch::Tensor read_raw(const std::string& path, torch::Dtype dtype, at::IntArrayRef shape) {
  std::ifstream in(path, std::ios::binary);
  auto t = torch::empty(shape, dtype);
  in.read(static_cast<char*>(t.data_ptr()), t.numel() * t.element_size());
  BOOST_REQUIRE(in);
  return t;
}

}  // namespace

// Loaded, with the checkpoint's own embedding and head put back for the task's 12 tokens, the
// model computes the reference's logits over them.
BOOST_DATA_TEST_CASE(checkpoint_gives_the_reference_logits,
                     bdata::make(std::vector<std::string>{"pythia", "mamba", "mamba_hf"}), name) {
  const std::string folder = fixtures + "/" + name;
  auto model = make("{name: " + std::string(name == "pythia" ? "pythia" : "mamba") +
                    ", pretrained: '" + folder + "'}");
  const auto tensors = read_safetensors(folder + "/model.safetensors");
  {
    torch::NoGradGuard no_grad;
    auto params = model->named_parameters();
    if (name == "pythia") {
      params["tok.weight"].copy_(tensors.at("gpt_neox.embed_in.weight").narrow(0, 0, kVocab));
      params["head.weight"].copy_(tensors.at("embed_out.weight").narrow(0, 0, kVocab));
    } else {
      params["embed.weight"].copy_(tensors.at("backbone.embedding.weight").narrow(0, 0, kVocab));
    }
  }
  model->eval();
  const auto tokens = read_raw(folder + "/tokens.bin", torch::kLong, {2, kLength});
  const auto expected =
      read_raw(folder + "/logits.bin", torch::kFloat, {2, kLength, kCheckpointVocab})
          .narrow(2, 0, kVocab);
  torch::NoGradGuard no_grad;
  const auto logits = model->forward(tokens);
  const double error = ((logits - expected).abs().max() / expected.abs().max()).item<double>();
  BOOST_TEST(error < 1e-5, name << ": relative error " << error);
}

// A parameter's block: the number after the prefix, and the rest of its name.
BOOST_AUTO_TEST_CASE(block_of_splits_a_parameter_name) {
  using Split = std::pair<int64_t, std::string>;
  BOOST_TEST((block_of("blocks.3.attn.out.weight") == Split{3, "attn.out.weight"}));
  BOOST_TEST((block_of("blocks.12.norm.weight") == Split{12, "norm.weight"}));
  BOOST_TEST((block_of("layers.0.w", "layers.") == Split{0, "w"}));
  for (const char* other : {"embed.weight", "blocks.norm.weight", "blocks.3", "blocks..w",
                            "blocks.-1.w", "blocks.99999999999.w", "block.3.w"})
    BOOST_TEST((block_of(other) == Split{-1, ""}), other);
}

// The checkpoint decides the shape (an option that sets it is refused), the task's tokens get
// fresh rows, and freeze_layers keeps the first blocks out of training.
BOOST_AUTO_TEST_CASE(shape_from_the_checkpoint_and_frozen_layers) {
  const std::string folder = fixtures + "/pythia";
  auto model = make("{name: pythia, pretrained: '" + folder + "', freeze_layers: 1}");
  auto params = model->named_parameters();
  BOOST_TEST(params["tok.weight"].sizes().vec() == std::vector<int64_t>({kVocab, 32}));
  BOOST_TEST(!params["blocks.0.attn.qkv.weight"].requires_grad());
  BOOST_TEST(params["blocks.1.attn.qkv.weight"].requires_grad());
  // A training step (the trainer's Adam) moves the second block, not the first.
  const auto first = params["blocks.0.attn.qkv.weight"].clone(),
             second = params["blocks.1.attn.qkv.weight"].clone();
  FlatAdam optimizer(model->parameters(), 1e-2);
  torch::manual_seed(5);
  model->forward(torch::randint(0, kVocab - 2, {2, kLength}, torch::kLong))
      .pow(2)
      .mean()
      .backward();
  optimizer.step();
  params = model->named_parameters();
  BOOST_TEST(params["blocks.0.attn.qkv.weight"].equal(first));
  BOOST_TEST(!params["blocks.1.attn.qkv.weight"].equal(second));
  try {
    make("{name: pythia, pretrained: '" + folder + "', d_model: 64}");
    BOOST_FAIL("d_model beside a checkpoint was accepted");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("set by the checkpoint") != std::string::npos, e.what());
  }
}

// Each broken folder is refused naming the file and the reason, in one line.
BOOST_DATA_TEST_CASE(
    broken_checkpoints_are_refused,
    bdata::make(std::vector<std::string>{"truncated", "not_safetensors", "huge_header",
                                         "bad_config", "wrong_shape", "not_pythia",
                                         "missing_tensor", "int_dtype", "absent"}) ^
        bdata::make(std::vector<std::string>{
            "outside the", "the header is not", "not a safetensors file", "config.json: not JSON",
            "has shape [64, 32], the model needs [96, 32]", "not Pythia's block",
            "no tensor 'gpt_neox.layers.1.mlp", "dtype I64 is not read", "no such folder"}),
    name, expected) {
  std::string message;
  try {
    make("{name: pythia, pretrained: '" + fixtures + "/" + name + "'}");
  } catch (const std::exception& e) {
    message = e.what();
  }
  BOOST_TEST(message.find(expected) != std::string::npos, name << ": " << message);
  BOOST_TEST(message.find("model.yaml") != std::string::npos, name << ": " << message);
  BOOST_TEST(message.find('\n') == std::string::npos, name << ": " << message);
}
