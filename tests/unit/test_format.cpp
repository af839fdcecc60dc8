// Supervision formats (docs/method.md section 3) on the Z_5 example of docs/method.md, and the
// tasks' prefix states through the real `modular` plugin.
#define BOOST_TEST_MODULE format
#include <boost/test/unit_test.hpp>
#include <functional>
#include <set>

#include "data/dataset.hpp"
#include "data/language.hpp"
#include "data/transitions.hpp"
#include "format/format.hpp"
#include "options_yaml.hpp"
#include "support.hpp"
#include "train/cell_setup.hpp"

using namespace induct;

namespace {

using test::format;

// Z_5, x = 2 1 0 3 4, s = 2 3 3 1 0. Vocabulary: actions 0..4, states 5..9, PAD 10, SEP 11, then
// the format's own tokens from 12.
struct Example {
  std::vector<int64_t> tokens, targets;
  int64_t final_position;
  std::vector<int64_t> action_positions;
  int64_t prompt;
};

Example encode(const std::string& section) {
  Transitions t(std::make_shared<test::ZmTask>(5), "z5");
  auto f = format(section);
  Vocabulary vocab{5, 5, f->extra_tokens()};
  SequenceSet set;
  // 2 1 0 3 4 is index 2*625 + 1*125 + 0*25 + 3*5 + 4 of the 5^5 sequences of length 5.
  set.add(SequenceCodec(5, 5, 0), 1394);
  ExampleSet e(set, t, *f, vocab);
  BOOST_TEST(e.size() == 1u);
  std::vector<int64_t> tokens(e.width(0)), targets(e.width(0));
  BOOST_TEST(e.encode(0, tokens.data(), targets.data()) == 0);  // s_n
  std::vector<int64_t> positions;
  for (int k = 0; k < 5; ++k) positions.push_back(f->action_position(5, k));
  return {tokens, targets, e.final_position(0), positions, f->prompt_length(5)};
}

constexpr int64_t X = kNoTarget;
using Tokens = std::vector<int64_t>;

}  // namespace

BOOST_AUTO_TEST_CASE(vocabulary_layout) {
  Vocabulary v{5, 5};
  BOOST_TEST(v.state_token(0) == 5);
  BOOST_TEST(v.pad() == 10);
  BOOST_TEST(v.sep() == 11);
  BOOST_TEST(v.size() == 12);
  Vocabulary with{5, 5, 3};
  BOOST_TEST(with.extra_token(0) == 12);
  BOOST_TEST(with.size() == 15);
}

BOOST_AUTO_TEST_CASE(outcome_supervises_only_the_final_state) {
  Example e = encode("name: outcome");
  BOOST_TEST(e.tokens == (Tokens{2, 1, 0, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(e.targets == (Tokens{X, X, X, X, 5}), boost::test_tools::per_element());
  BOOST_TEST(e.final_position == 4);
  BOOST_TEST(e.action_positions == (Tokens{0, 1, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(e.prompt == 5);  // every token given
}

BOOST_AUTO_TEST_CASE(acot_labels_every_position_with_its_state) {
  Example e = encode("name: acot");
  BOOST_TEST(e.tokens == (Tokens{2, 1, 0, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(e.targets == (Tokens{7, 8, 8, 6, 5}), boost::test_tools::per_element());
  BOOST_TEST(e.final_position == 4);
}

BOOST_AUTO_TEST_CASE(cot_writes_the_states_after_a_separator) {
  // 2 1 0 3 4 SEP 2 3 3 1, predicting 2 3 3 1 0 from SEP on.
  Example e = encode("name: cot");
  BOOST_TEST(e.tokens == (Tokens{2, 1, 0, 3, 4, 11, 7, 8, 8, 6}), boost::test_tools::per_element());
  BOOST_TEST(e.targets == (Tokens{X, X, X, X, X, 7, 8, 8, 6, 5}), boost::test_tools::per_element());
  BOOST_TEST(e.final_position == 9);
  BOOST_TEST(e.prompt == 6);  // the actions and SEP; the model writes the rest
}

// docs/method.md section 3, "Code trace", by hand: x = 12, '=' 13, '*' 14, ';' 15, print 16.
BOOST_AUTO_TEST_CASE(code_trace_prints_the_state_every_k_statements_and_at_the_end) {
  Example e = encode("name: code_trace\nevery: 2");
  const Tokens tokens{12, 13, 12, 14, 2, 15,             // x = x * 2 ;
                      12, 13, 12, 14, 1, 15, 16, 12, 8,  // x = x * 1 ; print x 3
                      12, 13, 12, 14, 0, 15,             // x = x * 0 ;
                      12, 13, 12, 14, 3, 15, 16, 12, 6,  // x = x * 3 ; print x 1
                      12, 13, 12, 14, 4, 15, 16, 12};    // x = x * 4 ; print x
  Tokens targets(tokens.size(), X);
  targets[13] = 8;  // s_2 = 3, at the x after print
  targets[28] = 6;  // s_4 = 1
  targets[37] = 5;  // s_5 = 0: the answer
  BOOST_TEST(e.tokens == tokens, boost::test_tools::per_element());
  BOOST_TEST(e.targets == targets, boost::test_tools::per_element());
  BOOST_TEST(e.final_position == 37);
  BOOST_TEST(e.action_positions == (Tokens{4, 10, 19, 25, 34}), boost::test_tools::per_element());
  BOOST_TEST(e.prompt == 38);  // the printed values are given (observed), not written
  // Every statement printed, none, and the default (every 4: no reveal before the fifth).
  BOOST_TEST(encode("name: code_trace\nevery: 1").tokens.size() == 30u + 4 * 3 + 2);
  BOOST_TEST(encode("name: code_trace\nfraction: 0").tokens.size() == 30u + 2);
  BOOST_TEST(encode("name: code_trace\nfraction: 1").tokens.size() == 30u + 4 * 3 + 2);
  BOOST_TEST(encode("name: code_trace").tokens.size() == 30u + 1 * 3 + 2);
}

// docs/method.md's S_3 example of the code trace, through the real permutation plugin.
BOOST_AUTO_TEST_CASE(code_trace_of_the_s3_example_in_the_method) {
  auto options = yaml::load_string("name: permutation\nm: 3\n", "task.yaml");
  Transitions s3(test::plugins().make_task("permutation", TaskContext{options}), "permutation");
  auto f = format("name: code_trace\nevery: 2");
  const Vocabulary vocab{6, 6, f->extra_tokens()};
  const int32_t actions[] = {1, 2, 5};
  int32_t states[3];
  s3.prefix_states(actions, 3, states);
  BOOST_TEST((std::vector<int32_t>(states, states + 3)) == (std::vector<int32_t>{1, 3, 2}),
             boost::test_tools::per_element());
  BOOST_REQUIRE(f->sequence_length(3) == 23);
  Tokens tokens(23), targets(23);
  f->encode(actions, states, 3, vocab, tokens.data(), targets.data());
  BOOST_TEST(tokens == (Tokens{14, 15, 14, 16, 1,  17, 14, 15, 14, 16, 2, 17,
                               18, 14, 9,  14, 15, 14, 16, 5,  17, 18, 14}),
             boost::test_tools::per_element());
  Tokens expected(23, X);
  expected[13] = 9;
  expected[22] = 8;
  BOOST_TEST(targets == expected, boost::test_tools::per_element());
  BOOST_TEST(f->final_position(3) == 22);
  BOOST_TEST(f->extra_token_name(4) == "print");
}

// With a fraction, which statements print is drawn once from the seed: the same in every
// sequence and at every length (a shorter trace's reveals are a longer one's first), about the
// fraction asked for, and another seed draws others.
BOOST_AUTO_TEST_CASE(code_trace_reveals_a_seeded_fraction_of_statements) {
  auto f = format("name: code_trace\nfraction: 0.25\nseed: 7");
  auto g = format("name: code_trace\nfraction: 0.25\nseed: 8");
  const int n = 2000;
  const int64_t reveals = (f->sequence_length(n) - 6 * n - 2) / 3;
  BOOST_TEST(reveals > 0.2 * n);
  BOOST_TEST(reveals < 0.3 * n);
  BOOST_TEST(f->sequence_length(n) != g->sequence_length(n));
  for (int m = 1; m < 200; ++m)
    for (int k = 0; k < m; ++k) BOOST_REQUIRE(f->action_position(m, k) == f->action_position(n, k));
}

BOOST_AUTO_TEST_CASE(code_trace_options_are_checked) {
  auto message = [](const std::string& section) {
    try {
      format(section);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  BOOST_TEST(
      message("name: code_trace\nevery: 0").find("every: must be at least 1") != std::string::npos,
      message("name: code_trace\nevery: 0"));
  BOOST_TEST(message("name: code_trace\nevery: 2\nfraction: 0.5").find("not both") !=
             std::string::npos);
  BOOST_TEST(message("name: code_trace\nfraction: 1.5").find("must be in [0, 1]") !=
             std::string::npos);
  BOOST_TEST(message("name: code_trace\nseed: 3").find("only with fraction") != std::string::npos);
  BOOST_TEST(message("name: code_trace\nevry: 3").find("evry") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_format_names_the_known_ones) {
  const std::string message = test::plugins().unknown("format", "chain");
  BOOST_TEST(message.find("unknown format 'chain' (available formats: acot, code_trace, cot, "
                          "outcome") == 0u,
             message);
}

// The data's properties hold under the code trace: distinct action sequences give distinct
// traces, the training set of a smaller N is the start of a larger one's, training and
// validation share no trace, and the format agrees with itself (check_format) out to length 80.
BOOST_AUTO_TEST_CASE(code_trace_keeps_the_data_distinct_and_nested) {
  auto task = std::make_shared<test::ZmTask>(3);
  CellData cell = make_cell_data(task, "z3", format("name: code_trace\nevery: 3"), "uniform", 7,
                                 ValidationPolicy{}, 16'000'000);
  BOOST_TEST(cell.vocab.size() == 3 + 3 + 2 + 5);
  check_format(cell, 80, "code_trace");
  const DataPlan plan = plan_data(cell.data);
  const Split all = make_split(cell.data, plan.n_max, 11), some = make_split(cell.data, 50, 11);
  auto traces = [&](const SequenceSet& set) {
    ExampleSet e(set, *cell.transitions, *cell.format, cell.vocab);
    std::vector<Tokens> out;
    for (size_t i = 0; i < e.size(); ++i) {
      Tokens tokens(e.width(i)), targets(e.width(i));
      e.encode(i, tokens.data(), targets.data());
      out.push_back(tokens);
    }
    return out;
  };
  const auto train = traces(all.train), start = traces(some.train), held = traces(all.validation);
  BOOST_TEST(start.size() == 50u);
  BOOST_TEST(std::equal(start.begin(), start.end(), train.begin()));
  std::set<Tokens> seen(train.begin(), train.end());
  BOOST_TEST(seen.size() == train.size());
  for (const auto& t : held) BOOST_TEST(!seen.count(t));
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

namespace {
std::string table_text(const std::function<int64_t(int, int)>& product, int n) {
  std::string text = "[";
  for (int s = 0; s < n; ++s) {
    text += s ? ", [" : "[";
    for (int a = 0; a < n; ++a) text += (a ? ", " : "") + std::to_string(product(s, a));
    text += "]";
  }
  return text + "]";
}
std::shared_ptr<Task> cayley(const std::string& table, const std::string& more = "") {
  auto options = yaml::load_string("name: cayley\n" + more + "table: " + table + "\n", "task.yaml");
  return test::plugins().make_task("cayley", TaskContext{options});
}
std::string cayley_refusal(const std::string& table, const std::string& more = "") {
  try {
    cayley(table, more);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// Z_5 as a table is the modular task: the same sequences (they depend on the action count
// only) with the same states, so the same data in every format.
BOOST_AUTO_TEST_CASE(cayley_z5_gives_the_data_of_modular_5) {
  Transitions table(cayley(table_text([](int s, int a) { return (s + a) % 5; }, 5)), "cayley");
  auto options = yaml::load_string("name: modular\nm: 5\n", "task.yaml");
  Transitions modular(test::plugins().make_task("modular", TaskContext{options}), "modular");
  BOOST_TEST(table.num_actions() == 5);
  BOOST_TEST(table.num_states() == 5);
  BOOST_TEST(table.initial_state() == modular.initial_state());
  DataSpec spec;
  spec.num_actions = 5;
  spec.distribution = &distribution_named("uniform");
  spec.L = 6;
  Split split = make_split(spec, 500, 3);
  size_t compared = 0;
  for (const SequenceSet* set : {&split.train, &split.validation})
    for (size_t i = 0; i < set->size(); ++i) {
      const std::vector<int32_t> x = set->sequence(i);
      std::vector<int32_t> a(x.size()), b(x.size());
      table.prefix_states(x.data(), static_cast<int>(x.size()), a.data());
      modular.prefix_states(x.data(), static_cast<int>(x.size()), b.data());
      compared += a == b;
    }
  BOOST_TEST(compared == split.train.size() + split.validation.size());
  BOOST_TEST(compared > 500u);
}

// A non-abelian group: S_3 written as the table of the permutation task's own steps.
BOOST_AUTO_TEST_CASE(cayley_s3_steps_as_its_table_says) {
  auto s3 = permutation(3);
  auto t = cayley(table_text([&](int s, int a) { return s3->step(s, a); }, 6), "label: S3\n");
  for (int s = 0; s < 6; ++s)
    for (int a = 0; a < 6; ++a) BOOST_TEST(t->step(s, a) == s3->step(s, a));
  BOOST_TEST(t->initial_state() == 0);
}

BOOST_AUTO_TEST_CASE(cayley_refuses_tables_that_are_not_groups) {
  std::string m =
      cayley_refusal("[[0, 1, 2], [1, 2, 0], [2, 1, 0]]");  // identity 0, not associative
  BOOST_TEST(
      m.find("task.yaml:2:8: table: not associative: (1 * 1) * 1 = 1 but 1 * (1 * 1) = 0") == 0u,
      m);
  m = cayley_refusal("[[0, 1], [1, 1]]");  // a monoid, not a group
  BOOST_TEST(m.find("not a group: element 1 has no inverse") != std::string::npos, m);
  BOOST_CHECK_NO_THROW(cayley("[[0, 1], [1, 1]]", "structure: monoid\n"));
  m = cayley_refusal("[[0, 1], [1, 2]]");
  BOOST_TEST(m.find("not closed: table[1][1] = 2 is not an element (0..1)") != std::string::npos,
             m);
  m = cayley_refusal("[[0, 1], [1, zero]]");
  BOOST_TEST(m.find("task.yaml:2:21: table[1][1]: expected an integer, got 'zero'") == 0u, m);
  m = cayley_refusal("[[1, 0], [0, 0]]");
  BOOST_TEST(m.find("has no identity element") != std::string::npos, m);
  m = cayley_refusal("[[0, 1], [1]]");
  BOOST_TEST(m.find("row 1 has 1 entries") != std::string::npos, m);
}

namespace {
std::shared_ptr<Task> dyck(int k, int depth) {
  auto options = yaml::load_string(
      "name: dyck\nk: " + std::to_string(k) + "\ndepth: " + std::to_string(depth), "task.yaml");
  return test::plugins().make_task("dyck", TaskContext{options});
}
// Bracket strings checked without the plugin: actions 0..k-1 open a type, k..2k-1 close one;
// valid when every close matches the top and no prefix is deeper than `depth`. The stacks
// after each action, bottom first, as the plugin names them ("([", "-" when empty).
bool simulate(const std::vector<int32_t>& x, int k, int depth,
              std::vector<std::string>* stacks = nullptr) {
  std::string stack;
  for (int32_t a : x) {
    if (a < k) {
      if (static_cast<int>(stack.size()) == depth) return false;
      stack += "([{<"[a];
    } else {
      if (stack.empty() || stack.back() != "([{<"[a - k]) return false;
      stack.pop_back();
    }
    if (stacks) stacks->push_back(stack.empty() ? "-" : stack);
  }
  return true;
}
}  // namespace

// Counting by dynamic programming and unranking against brute force: every string of A^n in
// lexicographic order, kept when valid, is the language's list of length n.
BOOST_AUTO_TEST_CASE(dyck_counts_and_unranking_match_brute_force_enumeration) {
  for (auto [k, depth] : std::vector<std::pair<int, int>>{{1, 2}, {2, 2}, {2, 3}, {3, 1}}) {
    Transitions t(dyck(k, depth), "dyck");
    BOOST_TEST(!t.total());
    auto language = Language::of(t, 7, "dyck");
    BOOST_REQUIRE(language);
    for (int n = 1; n <= 7; ++n) {
      std::vector<std::vector<int32_t>> valid;
      std::vector<int32_t> x(n, 0);
      for (bool more = true; more;) {
        if (simulate(x, k, depth)) valid.push_back(x);
        int i = n - 1;  // the next string in lexicographic order (first action most significant)
        while (i >= 0 && ++x[i] == 2 * k) x[i--] = 0;
        more = i >= 0;
      }
      BOOST_TEST(language->count(n) == valid.size(), "k " << k << " depth " << depth << " n " << n);
      std::vector<int32_t> out(n);
      size_t same = 0;
      for (size_t i = 0; i < valid.size(); ++i) {
        language->unrank(n, i, out.data());
        same += out == valid[i];
      }
      BOOST_TEST(same == valid.size());
    }
  }
  // A group allows every action: no language, its data stay all of A^n.
  auto options = yaml::load_string("name: modular\nm: 5\n", "task.yaml");
  Transitions z5(test::plugins().make_task("modular", TaskContext{options}), "modular");
  BOOST_TEST(!Language::of(z5, 7, "modular"));
}

// A Dyck ACoT cell: every sequence drawn is valid, training and validation are disjoint and
// together every valid sequence at N_max, and the labels (prefix states) are the stacks.
BOOST_AUTO_TEST_CASE(a_dyck_cell_draws_only_valid_strings_labelled_by_their_stacks) {
  auto task = dyck(2, 3);
  CellData cell = make_cell_data(task, "dyck", format("name: acot"), "uniform", 8,
                                 ValidationPolicy{}, 16'000'000);
  BOOST_REQUIRE(cell.data.language);
  const DataPlan plan = plan_data(cell.data);
  Split split = make_split(cell.data, plan.n_max, 4);
  std::set<std::vector<int32_t>> seen;
  size_t valid = 0, labelled = 0;
  for (const SequenceSet* set : {&split.train, &split.validation})
    for (size_t i = 0; i < set->size(); ++i) {
      const std::vector<int32_t> x = set->sequence(i);
      std::vector<std::string> stacks;
      valid += simulate(x, 2, 3, &stacks);
      std::vector<int32_t> states(x.size());
      cell.transitions->prefix_states(x.data(), static_cast<int>(x.size()), states.data());
      bool same = stacks.size() == x.size();
      for (size_t j = 0; same && j < x.size(); ++j) same = task->state_name(states[j]) == stacks[j];
      labelled += same;
      seen.insert(x);
    }
  const size_t total = split.train.size() + split.validation.size();
  BOOST_TEST(valid == total);
  BOOST_TEST(labelled == total);
  BOOST_TEST(seen.size() == total);            // distinct
  BOOST_TEST(total == plan.available);         // every valid string of lengths 2..8
  Split small = make_split(cell.data, 50, 4);  // the prefix property
  for (size_t i = 0; i < small.train.size(); ++i)
    BOOST_TEST(small.train.sequence(i) == split.train.sequence(i));
}
