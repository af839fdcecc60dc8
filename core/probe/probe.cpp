#include "probe/probe.hpp"

#include <torch/torch.h>

namespace induct {

torch::Tensor LinearProbe::predict(const torch::Tensor& x) const {
  return torch::nn::functional::linear((x - mean) / scale, weight, bias).argmax(-1);
}

double LinearProbe::accuracy(const torch::Tensor& x, const torch::Tensor& labels) const {
  if (labels.numel() == 0) return 0;
  return predict(x).eq(labels).to(torch::kDouble).mean().item<double>();
}

torch::Tensor LinearProbe::directions() const {
  // Logits W (x - mean) / scale: in x's coordinates the class weights are W / scale, and
  // softmax depends only on their differences.
  auto w = weight / scale;
  auto centred = (w - w.mean(0, true)).t().to(torch::kDouble);  // [D, S]
  auto [u, s, vh] = at::linalg_svd(centred, /*full_matrices=*/false);
  const double largest = s.numel() ? s.max().item<double>() : 0;
  const int64_t rank = largest > 0 ? s.gt(1e-6 * largest).sum().item<int64_t>() : 0;
  return u.narrow(1, 0, rank).to(weight.scalar_type());
}

torch::Tensor LinearProbe::ablate(const torch::Tensor& x) const {
  auto q = directions().to(x.dtype());
  return x - torch::matmul(torch::matmul(x - mean.to(x.dtype()), q), q.t());
}

LinearProbe fit_probe(const torch::Tensor& x_in, const torch::Tensor& labels, int64_t classes,
                      const ProbeSettings& settings) {
  TORCH_CHECK(x_in.dim() == 2 && labels.dim() == 1 && labels.size(0) == x_in.size(0),
              "fit_probe: x must be [M, D] and labels [M]");
  auto x = x_in.to(torch::kFloat);
  LinearProbe probe;
  probe.mean = settings.standardize ? x.mean(0) : torch::zeros({x.size(1)});
  probe.scale = settings.standardize ? x.std(0, /*unbiased=*/false).clamp_min(1e-6)
                                     : torch::ones({x.size(1)});
  auto features = (x - probe.mean) / probe.scale;
  const int64_t D = x.size(1);
  auto weight = torch::zeros({classes, D}, torch::requires_grad());
  auto bias = torch::zeros({classes}, torch::requires_grad());
  torch::optim::LBFGS optimizer(
      std::vector<torch::Tensor>{weight, bias},
      torch::optim::LBFGSOptions(1).max_iter(settings.iterations).line_search_fn("strong_wolfe"));
  auto closure = [&] {
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(
                    torch::nn::functional::linear(features, weight, bias), labels) +
                settings.l2 * weight.pow(2).sum();
    loss.backward();
    return loss;
  };
  optimizer.step(closure);
  probe.weight = weight.detach();
  probe.bias = bias.detach();
  return probe;
}

torch::Tensor RemovedSubspace::remove(const torch::Tensor& x) const {
  if (dims() == 0) return x;
  const auto m = mean.to(x.device(), x.scalar_type()), sc = scale.to(x.device(), x.scalar_type());
  const auto q = basis.to(x.device(), x.scalar_type());
  const auto z = (x - m) / sc;
  return x - torch::matmul(torch::matmul(z, q), q.t()) * sc;
}

RemovedSubspace nullspace_projection(const torch::Tensor& fit_x, const torch::Tensor& fit_labels,
                                     const torch::Tensor& test_x, const torch::Tensor& test_labels,
                                     int64_t classes, const ProbeSettings& settings,
                                     int64_t max_rounds, double margin) {
  TORCH_CHECK(fit_x.dim() == 2 && test_x.dim() == 2 && fit_x.size(1) == test_x.size(1),
              "nullspace_projection: activations must be [M, D] with the same D");
  const auto fx = fit_x.to(torch::kFloat), tx = test_x.to(torch::kFloat);
  const int64_t D = fx.size(1);
  RemovedSubspace removed;
  removed.mean = fx.mean(0);
  removed.scale = fx.std(0, /*unbiased=*/false).clamp_min(1e-6);
  removed.basis = torch::zeros({D, 0});
  // Probes on the standardised coordinates as they are: a removed direction stays removed
  // (standardising again would blow up its rounding residue).
  ProbeSettings plain = settings;
  plain.standardize = false;
  const auto fz = (fx - removed.mean) / removed.scale, tz = (tx - removed.mean) / removed.scale;
  const double chance = majority_share(test_labels, classes);
  auto project = [&](const torch::Tensor& z) {
    return z - torch::matmul(torch::matmul(z, removed.basis), removed.basis.t());
  };
  for (int64_t round = 0; round < max_rounds; ++round) {
    const LinearProbe probe = fit_probe(project(fz), fit_labels, classes, plain);
    ++removed.rounds;
    removed.probe_accuracy = probe.accuracy(project(tz), test_labels);
    if (removed.probe_accuracy <= chance + margin) break;
    // Its directions, less what is already removed, appended to the basis.
    auto directions = probe.directions();
    directions =
        directions - torch::matmul(removed.basis, torch::matmul(removed.basis.t(), directions));
    auto [q, r] = at::linalg_qr(directions.to(torch::kDouble));
    const auto kept = r.diagonal().abs().gt(1e-6);
    if (kept.sum().item<int64_t>() == 0) break;  // nothing new: the probe reads rounding
    q = q.index({torch::indexing::Slice(), kept}).to(torch::kFloat);
    removed.basis = torch::cat({removed.basis, q}, 1);
    if (removed.basis.size(1) >= D) break;
  }
  return removed;
}

RemovedSubspace random_subspace(const RemovedSubspace& removed, uint64_t seed) {
  RemovedSubspace control = removed;
  const int64_t D = removed.mean.size(0), k = removed.dims();
  if (k == 0) return control;
  torch::Generator generator = at::detail::createCPUGenerator(seed);
  const auto gaussian = at::normal(0.0, 1.0, {D, k}, generator, torch::kDouble);
  control.basis = std::get<0>(at::linalg_qr(gaussian)).to(torch::kFloat);
  control.rounds = 0;
  return control;
}

double majority_share(const torch::Tensor& labels, int64_t classes) {
  if (labels.numel() == 0) return 0;
  return torch::bincount(labels.flatten(), {}, classes).max().item<double>() / labels.numel();
}

torch::Tensor forward_with_hooks(SequenceModel& model, const torch::Tensor& tokens,
                                 Hooks::Handler handler) {
  struct Clear {
    Hooks& hooks;
    ~Clear() { hooks.clear(); }
  } clear{model.hooks};
  model.hooks.set_handler(std::move(handler));
  torch::NoGradGuard no_grad;
  model.eval();
  return model.forward(tokens);
}

std::map<std::string, torch::Tensor> record_hooks(SequenceModel& model, const torch::Tensor& tokens,
                                                  std::vector<std::string>* order) {
  std::map<std::string, torch::Tensor> seen;
  forward_with_hooks(model, tokens, [&](const std::string& name, const torch::Tensor& x) {
    if (order && !seen.count(name)) order->push_back(name);
    seen[name] = x.detach().clone();
    return x;
  });
  return seen;
}

torch::Tensor run_edited(SequenceModel& model, const torch::Tensor& tokens, const std::string& hook,
                         const std::function<torch::Tensor(const torch::Tensor&)>& edit) {
  return forward_with_hooks(model, tokens, [&](const std::string& name, const torch::Tensor& x) {
    return name == hook ? edit(x) : x;
  });
}

torch::Tensor run_patched(SequenceModel& model, const torch::Tensor& tokens,
                          const std::string& hook, int64_t position, const torch::Tensor& value) {
  return run_edited(model, tokens, hook, [&](const torch::Tensor& x) {
    auto patched = x.clone();
    patched.select(1, position).copy_(value);
    return patched;
  });
}

double recovered_share(const torch::Tensor& clean, const torch::Tensor& corrupted,
                       const torch::Tensor& patched) {
  const double gap = (clean - corrupted).sum().item<double>();
  return gap == 0 ? 0 : (patched - corrupted).sum().item<double>() / gap;
}

}  // namespace induct
