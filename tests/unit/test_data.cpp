// Data sets (docs/method.md section 2): counts, distinctness, disjointness, caps, determinism,
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

std::vector<int32_t> at(const SequenceSet& set, size_t i) { return set.sequence(i); }

std::vector<std::vector<int32_t>> all(const SequenceSet& set) {
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < set.size(); ++i) out.push_back(at(set, i));
  return out;
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
  BOOST_TEST(train.size() == split.train.size());                     // distinct
  BOOST_TEST(validation.size() == split.validation.size());           // distinct
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
  BOOST_TEST((all(a.train) == all(b.train)));
  BOOST_TEST((all(a.validation) == all(b.validation)));
  Split small = make_split(s, 10, 20);
  BOOST_TEST((all(small.validation) == all(a.validation)));
  // The training set of a smaller N is a prefix of a larger one's.
  for (size_t i = 0; i < small.train.size(); ++i) BOOST_TEST(at(small.train, i) == at(a.train, i));
  Split other = make_split(s, 500, 30);
  BOOST_TEST((all(other.validation) != all(a.validation)));
  BOOST_TEST((all(other.train) != all(a.train)));
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

BOOST_AUTO_TEST_CASE(codes_decode_to_the_digits_of_the_index) {
  // Brute force: index k of the A^n sequences is k's base-A digits, most significant first.
  SequenceCodec codec(3, 4, 7);
  BOOST_TEST(codec.exact());
  BOOST_TEST(codec.codes() == 81u);
  std::vector<int32_t> out(4);
  for (uint64_t k = 0; k < 81; ++k) {
    codec.decode(k, out.data());
    std::vector<int32_t> digits{int32_t(k / 27), int32_t(k / 9 % 3), int32_t(k / 3 % 3),
                                int32_t(k % 3)};
    BOOST_TEST(out == digits, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(the_feistel_order_is_a_permutation_of_the_space) {
  // The path of spaces above 2^22, forced on small spaces and checked by enumeration: every
  // sequence exactly once, and a seeded order (another seed, another order).
  for (auto [actions, length] : {std::pair<int, int>{3, 7}, {2, 11}, {5, 1}, {7, 3}}) {
    LengthStream stream(actions, length, 11, /*dense_limit=*/0);
    LengthStream other(actions, length, 12, 0);
    std::set<uint64_t> codes;
    bool same_order = true;
    while (stream.remaining() > 0) {
      const uint64_t code = stream.next_code();
      same_order = same_order && code == other.next_code();
      BOOST_TEST(code < stream.space());
      codes.insert(code);
    }
    BOOST_TEST(codes.size() == stream.space());
    if (stream.space() > 10) BOOST_TEST(!same_order);
  }
}

BOOST_AUTO_TEST_CASE(codes_beyond_63_bits_stay_distinct_and_uniform) {
  // 120^10 > 2^64: the last 9 actions come from the code (120^9 < 2^63), the first from a
  // generator keyed by it.
  SequenceCodec codec(120, 10, 3);
  BOOST_TEST(!codec.exact());
  BOOST_TEST(codec.codes() == saturating_pow(120, 9));
  LengthStream stream(120, 10, 5);
  std::set<std::vector<int32_t>> seen;
  std::vector<size_t> first(120, 0);
  std::vector<int32_t> buffer(10);
  for (int i = 0; i < 24000; ++i) {
    stream.next(buffer.data());
    for (int32_t a : buffer) BOOST_TEST_REQUIRE((a >= 0 && a < 120));
    ++first[buffer[0]];
    seen.insert(buffer);
  }
  BOOST_TEST(seen.size() == 24000u);
  for (size_t count : first) BOOST_TEST((count > 120 && count < 280));  // 200 expected
  // Decoding is a function of the code alone.
  std::vector<int32_t> again(10);
  stream.codec().decode(12345, buffer.data());
  stream.codec().decode(12345, again.data());
  BOOST_TEST(buffer == again, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_2_to_the_30_space_is_drawn_without_a_set_of_what_was_drawn) {
  // Fixed L = 30 parity: 2^30 sequences. 200,000 of them cost 10 bytes each, stay distinct
  // and disjoint from validation, and the set for a smaller N is the same prefix.
  DataSpec s = spec(2, "fixed", 30);
  Split split = make_split(s, 200'000, 10);
  BOOST_TEST(split.train.size() == 200'000u);
  BOOST_TEST(split.train.bytes() <= 200'000u * 10u);
  std::set<uint64_t> train;
  for (size_t i = 0; i < split.train.size(); ++i) train.insert(split.train.code(i));
  BOOST_TEST(train.size() == 200'000u);
  for (size_t i = 0; i < split.validation.size(); ++i)
    BOOST_TEST_REQUIRE(train.count(split.validation.code(i)) == 0u);
  Split small = make_split(s, 1000, 10);
  for (size_t i = 0; i < small.train.size(); ++i)
    BOOST_TEST_REQUIRE(small.train.code(i) == split.train.code(i));
  BOOST_TEST((all(small.validation) == all(split.validation)));
  // Codes of an exact space are indices: the sequence is the code's binary digits.
  auto x = split.train.sequence(0);
  uint64_t index = 0;
  for (int32_t a : x) index = index * 2 + static_cast<uint64_t>(a);
  BOOST_TEST(index == split.train.code(0));
}

BOOST_AUTO_TEST_CASE(the_split_cache_hands_out_prefixes_equal_to_fresh_splits) {
  for (const char* distribution : {"fixed", "uniform", "short_to_long"}) {
    DataSpec s = spec(3, distribution, 9);
    SplitCache cache;
    Split big = cache.get(s, 5000, 20);
    BOOST_TEST(cache.hits() == 0u);
    Split small = cache.get(s, 700, 20);
    BOOST_TEST(cache.hits() == 1u);
    Split fresh = make_split(s, 700, 20);
    BOOST_TEST((all(small.train) == all(fresh.train)));
    BOOST_TEST((all(small.validation) == all(fresh.validation)));
    BOOST_TEST(small.train.size() == 700u);
    BOOST_TEST(big.train.size() == 5000u);
    Split other_seed = cache.get(s, 700, 30);
    BOOST_TEST(cache.hits() == 1u);
    BOOST_TEST((all(other_seed.train) == all(make_split(s, 700, 30).train)));
    Split larger = cache.get(s, 6000, 20);  // more than was built: built anew
    BOOST_TEST(cache.hits() == 1u);
    BOOST_TEST(larger.train.sequence(699) == fresh.train.sequence(699),
               boost::test_tools::per_element());
  }
}
