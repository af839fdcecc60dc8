// `induct merge OUT DIR...`: the stores of several output folders (the shards of one study,
// `induct run --shard I/N`) combined into one, so that `induct report OUT` draws the tables one
// run would have. Torch-free.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "store/store.hpp"

namespace induct {

struct MergeCount {
  size_t trials_added = 0, trials_same = 0;  // finished results
  size_t records_skipped = 0;                // cancelled or error records (run again)
  size_t outcomes_added = 0, outcomes_same = 0;
  size_t outcomes_kept_first = 0;  // the same key, another record of what it cost: the first kept
};

// Adds the trials and outcomes of `from` (the folder `from_name`) to `into`. A finished trial
// whose key `into` holds with another result (its timing aside: seconds, the step it resumed
// at) is an error naming both folders (`origin`: where each key of `into` came from in this
// merge, updated; `into_name` for the keys it held before).
// An outcome whose key `into` holds with another value keeps the first: the decision is the
// trials', which are checked; what differs is what the search cost (which trials a success
// cancelled), and the count says how many.
MergeCount merge_store(Store& into, const std::string& into_name, const Store& from,
                       const std::string& from_name, std::map<std::string, std::string>& origin);

}  // namespace induct
