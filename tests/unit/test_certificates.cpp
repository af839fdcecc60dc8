// Expressivity certificates: weights set by hand, through the models' named parameters, so that
// a model computes a state-tracking task exactly; checked as a study checks a trained model
// (evaluate_generalization: the final state and every ACoT target) at the length L and at 4L.
// A model that has a certificate can represent the task at these lengths: where training does
// not find it, training (data, budget, optimisation) is what failed (docs/models.md). Each
// certificate has a control that breaks one part of the construction and must fail, so the
// check can fail.
#define BOOST_TEST_MODULE certificates
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>

#include "options_yaml.hpp"
#include "report/certificates.hpp"
#include "support.hpp"
#include "train/cell_setup.hpp"
#include "train/generalization.hpp"
#include "util/process.hpp"

using namespace induct;

namespace {

struct Process {
  Process() { configure_process(1); }
};
BOOST_TEST_GLOBAL_FIXTURE(Process);

constexpr int kL = 16;    // checked at L and 4L
constexpr double K = 40;  // saturates a sigmoid or tanh to float32's 1 (e^-20 = 2e-9)

CellData cell_of(const std::string& task_yaml, const std::string& format) {
  const auto options = yaml::load_string(task_yaml, "task.yaml");
  const auto name = options.require<std::string>("name");
  auto task = test::plugins().make_task(name, TaskContext{options});
  return make_cell_data(task, name, test::format("name: " + format), "uniform", kL, {}, 16'000'000);
}
CellData acot_cell(const std::string& task_yaml) { return cell_of(task_yaml, "acot"); }

std::shared_ptr<SequenceModel> build(const std::string& model_yaml, const CellData& cell) {
  auto model = make_model_checked(test::plugins(), yaml::load_string(model_yaml, "model.yaml"),
                                  {cell.vocab.size(), 4 * kL, cell.vocab.pad()}, 1, torch::kCPU);
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters()) p.zero_();  // every weight not set below is 0
  model->eval();
  return model;
}

// The parameter `name` (its shape must be known: a typo is an error listing the names).
torch::Tensor param(SequenceModel& model, const std::string& name) {
  auto params = model.named_parameters();
  if (auto* p = params.find(name)) return *p;
  std::string names;
  for (const auto& p : params) names += " " + p.key();
  BOOST_FAIL("no parameter " << name << "; the model has:" << names);
  return {};
}

// The final-state and token accuracies at L and 4L (256 sequences each).
std::vector<LengthMetrics> accuracy(SequenceModel& model, const CellData& cell) {
  torch::NoGradGuard no_grad;
  return evaluate_generalization(model, cell, {kL, 4 * kL}, 256, 1, 64, torch::kCPU);
}

void require_exact(SequenceModel& model, const CellData& cell, const std::string& what);

// Exact at L and 4L with ACoT (every state a target) and with Outcome (the same inputs, the
// final state the target); and the report's table of certificates (report/certificates.hpp)
// names this test case for the model and task.
void require_exact(SequenceModel& model, const CellData& cell, const std::string& what,
                   const std::string& model_yaml, const std::string& task_yaml) {
  const std::string test = boost::unit_test::framework::current_test_case().p_name;
  BOOST_TEST(certificate_for(YAML::Load(model_yaml), YAML::Load(task_yaml), "acot") == test,
             what << ": report/certificates.cpp does not name " << test);
  require_exact(model, cell_of(task_yaml, "outcome"), what + " (outcome)");
  require_exact(model, cell, what);
}

void require_exact(SequenceModel& model, const CellData& cell, const std::string& what) {
  for (const auto& m : accuracy(model, cell)) {
    BOOST_TEST_MESSAGE(what << " at length " << m.length << ": final accuracy " << m.final_accuracy
                            << ", token accuracy " << m.token_accuracy);
    BOOST_TEST(m.final_accuracy == 1.0,
               what << " at length " << m.length << ": final accuracy " << m.final_accuracy);
    BOOST_TEST(m.token_accuracy == 1.0,
               what << " at length " << m.length << ": token accuracy " << m.token_accuracy);
  }
}

// The control: at 4L the broken construction is far from exact.
void require_broken(SequenceModel& model, const CellData& cell, const std::string& what) {
  const auto metrics = accuracy(model, cell);
  BOOST_TEST_MESSAGE(what << " (broken on purpose) at 4L: final accuracy "
                          << metrics.back().final_accuracy);
  BOOST_TEST(
      metrics.back().final_accuracy < 0.8,
      what << " (broken on purpose) at 4L: final accuracy " << metrics.back().final_accuracy);
}

double silu(double x) { return x / (1 + std::exp(-x)); }

// The pre-activation whose SiLU is `target` (on SiLU's increasing branch, x > -1.278), by
// bisection in double.
double silu_inverse(double target) {
  double lo = -1.2784645, hi = 20;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (silu(mid) < target ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// Parity's ACoT vocabulary: actions 0, 1; states 2 (even), 3 (odd); PAD 4, SEP 5. The head
// rows that read a parity feature f (positive when odd, negative when even) from `dim`:
// logit 3 = W f, logit 2 = -W f, the rest 0.
void parity_head(torch::Tensor head_weight, int64_t dim, const std::vector<double>& f) {
  for (size_t i = 0; i < f.size(); ++i) {
    head_weight[3][static_cast<int64_t>(i) + dim] = 10 * f[i];
    head_weight[2][static_cast<int64_t>(i) + dim] = -10 * f[i];
  }
}

}  // namespace

// LSTM (hidden 4, one layer) on parity. Unit 0 holds the parity as c = +1 (odd) or -1 / 0
// (even): a 1 closes the input gate's complement (f = 0, i = 1) and writes g = -sign(h), with
// h = tanh(c) = +-0.76 (or 0 before the first 1, read as even); a 0 keeps c (f = 1, i = 0).
// The embedding of token 1 is e_0, of token 0 zero.
BOOST_AUTO_TEST_CASE(lstm_parity) {
  const std::string task = "{name: modular, m: 2}", yaml = "{name: lstm, hidden: 4}";
  const auto cell = acot_cell(task);
  auto model = build(yaml, cell);
  const int64_t H = 4;
  {
    torch::NoGradGuard no_grad;
    param(*model, "embed.weight")[1][0] = 1;
    auto w_ih = param(*model, "lstm.weight_ih_l0"), w_hh = param(*model, "lstm.weight_hh_l0"),
         b = param(*model, "lstm.bias_ih_l0");
    w_ih[0][0] = K, b[0] = -K / 2;            // i: open on a 1
    w_ih[H][0] = -K, b[H] = K / 2;            // f: closed on a 1
    w_hh[2 * H][0] = -K, b[2 * H] = 0.3 * K;  // g = tanh(K (0.3 - h)): -sign(h), +1 at h = 0
    b[3 * H] = K;                             // o = 1
    auto head = param(*model, "head.weight");
    parity_head(head, 0, {1.0});
    param(*model, "head.bias")[3] = -0.38 * 10;  // odd iff h > 0.38
    param(*model, "head.bias")[2] = 0.38 * 10;
  }
  require_exact(*model, cell, "lstm parity", yaml, task);
  {
    torch::NoGradGuard no_grad;
    param(*model, "lstm.weight_hh_l0")[2 * H][0] = 0;  // g = 1: "a 1 was seen", not parity
  }
  require_broken(*model, cell, "lstm parity");
}

// GRU (hidden 4) on parity: unit 0 holds +1 (odd) or -1 / 0 (even); a 1 opens the update
// (z = 0) to n = tanh(K (0.3 - h)) = -sign(h) (+1 at h = 0), a 0 keeps h (z = 1); r = 1.
BOOST_AUTO_TEST_CASE(gru_parity) {
  const std::string task = "{name: modular, m: 2}", yaml = "{name: gru, hidden: 4}";
  const auto cell = acot_cell(task);
  auto model = build(yaml, cell);
  const int64_t H = 4;
  {
    torch::NoGradGuard no_grad;
    param(*model, "embed.weight")[1][0] = 1;
    auto w_ih = param(*model, "gru.weight_ih_l0"), w_hh = param(*model, "gru.weight_hh_l0"),
         b_ih = param(*model, "gru.bias_ih_l0");
    b_ih[0] = K;                                 // r = 1
    w_ih[H][0] = -K, b_ih[H] = K / 2;            // z: 1 on a 0, 0 on a 1
    w_hh[2 * H][0] = -K, b_ih[2 * H] = 0.3 * K;  // n = tanh(K (0.3 - h))
    parity_head(param(*model, "head.weight"), 0, {1.0});
    param(*model, "head.bias")[3] = -0.5 * 10;  // odd iff h > 0.5
    param(*model, "head.bias")[2] = 0.5 * 10;
  }
  require_exact(*model, cell, "gru parity", yaml, task);
  {
    torch::NoGradGuard no_grad;
    param(*model, "gru.weight_hh_l0")[2 * H][0] = 0;
  }
  require_broken(*model, cell, "gru parity");
}

// DeltaNet with negative eigenvalues (one layer, d_model 4, one head) on parity. Residual
// dimensions: 0 the token (1 for a 1), 1 a constant 1, 2 the parity written by the mixer. q and
// k are e_0 (a constant through the convolution's current tap and SiLU, then L2-normalised),
// v = SiLU(sqrt 2) e_0, beta = 2 sigmoid(K (2 x_0 - x_1 / 2)): 2 on a 1, 0 on a 0. The state's
// row s along e_0 then goes s -> 2 v - s on a 1 and stays on a 0: 0 (even) or 2 v (odd), the
// transition's eigenvalue 1 - beta = -1 doing the flip. The output norm makes it 0 or 2 along
// e_0, written to dimension 2; the head compares it with the constant. The control: the same
// weights with eigenvalues in (0, 1) (beta = sigmoid: 1 on a 1) only ever set s = v.
BOOST_AUTO_TEST_CASE(deltanet_negative_eigenvalues_parity) {
  const std::string task = "{name: modular, m: 2}";
  const auto cell = acot_cell(task);
  // DeltaProduct too (householder 2): its second step's key is 0, a step without effect.
  for (int64_t n : {1, 2})
    for (bool negative : {true, false}) {
      const std::string yaml =
          "{name: deltanet, layers: 1, d_model: 4, heads: 1, d_ff: 4, d_conv: 4, householder: " +
          std::to_string(n) + ", negative_eigenvalues: " + (negative ? "true" : "false") + "}";
      auto model = build(yaml, cell);
      {
        torch::NoGradGuard no_grad;
        auto embed = param(*model, "embed.weight");
        embed[0][1] = 1;                   // token 0: (0, 1, 0, 0)
        embed[1][0] = 1, embed[1][1] = 1;  // token 1: (1, 1, 0, 0)
        param(*model, "blocks.0.norm.weight").fill_(1);
        auto qkv = param(*model, "blocks.0.qkv.weight");      // [4 (1 + 2 n), 4]: q, k, v rows
        qkv[0][1] = 1, qkv[4][1] = 1, qkv[4 + 4 * n][1] = 1;  // the first step's k and v
        param(*model, "blocks.0.conv.weight").select(2, 3).fill_(1);  // the current tap
        auto beta = param(*model, "blocks.0.beta.weight");            // [n, 4]
        beta[0][0] = 2 * K, beta[0][1] = -K / 2;
        param(*model, "blocks.0.out_norm.weight").fill_(1);
        param(*model, "blocks.0.out.weight")[2][0] = 1;
        param(*model, "blocks.0.mlp_norm.weight").fill_(1);
        param(*model, "norm.weight").fill_(1);
        parity_head(param(*model, "head.weight"), 1, {-1.0, 1.0});  // odd iff dim 2 > dim 1
      }
      const std::string what = "deltanet (householder " + std::to_string(n) + ") parity";
      if (negative)
        require_exact(*model, cell, what + " with negative eigenvalues", yaml, task);
      else
        require_broken(*model, cell, what + " with eigenvalues in (0, 1)");
    }
}

namespace {

// S_3 in lexicographic order (the permutation task's numbering): perms[a][i] = a(i).
std::vector<std::array<int, 3>> s3() {
  std::vector<std::array<int, 3>> perms;
  std::array<int, 3> p{0, 1, 2};
  do perms.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return perms;
}

// The permutation matrix P e_i = e_{p(i)} (so that the state a o s is P_a P_s).
torch::Tensor matrix(const std::array<int, 3>& p) {
  auto m = torch::zeros({3, 3}, torch::kDouble);
  for (int i = 0; i < 3; ++i) m[p[i]][i] = 1;
  return m;
}

}  // namespace

namespace {

// The construction above for a group of permutations of three elements in the task's
// numbering (perms[a]: action a; the identity first, the initial state).
void check_deltaproduct(const std::string& task, const std::vector<std::array<int, 3>>& perms) {
  const auto cell = acot_cell(task);
  const int64_t D = 10, n = 2, A = static_cast<int64_t>(perms.size());
  // Each action's two transpositions (pairs; {-1, -1}: none), found by search: R2 R1 = P_a.
  const int pairs[4][2] = {{-1, -1}, {0, 1}, {1, 2}, {0, 2}};
  const auto reflection = [&](int t) {
    auto r = torch::eye(3, torch::kDouble);
    if (pairs[t][0] < 0) return r;
    auto k = torch::zeros({3}, torch::kDouble);
    k[pairs[t][0]] = 1, k[pairs[t][1]] = -1;
    return r - k.outer(k);  // I - 2 u u^T with u = k / sqrt 2
  };
  std::vector<std::array<int, 2>> steps(A);
  for (int64_t a = 0; a < A; ++a) {
    bool found = false;
    for (int t1 = 0; t1 < 4 && !found; ++t1)
      for (int t2 = 0; t2 < 4 && !found; ++t2)
        if (torch::equal(reflection(t2).matmul(reflection(t1)), matrix(perms[a]))) {
          steps[a] = {t1, t2};
          found = true;
        }
    BOOST_REQUIRE(found);
  }
  const double scale = std::sqrt(D / 2.0);  // RMSNorm of e_a + e_6 over 10 dimensions
  const double k_size = silu(-1.0);         // k's entries: -0.2689 and +0.2689 (normalised later)
  const double k_pos = silu_inverse(-k_size), k_neg = -1.0;
  const double c = 0.3, v_size = c / std::sqrt(2.0);  // v = -c k, k unit
  const double v_pos = silu_inverse(v_size), v_neg = silu_inverse(-v_size);
  const std::vector<double> q_pre = {1.0, 2.0, 3.0};
  auto q = torch::tensor({silu(1.0), silu(2.0), silu(3.0)}, torch::kDouble);
  q = q / q.norm();
  // The head: for each state s the unit direction of (P_s^T - I) q; the identity's logit a
  // constant between the largest cosine of two others and 1 (times the output's norm, sqrt 10).
  std::vector<torch::Tensor> directions(A);
  double largest_cosine = -1;
  for (int64_t s = 1; s < A; ++s) {
    auto d = matrix(perms[s]).t().matmul(q) - q;
    directions[s] = d / d.norm();
  }
  for (int64_t s = 1; s < A; ++s)
    for (int64_t r = 1; r < A; ++r)
      if (r != s)
        largest_cosine = std::max(largest_cosine, directions[s].dot(directions[r]).item<double>());
  BOOST_REQUIRE(largest_cosine < 0.99);
  const auto set = [&](SequenceModel& model, bool swapped) {
    torch::NoGradGuard no_grad;
    auto embed = param(model, "embed.weight");
    for (int64_t a = 0; a < A; ++a) embed[a][a] = 1, embed[a][6] = 1;
    param(model, "blocks.0.norm.weight").fill_(1);
    auto qkv = param(model, "blocks.0.qkv.weight");  // [D (1 + 2 n), D]: q, then k and v per step
    for (int64_t i = 0; i < 3; ++i) qkv[i][6] = q_pre[i] / scale;
    for (int64_t a = 0; a < A; ++a)
      for (int64_t j = 0; j < n; ++j) {
        const int t = steps[a][swapped ? 1 - j : j];
        if (pairs[t][0] < 0) continue;
        const int64_t k_row = D + j * D, v_row = D + n * D + j * D;
        qkv[k_row + pairs[t][0]][a] = k_pos / scale;
        qkv[k_row + pairs[t][1]][a] = k_neg / scale;
        qkv[v_row + pairs[t][0]][a] = v_neg / scale;  // v = -c k
        qkv[v_row + pairs[t][1]][a] = v_pos / scale;
      }
    param(model, "blocks.0.conv.weight").select(2, 3).fill_(1);
    param(model, "blocks.0.beta.weight").select(1, 6).fill_(K);  // beta = 2 at every step
    param(model, "blocks.0.out_norm.weight").fill_(1);
    auto out = param(model, "blocks.0.out.weight");
    for (int64_t i = 0; i < 3; ++i) out[7 + i][i] = 1;
    param(model, "blocks.0.mlp_norm.weight").fill_(1);
    param(model, "norm.weight").fill_(1);
    auto head = param(model, "head.weight");
    const double norm = std::sqrt(static_cast<double>(D)), W = 10;
    for (int64_t s = 1; s < A; ++s)
      for (int64_t i = 0; i < 3; ++i) head[A + s][7 + i] = W * directions[s][i].item<double>();
    head[A][6] = W * norm * (1 + largest_cosine) / 2;
  };
  const std::string yaml =
      "{name: deltanet, layers: 1, d_model: 10, heads: 1, d_ff: 4, d_conv: 4, householder: 2, "
      "negative_eigenvalues: true}";
  auto model = build(yaml, cell);
  set(*model, false);
  require_exact(*model, cell, "deltaproduct (householder 2, negative eigenvalues) on " + task, yaml,
                task);
  auto broken = build(yaml, cell);
  set(*broken, true);
  require_broken(*broken, cell, "deltaproduct with each token's steps swapped on " + task);
}

}  // namespace

// DeltaProduct (householder 2, negative eigenvalues; one layer, d_model 10, one head) on S_3 and
// on Z_3 (the cyclic shifts of three elements, each a product of two transpositions). Every
// permutation of three elements is a product of at most two transpositions, and the
// transposition (p r) is the reflection I - 2 k k^T with k = (e_p - e_r) / sqrt 2: a Householder
// step with beta = 2. The token's two steps carry its transpositions (k = 0 where it needs
// fewer: no effect), and v = -c k makes the state S = c (P - I) for the permutation P of the
// word so far (S <- (I - 2 k k^T) S - 2 c k k^T), from S = 0. The output (P^T - I) q, q with
// distinct entries, is a different direction for every permutation (0 for the identity), written
// to residual dimensions 7-9 after the output norm; the head picks the nearest. Residual
// dimensions: 0-5 the action, 6 a constant 1. k and v get their signs through SiLU's negative
// branch (pre-activations solved for |SiLU| = 0.2689 and 0.3 / sqrt 2). The control: the two
// steps of every token swapped (P_a^T where P_a is needed: wrong for the 3-cycles).
BOOST_AUTO_TEST_CASE(deltaproduct_negative_eigenvalues_s3_and_z3) {
  std::vector<std::array<int, 3>> shifts;  // Z_3: action a adds a, the shift i -> i + a mod 3
  for (int a = 0; a < 3; ++a) shifts.push_back({a, (1 + a) % 3, (2 + a) % 3});
  const std::vector<std::pair<std::string, std::vector<std::array<int, 3>>>> groups = {
      {"{name: permutation, m: 3}", s3()}, {"{name: modular, m: 3}", shifts}};
  for (const auto& [task, perms] : groups) check_deltaproduct(task, perms);
}

// dense_ssm, full form, on S_3 and Z_m (m = 2, 3, 5): A(token a) = the action's matrix (the
// permutation matrix P_a, or the rotation by 2 pi a / m), h_0 a vector whose images are all
// different ((1, 2, 3) normalised, or e_0), the embedding one-hot; the head's row for state s is
// the image of h_0 under the state's matrix (all images have the same norm: the largest product
// is the true state's). The control: action 1's matrix the identity (swapping two actions would
// not do: on Z_2 at an even length the parity of the 0s is that of the 1s).
BOOST_AUTO_TEST_CASE(dense_ssm_full_s3_and_z_m) {
  const auto perms = s3();
  struct Group {
    std::string task;
    int64_t actions, hidden;
    std::function<torch::Tensor(int64_t)> element;  // [hidden, hidden]
    torch::Tensor h0;
  };
  const double pi = std::acos(-1.0);
  std::vector<Group> groups = {{"{name: permutation, m: 3}", 6, 3,
                                [&](int64_t a) { return matrix(perms[a]); },
                                torch::tensor({1.0, 2.0, 3.0}, torch::kDouble) / std::sqrt(14.0)}};
  for (int64_t m : {2, 3, 5})
    groups.push_back({"{name: modular, m: " + std::to_string(m) + "}", m, 2,
                      [m, pi](int64_t a) {
                        const double angle = 2 * pi * static_cast<double>(a) / m;
                        return torch::tensor({std::cos(angle), -std::sin(angle), std::sin(angle),
                                              std::cos(angle)},
                                             torch::kDouble)
                            .view({2, 2});
                      },
                      torch::tensor({1.0, 0.0}, torch::kDouble)});
  for (const auto& g : groups) {
    const auto cell = acot_cell(g.task);
    const int64_t V = cell.vocab.size(), H = g.hidden;
    const std::string yaml =
        "{name: dense_ssm, hidden: " + std::to_string(H) + ", embed: " + std::to_string(V) + "}";
    for (bool broken : {false, true}) {
      auto model = build(yaml, cell);
      {
        torch::NoGradGuard no_grad;
        param(*model, "embed.weight").copy_(torch::eye(V));
        auto W = param(*model, "W");  // [H, H, E]
        for (int64_t a = 0; a < g.actions; ++a) {
          W.select(2, a).copy_(g.element(broken && a == 1 ? 0 : a));
        }
        param(*model, "h0").copy_(g.h0);
        auto head = param(*model, "head.weight");  // [V, H]
        for (int64_t s = 0; s < g.actions; ++s)
          head[g.actions + s].copy_(10 * g.element(s).matmul(g.h0));
        param(*model, "head.bias").fill_(-100);
        param(*model, "head.bias").narrow(0, g.actions, g.actions).fill_(0);
      }
      if (broken)
        require_broken(*model, cell, "dense_ssm with action 1 doing nothing on " + g.task);
      else
        require_exact(*model, cell, "dense_ssm (full) on " + g.task, yaml, g.task);
    }
  }
}

// xLSTM's sLSTM (one block, d_model 4, one head) on parity. With the forget gate closed
// (f~ = -K), i~ = 0 and o~ = K, the cell is h_t = tanh(z~_t): a tanh RNN through the recurrent
// weights. Units 0 and 1 compute u1 = tanh(K (x + p - 0.5)) (OR) and u2 = tanh(K (x + p - 1.5))
// (AND) of the input x and the previous parity p = (h_0 - h_1) / 2, so that (u1 - u2) / 2 is
// their XOR, the new parity; units 2 and 3 are the constants +1 and -1 (the head has no bias and
// the norms no offset: they break the symmetry between the two even patterns). The head reads
// (1, -1, -1/2, 1/2) of the final LayerNorm. Embeddings are small (0.1) so that the residual
// stream is the cell's normalised output; x is read after the block's LayerNorm.
BOOST_AUTO_TEST_CASE(slstm_parity) {
  const std::string task = "{name: modular, m: 2}",
                    yaml = "{name: xlstm, blocks: s, d_model: 4, heads: 1, d_ff: 4, d_conv: 4}";
  const auto cell = acot_cell(task);
  for (bool broken : {false, true}) {
    auto model = build(yaml, cell);
    {
      torch::NoGradGuard no_grad;
      auto embed = param(*model, "embed.weight");
      embed[0][2] = 0.1, embed[0][3] = -0.1;  // token 0
      embed[1][0] = 0.1, embed[1][1] = -0.1;  // token 1
      param(*model, "blocks.0.norm").fill_(1);
      // x after the LayerNorm: +-sqrt(2) (eps 1e-5 against a variance of 0.005) on dims 0, 1
      // for a 1; x = (x_0 - x_1) / (2 sqrt 2).
      const double x_scale = 1 / (2 * 0.1 / std::sqrt(0.005 + 1e-5));
      auto gates = param(*model, "blocks.0.gates");  // [4, H, D, D]: i, f, z, o
      auto recurrent = param(*model, "blocks.0.recurrent");
      auto bias = param(*model, "blocks.0.bias");  // [4, H, D]
      for (int64_t u = 0; u < 2; ++u) {
        gates[2][0][u][0] = K * x_scale, gates[2][0][u][1] = -K * x_scale;
        recurrent[2][0][u][0] = K / 2, recurrent[2][0][u][1] = -K / 2;
      }
      if (broken) recurrent[2][0][1].zero_();  // the AND forgets the previous parity
      bias[2][0][0] = -0.5 * K, bias[2][0][1] = -1.5 * K;
      bias[2][0][2] = K, bias[2][0][3] = -K;
      bias[1].fill_(-K);  // f~
      bias[3].fill_(K);   // o~
      param(*model, "blocks.0.out_norm").fill_(1);
      param(*model, "blocks.0.ffn_norm").fill_(1);
      param(*model, "norm").fill_(1);
      parity_head(param(*model, "head.weight"), 0, {1.0, -1.0, -0.5, 0.5});
    }
    if (broken)
      require_broken(*model, cell, "slstm parity without the AND's recurrence");
    else
      require_exact(*model, cell, "slstm parity", yaml, task);
  }
}

// The report's table claims no more than the tests show: no certificate without the options a
// construction needs, for another task or m, or for CoT (whose inputs include states and SEP).
BOOST_AUTO_TEST_CASE(the_report_claims_certificates_only_where_they_hold) {
  const auto none = [](const std::string& model, const std::string& task,
                       const std::string& format) {
    return certificate_for(YAML::Load(model), YAML::Load(task), format).empty();
  };
  BOOST_TEST(none("{name: deltanet}", "{name: modular, m: 2}", "outcome"));
  BOOST_TEST(none("{name: deltanet, negative_eigenvalues: true, gate: true}",
                  "{name: modular, m: 2}", "outcome"));
  BOOST_TEST(
      none("{name: deltanet, negative_eigenvalues: true}", "{name: permutation, m: 3}", "outcome"));
  BOOST_TEST(none("{name: lstm, layers: 2}", "{name: modular, m: 2}", "outcome"));
  BOOST_TEST(none("{name: lstm}", "{name: modular, m: 3}", "outcome"));
  BOOST_TEST(none("{name: lstm}", "{name: modular, m: 2}", "cot"));
  BOOST_TEST(none("{name: dense_ssm, block: 1}", "{name: permutation, m: 3}", "acot"));
  BOOST_TEST(none("{name: xlstm, blocks: mm}", "{name: modular, m: 2}", "acot"));
  BOOST_TEST(none("{name: mamba}", "{name: modular, m: 2}", "acot"));
  BOOST_TEST(!none("{name: xlstm}", "{name: modular, m: 2}", "outcome"));
  BOOST_TEST(!none("{name: deltanet, householder: 2, negative_eigenvalues: true}",
                   "{name: permutation, m: 3}", "outcome"));
}
