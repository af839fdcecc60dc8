// Training: causality of the models, determinism of whole trials, and learning parity.
#define BOOST_TEST_MODULE training
#include <fcntl.h>
#include <sys/wait.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <fstream>

#include "options_yaml.hpp"
#include "support.hpp"
#include "train/archive_file.hpp"
#include "train/cell_setup.hpp"
#include "train/checkpoint.hpp"
#include "train/detector.hpp"
#include "train/evaluation.hpp"
#include "train/generalization.hpp"
#include "train/optimizer.hpp"
#include "train/run_trial.hpp"
#include "train/trainer.hpp"
#include "util/process.hpp"

using namespace induct;

namespace {

struct Process {
  Process() { configure_process(1); }
};
BOOST_TEST_GLOBAL_FIXTURE(Process);

TrialSpec parity_trial(int L, uint64_t n, int64_t hidden, double lr, int64_t max_steps) {
  TrialSpec t;
  t.cell.task = YAML::Load("{name: modular, m: 2}");
  t.cell.model = YAML::Load("{name: lstm, hidden: " + std::to_string(hidden) + "}");
  t.cell.format = "acot";
  t.cell.distribution = "uniform";
  t.cell.L = L;
  t.cell.n_cap = 16'000'000;
  t.n = n;
  t.lr = lr;
  t.seed = 10;
  t.training.max_steps = max_steps;
  t.training.eval_every = 25;
  t.max_length = L;
  return t;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lstm_is_causal) {
  auto model =
      make_model_checked(test::plugins(), yaml::load_string("name: lstm\nhidden: 32", "m.yaml"),
                         {12, 10, 10}, 1, torch::kCPU);
  model->eval();
  torch::manual_seed(3);
  torch::Tensor a = torch::randint(0, 5, {3, 10}, torch::kLong);
  torch::Tensor b = a.clone();
  b.slice(1, 6) = torch::randint(5, 10, {3, 4}, torch::kLong);  // change positions 6..9
  torch::Tensor la = model->forward(a), lb = model->forward(b);
  BOOST_TEST(torch::equal(la.slice(1, 0, 6), lb.slice(1, 0, 6)));
  BOOST_TEST(!torch::allclose(la.slice(1, 6), lb.slice(1, 6)));
}

BOOST_AUTO_TEST_CASE(same_seed_same_initial_weights_and_losses) {
  TrialSpec spec = parity_trial(6, 64, 32, 1e-3, 100);
  TrialResult first = run_trial(spec, test::plugins());
  TrialResult second = run_trial(spec, test::plugins());
  BOOST_REQUIRE(first.history.size() == 4u);
  BOOST_REQUIRE(second.history.size() == first.history.size());
  for (size_t i = 0; i < first.history.size(); ++i) {
    BOOST_TEST(first.history[i].train_loss == second.history[i].train_loss);
    BOOST_TEST(first.history[i].val_loss == second.history[i].val_loss);
  }
  spec.seed = 20;
  TrialResult other = run_trial(spec, test::plugins());
  BOOST_TEST(other.history[0].train_loss != first.history[0].train_loss);
}

BOOST_AUTO_TEST_CASE(lstm_learns_parity_with_acot) {
  // Lengths 2..6: 124 sequences, 22 for validation, N_max = 102, all used for training.
  TrialSpec spec = parity_trial(6, 102, 64, 3e-3, 2000);
  spec.training.epsilon = 1e-3;
  spec.checkpoint_dir = test::temp_dir("checkpoints");
  TrialResult result = run_trial(spec, test::plugins());
  BOOST_TEST(result.succeeded(), "status " << to_string(result.status) << ", best loss "
                                           << result.best_loss << " after " << result.steps);
  BOOST_TEST(result.last.loss < 1e-3);
  BOOST_TEST(result.last.final_accuracy == 1.0);
  BOOST_TEST(result.last.count == 22);
  BOOST_TEST(result.last.per_length.size() == 4u);  // length 2 has no validation sequence
  // The trained model was saved by the trial's key (checkpoint_dir is a path, not in the key):
  // loaded into a model built with another seed, it tracks parity. Parity's ACoT vocabulary:
  // actions 0 and 1, states 2 and 3, then PAD and SEP; the target at t is the state after t.
  const std::string path = checkpoint_path(spec.checkpoint_dir, spec.key());
  TrialSpec unsaved = spec;
  unsaved.checkpoint_dir.clear();
  BOOST_TEST(unsaved.key() == spec.key());
  BOOST_TEST(TrialSpec::from_yaml(spec.to_yaml()).checkpoint_dir == spec.checkpoint_dir);
  auto model = make_model_checked(test::plugins(), yaml::from_node(spec.cell.model, "model"),
                                  {6, 6, 4}, 99, torch::kCPU);
  auto tokens = torch::tensor({1, 1, 0, 1, 0, 1}, torch::kLong).view({1, 6});
  const auto expected = torch::tensor({3, 2, 2, 3, 3, 2}, torch::kLong).view({1, 6});
  torch::NoGradGuard no_grad;
  model->eval();
  BOOST_TEST(!torch::equal(model->forward(tokens).argmax(-1), expected));  // untrained
  load_checkpoint(*model, path);
  BOOST_TEST(torch::equal(model->forward(tokens).argmax(-1), expected));
  BOOST_CHECK_THROW(load_checkpoint(*model, path + ".missing"), ConfigError);
  // A checkpoint with flipped bytes is refused by its digest, in one line, never loaded.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(path) / 2));
    f.write("\x5a\x5a\x5a\x5a", 4);
  }
  try {
    load_checkpoint(*model, path);
    BOOST_FAIL("a damaged checkpoint was loaded");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()) ==
                   path +
                       ": not a usable checkpoint (damaged: its bytes do not match their "
                       "digest); delete it and rerun to train the configuration again",
               e.what());
  }
  test::run_command("rm -rf '" + spec.checkpoint_dir + "'");
}

BOOST_AUTO_TEST_CASE(a_diverging_run_ends_at_its_own_step_whatever_the_evaluation_interval) {
  // The trainer reads the training losses once per evaluation (no host synchronisation per
  // step); a non-finite one must still end the run at the step it occurred, without the
  // evaluation that found it, whatever the interval.
  TrialSpec spec = parity_trial(6, 102, 32, 1e30, 200);
  std::vector<TrialResult> results;
  for (int64_t interval : {7, 50, 200}) {
    spec.training.eval_every = interval;
    results.push_back(run_trial(spec, test::plugins()));
    BOOST_TEST_MESSAGE("interval " << interval << ": " << to_string(results.back().status) << " at "
                                   << results.back().steps << ": " << results.back().error);
  }
  const int64_t step = results[0].steps;
  for (size_t i = 0; i < results.size(); ++i) {
    BOOST_TEST(to_string(results[i].status) == std::string("diverged"));
    BOOST_TEST(results[i].steps == step);
    BOOST_TEST(results[i].error == "non-finite training loss at step " + std::to_string(step));
  }
  BOOST_TEST(results[0].history.size() == static_cast<size_t>((step - 1) / 7));
  BOOST_TEST(results[2].history.empty());
  // The ground truth: stopped one step earlier, every training loss was finite.
  spec.training.max_steps = step - 1;
  const TrialResult before = run_trial(spec, test::plugins());
  BOOST_TEST(before.steps == step - 1);
  BOOST_TEST(before.error.find("training loss") == std::string::npos, before.error);
}

BOOST_AUTO_TEST_CASE(wrong_output_shape_is_caught_before_training) {
  PluginRegistry registry;
  registry.load(std::string(INDUCT_FIXTURE_PLUGIN_DIR) + "/libfixture_wrong_shape.so");
  try {
    make_model_checked(registry, yaml::load_string("name: wrong_shape", "m.yaml"), {12, 7, 10}, 1,
                       torch::kCPU);
    BOOST_FAIL("no error");
  } catch (const PluginError& e) {
    std::string message = e.what();
    BOOST_TEST(message.find("model 'wrong_shape'") == 0u, message);
    BOOST_TEST(message.find("forward returned logits of shape [2, 7, 11], expected [2, 7, 12]") !=
                   std::string::npos,
               message);
  }
}

BOOST_AUTO_TEST_CASE(failure_detector_stops_a_configuration_that_makes_no_progress) {
  TrialSpec hopeless = parity_trial(6, 102, 32, 1e-7, 2000);  // lr far too small to move
  hopeless.training.stall_window = 200;
  hopeless.training.stall_improvement = 0.01;
  // It never leaves its starting plateau, so only the plateau rule stops it.
  hopeless.training.plateau_patience = 400;
  TrialResult r = run_trial(hopeless, test::plugins());
  BOOST_TEST(r.stalled);
  BOOST_TEST(r.stopped_by == "plateau");
  BOOST_TEST(to_string(r.status) == "failed");
  BOOST_TEST(r.steps == 400);
  // The chance loss of parity with ACoT labels: the entropy of nearly balanced states.
  BOOST_TEST(r.chance_loss > 0.69);
  BOOST_TEST(r.chance_loss <= std::log(2.0) + 1e-12);
  BOOST_TEST(TrialResult::from_yaml(r.to_yaml()).stopped_by == "plateau");
  // The same configuration that learns is not stopped by it.
  TrialSpec learner = parity_trial(6, 102, 64, 3e-3, 2000);
  learner.training.epsilon = 1e-3;
  learner.training.stall_window = 500;
  TrialResult ok = run_trial(learner, test::plugins());
  BOOST_TEST(ok.succeeded());
  BOOST_TEST(!ok.stalled);
  // The detector is part of the trial's identity, each of its rules too.
  TrialSpec plain = parity_trial(6, 102, 32, 1e-7, 2000);
  BOOST_TEST(plain.key() != hopeless.key());
  TrialSpec longer = hopeless;
  longer.training.plateau_patience = 800;
  BOOST_TEST(longer.key() != hopeless.key());
  BOOST_TEST(TrialSpec::from_yaml(longer.to_yaml()).key() == longer.key());
}

namespace {
bool stops(const std::vector<EvalPoint>& history, const TrainSettings& settings,
           double chance = 0) {
  double best = std::numeric_limits<double>::infinity();
  for (const EvalPoint& p : history) best = std::min(best, p.val_loss);
  return failure_verdict(history, best, chance, settings) != Verdict::kGoOn;
}

// The first evaluation after which the detector stops the run, or -1 (replayed as the trainer
// does: the verdict after every evaluation of the history).
int64_t first_stop(const std::vector<EvalPoint>& history, const TrainSettings& settings,
                   double chance, Verdict* verdict = nullptr) {
  std::vector<EvalPoint> seen;
  double best = std::numeric_limits<double>::infinity();
  for (const EvalPoint& p : history) {
    seen.push_back(p);
    best = std::min(best, p.val_loss);
    const Verdict v = failure_verdict(seen, best, chance, settings);
    if (v != Verdict::kGoOn) {
      if (verdict) *verdict = v;
      return p.step;
    }
  }
  return -1;
}

TrainSettings detector() {
  TrainSettings s;
  s.max_steps = 250'000;
  s.epsilon = 1e-4;
  s.stall_window = 200;
  s.stall_improvement = 0.1;
  s.stall_projection = 2;
  s.plateau_margin = 0.05;
  s.memorised_loss = 1e-4;
  return s;
}
}  // namespace

BOOST_AUTO_TEST_CASE(failure_detector_projection_stops_what_cannot_reach_epsilon_in_time) {
  TrainSettings settings;
  settings.max_steps = 2000;
  settings.epsilon = 1e-4;
  settings.stall_window = 200;
  settings.stall_improvement = 0.1;
  auto history = [](double then, double now) {
    return std::vector<EvalPoint>{
        {100, 0, 1.0}, {200, 0, then}, {300, 0, 0.5 * (then + now)}, {400, 0, now}};
  };
  // 1e-2 -> 8.5e-3 over 200 steps: 15% better, so the stall rule lets it go on.
  BOOST_TEST(!stops(history(1e-2, 8.5e-3), settings));
  // At twice that rate for the 1600 steps left: 8.5e-3 * 0.85^16 = 6.3e-4 > 1e-4: stopped.
  settings.stall_projection = 2;
  BOOST_TEST(stops(history(1e-2, 8.5e-3), settings));
  // At four times the rate it could get there (8.5e-3 * 0.85^32 = 4.7e-5): not stopped.
  settings.stall_projection = 4;
  BOOST_TEST(!stops(history(1e-2, 8.5e-3), settings));
  // A tenfold fall over the window reaches epsilon at any slack: not stopped.
  settings.stall_projection = 1;
  BOOST_TEST(!stops(history(1e-2, 1e-3), settings));
  // The stall rule alone: less than 10% better over the window.
  settings.stall_projection = 0;
  BOOST_TEST(stops(history(1e-2, 9.5e-3), settings));
  // Not before a whole window of history, and never when the detector is off.
  BOOST_TEST(!stops({{100, 0, 1.0}, {200, 0, 1.0}}, settings));
  settings.stall_window = 0;
  BOOST_TEST(!stops(history(1e-2, 9.5e-3), settings));
}

BOOST_AUTO_TEST_CASE(failure_detector_never_stops_a_run_on_its_starting_plateau) {
  // Parity with Outcome supervision: validation loss at ln 2 (+- noise) for 5,000 steps, then
  // learned. Without the plateau rule the stall rule would stop it after 300 steps.
  const double ln2 = std::log(2.0);
  std::vector<EvalPoint> history;
  for (int64_t step = 100; step <= 5000; step += 100)
    history.push_back(
        {step, ln2 + 0.002 * std::sin(step * 0.37), ln2 + 0.003 * std::cos(step * 0.11)});
  for (int64_t step = 5100; step <= 6000; step += 100) {
    const double loss = ln2 * std::exp(-(step - 5000) / 70.0);
    history.push_back({step, loss, loss});
  }
  TrainSettings s = detector();
  BOOST_TEST(first_stop(history, s, ln2) == -1);
  BOOST_TEST(history.back().val_loss < s.epsilon);  // it ends as a success
  // Without knowing the chance loss there is no plateau: the stall rule stops it at once.
  BOOST_TEST(first_stop(history, s, 0) == 300);
  // A plateau patience shorter than the plateau would stop it (why the default has none).
  s.plateau_patience = 3000;
  Verdict verdict = Verdict::kGoOn;
  BOOST_TEST(first_stop(history, s, ln2, &verdict) == 3000);
  BOOST_TEST(to_string(verdict) == std::string("plateau"));
}

// The plateau reference on a tiny split (Fixed L = 5 Outcome parity: 32 sequences, 6 of them
// validation, split 5/1 for seed 10): the task's chance loss is ln 2 whatever the split, as
// docs/method.md section 5a says; the validation set's own is its labels' entropy.
BOOST_AUTO_TEST_CASE(the_plateau_level_is_the_tasks_chance_loss_or_the_validation_sets) {
  Cell cell;
  cell.task = YAML::Load("{name: modular, m: 2}");
  cell.format = "outcome";
  cell.distribution = "fixed";
  cell.L = 5;
  cell.n_cap = 16'000'000;
  const CellData data = make_cell_data(test::plugins(), cell);
  const double ln2 = std::log(2.0);
  const double five_one = -(5.0 / 6 * std::log(5.0 / 6) + 1.0 / 6 * std::log(1.0 / 6));
  for (uint64_t seed : {10, 20, 30}) {
    const Split split = make_split(data.data, 26, seed);
    BOOST_REQUIRE(split.validation.size() == 6u);
    ExampleSet validation(split.validation, *data.transitions, *data.format, data.vocab);
    BOOST_TEST(std::abs(plateau_loss(data, validation, TrainSettings::PlateauLevel::kTask) - ln2) <
               1e-12);
    const double own = plateau_loss(data, validation, TrainSettings::PlateauLevel::kValidation);
    BOOST_TEST(own <= ln2 + 1e-12);
    if (seed == 10) BOOST_TEST(std::abs(own - five_one) < 1e-12, own);  // the 5/1 split
  }
  // Z_3 over 3^4 sequences: ln 3.
  cell.task = YAML::Load("{name: modular, m: 3}");
  cell.L = 4;
  const CellData z3 = make_cell_data(test::plugins(), cell);
  const Split split = make_split(z3.data, 0, 10);
  ExampleSet validation(split.validation, *z3.transitions, *z3.format, z3.vocab);
  BOOST_TEST(std::abs(plateau_loss(z3, validation, TrainSettings::PlateauLevel::kTask) -
                      std::log(3.0)) < 1e-12);
}

// A checkpoint holds the weights the trial's final metrics measured: evaluated again, it gives
// the stored validation loss and accuracies (what lengthgen and probe analyse is what the
// trial reports).
BOOST_AUTO_TEST_CASE(a_checkpoint_gives_the_trials_final_metrics_again) {
  TrialSpec trial = parity_trial(4, 12, 16, 3e-3, 300);  // stops at 300 steps, not learned
  trial.checkpoint_dir = test::temp_dir("checkpoint_metrics");
  const TrialResult r = run_trial(trial, test::plugins());
  BOOST_REQUIRE(r.finished());
  const CellData data = make_cell_data(test::plugins(), trial.cell);
  const Split split = make_split(data.data, trial.n, trial.seed);
  ExampleSet validation(split.validation, *data.transitions, *data.format, data.vocab);
  auto model = make_model_checked(test::plugins(), yaml::from_node(trial.cell.model, "<model>"),
                                  {data.vocab.size(), trial.max_length, data.vocab.pad()},
                                  trial.seed + 1, torch::kCPU);  // other initial weights
  load_checkpoint(*model, checkpoint_path(trial.checkpoint_dir, trial.key()));
  model->eval();
  const EvalMetrics again =
      evaluate(*model, validation, data.vocab.pad(), trial.training.eval_batch_size, torch::kCPU);
  BOOST_TEST(std::abs(again.loss - r.last.loss) < 1e-6, again.loss << " vs " << r.last.loss);
  BOOST_TEST(again.final_accuracy == r.last.final_accuracy);
  BOOST_TEST(again.token_accuracy == r.last.token_accuracy);
  BOOST_TEST(r.last.loss > r.best_loss - 1e-12);  // the final loss, not necessarily the best
}

BOOST_AUTO_TEST_CASE(failure_detector_stops_a_memorising_run) {
  // Training loss to 1e-6 while validation loss rises from ln 2: memorised, stopped as soon
  // as the training loss is below memorised_loss and a window has passed without progress.
  const double ln2 = std::log(2.0);
  std::vector<EvalPoint> history;
  for (int64_t step = 100; step <= 4000; step += 100)
    history.push_back({step, ln2 * std::exp(-step / 150.0), ln2 + step * 1e-4});
  TrainSettings s = detector();
  Verdict verdict = Verdict::kGoOn;
  const int64_t stop = first_stop(history, s, ln2, &verdict);
  BOOST_TEST(to_string(verdict) == std::string("memorised"));
  // ln 2 e^(-t/150) < 1e-4 from t = 1330 on.
  BOOST_TEST(stop == 1400);
  // With the rule off, the run is on its plateau and goes on.
  s.memorised_loss = 0;
  BOOST_TEST(first_stop(history, s, ln2) == -1);
}

BOOST_AUTO_TEST_CASE(a_long_window_waits_for_a_late_generalisation) {
  // The shape of a memorising success of the 20,000-step ground truth (parity Fixed L = 5, N = 26,
  // lr 1e-4, seed 40; docs/performance.md section 4): validation best 0.30 at step 600, the
  // training set memorised by step 5,000 while validation sits at 0.44, then from step 6,000 a
  // fall to epsilon at step 17,200. A window of 10,000 (fraction 0.5, memorised below 1e-4)
  // lets it succeed; a window of 5,000 stops it as memorised.
  std::vector<EvalPoint> history;
  for (int64_t step = 100; step <= 17200; step += 100) {
    const double t = static_cast<double>(step);
    const double train = step <= 5000 ? 0.6 * std::exp(-t / 570.0) : 5e-5;
    double val;
    if (step <= 600)
      val = 0.69 - 0.39 * t / 600.0;
    else if (step <= 6000)
      val = 0.44;
    else
      val = 0.44 * std::exp(-(t - 6000.0) / 1100.0) + 5e-5;
    history.push_back({step, train, val});
  }
  BOOST_TEST(history.back().val_loss < 1e-4);  // it ends as a success
  TrainSettings s = detector();
  s.stall_window = 10000;
  s.stall_projection = 0;
  s.stall_fraction = 0.5;
  s.plateau_margin = 0.2;
  const double ln2 = std::log(2.0);
  BOOST_TEST(first_stop(history, s, ln2) == -1);
  s.stall_window = 5000;
  Verdict verdict = Verdict::kGoOn;
  BOOST_TEST(first_stop(history, s, ln2, &verdict) == 5600);  // a window after the best, at 600
  BOOST_TEST(to_string(verdict) == std::string("memorised"));
}

BOOST_AUTO_TEST_CASE(failure_detector_stops_a_run_that_stalls_after_leaving_the_plateau) {
  // Learned part of the way (0.3 against a chance of ln 2), then flat.
  const double ln2 = std::log(2.0);
  std::vector<EvalPoint> history;
  for (int64_t step = 100; step <= 3000; step += 100)
    history.push_back(
        {step, 0.3, step < 1000 ? ln2 - step * 4e-4 : 0.3 + 0.001 * (step % 300 == 0)});
  Verdict verdict = Verdict::kGoOn;
  const int64_t stop = first_stop(history, detector(), ln2, &verdict);
  BOOST_TEST(to_string(verdict) == std::string("stalled"));
  BOOST_TEST((stop > 1000 && stop <= 1300));
}

BOOST_AUTO_TEST_CASE(flat_adam_matches_libtorch_adam) {
  // The same model and data, one copy trained with LibTorch's Adam, one with FlatAdam (whose
  // fused update rounds differently). After one step the two agree to float rounding. Later
  // steps drift further apart: the key biases' gradient is float noise around 0 (softmax does
  // not see a shift of the scores), which Adam scales up to steps of about lr, so rounding
  // differences in the noise move them by up to ~2e-5 after five steps.
  auto build = [] {
    return make_model_checked(
        test::plugins(),
        yaml::load_string("name: gpt2\nlayers: 2\nd_model: 16\nheads: 2\nd_ff: 32\ndropout: 0",
                          "m.yaml"),
        {8, 6, 6}, 3, torch::kCPU);
  };
  auto reference = build(), flat = build();
  torch::optim::Adam adam(reference->parameters(), torch::optim::AdamOptions(1e-2));
  FlatAdam flat_adam(flat->parameters(), 1e-2);
  torch::manual_seed(9);
  for (int step = 0; step < 5; ++step) {
    auto tokens = torch::randint(0, 6, {4, 6}, torch::kLong);
    auto targets = torch::randint(0, 8, {4 * 6}, torch::kLong);
    auto loss_of = [&](SequenceModel& m) {
      return torch::nn::functional::cross_entropy(m.forward(tokens).reshape({-1, 8}), targets);
    };
    adam.zero_grad();
    loss_of(*reference).backward();
    adam.step();
    flat_adam.zero_grad();
    loss_of(*flat).backward();
    flat_adam.step();
    const double rtol = step == 0 ? 1e-6 : 0, atol = step == 0 ? 1e-7 : 1e-4;
    auto a = reference->named_parameters(), b = flat->named_parameters();
    for (const auto& p : a) {
      const double diff = (p.value() - b[p.key()]).abs().max().item<double>();
      BOOST_TEST(torch::allclose(p.value(), b[p.key()], rtol, atol),
                 p.key() << " after step " << step + 1 << ": max difference " << diff);
    }
  }
}

namespace {
// An oracle for Z_m in CoT layout: after SEP it predicts the true next state from the actions.
class CotOracle final : public SequenceModel {
 public:
  CotOracle(int64_t m, bool wrong) : m_(m), wrong_(wrong) {}
  torch::Tensor forward(const torch::Tensor& tokens) override {
    const int64_t B = tokens.size(0), T = tokens.size(1), V = 2 * m_ + 2, sep = 2 * m_ + 1;
    auto logits = torch::zeros({B, T, V});
    auto t = tokens.accessor<int64_t, 2>();
    auto out = logits.accessor<float, 3>();
    for (int64_t b = 0; b < B; ++b) {
      int64_t n = -1;
      for (int64_t i = 0; i < T; ++i)
        if (t[b][i] == sep) n = i;
      if (n < 0) continue;
      int64_t state = 0;
      for (int64_t i = n; i < T; ++i) {  // position i predicts s_{i-n+1}
        const int64_t k = i - n + 1;
        if (k <= n) state = (state + t[b][k - 1]) % m_;
        out[b][i][m_ + (wrong_ ? 0 : state)] = 10;
      }
    }
    return logits;
  }

 private:
  int64_t m_;
  bool wrong_;
};
}  // namespace

BOOST_AUTO_TEST_CASE(cot_generalization_decodes_greedily) {
  auto task =
      test::plugins().make_task("modular", TaskContext{yaml::load_string("m: 3", "t.yaml")});
  CellData cell =
      make_cell_data(task, "modular", test::format("name: cot"), "uniform", 4, {}, 16'000'000);
  CotOracle oracle(3, false), wrong(3, true);
  auto right = evaluate_generalization(oracle, cell, {6, 9}, 200, 7, 64, torch::kCPU);
  BOOST_REQUIRE(right.size() == 2u);
  for (const auto& m : right) {
    BOOST_TEST(m.final_accuracy == 1.0);
    BOOST_TEST(m.token_accuracy == 1.0);
    BOOST_TEST(m.count == 200);
  }
  BOOST_TEST(right[1].length == 9);
  // Always answering state 0: right only where the final state is 0 (about 1/3).
  auto bad = evaluate_generalization(wrong, cell, {9}, 300, 7, 64, torch::kCPU);
  BOOST_TEST(bad[0].final_accuracy > 0.2);
  BOOST_TEST(bad[0].final_accuracy < 0.47);
  BOOST_TEST(std::abs(normalized_accuracy(bad[0].final_accuracy, 3)) < 0.2);
}

namespace {

// Stops a training (as a stop signal does) after the evaluation at or past `at`.
struct StopAfter : TrainObserver {
  explicit StopAfter(int64_t at) : at(at) {}
  void on_eval(const EvalPoint& point, double) override { last = point.step; }
  bool should_stop() override { return last >= at; }
  int64_t at, last = 0;
};

void require_same_run(const TrialResult& a, const TrialResult& b) {
  BOOST_TEST(to_string(a.status) == to_string(b.status));
  BOOST_TEST(a.steps == b.steps);
  BOOST_TEST(a.best_loss == b.best_loss);
  BOOST_TEST(a.last.loss == b.last.loss);
  BOOST_REQUIRE(a.history.size() == b.history.size());
  for (size_t i = 0; i < a.history.size(); ++i) {
    BOOST_TEST(a.history[i].step == b.history[i].step);
    BOOST_TEST(a.history[i].train_loss == b.history[i].train_loss, "step " << a.history[i].step);
    BOOST_TEST(a.history[i].val_loss == b.history[i].val_loss, "step " << a.history[i].step);
  }
}

}  // namespace

// A training killed mid-run goes on from its last saved state to the same result, value for
// value, as one run in one go: the LSTM, and GPT-2 with dropout (torch's generator is saved).
BOOST_AUTO_TEST_CASE(a_killed_training_resumes_from_its_state_as_if_never_stopped) {
  for (const std::string model :
       {"{name: lstm, hidden: 32}",
        "{name: gpt2, layers: 2, d_model: 32, heads: 4, d_ff: 64, dropout: 0.1}"}) {
    BOOST_TEST_MESSAGE(model);
    TrialSpec spec =
        parity_trial(6, 40, 32, 1e-3, 300);  // 40 examples: passes of 64, 40 ... reshuffled mid-run
    spec.cell.model = YAML::Load(model);
    spec.training.batch_size = 16;
    const TrialResult whole = run_trial(spec, test::plugins());
    BOOST_REQUIRE(whole.steps > 175);

    spec.state_dir = test::temp_dir("states");
    spec.state_every = 50;
    spec.keep_states = "none";
    const std::string file = spec.state_dir + "/" + spec.trajectory_key() + ".pt";
    StopAfter stop(175);  // saved at 50, 100 and 150; stopped at 175
    const TrialResult cut = run_trial(spec, test::plugins(), &stop);
    BOOST_TEST(to_string(cut.status) == std::string("cancelled"));
    BOOST_REQUIRE(std::filesystem::exists(file));

    const TrialResult resumed = run_trial(spec, test::plugins());
    BOOST_TEST(resumed.resumed_at == 150);
    require_same_run(resumed, whole);
    BOOST_TEST(!std::filesystem::exists(file), "a finished training's state is removed");
    test::run_command("rm -rf '" + spec.state_dir + "'");
  }
}

// A state that cannot be written (its folder is a file) is said once for the training, not
// at every save, and the training goes on to the result it has without states.
BOOST_AUTO_TEST_CASE(an_unwritable_state_is_said_once_and_the_training_goes_on) {
  TrialSpec spec = parity_trial(6, 40, 32, 1e-3, 300);
  spec.cell.model = YAML::Load("{name: lstm, hidden: 16}");
  const TrialResult plain = run_trial(spec, test::plugins());
  const std::string dir = test::temp_dir("unwritable-states");
  spec.state_dir = dir + "/states";
  std::ofstream(spec.state_dir) << "a file where the states' folder should be";
  spec.state_every = 20;
  spec.keep_states = "none";
  TrialResult with;
  const std::string text = test::stderr_of([&] { with = run_trial(spec, test::plugins()); });
  BOOST_TEST(with.steps > 60);  // saves at 20, 40, 60, ...
  require_same_run(with, plain);
  const std::string line = "induct: could not save the training state";
  BOOST_TEST(text.find(line) != std::string::npos, text);
  BOOST_TEST(text.find(line) == text.rfind(line), text);  // once
  BOOST_TEST(text.find("not said again for this training") != std::string::npos, text);
  BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 1, text);  // one line, no backtrace
  test::run_command("rm -rf '" + dir + "'");
}

// A failed training's final state lets a longer step limit go on from it (the same trajectory:
// the limit is not part of it); a detector that would have stopped the run before that state
// trains from the start and leaves the state alone.
BOOST_AUTO_TEST_CASE(a_longer_limit_goes_on_from_where_a_shorter_one_failed) {
  TrialSpec spec = parity_trial(6, 40, 32, 1e-4, 300);  // lr 1e-4: no success within 300 steps
  spec.training.batch_size = 16;
  const TrialResult whole = run_trial(spec, test::plugins());
  BOOST_REQUIRE(to_string(whole.status) == std::string("failed"));

  TrialSpec shorter = spec;
  shorter.training.max_steps = 125;
  shorter.state_dir = test::temp_dir("extend");
  shorter.state_every = 0;
  shorter.keep_states = "failed";
  BOOST_TEST(shorter.trajectory_key() == spec.trajectory_key());
  BOOST_TEST(shorter.key() != spec.key());
  const TrialResult first = run_trial(shorter, test::plugins());
  BOOST_TEST(first.steps == 125);
  const std::string file = shorter.state_dir + "/" + spec.trajectory_key() + ".pt";
  BOOST_REQUIRE(std::filesystem::exists(file));

  // A detector that stops the run at step 50 (still on its plateau, or no 99% improvement over
  // 25 steps) would not have reached step 125: trained from the start, the state kept.
  TrialSpec judged = spec;
  judged.state_dir = shorter.state_dir;
  judged.keep_states = "stopped";
  judged.training.stall_window = 25;
  judged.training.stall_improvement = 0.99;
  judged.training.plateau_patience = 50;
  TrialSpec judged_alone = judged;
  judged_alone.state_dir.clear();
  const TrialResult fresh = run_trial(judged_alone, test::plugins());
  BOOST_REQUIRE(fresh.stalled);
  BOOST_REQUIRE(fresh.steps == 50);
  const TrialResult not_resumed = run_trial(judged, test::plugins());
  BOOST_TEST(not_resumed.resumed_at == 0);
  require_same_run(not_resumed, fresh);
  BOOST_TEST(std::filesystem::exists(file));

  TrialSpec longer = spec;
  longer.state_dir = shorter.state_dir;
  longer.keep_states = "failed";
  const TrialResult extended = run_trial(longer, test::plugins());
  BOOST_TEST(extended.resumed_at == 125);
  require_same_run(extended, whole);
  BOOST_TEST(std::filesystem::exists(file), "kept again: its own final state, at step 300");
  test::run_command("rm -rf '" + shorter.state_dir + "'");

  // Ended at step 130, between two evaluations of the longer run (every 25 steps): going on
  // from there would add an evaluation a run from the start does not have, so it starts over.
  shorter.training.max_steps = 130;
  BOOST_TEST(run_trial(shorter, test::plugins()).steps == 130);
  BOOST_REQUIRE(std::filesystem::exists(file));
  const TrialResult restarted = run_trial(longer, test::plugins());
  BOOST_TEST(restarted.resumed_at == 0);
  require_same_run(restarted, whole);
  test::run_command("rm -rf '" + shorter.state_dir + "'");
}

// A state whose bytes were flipped (or cut short) is detected by its digest, reported in one
// line, and not used: the training starts over, to the uninterrupted run's result.
BOOST_AUTO_TEST_CASE(a_damaged_state_is_detected_and_not_resumed) {
  TrialSpec spec = parity_trial(6, 40, 32, 1e-3, 300);
  spec.cell.model = YAML::Load("{name: lstm, hidden: 32}");
  spec.training.batch_size = 16;
  const TrialResult whole = run_trial(spec, test::plugins());
  spec.state_dir = test::temp_dir("damaged_states");
  spec.state_every = 50;
  spec.keep_states = "none";
  const std::string file = spec.state_dir + "/" + spec.trajectory_key() + ".pt";
  for (const char* damage : {"flip", "cut"}) {
    StopAfter stop(175);
    BOOST_TEST(to_string(run_trial(spec, test::plugins(), &stop).status) ==
               std::string("cancelled"));
    BOOST_REQUIRE(std::filesystem::exists(file));
    const auto size = std::filesystem::file_size(file);
    if (std::string(damage) == "flip") {  // 64 bytes in the middle, as a bad disk would
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(size / 2));
      f.write(std::string(64, '\x5a').c_str(), 64);
    } else {
      std::filesystem::resize_file(file, size - 100);
    }
    TrialResult again;
    const std::string message = test::stderr_of([&] { again = run_trial(spec, test::plugins()); });
    BOOST_TEST(again.resumed_at == 0, damage);
    require_same_run(again, whole);
    BOOST_TEST(message.find(file + ": not a usable training state (" +
                            (std::string(damage) == "flip" ? "damaged" : "cut short")) !=
                   std::string::npos,
               message);
    BOOST_TEST(std::count(message.begin(), message.end(), '\n') == 1, message);  // one line
  }
}

// A state of another training (two state files swapped by hand) is said and not resumed; a
// folder where the state should be is named as a folder.
BOOST_AUTO_TEST_CASE(a_state_of_another_training_or_a_folder_is_said_and_not_resumed) {
  TrialSpec a = parity_trial(6, 40, 16, 1e-3, 120);
  a.state_dir = test::temp_dir("swapped_states");
  a.state_every = 50;
  a.keep_states = "none";
  TrialSpec b = a;
  b.seed = a.seed + 1;
  const TrialResult whole = run_trial(b, test::plugins());
  StopAfter stop(100);
  BOOST_REQUIRE(to_string(run_trial(a, test::plugins(), &stop).status) == std::string("cancelled"));
  const std::string file_a = a.state_dir + "/" + a.trajectory_key() + ".pt";
  const std::string file_b = b.state_dir + "/" + b.trajectory_key() + ".pt";
  BOOST_REQUIRE(std::filesystem::exists(file_a));
  std::filesystem::rename(file_a, file_b);
  const std::string another = ": holds the state of another training (" + a.trajectory_key() +
                              "); training from the start\n";
  const std::string folder =
      ": not a usable training state (a folder, not a file); training from the start\n";
  for (const std::string& expected : {another, folder}) {
    TrialResult again;
    const std::string message = test::stderr_of([&] { again = run_trial(b, test::plugins()); });
    BOOST_TEST(again.resumed_at == 0);
    require_same_run(again, whole);  // (with a folder, saving then fails too: a second line)
    BOOST_TEST(message.find("induct: " + file_b + expected) == 0u, message);
    std::filesystem::remove_all(file_b);
    std::filesystem::create_directories(file_b + "/inside");  // a folder in the state's place
  }
  test::run_command("rm -rf '" + a.state_dir + "'");
}

// A temporary file left by a killed writer on this machine is removed; one of a live process,
// or of another machine, stays.
BOOST_AUTO_TEST_CASE(stale_partial_files_of_dead_writers_are_removed) {
  const std::string dir = test::temp_dir("partials");
  std::filesystem::create_directories(dir + "/states");
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  BOOST_REQUIRE(dead > 0);
  ::waitpid(dead, nullptr, 0);
  const std::string host = host_name(), d = std::to_string(dead), live = std::to_string(::getpid());
  const std::vector<std::string> gone{"states/a.pt." + host + "." + d + ".partial",
                                      "states/b.pt." + d + ".partial",
                                      "c.pt." + host + "." + d + ".partial"};
  const std::vector<std::string> kept{"states/d.pt." + host + "." + live + ".partial",
                                      "states/e.pt.other-node.example." + d + ".partial",
                                      "states/f.pt", "states/g.partial"};
  for (const auto& name : gone) std::ofstream(dir + "/" + name) << "";
  for (const auto& name : kept) std::ofstream(dir + "/" + name) << "";
  BOOST_TEST(remove_stale_partial_files(dir) == gone.size());
  for (const auto& name : gone) BOOST_TEST(!std::filesystem::exists(dir + "/" + name), name);
  for (const auto& name : kept) BOOST_TEST(std::filesystem::exists(dir + "/" + name), name);
  test::run_command("rm -rf '" + dir + "'");
}
