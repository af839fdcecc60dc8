// Probes, ablation and patching (core/probe) on a hand-built parity model whose state is
// written in one coordinate of one layer: the probe finds it there and not before; ablating
// the probe's directions there takes the model to chance; patching the clean activation into a
// corrupted run restores the clean answer only where the readout takes it from.
#define BOOST_TEST_MODULE probe
#include <torch/torch.h>

#include <boost/test/unit_test.hpp>

#include "probe/probe.hpp"
#include "train/generalization.hpp"
#include "util/process.hpp"

using namespace induct;

namespace {

struct Process {
  Process() { configure_process(1); }
};
BOOST_TEST_GLOBAL_FIXTURE(Process);

// Tokens 0/1. "embed": the token one-hot and two noise coordinates; "state": coordinate 0 is
// +1 / -1 for even / odd prefix parity, coordinates 1..3 the embedding's; logits [5 s0, -5 s0]
// from the state at the same position (class 0 = even).
class ParityByHand final : public SequenceModel {
 public:
  torch::Tensor forward(const torch::Tensor& tokens) override {
    auto onehot = torch::one_hot(tokens, 2).to(torch::kFloat);
    auto noise = torch::sin(torch::arange(tokens.numel() * 2, torch::kFloat) * 12.9898)
                     .view({tokens.size(0), tokens.size(1), 2});
    auto embed = hooks("embed", torch::cat({onehot, noise}, -1));  // [B, T, 4]
    auto parity = embed.select(-1, 1).cumsum(1).remainder(2);      // from the embedding's token
    auto state =
        hooks("state", torch::cat({(1 - 2 * parity).unsqueeze(-1), embed.narrow(-1, 0, 3)}, -1));
    auto s0 = state.select(-1, 0).unsqueeze(-1);
    return torch::cat({5 * s0, -5 * s0}, -1);
  }
};

torch::Tensor parity_labels(const torch::Tensor& tokens) { return tokens.cumsum(1).remainder(2); }

}  // namespace

BOOST_AUTO_TEST_CASE(probe_reads_the_state_where_it_is_written) {
  ParityByHand model;
  torch::manual_seed(1);
  auto tokens = torch::randint(0, 2, {400, 8}, torch::kLong);
  auto acts = record_hooks(model, tokens);
  BOOST_REQUIRE(acts.count("embed") && acts.count("state"));
  auto labels = parity_labels(tokens).flatten();
  const int64_t half = labels.size(0) / 2;
  for (const auto& [hook, expected] :
       std::map<std::string, double>{{"embed", 0.0}, {"state", 1.0}}) {
    auto x = acts.at(hook).reshape({labels.size(0), -1});
    auto probe = fit_probe(x.narrow(0, 0, half), labels.narrow(0, 0, half), 2);
    const auto held_out = labels.narrow(0, half, half);
    const double score = above_chance(probe.accuracy(x.narrow(0, half, half), held_out),
                                      majority_share(held_out, 2));
    BOOST_TEST_MESSAGE(hook << ": normalised probe accuracy " << score);
    BOOST_TEST(std::abs(score - expected) < 0.1, hook << ": normalised accuracy " << score);
  }
}

BOOST_AUTO_TEST_CASE(ablating_the_probe_directions_takes_the_model_to_chance) {
  ParityByHand model;
  torch::manual_seed(2);
  auto tokens = torch::randint(0, 2, {400, 8}, torch::kLong);
  auto labels = parity_labels(tokens);
  auto state = record_hooks(model, tokens).at("state");
  auto probe = fit_probe(state.reshape({-1, 4}), labels.flatten(), 2);
  BOOST_TEST(probe.directions().size(1) == 1);  // two classes: one direction
  // The direction is coordinate 0 (up to sign).
  BOOST_TEST(std::abs(probe.directions()[0][0].item<double>()) > 0.99);
  auto final_accuracy = [&](const torch::Tensor& logits) {
    return logits.select(1, 7)
        .argmax(-1)
        .eq(labels.select(1, 7))
        .to(torch::kDouble)
        .mean()
        .item<double>();
  };
  BOOST_TEST(final_accuracy(model.forward(tokens)) == 1.0);
  const double ablated = final_accuracy(
      run_edited(model, tokens, "state", [&](const torch::Tensor& x) { return probe.ablate(x); }));
  BOOST_TEST_MESSAGE("final-state accuracy with the state's probe directions ablated: " << ablated);
  BOOST_TEST(std::abs(ablated - 0.5) < 0.1,
             "ablated accuracy " << ablated);  // chance: one class for all
}

BOOST_AUTO_TEST_CASE(patching_restores_the_clean_answer_where_the_readout_takes_it) {
  ParityByHand model;
  torch::manual_seed(3);
  const int64_t B = 64, T = 8, p = 3;
  auto clean = torch::randint(0, 2, {B, T}, torch::kLong);
  auto corrupted = clean.clone();
  corrupted.select(1, p).fill_(1).sub_(clean.select(1, p));  // flip the action at p
  auto clean_state = record_hooks(model, clean).at("state");
  auto answer = parity_labels(clean).select(1, T - 1), wrong = 1 - answer;
  auto gap = [&](const torch::Tensor& logits) {  // clean answer's logit minus the other's
    auto last = logits.select(1, T - 1);
    return last.gather(1, answer.unsqueeze(1)).squeeze(1) -
           last.gather(1, wrong.unsqueeze(1)).squeeze(1);
  };
  const auto clean_gap = gap(model.forward(clean)), corrupted_gap = gap(model.forward(corrupted));
  BOOST_TEST((clean_gap > 0).all().item<bool>());
  BOOST_TEST((corrupted_gap < 0).all().item<bool>());
  for (const auto& [position, expected] :
       std::map<int64_t, double>{{T - 1, 1.0}, {p, 0.0}, {0, 0.0}}) {
    auto patched =
        run_patched(model, corrupted, "state", position, clean_state.select(1, position));
    BOOST_TEST(recovered_share(clean_gap, corrupted_gap, gap(patched)) == expected,
               "position " << position);
  }
  BOOST_TEST(recovered_share(torch::ones({2}), torch::ones({2}), torch::zeros({2})) == 0.0);
}

// A state written in three coordinates with different noise: removing one probe's directions
// leaves it readable (a refitted probe still reads it); iterative nullspace projection removes
// it whole (held-out probe at chance), while a random subspace of the same dimension does not.
BOOST_AUTO_TEST_CASE(nullspace_projection_removes_a_redundant_state_and_a_random_one_does_not) {
  torch::manual_seed(5);
  const int64_t M = 4000, half = M / 2;
  const auto labels = torch::randint(0, 2, {M}, torch::kLong);
  const auto sign = (1 - 2 * labels).to(torch::kFloat);
  const auto noise = torch::randn({M, 10});
  auto x = noise.clone();
  x.select(1, 0) = sign + 0.05 * noise.select(1, 0);
  x.select(1, 1) = sign + 0.8 * noise.select(1, 1);
  x.select(1, 2) = 0.5 * sign + 0.8 * noise.select(1, 2);
  const auto fit_x = x.narrow(0, 0, half), test_x = x.narrow(0, half, half);
  const auto fit_y = labels.narrow(0, 0, half), test_y = labels.narrow(0, half, half);
  const double chance = majority_share(test_y, 2);
  auto refit = [&](const torch::Tensor& fx, const torch::Tensor& tx) {
    return fit_probe(fx, fit_y, 2).accuracy(tx, test_y);
  };
  BOOST_TEST(refit(fit_x, test_x) > 0.99);

  // One probe's direction removed: the other coordinates still give the state away.
  const LinearProbe once = fit_probe(fit_x, fit_y, 2);
  const double after_one = refit(once.ablate(fit_x), once.ablate(test_x));
  BOOST_TEST_MESSAGE("probe after one direction removed: " << after_one);
  BOOST_TEST(after_one > chance + 0.15);

  const RemovedSubspace removed =
      nullspace_projection(fit_x, fit_y, test_x, test_y, 2, ProbeSettings{}, 10, 0.02);
  const double after_all = refit(removed.remove(fit_x), removed.remove(test_x));
  BOOST_TEST_MESSAGE("nullspace: " << removed.dims() << " dimensions in " << removed.rounds
                                   << " rounds; probe after: " << after_all);
  BOOST_TEST(removed.dims() >= 2);
  BOOST_TEST(removed.dims() <= 5);
  BOOST_TEST(removed.probe_accuracy <= chance + 0.02);
  BOOST_TEST(after_all < chance + 0.05);  // a fresh probe, standardised again, finds nothing

  const RemovedSubspace control = random_subspace(removed, 7);
  BOOST_TEST(control.dims() == removed.dims());
  const auto q = control.basis;
  BOOST_TEST(torch::allclose(torch::matmul(q.t(), q), torch::eye(q.size(1)), 1e-5, 1e-5));
  const double after_random = refit(control.remove(fit_x), control.remove(test_x));
  BOOST_TEST_MESSAGE("random subspace: probe after " << after_random);
  BOOST_TEST(after_random > chance + 0.3);
}
