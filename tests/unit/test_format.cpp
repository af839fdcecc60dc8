// Supervision formats (docs/method.md section 3) on the Z_5 example of docs/method.md, and the tasks' prefix
// states through the real `modular` plugin.
#define BOOST_TEST_MODULE format
#include <boost/test/unit_test.hpp>

#include "format/format.hpp"
#include "options_yaml.hpp"
#include "support.hpp"

using namespace induct;

namespace {

// Z_5, x = 2 1 0 3 4, s = 2 3 3 1 0. Vocabulary: actions 0..4, states 5..9, PAD 10, SEP 11.
struct Example {
  std::vector<int64_t> tokens, targets;
  int64_t final_position;
};

Example encode(const std::string& format) {
  Transitions t(std::make_shared<test::ZmTask>(5), "z5");
  Vocabulary vocab{5, 5};
  SequenceSet set;
  // 2 1 0 3 4 is index 2*625 + 1*125 + 0*25 + 3*5 + 4 of the 5^5 sequences of length 5.
  set.add(SequenceCodec(5, 5, 0), 1394);
  ExampleSet e(set, t, format_named(format), vocab);
  BOOST_TEST(e.size() == 1u);
  std::vector<int64_t> tokens(e.width(0)), targets(e.width(0));
  BOOST_TEST(e.encode(0, tokens.data(), targets.data()) == 0);  // s_n
  return {tokens, targets, e.final_position(0)};
}

constexpr int64_t X = kNoTarget;

}  // namespace

BOOST_AUTO_TEST_CASE(vocabulary_layout) {
  Vocabulary v{5, 5};
  BOOST_TEST(v.state_token(0) == 5);
  BOOST_TEST(v.pad() == 10);
  BOOST_TEST(v.sep() == 11);
  BOOST_TEST(v.size() == 12);
}

BOOST_AUTO_TEST_CASE(outcome_supervises_only_the_final_state) {
  Example e = encode("outcome");
  BOOST_TEST(e.tokens == (std::vector<int64_t>{2, 1, 0, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(e.targets == (std::vector<int64_t>{X, X, X, X, 5}), boost::test_tools::per_element());
  BOOST_TEST(e.final_position == 4);
}

BOOST_AUTO_TEST_CASE(acot_labels_every_position_with_its_state) {
  Example e = encode("acot");
  BOOST_TEST(e.tokens == (std::vector<int64_t>{2, 1, 0, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(e.targets == (std::vector<int64_t>{7, 8, 8, 6, 5}), boost::test_tools::per_element());
  BOOST_TEST(e.final_position == 4);
}

BOOST_AUTO_TEST_CASE(cot_writes_the_states_after_a_separator) {
  // 2 1 0 3 4 SEP 2 3 3 1, predicting 2 3 3 1 0 from SEP on.
  Example e = encode("cot");
  BOOST_TEST(e.tokens == (std::vector<int64_t>{2, 1, 0, 3, 4, 11, 7, 8, 8, 6}),
             boost::test_tools::per_element());
  BOOST_TEST(e.targets == (std::vector<int64_t>{X, X, X, X, X, 7, 8, 8, 6, 5}),
             boost::test_tools::per_element());
  BOOST_TEST(e.final_position == 9);
}

BOOST_AUTO_TEST_CASE(unknown_format_names_the_known_ones) {
  try {
    format_named("chain");
    BOOST_FAIL("no error");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()).find("outcome, cot, acot") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(modular_plugin_tracks_prefix_states) {
  auto options = yaml::load_string("name: modular\nm: 5\n", "task.yaml");
  auto task = test::plugins().make_task("modular", TaskContext{options});
  Transitions t(task, "modular");
  BOOST_TEST(t.num_actions() == 5);
  BOOST_TEST(t.num_states() == 5);
  std::vector<int32_t> x{2, 1, 0, 3, 4}, s(5);
  t.prefix_states(x.data(), 5, s.data());
  BOOST_TEST(s == (std::vector<int32_t>{2, 3, 3, 1, 0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(modular_plugin_refuses_m_below_2) {
  auto options = yaml::load_string("name: modular\nm: 1\n", "task.yaml");
  try {
    test::plugins().make_task("modular", TaskContext{options});
    BOOST_FAIL("no error");
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    BOOST_TEST(message.find("task.yaml:2:4") != std::string::npos, message);
    BOOST_TEST(message.find("m: must be at least 2") != std::string::npos, message);
  }
}

namespace {
std::shared_ptr<Task> permutation(int m) {
  auto options = yaml::load_string("name: permutation\nm: " + std::to_string(m), "task.yaml");
  return test::plugins().make_task("permutation", TaskContext{options});
}
}  // namespace

BOOST_AUTO_TEST_CASE(permutation_numbers_s3_lexicographically) {
  auto s3 = permutation(3);
  BOOST_TEST(s3->num_actions() == 6);
  BOOST_TEST(s3->num_states() == 6);
  BOOST_TEST(s3->initial_state() == 0);
  const char* expected[] = {"[0 1 2]", "[0 2 1]", "[1 0 2]", "[1 2 0]", "[2 0 1]", "[2 1 0]"};
  for (int i = 0; i < 6; ++i) BOOST_TEST(s3->action_name(i) == expected[i]);
}

BOOST_AUTO_TEST_CASE(permutation_composes_action_after_state) {
  auto s3 = permutation(3);
  // state [0 2 1] then action [1 0 2]: i -> a(s(i)) = [1 2 0] (index 3)
  BOOST_TEST(s3->step(1, 2) == 3);
  // state [1 0 2] then action [0 2 1]: [2 0 1] (index 4): S_3 does not commute
  BOOST_TEST(s3->step(2, 1) == 4);
  for (int s = 0; s < 6; ++s) {
    BOOST_TEST(s3->step(s, 0) == s);  // the identity action
    BOOST_TEST(s3->step(0, s) == s);  // from the identity state
  }
}

BOOST_AUTO_TEST_CASE(permutation_s5_is_a_group_of_120) {
  auto s5 = permutation(5);
  BOOST_TEST(s5->num_actions() == 120);
  Transitions t(s5, "permutation");  // checks every transition is a state
  for (int s = 0; s < 120; ++s) {
    int inverses = 0;
    for (int a = 0; a < 120; ++a) inverses += t.step(s, a) == 0;
    BOOST_TEST(inverses == 1);
  }
}

BOOST_AUTO_TEST_CASE(permutation_refuses_m_out_of_range) {
  BOOST_CHECK_THROW(permutation(2), ConfigError);
  BOOST_CHECK_THROW(permutation(8), ConfigError);
}
