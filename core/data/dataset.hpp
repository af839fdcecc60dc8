// Training and validation sets of a cell (docs/method.md section 2).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/length_stream.hpp"
#include "data/sequences.hpp"
#include "util/rng.hpp"

namespace induct {

// The version of the sequences a (cell, N, seed) gives, part of every trial's key: bump it
// when a change alters any data set (docs/store.md lists the versions).
// 2: spaces above 2^22 sequences in a keyed Feistel order, codes beyond 63 bits (version 1:
// a lazy Fisher-Yates shuffle there, and rejection of repeats beyond 64 bits).
constexpr int kDataVersion = 2;

// The defaults of docs/method.md section 2; each is a config value (data.validation.*, data.n_cap).
struct ValidationPolicy {
  uint64_t max_size = 2000;
  double fraction = 0.2;  // of all available sequences, and of those of any single length
};

// The per-length streams of one (cell, seed): validation draws first, training after.
class Streams {
 public:
  Streams(int64_t num_actions, uint64_t seed, std::shared_ptr<const Language> language = nullptr)
      : num_actions_(num_actions), seed_(seed), language_(std::move(language)) {}
  LengthStream& at(int length);

 private:
  int64_t num_actions_;
  uint64_t seed_;
  std::shared_ptr<const Language> language_;
  std::map<int, std::unique_ptr<LengthStream>> streams_;
};

// How the lengths of a training set are chosen. A new distribution is one subclass,
// registered in distribution_registry() (dataset.cpp).
class LengthDistribution {
 public:
  virtual ~LengthDistribution() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // The lengths that occur in the training and validation sets of a cell with maximum L.
  virtual std::vector<int> support(int L) const = 0;
  // Appends `count` training sequences drawn from `streams` (count <= what is left).
  virtual void draw_training(Streams& streams, const std::vector<int>& support, uint64_t count,
                             Rng& rng, SequenceSet& out) const = 0;
  // Whether batches follow ascending length within each pass (Short-to-Long's curriculum).
  virtual bool ascending_batches() const { return false; }
};

const LengthDistribution& distribution_named(const std::string& name);  // throws, listing names
std::vector<std::string> distribution_names();

// Everything that decides a cell's data, except N.
struct DataSpec {
  int64_t num_actions = 0;
  // A task with partial transitions: its valid sequences (covering lengths up to L); null
  // for a group, whose sequences are all of A^n.
  std::shared_ptr<const Language> language;
  const LengthDistribution* distribution = nullptr;
  int L = 0;
  ValidationPolicy validation;
  uint64_t n_cap = 16'000'000;
};

struct DataPlan {
  std::vector<int> lengths;          // the support
  std::vector<uint64_t> space;       // sequences of each length (saturated)
  std::vector<uint64_t> validation;  // validation sequences of each length
  uint64_t available = 0;            // all sequences of the support (saturated)
  uint64_t validation_size = 0;
  uint64_t n_max = 0;  // min(n_cap, available) - validation_size
};

// Sizes only; cheap. Throws std::invalid_argument for an impossible spec.
DataPlan plan_data(const DataSpec& spec);

struct Split {
  SequenceSet train;
  SequenceSet validation;
};

// The validation set depends on (spec, seed) only; the training set of size n on
// (spec, n, seed), and is the first n sequences of the set for any larger n. n <= n_max
// (else std::invalid_argument); n = 0 gives validation only.
Split make_split(const DataSpec& spec, uint64_t n, uint64_t seed);

// The splits a worker process has built, by (spec, seed): a trial whose N is at most that of a
// set built before gets that set's prefix (its first N sequences: the same as make_split)
// without drawing anything. Least recently used sets go when more than budget_bytes are held.
class SplitCache {
 public:
  explicit SplitCache(size_t budget_bytes = size_t{512} << 20) : budget_bytes_(budget_bytes) {}
  Split get(const DataSpec& spec, uint64_t n, uint64_t seed);
  size_t hits() const { return hits_; }

 private:
  struct Entry {
    std::string key;
    Split split;
    uint64_t used = 0;
  };
  size_t budget_bytes_;
  std::vector<Entry> entries_;
  uint64_t tick_ = 0;
  size_t hits_ = 0;
};

}  // namespace induct
