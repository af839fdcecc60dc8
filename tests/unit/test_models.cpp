// Every registered model: causal, right shapes at edge sizes, hook points, seeded
// initialisation, a gradient for every parameter, trains with every task and format; and for
// the in-tree ones the closed-form parameter count at the paper's size and a tiny configuration
// that learns parity. The models come from the registry: a new plugin's model gets the generic
// checks with no test edited (`INDUCT_TEST_PLUGIN_PATH=DIR build/bin/test_models` runs them on
// the models of the plugins in DIR only; ctest's test_models_toy does so for a fixture).
#define BOOST_TEST_MODULE models
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "options_yaml.hpp"
#include "probe/hook_names.hpp"
#include "support.hpp"
#include "train/cell_setup.hpp"
#include "train/run_trial.hpp"
#include "util/process.hpp"

using namespace induct;
namespace bdata = boost::unit_test::data;

namespace {

struct Process {
  Process() { configure_process(1); }
};
BOOST_TEST_GLOBAL_FIXTURE(Process);

// Small configurations (seconds to train).
const std::map<std::string, std::string> kSmall = {
    {"lstm", "{name: lstm, hidden: 32, layers: 2}"},
    {"gru", "{name: gru, hidden: 32, layers: 2}"},
    {"gpt2", "{name: gpt2, layers: 2, d_model: 32, heads: 4, d_ff: 64}"},
    {"llama", "{name: llama, layers: 2, d_model: 32, heads: 4, d_ff: 64}"},
    {"pythia", "{name: pythia, layers: 2, d_model: 32, heads: 4, d_ff: 64}"},
    {"dense_ssm", "{name: dense_ssm, hidden: 16}"},
    {"mamba", "{name: mamba, layers: 1, d_model: 16, d_state: 8, dt_rank: 4}"},
    {"mamba2", "{name: mamba2, layers: 2, d_model: 16, headdim: 8, d_state: 8, chunk_size: 4}"},
    {"deltanet",
     "{name: deltanet, layers: 2, d_model: 16, heads: 2, d_ff: 32, householder: 2, "
     "negative_eigenvalues: true, gate: true}"},
    {"hybrid",
     "{name: hybrid, pattern: MA2, d_model: 16, attention: {heads: 2, d_ff: 32}, mamba: "
     "{d_state: 8, dt_rank: 4}, mamba2: {headdim: 8, d_state: 8, chunk_size: 4}}"},
    {"looped",
     "{name: looped, loops: 3, inject: true, d_model: 16, attention: {heads: 2, d_ff: 32}}"},
    {"xlstm", "{name: xlstm, blocks: ms, d_model: 16, heads: 2}"},
};
// The models under test: every registered model, or with INDUCT_TEST_PLUGIN_PATH set only
// those of the plugins there.
const std::vector<std::string> kModels =
    test::registered_models(!test::extra_plugin_dirs().empty());

// Its small configuration above, or its defaults.
std::string small(const std::string& name) {
  const auto it = kSmall.find(name);
  return it != kSmall.end() ? it->second : "{name: " + name + "}";
}

std::shared_ptr<SequenceModel> make(const std::string& yaml, int64_t vocab, int64_t length,
                                    uint64_t seed) {
  return make_model_checked(test::plugins(), yaml::from_node(YAML::Load(yaml), "model.yaml"),
                            {vocab, length, vocab - 2}, seed, torch::kCPU);
}

int64_t count(const SequenceModel& model) {
  int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

}  // namespace

// The list is the registry's: every in-tree model is in it (or, with INDUCT_TEST_PLUGIN_PATH,
// the models of those plugins, at least one).
BOOST_AUTO_TEST_CASE(the_models_under_test_are_the_registered_ones) {
  std::string names;
  for (const auto& name : kModels) names += (names.empty() ? "" : ", ") + name;
  BOOST_TEST_MESSAGE("models under test: " << names);
  BOOST_REQUIRE(!kModels.empty());
  if (test::extra_plugin_dirs().empty())
    for (const auto& [name, yaml] : kSmall)
      BOOST_TEST(std::count(kModels.begin(), kModels.end(), name) == 1, name);
}

BOOST_DATA_TEST_CASE(model_is_causal, bdata::make(kModels), name) {
  auto model = make(small(name), 12, 10, 1);
  model->eval();
  torch::manual_seed(3);
  torch::Tensor a = torch::randint(0, 10, {3, 10}, torch::kLong);
  torch::Tensor b = a.clone();
  b.slice(1, 6) = (b.slice(1, 6) + 1 + torch::randint(0, 8, {3, 4}, torch::kLong)) % 10;
  torch::Tensor la = model->forward(a), lb = model->forward(b);
  BOOST_TEST(torch::allclose(la.slice(1, 0, 6), lb.slice(1, 0, 6), 1e-6, 1e-6));
  BOOST_TEST(!torch::allclose(la.slice(1, 6), lb.slice(1, 6), 1e-4, 1e-4));
}

// Batches of one and sequences of one or two tokens (dimensions of size 1, whose strides are
// arbitrary and can reorder the layouts of the SDK's strided products): each model's forward
// has the right shape and its backward gives every parameter a finite gradient.
BOOST_DATA_TEST_CASE(model_trains_on_edge_shapes, bdata::make(kModels), name) {
  auto model = make(small(name), 12, 10, 1);
  torch::manual_seed(4);
  for (const auto& [B, T] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 2}, {1, 10}, {3, 1}}) {
    model->zero_grad();
    const auto logits = model->forward(torch::randint(0, 10, {B, T}, torch::kLong));
    BOOST_TEST(logits.sizes() == torch::IntArrayRef({B, T, 12}), name << " B " << B << " T " << T);
    logits.sum().backward();
    for (const auto& p : model->named_parameters()) {
      const bool finite =
          !p.value().grad().defined() || torch::isfinite(p.value().grad()).all().item().toBool();
      BOOST_TEST(finite, name << " " << p.key() << " B " << B << " T " << T);
    }
  }
}

// Hook points: a handler that replaces every activation by a copy of itself leaves the logits
// as they are (exactly; a recurrent layer then runs step by step, the same to rounding);
// zeroing one hook's activation changes them (the hook is on the path); the names are as
// docs/plugin-guide.md lists them (a recurrent hook point is called once per step).
BOOST_DATA_TEST_CASE(hooks_see_every_layer_and_replace_activations, bdata::make(kModels), name) {
  auto model = make(small(name), 12, 10, 1);
  model->eval();
  torch::manual_seed(4);
  const auto tokens = torch::randint(0, 10, {3, 10}, torch::kLong);
  const auto plain = model->forward(tokens);
  std::vector<std::string> seen;
  model->hooks.set_handler([&](const std::string& hook, const torch::Tensor& x) {
    if (seen.empty() || seen.back() != hook) seen.push_back(hook);
    BOOST_TEST(x.size(0) == 3);
    BOOST_TEST(x.size(1) == 10);
    return x.clone();
  });
  BOOST_TEST(torch::allclose(model->forward(tokens), plain, 1e-5, 1e-6));
  BOOST_REQUIRE(!seen.empty());
  const std::map<std::string, std::string> expected = {
      {"lstm", "embed, lstm.0-1"},
      {"gru", "embed, gru.0-1"},
      {"gpt2", "embed, block.0-1, norm"},
      {"llama", "embed, block.0-1, norm"},
      {"pythia", "embed, block.0-1, norm"},
      {"dense_ssm", "state"},
      {"mamba", "embed, block.0, norm, block.0.conv"},
      {"mamba2", "embed, block.0-1, norm, block.0-1.conv"},
      {"deltanet", "embed, block.0-1, norm"},
      {"hybrid", "embed, mamba.0, attn.1, mamba2.2, norm, mamba.0.conv, mamba2.2.conv"},
      {"looped", "embed, loop.0-2, norm"},
      {"xlstm", "embed, block.0-1, norm"}};
  if (expected.count(name))  // a model from outside the tree: its names are its own
    BOOST_TEST(summarize_hook_names(seen) == expected.at(name));
  for (const auto& target : seen) {
    model->hooks.set_handler([&](const std::string& hook, const torch::Tensor& x) {
      return hook == target ? torch::zeros_like(x) : x;
    });
    BOOST_TEST(!torch::allclose(model->forward(tokens), plain), target);
  }
  model->hooks.clear();
  BOOST_TEST(torch::equal(model->forward(tokens), plain));
}

// A recurrent layer's hook point is the state it carries: patching it at position p changes the
// output at p and, through the state, every later position (the layer's output copy alone would
// change p only in a one-layer model), and nothing before p.
BOOST_DATA_TEST_CASE(patching_a_recurrent_state_changes_the_next_positions,
                     bdata::make(std::vector<std::string>{"lstm", "gru", "dense_ssm"}), name) {
  const std::map<std::string, std::pair<std::string, std::string>> model_and_hook = {
      {"lstm", {"{name: lstm, hidden: 16}", "lstm.0"}},
      {"gru", {"{name: gru, hidden: 16}", "gru.0"}},
      {"dense_ssm", {"{name: dense_ssm, hidden: 16}", "state"}}};
  const auto& [text, hook] = model_and_hook.at(name);
  auto model = make(text, 12, 10, 1);
  model->eval();
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  const auto tokens = torch::randint(0, 10, {3, 10}, torch::kLong);
  const auto plain = model->forward(tokens);
  const int64_t p = 4;
  int calls = 0;
  model->hooks.set_handler([&](const std::string& at, const torch::Tensor& x) {
    if (at != hook) return x;
    ++calls;
    auto patched = x.clone();
    patched.select(1, p).fill_(0.5);
    return patched;
  });
  const auto edited = model->forward(tokens);
  model->hooks.clear();
  BOOST_TEST(calls == 10);  // once per step
  BOOST_TEST(torch::allclose(edited.slice(1, 0, p), plain.slice(1, 0, p), 1e-5, 1e-6));
  for (int64_t t = p; t < 10; ++t)
    BOOST_TEST(!torch::allclose(edited.select(1, t), plain.select(1, t), 1e-4, 1e-4),
               name << " position " << t);
}

// The composed models read each block's options with that block's own reader
// (plugins/models/blocks): the same checks as the mamba and mamba2 models, in the block's
// section, and the same options take effect (a Mamba block's step sizes within [dt_min, dt_max]).
BOOST_AUTO_TEST_CASE(composed_models_read_each_block_as_its_model_does) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"{name: mamba, d_model: 32, dt_min: 0.5, dt_max: 0.1}",
       ": dt_min: must satisfy 0 < dt_min < dt_max"},
      {"{name: hybrid, pattern: M2, d_model: 32, mamba: {dt_min: 0.5, dt_max: 0.1}}",
       ": mamba.dt_min: must satisfy 0 < dt_min < dt_max"},
      {"{name: mamba2, d_model: 32, headdim: 16, ngroups: 3}",
       ": ngroups: must divide the number of heads, expand * d_model / headdim (4)"},
      {"{name: hybrid, pattern: M2, d_model: 32, mamba2: {headdim: 16, ngroups: 3}}",
       ": mamba2.ngroups: must divide the number of heads, expand * d_model / headdim (4)"},
      {"{name: looped, block: '2', d_model: 32, mamba2: {headdim: 16, ngroups: 3}}",
       ": mamba2.ngroups: must divide the number of heads, expand * d_model / headdim (4)"}};
  for (const auto& [yaml, message] : refused) {
    try {
      make(yaml, 12, 10, 1);
      BOOST_ERROR(yaml << " was accepted");
    } catch (const ConfigError& e) {
      BOOST_TEST(std::string(e.what()).find(message) != std::string::npos, e.what());
    }
  }
  for (const std::string name : {"mamba", "hybrid", "looped"}) {
    const std::string yaml =
        name == "mamba"    ? "{name: mamba, d_model: 16, dt_min: 0.01, dt_max: 0.02}"
        : name == "hybrid" ? "{name: hybrid, pattern: M, d_model: 16, mamba: {dt_min: 0.01, "
                             "dt_max: 0.02}}"
                           : "{name: looped, block: M, d_model: 16, mamba: {dt_min: 0.01, "
                             "dt_max: 0.02}}";
    auto model = make(yaml, 12, 10, 1);
    size_t biases = 0;
    for (const auto& p : model->named_parameters()) {
      if (p.key().find("dt_proj.bias") == std::string::npos) continue;
      ++biases;
      const torch::Tensor dt = torch::softplus(p.value());
      BOOST_TEST(dt.min().item<double>() >= 0.01 - 1e-6, name);
      BOOST_TEST(dt.max().item<double>() <= 0.02 + 1e-6, name);
    }
    BOOST_TEST(biases >= 1u, name);
  }
}

BOOST_AUTO_TEST_CASE(hook_names_at_defaults_and_their_summary) {
  BOOST_TEST(summarize_hook_names(model_hook_names(test::plugins(), "gpt2")) ==
             "embed, block.0-5, norm");
  // A recurrent state's hook, called once per step, is named once.
  BOOST_TEST(summarize_hook_names(model_hook_names(test::plugins(), "lstm")) == "embed, lstm.0");
  BOOST_TEST(summarize_hook_names(model_hook_names(test::plugins(), "dense_ssm")) == "state");
  BOOST_TEST(summarize_hook_names({"a.0", "a.1", "b.2", "a.3", "c", "d.x", "e.1"}) ==
             "a.0-1, b.2, a.3, c, d.x, e.1");
  BOOST_TEST(summarize_hook_names({"embed", "block.0.conv", "block.0", "block.1.conv", "block.1",
                                   "norm", "x.y.z"}) ==
             "embed, block.0-1, norm, x.y.z, block.0-1.conv");
  BOOST_TEST(inner_hook_part("block.12.conv") == "conv");
  BOOST_TEST(inner_hook_part("block.12") == "");
  BOOST_TEST(inner_hook_part("d.x") == "");
  BOOST_TEST(summarize_hook_names({}) == "");
}

BOOST_DATA_TEST_CASE(same_seed_same_initial_weights, bdata::make(kModels), name) {
  auto a = make(small(name), 12, 10, 7), b = make(small(name), 12, 10, 7);
  auto c = make(small(name), 12, 10, 8);
  auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
  bool all_equal = true, some_differ = false;
  for (const auto& p : pa) {
    all_equal = all_equal && torch::equal(p.value(), pb[p.key()]);
    some_differ = some_differ || !torch::equal(p.value(), pc[p.key()]);
  }
  BOOST_TEST(all_equal);
  BOOST_TEST(some_differ);
}

BOOST_DATA_TEST_CASE(every_parameter_receives_a_gradient, bdata::make(kModels), name) {
  auto model = make(small(name), 12, 8, 1);
  model->train();
  torch::manual_seed(5);
  auto logits = model->forward(torch::randint(0, 10, {4, 8}, torch::kLong));
  logits.pow(2).mean().backward();
  for (const auto& p : model->named_parameters()) {
    BOOST_TEST_CONTEXT("parameter " << p.key()) {
      BOOST_REQUIRE(p.value().grad().defined());
      const double magnitude = p.value().grad().abs().sum().item().toDouble();
      BOOST_TEST(magnitude > 0);
    }
  }
}

// Closed-form counts at the paper's sizes (docs/method.md section 8) for V = 12 (Z_5) and 20
// positions.
BOOST_AUTO_TEST_CASE(parameter_counts_at_paper_size) {
  const int64_t V = 12, P = 20, d = 256, ff = 1024, layers = 6;
  // GPT-2: token and position embeddings, per layer 2 LayerNorms, qkv and out with biases, MLP
  // with biases; final LayerNorm; head tied.
  const int64_t gpt2_layer =
      2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (d * ff + ff) + (ff * d + d);
  BOOST_TEST(count(*make("{name: gpt2}", V, P, 0)) == V * d + P * d + layers * gpt2_layer + 2 * d);
  // Llama: embedding, per layer 2 RMSNorms, qkv and out without biases, SwiGLU (3 matrices);
  // final RMSNorm; untied head.
  const int64_t llama_layer = 2 * d + 4 * d * d + 3 * d * ff;
  BOOST_TEST(count(*make("{name: llama}", V, P, 0)) == V * d + layers * llama_layer + d + d * V);
  // Pythia: like GPT-2 per layer, no position embedding, untied head.
  BOOST_TEST(count(*make("{name: pythia}", V, P, 0)) ==
             V * d + layers * gpt2_layer + 2 * d + d * V);
  // LSTM: embedding, 4 gates x (input + recurrent) weights and two biases, head with bias.
  for (int64_t H : {256, 768})
    BOOST_TEST(count(*make("{name: lstm, hidden: " + std::to_string(H) + "}", V, P, 0)) ==
               V * H + 4 * H * (H + H) + 8 * H + H * V + V);
  BOOST_TEST(count(*make("{name: lstm, layers: 3}", V, P, 0)) ==
             V * d + 3 * (4 * d * (d + d) + 8 * d) + d * V + V);
  // Dense-SSM: embedding, the H x H x E tensor, h_0, head with bias; low rank: U, V, W.
  BOOST_TEST(count(*make("{name: dense_ssm}", V, P, 0)) == V * d + d * d * d + d + d * V + V);
  BOOST_TEST(count(*make("{name: dense_ssm, rank: 32}", V, P, 0)) ==
             V * d + (d * 32 + d * 32 + d * 32) + d + d * V + V);
  // Block-diagonal: H / b blocks of b x b x E; diagonal (b = 1): H x E.
  for (int64_t b : {1, 16})
    BOOST_TEST(count(*make("{name: dense_ssm, block: " + std::to_string(b) + "}", V, P, 0)) ==
               V * d + d * b * d + d + d * V + V);
  // Mamba: embedding (tied head), per layer RMSNorm, in_proj, depthwise conv with bias,
  // x_proj, dt_proj with bias, A_log, D, out_proj; final RMSNorm.
  const int64_t Di = 2 * d, N = 64, R = 16, K = 4;
  const int64_t mamba_layer =
      d + d * 2 * Di + (Di * K + Di) + Di * (R + 2 * N) + (R * Di + Di) + Di * N + Di + Di * d;
  BOOST_TEST(count(*make("{name: mamba}", V, P, 0)) == V * d + layers * mamba_layer + d);
  // GRU: embedding, per layer 3 gates x (input + recurrent) weights and two biases, head with bias.
  for (int64_t gru_layers : {1, 2})
    BOOST_TEST(count(*make("{name: gru, layers: " + std::to_string(gru_layers) + "}", V, P, 0)) ==
               V * d + gru_layers * (3 * d * (d + d) + 6 * d) + d * V + V);
  // Mamba-2: embedding (tied head), per layer RMSNorm, in_proj to (z, x, B, C, dt), depthwise
  // conv with bias over (x, B, C), dt_bias, A_log and D per head, the gated RMSNorm, out_proj;
  // final RMSNorm. Heads = 2 d / 64 = 8, state 128, one group.
  const int64_t H2 = Di / 64, N2 = 128, conv_dim = Di + 2 * N2;
  const int64_t mamba2_layer =
      d + d * (Di + conv_dim + H2) + (conv_dim * K + conv_dim) + 3 * H2 + Di + Di * d;
  BOOST_TEST(count(*make("{name: mamba2}", V, P, 0)) == V * d + layers * mamba2_layer + d);
  // DeltaNet: embedding, per layer RMSNorm, the q, k, v projection (k and v once per
  // Householder step) and its depthwise conv without bias, beta per head and step, the heads'
  // output RMSNorm (d / 4), out, RMSNorm and SwiGLU; final RMSNorm; untied head. Gated: the
  // decay projection, A_log and dt_bias per head, the output gate.
  for (int64_t n : {1, 2}) {
    const int64_t C = d * (1 + 2 * n);
    const int64_t delta_layer = d + d * C + C * K + d * 4 * n + d / 4 + d * d + d + 3 * d * ff;
    const std::string steps = "householder: " + std::to_string(n);
    BOOST_TEST(count(*make("{name: deltanet, " + steps + "}", V, P, 0)) ==
               V * d + layers * delta_layer + d + d * V);
    BOOST_TEST(count(*make("{name: deltanet, gate: true, " + steps + "}", V, P, 0)) ==
               V * d + layers * (delta_layer + d * 4 + 2 * 4 + d * d) + d + d * V);
  }
}

// Dense-SSM's structured forms: one block of the whole width is the full form (the same
// weights from the same seed, the same logits through another computation); the diagonal form
// mixes no coordinates (a state coordinate depends on its own past only); a block size that
// does not divide hidden, or a block with a rank, is refused naming the key.
BOOST_AUTO_TEST_CASE(dense_ssm_block_forms) {
  torch::manual_seed(2);
  const auto tokens = torch::randint(0, 10, {3, 7}, torch::kLong);
  auto full = make("{name: dense_ssm, hidden: 16}", 12, 7, 5);
  auto one_block = make("{name: dense_ssm, hidden: 16, block: 16}", 12, 7, 5);
  full->eval();
  one_block->eval();
  BOOST_TEST(torch::allclose(full->forward(tokens), one_block->forward(tokens), 1e-5, 1e-5));
  // The diagonal form: h_t = a(x_t) * h_{t-1} coordinate by coordinate, so two sequences that
  // differ only in their first token have the same ratio h_t / h_{t-1} at every later step
  // (the full form mixes coordinates: not so).
  auto twin = tokens.clone();
  twin.select(1, 0) = (twin.select(1, 0) + 1) % 10;
  for (const bool diagonal : {true, false}) {
    auto model = make(diagonal ? "{name: dense_ssm, hidden: 16, block: 1, normalize: false}"
                               : "{name: dense_ssm, hidden: 16, normalize: false}",
                      12, 7, 5);
    auto states = [&](const torch::Tensor& t) {
      torch::Tensor seen;
      model->hooks.set_handler([&](const std::string&, const torch::Tensor& x) {
        seen = x.to(torch::kDouble);
        return x;
      });
      model->forward(t);
      model->hooks.clear();
      return seen;
    };
    const auto a = states(tokens), b = states(twin);
    const auto ratio = [](const torch::Tensor& h) { return h.slice(1, 1) / h.slice(1, 0, -1); };
    BOOST_TEST(torch::allclose(ratio(a), ratio(b), 1e-3, 1e-6) == diagonal,
               (diagonal ? "diagonal" : "full"));
  }
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"{name: dense_ssm, hidden: 16, block: 5}", "block: must divide hidden (16)"},
           {"{name: dense_ssm, hidden: 16, block: 4, rank: 2}", "block: and rank are two forms"}}) {
    try {
      make(text, 12, 7, 5);
      BOOST_FAIL("no error for " << text);
    } catch (const std::exception& e) {
      BOOST_TEST(std::string(e.what()).find(message) != std::string::npos, e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(gpt2_positions_cover_the_longest_sequence) {
  try {
    make("{name: gpt2, layers: 1, d_model: 16, heads: 2, d_ff: 16, positions: 5}", 12, 10, 0);
    BOOST_FAIL("no error");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find(
                   "positions: must cover the longest sequence of the study (10 tokens)") !=
                   std::string::npos,
               e.what());
  }
}

namespace {
TrialResult learn_parity(const std::string& model_yaml, const std::string& format, double lr,
                         int64_t max_steps) {
  TrialSpec t;
  t.cell.task = YAML::Load("{name: modular, m: 2}");
  t.cell.model = YAML::Load(model_yaml);
  t.cell.format = format;
  t.cell.distribution = "uniform";
  t.cell.L = 6;
  t.cell.n_cap = 16'000'000;
  t.n = 102;  // N_max of parity at lengths 2..6
  t.lr = lr;
  t.seed = 10;
  t.training.max_steps = max_steps;
  t.training.eval_every = 25;
  t.training.epsilon = 1e-3;
  t.max_length = format == "cot" ? 12 : 6;
  return run_trial(t, test::plugins());
}
}  // namespace

// LSTM, GRU and Dense-SSM learn parity with ACoT at lengths 2..6 from its 102 training
// sequences: validation loss below epsilon.
BOOST_DATA_TEST_CASE(tiny_recurrent_model_learns_parity,
                     bdata::make(std::vector<std::string>{"lstm", "gru", "dense_ssm"}) ^
                         bdata::make(std::vector<double>{3e-3, 3e-3, 1e-2}),
                     name, lr) {
  TrialResult r = learn_parity(small(name), "acot", lr, 1500);
  BOOST_TEST(r.succeeded(), name << ": " << to_string(r.status) << ", best loss " << r.best_loss
                                 << " after " << r.steps << " steps");
}

// Transformers (CoT), Mamba and Mamba-2 (ACoT) fit the same 102 sequences and predict held-out ones
// well above chance, but 102 sequences are too few for them to reach epsilon on held-out data
// (measured: validation loss 0.05-0.4 after 3000 steps, while training loss goes below 1e-4):
// the data hunger the paper measures. So the test asks for fitting and generalization above
// chance, not for success.
BOOST_DATA_TEST_CASE(tiny_model_fits_parity_and_beats_chance,
                     bdata::make(std::vector<std::string>{"gpt2", "llama", "pythia", "mamba",
                                                          "mamba2"}) ^
                         bdata::make(std::vector<std::string>{"cot", "cot", "cot", "acot", "acot"}),
                     name, format) {
  // Without dropout, so that the training loss measures fitting. Mamba's training loss at this
  // learning rate jumps between 0.005 and 0.05 for its first 1500 steps (a float rounding
  // change moves where it is at step 1000), then settles below 1e-3: it gets 2500 steps.
  std::string model = small(name);
  if (name == "gpt2") model.replace(model.size() - 1, 1, ", dropout: 0}");
  TrialResult r = learn_parity(model, format, 3e-3, name == "mamba" ? 2500 : 1000);
  BOOST_REQUIRE(!r.history.empty());
  BOOST_TEST(r.history.back().train_loss < 0.02,
             name << ": training loss " << r.history.back().train_loss);
  BOOST_TEST(r.last.token_accuracy > 0.85,
             name << ": validation token accuracy " << r.last.token_accuracy);
}

// Dropout draws from torch's generator, which the trial seeds: two runs are identical.
BOOST_AUTO_TEST_CASE(gpt2_with_dropout_trains_deterministically) {
  auto once = [] { return learn_parity(kSmall.at("gpt2"), "cot", 1e-3, 50); };
  TrialResult a = once(), b = once();
  BOOST_REQUIRE(a.history.size() == 2u);
  BOOST_TEST(a.history[1].train_loss == b.history[1].train_loss);
  BOOST_TEST(a.history[1].val_loss == b.history[1].val_loss);
}

// Every model trains on Z_5 and on S_3 in each format (a few steps of a tiny configuration:
// the data, formats, vocabularies and models fit together; learning is tested above).
BOOST_DATA_TEST_CASE(every_model_trains_on_every_task_and_format,
                     bdata::make(kModels) *
                         bdata::make(std::vector<std::string>{"{name: modular, m: 5}",
                                                              "{name: permutation, m: 3}"}) *
                         bdata::make(std::vector<std::string>{"outcome", "cot", "acot"}),
                     name, task, format) {
  TrialSpec t;
  t.cell.task = YAML::Load(task);
  t.cell.model = YAML::Load(small(name));
  t.cell.format = format;
  t.cell.distribution = "uniform";
  t.cell.L = 4;
  t.cell.n_cap = 16'000'000;
  t.n = 32;
  t.lr = 1e-3;
  t.seed = 1;
  t.training.max_steps = 3;
  t.training.eval_every = 3;
  t.max_length = format == "cot" ? 8 : 4;
  TrialResult r = run_trial(t, test::plugins());
  BOOST_TEST(r.steps == 3);
  BOOST_TEST(std::isfinite(r.last.loss));
  BOOST_TEST(r.last.count > 0);
}

// Dense-SSM's fused step (float on the CPU: SDK products and one selection node per step) and
// its LibTorch path (taken in double) agree on the logits and every parameter's gradient.
BOOST_DATA_TEST_CASE(dense_ssm_fused_step_matches_libtorch_operations,
                     bdata::make(std::vector<std::string>{"true", "false"}), normalize) {
  auto model = make("{name: dense_ssm, hidden: 16, normalize: " + normalize + "}", 12, 10, 1);
  torch::manual_seed(2);
  const auto tokens = torch::randint(0, 10, {3, 10}, torch::kLong);
  auto run = [&](torch::Dtype dtype) {
    model->to(dtype);
    model->zero_grad();
    auto logits = model->forward(tokens);
    auto weights = torch::linspace(-1, 1, logits.numel(), torch::kDouble).reshape(logits.sizes());
    (logits * weights.to(dtype)).sum().backward();
    std::map<std::string, torch::Tensor> out{{"logits", logits.detach().to(torch::kDouble)}};
    for (const auto& p : model->named_parameters())
      out[p.key()] = p.value().grad().to(torch::kDouble);
    return out;
  };
  auto fused = run(torch::kFloat), reference = run(torch::kDouble);
  for (const auto& [name, value] : reference) {
    const double scale = value.abs().max().item().toDouble();
    const double error = (fused.at(name) - value).abs().max().item().toDouble();
    BOOST_TEST(error < 1e-5 * std::max(1.0, scale),
               name << ": max error " << error << ", scale " << scale);
  }
}
