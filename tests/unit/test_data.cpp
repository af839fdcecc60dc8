// Data sets (SPEC.md section 2): counts, distinctness, disjointness, caps, determinism,
// fill order, N_max.
#define BOOST_TEST_MODULE data
#include <boost/test/unit_test.hpp>

#include <map>
#include <set>
#include <vector>

#include "data/dataset.hpp"
#include "data/transitions.hpp"
#include "support.hpp"

using namespace induct;

namespace {

DataSpec spec(int64_t actions, const std::string& distribution, int L) {
  DataSpec s;
  s.num_actions = actions;
  s.distribution = &distribution_named(distribution);
  s.L = L;
  return s;
}

std::vector<int32_t> at(const SequenceSet& set, size_t i) {
  return {set.sequence(i), set.sequence(i) + set.length(i)};
}

std::set<std::vector<int32_t>> as_set(const SequenceSet& set) {
  std::set<std::vector<int32_t>> out;
  for (size_t i = 0; i < set.size(); ++i) out.insert(at(set, i));
  return out;
}

std::map<int, size_t> count_by_length(const SequenceSet& set) {
  std::map<int, size_t> counts;
  for (size_t i = 0; i < set.size(); ++i) ++counts[set.length(i)];
  return counts;
}

}  // namespace

BOOST_AUTO_TEST_CASE(counts_parity_uniform_follow_the_per_length_caps) {
  // 2^2 + ... + 2^10 = 2044 sequences; 20% caps per length: 0,1,3,6,12,25,51,102,204 = 404;
  // min(2000, 408, 404) = 404 validation sequences; N_max = 2044 - 404.
  DataPlan plan = plan_data(spec(2, "uniform", 10));
  BOOST_TEST(plan.available == 2044u);
  BOOST_TEST(plan.validation_size == 404u);
  BOOST_TEST(plan.n_max == 1640u);
  std::vector<uint64_t> expected{0, 1, 3, 6, 12, 25, 51, 102, 204};
  BOOST_TEST(plan.validation == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(counts_fixed_and_huge_spaces) {
  DataPlan z5 = plan_data(spec(5, "fixed", 5));  // 3125 sequences, 20% = 625
  BOOST_TEST(z5.available == 3125u);
  BOOST_TEST(z5.validation_size == 625u);
  BOOST_TEST(z5.n_max == 2500u);
  DataPlan tiny = plan_data(spec(2, "fixed", 2));  // 4 sequences: no validation set
  BOOST_TEST(tiny.validation_size == 0u);
  BOOST_TEST(tiny.n_max == 4u);
  DataPlan huge = plan_data(spec(120, "uniform", 10));  // S_5-sized: beyond 64 bits
  BOOST_TEST(huge.available == kUnbounded);
  BOOST_TEST(huge.validation_size == 2000u);
  BOOST_TEST(huge.n_max == 16'000'000u - 2000u);
}

BOOST_AUTO_TEST_CASE(validation_shortfall_moves_to_lengths_with_room) {
  // Z_10, lengths 2..4: 100, 1000, 10000 sequences, caps 20, 200, 2000; 2000 in all.
  DataPlan plan = plan_data(spec(10, "uniform", 4));
  std::vector<uint64_t> expected{20, 200, 1780};
  BOOST_TEST(plan.validation == expected, boost::test_tools::per_element());
  BOOST_TEST(plan.validation_size == 2000u);
}

BOOST_AUTO_TEST_CASE(all_samples_distinct_and_disjoint_at_n_max) {
  DataSpec s = spec(2, "uniform", 10);
  DataPlan plan = plan_data(s);
  Split split = make_split(s, plan.n_max, 10);
  BOOST_TEST(split.train.size() == plan.n_max);
  BOOST_TEST(split.validation.size() == plan.validation_size);
  auto train = as_set(split.train);
  auto validation = as_set(split.validation);
  BOOST_TEST(train.size() == split.train.size());            // distinct
  BOOST_TEST(validation.size() == split.validation.size());  // distinct
  for (const auto& v : validation) BOOST_TEST(train.count(v) == 0u);  // disjoint
  // At N_max the two sets together are every sequence of lengths 2..10.
  BOOST_TEST(train.size() + validation.size() == 2044u);
}

BOOST_AUTO_TEST_CASE(validation_respects_the_per_length_cap) {
  DataSpec s = spec(3, "uniform", 7);
  DataPlan plan = plan_data(s);
  Split split = make_split(s, 100, 1);
  auto counts = count_by_length(split.validation);
  for (size_t i = 0; i < plan.lengths.size(); ++i) {
    const int n = plan.lengths[i];
    BOOST_TEST(counts[n] == plan.validation[i]);
    BOOST_TEST(counts[n] <= static_cast<size_t>(0.2 * plan.space[i]));
  }
}

BOOST_AUTO_TEST_CASE(splits_are_deterministic_and_validation_ignores_n) {
  DataSpec s = spec(5, "uniform", 6);
  Split a = make_split(s, 500, 20);
  Split b = make_split(s, 500, 20);
  BOOST_TEST(a.train.actions == b.train.actions, boost::test_tools::per_element());
  BOOST_TEST(a.validation.actions == b.validation.actions, boost::test_tools::per_element());
  Split small = make_split(s, 10, 20);
  BOOST_TEST(small.validation.actions == a.validation.actions, boost::test_tools::per_element());
  // The training set of a smaller N is a prefix of a larger one's.
  for (size_t i = 0; i < small.train.size(); ++i) BOOST_TEST(at(small.train, i) == at(a.train, i));
  Split other = make_split(s, 500, 30);
  BOOST_TEST(other.validation.actions != a.validation.actions);
  BOOST_TEST(other.train.actions != a.train.actions);
}

BOOST_AUTO_TEST_CASE(uniform_lengths_are_roughly_uniform) {
  // 40 actions: even length 2 (1600 sequences) has more than enough for its share.
  Split split = make_split(spec(40, "uniform", 10), 9000, 7);
  auto counts = count_by_length(split.train);
  for (int n = 2; n <= 10; ++n) {
    BOOST_TEST(counts[n] > 850u);
    BOOST_TEST(counts[n] < 1150u);
  }
}

BOOST_AUTO_TEST_CASE(uniform_redraws_among_lengths_with_sequences_left) {
  // Z_2, L = 6: length 2 has 4 sequences (no validation); N = n_max takes everything.
  DataSpec s = spec(2, "uniform", 6);
  DataPlan plan = plan_data(s);
  Split split = make_split(s, plan.n_max, 3);
  auto counts = count_by_length(split.train);
  for (size_t i = 0; i < plan.lengths.size(); ++i)
    BOOST_TEST(counts[plan.lengths[i]] == plan.space[i] - plan.validation[i]);
}

BOOST_AUTO_TEST_CASE(short_to_long_fills_in_ascending_length) {
  // Z_2, L = 6: lengths 2 and 3 offer 4 + 7 training sequences; N = 20 takes all of them
  // and 9 of the 13 of length 4.
  DataSpec s = spec(2, "short_to_long", 6);
  DataPlan plan = plan_data(s);
  BOOST_TEST(plan.validation[0] == 0u);
  BOOST_TEST(plan.validation[1] == 1u);
  BOOST_TEST(plan.validation[2] == 3u);
  Split split = make_split(s, 20, 5);
  for (size_t i = 1; i < split.train.size(); ++i)
    BOOST_TEST(split.train.length(i - 1) <= split.train.length(i));
  auto counts = count_by_length(split.train);
  BOOST_TEST(counts[2] == 4u);
  BOOST_TEST(counts[3] == 7u);
  BOOST_TEST(counts[4] == 9u);
  BOOST_TEST(counts.count(5) == 0u);
}

BOOST_AUTO_TEST_CASE(n_beyond_n_max_is_refused) {
  DataSpec s = spec(2, "fixed", 4);  // 16 sequences, 3 for validation
  BOOST_TEST(plan_data(s).n_max == 13u);
  BOOST_CHECK_NO_THROW(make_split(s, 13, 1));
  BOOST_CHECK_THROW(make_split(s, 14, 1), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(impossible_specs_are_refused) {
  BOOST_CHECK_THROW(plan_data(spec(2, "uniform", 1)), std::invalid_argument);
  BOOST_CHECK_THROW(distribution_named("gaussian"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(length_stream_enumerates_a_small_space_exactly) {
  LengthStream stream(3, 4, 99);
  std::set<std::vector<int32_t>> seen;
  std::vector<int32_t> buffer(4);
  while (stream.remaining() > 0) {
    stream.next(buffer.data());
    for (int32_t a : buffer) BOOST_TEST((a >= 0 && a < 3));
    seen.insert(buffer);
  }
  BOOST_TEST(seen.size() == 81u);
}

BOOST_AUTO_TEST_CASE(length_streams_stay_distinct_in_sparse_and_unbounded_spaces) {
  for (auto [actions, length] : {std::pair<int, int>{10, 8}, {100, 12}}) {
    LengthStream stream(actions, length, 5);
    std::set<std::vector<int32_t>> seen;
    std::vector<int32_t> buffer(length);
    for (int i = 0; i < 20000; ++i) {
      stream.next(buffer.data());
      seen.insert(buffer);
    }
    BOOST_TEST(seen.size() == 20000u);
  }
}

BOOST_AUTO_TEST_CASE(prefix_states_of_the_spec_example) {
  Transitions t(std::make_shared<test::ZmTask>(5), "z5");
  std::vector<int32_t> x{2, 1, 0, 3, 4}, s(5);
  t.prefix_states(x.data(), 5, s.data());
  std::vector<int32_t> expected{2, 3, 3, 1, 0};
  BOOST_TEST(s == expected, boost::test_tools::per_element());
}
