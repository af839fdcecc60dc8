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
  probe.mean = x.mean(0);
  probe.scale = x.std(0, /*unbiased=*/false).clamp_min(1e-6);
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
