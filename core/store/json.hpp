// YAML as JSON: the store's JSON columns (SQLite's JSON1 reads them) and `induct export`'s
// JSON lines. Torch-free.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace induct {

// A YAML node as compact JSON: maps as objects (keys in their order), sequences as arrays,
// plain scalars that read as JSON numbers as numbers, true/false as booleans, null/~ as null,
// every other scalar (and every quoted one) as a string.
std::string to_json(const YAML::Node& node);
// A string as a JSON string literal (quoted, escaped).
std::string json_string(const std::string& text);
// A number as JSON: the shortest text that reads back as the same double; null when not finite.
std::string json_number(double value);

}  // namespace induct
