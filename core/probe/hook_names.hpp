// The hook points (induct/hooks.hpp) of a model plugin, for `induct plugins` and the studies
// that read layers. No torch headers: the CLI includes this.
#pragma once

#include <string>
#include <vector>

#include "plugin/registry.hpp"

namespace induct {

// The names a model passes its layer outputs or carried states through, each once, in the order
// of one forward pass of the model at its default options (vocabulary 4, 4 tokens). Empty for a
// model without hooks; PluginError or ConfigError when the model cannot be built at its defaults.
std::vector<std::string> model_hook_names(const PluginRegistry& registry, const std::string& model);

// The part of an inner hook point's name ("conv" of "block.2.conv": a point inside the layer
// whose hook point is "block.2"); "" for a layer's own point ("embed", "block.2", "norm").
std::string inner_hook_part(const std::string& name);

// The names with runs of numbered ones shortened, the layers' points first, then the inner
// ones: "embed, block.0-5, norm, block.0-5.conv".
std::string summarize_hook_names(const std::vector<std::string>& names);

}  // namespace induct
