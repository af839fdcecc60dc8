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

namespace {

bool is_number(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// "prefix.k" or "prefix.k.part" with k a number.
bool split_hook_name(const std::string& name, std::string& prefix, long& index, std::string& part) {
  part = inner_hook_part(name);
  const std::string rest = part.empty() ? name : name.substr(0, name.size() - part.size() - 1);
  const auto dot = rest.rfind('.');
  if (dot == std::string::npos || !is_number(rest.substr(dot + 1))) return false;
  prefix = rest.substr(0, dot);
  index = std::stol(rest.substr(dot + 1));
  return true;
}

}  // namespace

std::string inner_hook_part(const std::string& name) {
  // "<prefix>.<k>.<part>": k a number, part not one.
  const auto last = name.rfind('.');
  if (last == std::string::npos || last == 0) return "";
  const auto before = name.rfind('.', last - 1);
  if (before == std::string::npos) return "";
  const std::string part = name.substr(last + 1);
  if (!is_number(name.substr(before + 1, last - before - 1)) || part.empty() || is_number(part))
    return "";
  return part;
}

std::string summarize_hook_names(const std::vector<std::string>& names) {
  // The layers' points first, then the inner ones; consecutive k under one prefix (and part)
  // become "prefix.a-b" ("prefix.a-b.part").
  std::vector<std::string> ordered;
  for (const bool inner : {false, true})
    for (const auto& name : names)
      if (inner_hook_part(name).empty() != inner) ordered.push_back(name);
  std::string out;
  for (size_t i = 0; i < ordered.size();) {
    std::string prefix, next_prefix, part, next_part;
    long first = 0, last = 0, next = 0;
    size_t j = i + 1;
    if (split_hook_name(ordered[i], prefix, first, part)) {
      last = first;
      while (j < ordered.size() && split_hook_name(ordered[j], next_prefix, next, next_part) &&
             next_prefix == prefix && next_part == part && next == last + 1) {
        last = next;
        ++j;
      }
    }
    if (!out.empty()) out += ", ";
    out += j - i > 1 ? prefix + "." + std::to_string(first) + "-" + std::to_string(last) +
                           (part.empty() ? "" : "." + part)
                     : ordered[i];
    i = j;
  }
  return out;
}

}  // namespace induct
