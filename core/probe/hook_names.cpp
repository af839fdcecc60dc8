#include "probe/hook_names.hpp"

#include <torch/torch.h>

#include <algorithm>

#include "options_yaml.hpp"
#include "probe/probe.hpp"
#include "train/cell_setup.hpp"

namespace induct {

std::vector<std::string> model_hook_names(const PluginRegistry& registry,
                                          const std::string& model) {
  const Options section =
      yaml::from_node(YAML::Load("{name: " + model + "}"), "<default " + model + ">");
  auto built = make_model_checked(registry, section, {4, 4, 3}, 0, torch::kCPU);
  std::vector<std::string> names;
  forward_with_hooks(*built, torch::zeros({1, 4}, torch::kLong),
                     [&](const std::string& name, const torch::Tensor& x) {
                       // A recurrent state's hook is called once per step: named once.
                       if (std::find(names.begin(), names.end(), name) == names.end())
                         names.push_back(name);
                       return x;
                     });
  return names;
}

std::string summarize_hook_names(const std::vector<std::string>& names) {
  // "prefix.k" with k a number: consecutive k under one prefix become "prefix.a-b".
  auto split = [](const std::string& name, std::string& prefix, long& index) {
    const auto dot = name.rfind('.');
    if (dot == std::string::npos || dot + 1 == name.size() ||
        name.find_first_not_of("0123456789", dot + 1) != std::string::npos)
      return false;
    prefix = name.substr(0, dot);
    index = std::stol(name.substr(dot + 1));
    return true;
  };
  std::string out;
  for (size_t i = 0; i < names.size();) {
    std::string prefix, next_prefix;
    long first = 0, last = 0, next = 0;
    size_t j = i + 1;
    if (split(names[i], prefix, first)) {
      last = first;
      while (j < names.size() && split(names[j], next_prefix, next) && next_prefix == prefix &&
             next == last + 1) {
        last = next;
        ++j;
      }
    }
    if (!out.empty()) out += ", ";
    out += j - i > 1 ? prefix + "." + std::to_string(first) + "-" + std::to_string(last) : names[i];
    i = j;
  }
  return out;
}

}  // namespace induct
