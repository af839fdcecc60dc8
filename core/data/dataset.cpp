#include "data/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace induct {

LengthStream& Streams::at(int length) {
  auto& slot = streams_[length];
  if (!slot)
    slot = std::make_unique<LengthStream>(num_actions_, length,
                                          derive_seed(seed_, {kLengthStream, uint64_t(length)}),
                                          LengthStream::kDenseLimit, language_);
  return *slot;
}

namespace {

class Fixed final : public LengthDistribution {
 public:
  std::string name() const override { return "fixed"; }
  std::string description() const override { return "every sequence has length L"; }
  std::vector<int> support(int L) const override { return {L}; }
  void draw_training(Streams& streams, const std::vector<int>& support, uint64_t count, Rng&,
                     SequenceSet& out) const override {
    LengthStream& stream = streams.at(support.front());
    for (uint64_t i = 0; i < count; ++i) out.add(stream.codec(), stream.next_code());
  }
};

class Uniform final : public LengthDistribution {
 public:
  std::string name() const override { return "uniform"; }
  std::string description() const override {
    return "each sequence's length uniform over 2..L (redrawn among lengths with sequences left)";
  }
  std::vector<int> support(int L) const override {
    std::vector<int> lengths;
    for (int n = 2; n <= L; ++n) lengths.push_back(n);
    return lengths;
  }
  void draw_training(Streams& streams, const std::vector<int>& support, uint64_t count, Rng& rng,
                     SequenceSet& out) const override {
    for (uint64_t i = 0; i < count; ++i) {
      int n = support[rng.below(support.size())];
      if (streams.at(n).remaining() == 0) {
        // Project decision (docs/method.md section 2): draw again among the lengths that still have
        // sequences.
        std::vector<int> open;
        for (int m : support)
          if (streams.at(m).remaining() > 0) open.push_back(m);
        n = open[rng.below(open.size())];
      }
      LengthStream& stream = streams.at(n);
      out.add(stream.codec(), stream.next_code());
    }
  }
};

class ShortToLong final : public LengthDistribution {
 public:
  std::string name() const override { return "short_to_long"; }
  std::string description() const override {
    return "all sequences of length 2, then 3, ... until N (the last length a random subset)";
  }
  std::vector<int> support(int L) const override { return Uniform().support(L); }
  void draw_training(Streams& streams, const std::vector<int>& support, uint64_t count, Rng&,
                     SequenceSet& out) const override {
    for (int n : support) {
      LengthStream& stream = streams.at(n);
      while (count > 0 && stream.remaining() > 0) {
        out.add(stream.codec(), stream.next_code());
        --count;
      }
    }
  }
  bool ascending_batches() const override { return true; }
};

const std::vector<std::unique_ptr<LengthDistribution>>& registry() {
  static const auto* all = [] {
    auto* list = new std::vector<std::unique_ptr<LengthDistribution>>();
    list->push_back(std::make_unique<Fixed>());
    list->push_back(std::make_unique<Uniform>());
    list->push_back(std::make_unique<ShortToLong>());
    return list;
  }();
  return *all;
}

uint64_t floor_fraction(uint64_t count, double fraction) {
  long double value = std::floor(static_cast<long double>(count) * fraction);
  return value >= static_cast<long double>(kUnbounded) ? kUnbounded : static_cast<uint64_t>(value);
}

}  // namespace

const LengthDistribution& distribution_named(const std::string& name) {
  for (const auto& d : registry())
    if (d->name() == name) return *d;
  std::string known;
  for (const auto& d : registry()) known += (known.empty() ? "" : ", ") + d->name();
  throw std::invalid_argument("unknown distribution '" + name + "' (known: " + known + ")");
}

std::vector<std::string> distribution_names() {
  std::vector<std::string> names;
  for (const auto& d : registry()) names.push_back(d->name());
  return names;
}

DataPlan plan_data(const DataSpec& spec) {
  if (spec.num_actions < 1) throw std::invalid_argument("the task has no actions");
  if (spec.L < 2) throw std::invalid_argument("L must be at least 2");
  if (!spec.distribution) throw std::invalid_argument("no length distribution");
  if (!(spec.validation.fraction >= 0 && spec.validation.fraction < 1))
    throw std::invalid_argument("the validation fraction must be in [0, 1)");
  DataPlan plan;
  plan.lengths = spec.distribution->support(spec.L);
  std::vector<uint64_t> cap;
  for (int n : plan.lengths) {
    plan.space.push_back(spec.language
                             ? spec.language->count(n)
                             : saturating_pow(static_cast<uint64_t>(spec.num_actions), n));
    plan.available = saturating_add(plan.available, plan.space.back());
    cap.push_back(floor_fraction(plan.space.back(), spec.validation.fraction));
  }
  uint64_t capacity = 0;
  for (uint64_t c : cap) capacity = saturating_add(capacity, c);
  uint64_t total = std::min({spec.validation.max_size,
                             floor_fraction(plan.available, spec.validation.fraction), capacity});

  // Spread `total` evenly over the lengths, each capped at its 20%; a shortfall moves to the
  // lengths with room, and a remainder that does not divide goes to the longest lengths.
  plan.validation.assign(plan.lengths.size(), 0);
  uint64_t left = total;
  while (left > 0) {
    std::vector<size_t> open;
    for (size_t i = 0; i < cap.size(); ++i)
      if (plan.validation[i] < cap[i]) open.push_back(i);
    if (open.empty()) break;
    uint64_t share = left / open.size();
    if (share == 0) {
      for (size_t k = open.size() - left; k < open.size(); ++k) ++plan.validation[open[k]];
      left = 0;
      break;
    }
    for (size_t i : open) {
      uint64_t give = std::min(share, cap[i] - plan.validation[i]);
      plan.validation[i] += give;
      left -= give;
    }
  }
  plan.validation_size = total - left;
  const uint64_t pool = std::min(spec.n_cap, plan.available);
  plan.n_max = pool > plan.validation_size ? pool - plan.validation_size : 0;
  return plan;
}

Split make_split(const DataSpec& spec, uint64_t n, uint64_t seed) {
  DataPlan plan = plan_data(spec);
  if (n > plan.n_max)
    throw std::invalid_argument("N = " + std::to_string(n) + " exceeds N_max = " +
                                std::to_string(plan.n_max) + " for this cell");
  Split split;
  Streams streams(spec.num_actions, seed, spec.language);
  split.validation.reserve(plan.validation_size);
  for (size_t i = 0; i < plan.lengths.size(); ++i) {
    LengthStream& stream = streams.at(plan.lengths[i]);
    for (uint64_t k = 0; k < plan.validation[i]; ++k)
      split.validation.add(stream.codec(), stream.next_code());
  }
  Rng rng(derive_seed(seed, {kLengthChoice}));
  split.train.reserve(n);
  spec.distribution->draw_training(streams, plan.lengths, n, rng, split.train);
  return split;
}

namespace {
std::string split_key(const DataSpec& spec, uint64_t seed) {
  char fraction[32];
  std::snprintf(fraction, sizeof fraction, "%a", spec.validation.fraction);
  return std::to_string(spec.num_actions) + " " + spec.distribution->name() + " " +
         std::to_string(spec.L) + " " + std::to_string(spec.validation.max_size) + " " + fraction +
         " " + std::to_string(spec.n_cap) + " " + std::to_string(seed) +
         (spec.language ? " " + spec.language->id() : "");
}
}  // namespace

Split SplitCache::get(const DataSpec& spec, uint64_t n, uint64_t seed) {
  const std::string key = split_key(spec, seed);
  ++tick_;
  for (Entry& e : entries_)
    if (e.key == key && e.split.train.size() >= n) {
      e.used = tick_;
      ++hits_;
      return {e.split.train.prefix(n), e.split.validation};
    }
  Split split = make_split(spec, n, seed);
  // The largest set of a key replaces its smaller ones; the least recently used go while the
  // cache holds more than its budget (the newest entry stays whatever its size).
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& e) { return e.key == key; }),
                 entries_.end());
  entries_.push_back({key, split, tick_});
  auto held = [&] {
    size_t total = 0;
    for (const Entry& e : entries_) total += e.split.train.bytes() + e.split.validation.bytes();
    return total;
  };
  while (entries_.size() > 1 && held() > budget_bytes_) {
    auto oldest = std::min_element(entries_.begin(), entries_.end() - 1,
                                   [](const Entry& a, const Entry& b) { return a.used < b.used; });
    entries_.erase(oldest);
  }
  return split;
}

}  // namespace induct
