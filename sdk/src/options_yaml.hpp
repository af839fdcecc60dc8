// The YAML side of induct::Options, for the host only (not installed with the SDK).
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "induct/options.hpp"

namespace induct::yaml {

// Loads a YAML document; syntax errors, duplicate keys and a non-mapping root are
// ConfigErrors naming `name` with line and column. `overrides` are "dotted.key=value"
// strings (from --set); each value is parsed as YAML, so lists work: "training.seeds=[1,2]".
Options load_file(const std::string& path, const std::vector<std::string>& overrides = {});
Options load_string(const std::string& text, const std::string& name,
                    const std::vector<std::string>& overrides = {});

// An Options over an existing node (a mapping, or null for an empty section).
Options from_node(const YAML::Node& node, const std::string& name);

// The node of the section itself, as written (for handing a section to a worker process).
YAML::Node raw(const Options& options);

// Every value that was read from `options` and the sections read from it, defaults
// included, in the order they were first read: the resolved configuration.
YAML::Node resolved(const Options& options);

}  // namespace induct::yaml
