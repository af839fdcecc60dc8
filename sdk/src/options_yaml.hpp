// The YAML side of induct::Options, for the host only (not installed with the SDK).
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "induct/options.hpp"

namespace induct::yaml {

// A value placed at a dotted path after loading (a grid point); errors about the path name
// `description` instead of a line of the file.
struct Assignment {
  std::string path;
  YAML::Node value;
  std::string description;
};

// Loads a YAML document; syntax errors, duplicate keys, a non-mapping root, a second document,
// a file over 1 MiB and a document that expands past 100,000 nodes (aliases) are ConfigErrors
// naming `name` with line and column. `overrides` are "dotted.key=value" strings (from --set);
// each value is parsed as YAML, so lists work: "training.seeds=[1,2]".
Options load_file(const std::string& path, const std::vector<std::string>& overrides = {});
Options load_string(const std::string& text, const std::string& name,
                    const std::vector<std::string>& overrides = {});

// A new document: the root of `base` (as loaded, overrides applied) without the top-level keys
// `without`, with `assignments` applied. It shares every unchanged node with `base` (and keeps
// their lines), so deriving one document per grid point costs the path, not the file.
Options derive(const Options& base, const std::vector<Assignment>& assignments,
               const std::vector<std::string>& without = {});

// The shortest decimal text that reads back as exactly `value` ("0.1", not
// "0.10000000000000001"), with YAML's spellings of the non-finite values (.nan, .inf, -.inf).
std::string exact(double value);

// A node on one line, in YAML's flow style ("{name: lstm, hidden: 64}"): labels and keys.
std::string flow(const YAML::Node& node);

// "file:line:column" of a node (the file alone for a node made in memory).
std::string location(const std::string& file, const YAML::Node& node);

// An Options over an existing node (a mapping, or null for an empty section).
Options from_node(const YAML::Node& node, const std::string& name);

// The node of the section itself, as written (for handing a section to a worker process).
YAML::Node raw(const Options& options);

// The "--set path=value" that placed `full_path` (a dotted path from the document root) or a
// section holding it; "" when the file did.
std::string override_for(const Options& options, const std::string& full_path);

// Every value that was read from `options` and the sections read from it, defaults
// included, in the order they were first read: the resolved configuration.
YAML::Node resolved(const Options& options);

}  // namespace induct::yaml
