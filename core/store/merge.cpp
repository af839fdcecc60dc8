#include "store/merge.hpp"

#include <stdexcept>

namespace induct {

namespace {

// A result without what differs between two runs of the same trial.
std::string decided(const TrialResult& result) {
  YAML::Node node = result.to_yaml();
  node.remove("seconds");
  node.remove("resumed_at");
  YAML::Emitter out;
  out << node;
  return out.c_str();
}

std::string dumped(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return out.c_str();
}

}  // namespace

MergeCount merge_store(Store& into, const std::string& into_name, const Store& from,
                       const std::string& from_name, std::map<std::string, std::string>& origin) {
  MergeCount count;
  const std::vector<StoredTrial> trials = from.all();
  // Every conflict before anything is written: a folder merges whole or not at all.
  for (const StoredTrial& t : trials) {
    if (!t.result.finished()) continue;
    const std::optional<TrialResult> held = into.find_finished(t.key);
    if (held && decided(*held) != decided(t.result)) {
      const auto first = origin.find(t.key);
      throw std::runtime_error(
          "trial " + t.key + " (" + cell_label(t.spec.cell) + ", N=" + std::to_string(t.spec.n) +
          ", " + t.spec.configuration() + ") has different results in " +
          (first == origin.end() ? into_name : first->second) + " and " + from_name +
          ": a trial is deterministic, so one of them ran another version or is a " +
          "damaged copy; nothing of " + from_name + " was merged");
    }
  }
  for (const StoredTrial& t : trials) {
    if (!t.result.finished()) {
      ++count.records_skipped;
      continue;
    }
    if (into.find_finished(t.key)) {
      ++count.trials_same;
      continue;
    }
    into.put(t.study, t.spec, t.result);
    origin.emplace(t.key, from_name);
    ++count.trials_added;
  }
  for (const StoredOutcome& o : from.outcomes()) {
    if (const std::optional<StoredOutcome> held = into.find_outcome(o.key)) {
      ++(dumped(held->value) == dumped(o.value) ? count.outcomes_same : count.outcomes_kept_first);
      continue;
    }
    into.put_outcome(o);
    ++count.outcomes_added;
  }
  return count;
}

}  // namespace induct
