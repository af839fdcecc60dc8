#include "study/sample.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include "data/dataset.hpp"
#include "format/format.hpp"
#include "store/json.hpp"
#include "train/cell_setup.hpp"
#include "util/table.hpp"

namespace induct {

namespace {

// A token by name: an action's or a state's name as the task gives it (states as "=NAME"),
// SEP, PAD, or the format's own.
std::string token_name(const CellData& data, int64_t token) {
  const Vocabulary& v = data.vocab;
  if (token < v.actions) return data.task->action_name(token);
  if (token < v.actions + v.states) return "=" + data.task->state_name(token - v.actions);
  if (token == v.pad()) return "PAD";
  if (token == v.sep()) return "SEP";
  return data.format->extra_token_name(token - v.actions - v.states - 2);
}

}  // namespace

std::string sample_cell(const StudyConfig& config, const PluginRegistry& registry,
                        const PreparedCell& cell, const SampleOptions& options) {
  const CellData data = make_cell_data(registry, cell.cell);
  const bool train = options.split == SampleOptions::Split::kTrain;
  const uint64_t n = train ? training_size(config, cell) : 0;
  const Split split = make_split(data.data, n, options.seed);
  const ExampleSet set(train ? split.train : split.validation, *data.transitions, *data.format,
                       data.vocab);
  const uint64_t shown = std::min<uint64_t>(options.count, set.size());
  std::ostringstream out;
  const std::string what = (train ? "training set of N = " + std::to_string(n)
                                  : "validation set of " + std::to_string(set.size())) +
                           ", seed " + std::to_string(options.seed);
  if (!options.jsonl)
    out << cell.label << ": " << what << "; the first " << shown << " of " << set.size()
        << " sequence(s), tokens by name (=s: a state), targets where scored\n";
  for (uint64_t i = 0; i < shown; ++i) {
    const int length = set.length(i);
    const std::vector<int32_t> actions = set.sequences().sequence(i);
    std::vector<int32_t> states(actions.size());
    data.transitions->prefix_states(actions.data(), length, states.data());
    const int64_t width = set.width(i);
    std::vector<int64_t> tokens(static_cast<size_t>(width)), targets(tokens.size());
    set.encode(i, tokens.data(), targets.data());
    const int64_t final_position = set.final_position(i);
    if (options.jsonl) {
      std::string a, s, t, g;
      for (int k = 0; k < length; ++k) {
        a += (k ? ", " : "") + json_string(data.task->action_name(actions[k]));
        s += (k ? ", " : "") + json_string(data.task->state_name(states[k]));
      }
      for (int64_t p = 0; p < width; ++p) {
        t += (p ? ", " : "") + json_string(token_name(data, tokens[p]));
        g +=
            (p ? ", " : "") + (targets[p] == kNoTarget ? std::string("null")
                                                       : json_string(token_name(data, targets[p])));
      }
      out << "{\"cell\": " << json_string(cell.label)
          << ", \"split\": " << json_string(train ? "train" : "validation") << ", \"index\": " << i
          << ", \"length\": " << length << ", \"actions\": [" << a << "], \"states\": [" << s
          << "], \"tokens\": [" << t << "], \"targets\": [" << g
          << "], \"final_position\": " << final_position
          << ", \"final_state\": " << json_string(data.task->state_name(states.back())) << "}\n";
      continue;
    }
    out << "\n#" << i + 1 << ": " << length << " action(s), final state "
        << data.task->state_name(states.back()) << ", read at position " << final_position << "\n";
    Table rows;
    rows.header = {"position"};
    std::vector<std::string> token_row = {"token"}, target_row = {"target"};
    for (int64_t p = 0; p < width; ++p) {
      rows.header.push_back(std::to_string(p) + (p == final_position ? "*" : ""));
      token_row.push_back(token_name(data, tokens[p]));
      target_row.push_back(targets[p] == kNoTarget ? "." : token_name(data, targets[p]));
    }
    rows.rows = {token_row, target_row};
    out << rows.text();
  }
  if (!options.jsonl && shown > 0)
    out << "\n* the final state's position; '.' a position without loss\n";
  return out.str();
}

}  // namespace induct
