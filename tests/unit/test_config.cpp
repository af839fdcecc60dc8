// Study files: errors name the key with file, line and column; overrides; resolution.
#define BOOST_TEST_MODULE config
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <sstream>

#include "config/study_config.hpp"
#include "options_yaml.hpp"
#include "study/prepare.hpp"
#include "study/registry.hpp"
#include "support.hpp"

using namespace induct;

namespace {

const char* kStudy = R"(study: train
task:
  name: modular
  m: 2
model:
  name: lstm
  hidden: 16
data:
  format: acot
  distribution: uniform
  L: 6
  N: 32
training:
  seeds: [1, 2]
)";

std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    StudyConfig study = load_study_text(text, "study.yaml", sets);
    prepare_study(study, test::plugins());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_valid_study_reads_back) {
  StudyConfig study = load_study_text(kStudy, "study.yaml");
  BOOST_TEST(study.kind == "train");
  BOOST_TEST(study.name == "study");
  BOOST_REQUIRE(study.cells.size() == 1u);
  BOOST_TEST(study.cells[0].L == 6);
  BOOST_TEST(study.cells[0].n == 32u);
  BOOST_TEST(study.learning_rates.size() == 3u);  // the paper's default grid
  BOOST_TEST(study.seeds == (std::vector<uint64_t>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(study.training.max_steps == 250000);
  BOOST_TEST(error_of(kStudy) == "");
}

// --shard I/N: every cell of the grid in exactly one shard, for N = 1..5 (7 cells: some shards
// get none when N does not divide them), each shard's cells in the grid's order.
BOOST_AUTO_TEST_CASE(shards_cover_every_cell_once) {
  const StudyConfig study = load_study_text(R"(study: train
task: {name: modular, m: 2}
model: {name: lstm, hidden: 8}
data: {format: acot, distribution: uniform, L: 3, N: 10}
grid: {data.L: [3, 4, 5, 6, 7, 8, 9]}
)",
                                            "study.yaml");
  BOOST_REQUIRE_EQUAL(study.cells.size(), 7u);
  for (size_t shards = 1; shards <= 5; ++shards) {
    std::vector<int> seen;
    for (size_t index = 0; index < shards; ++index) {
      const std::vector<CellSpec> part = shard_cells(study.cells, index, shards);
      for (size_t k = 1; k < part.size(); ++k) BOOST_TEST(part[k - 1].L < part[k].L);
      for (const CellSpec& cell : part) seen.push_back(cell.L);
    }
    std::sort(seen.begin(), seen.end());
    BOOST_TEST((seen == std::vector<int>{3, 4, 5, 6, 7, 8, 9}), "N = " << shards);
  }
}

BOOST_AUTO_TEST_CASE(misspelt_top_level_key_names_key_and_line) {
  std::string message = error_of(replace(kStudy, "training:", "trainig:"));
  BOOST_TEST(message.find("study.yaml:13:1: unknown key 'trainig'") != std::string::npos, message);
  BOOST_TEST(message.find("did you mean 'training'") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(misspelt_plugin_key_names_key_line_and_plugin) {
  std::string message = error_of(replace(kStudy, "hidden: 16", "hiden: 16"));
  BOOST_TEST(message.find("study.yaml:7:3: unknown key 'model.hiden'") != std::string::npos,
             message);
  BOOST_TEST(message.find("did you mean 'hidden'") != std::string::npos, message);
  BOOST_TEST(message.find("model 'lstm'") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(impossible_values_name_key_and_line) {
  BOOST_TEST(error_of(replace(kStudy, "L: 6", "L: 1"))
                 .find("study.yaml:11:6: data.L: must be at least 2") != std::string::npos);
  BOOST_TEST(error_of(replace(kStudy, "N: 32", "N: 0"))
                 .find("study.yaml:12:6: data.N: must be at least 1") != std::string::npos);
  BOOST_TEST(error_of(replace(kStudy, "m: 2", "m: 1"))
                 .find("study.yaml:4:6: task.m: must be at least 2") != std::string::npos);
  std::string lr = error_of(replace(kStudy, "seeds: [1, 2]", "learning_rates: [1e-3, -1e-4]"));
  BOOST_TEST(lr.find("training.learning_rates: every learning rate must be a positive number") !=
                 std::string::npos,
             lr);
  std::string type = error_of(replace(kStudy, "hidden: 16", "hidden: wide"));
  BOOST_TEST(type.find("study.yaml:7:11: model.hidden: expected an integer, got 'wide'") !=
                 std::string::npos,
             type);
  std::string list = error_of(replace(kStudy, "seeds: [1, 2]", "seeds: [1, x]"));
  BOOST_TEST(
      list.find("study.yaml:14:14: training.seeds[1]: expected a non-negative integer, got 'x'") !=
          std::string::npos,
      list);
  std::string accuracy = error_of(std::string(kStudy) + "report: {min_accuracy: 1.5}\n");
  BOOST_TEST(accuracy.find("report.min_accuracy: must be in [0, 1]") != std::string::npos,
             accuracy);
  std::string inf = error_of(replace(kStudy, "seeds: [1, 2]", "epsilon: .inf"));
  BOOST_TEST(inf.find("training.epsilon: must be a positive finite number") != std::string::npos,
             inf);
  std::string twice =
      error_of(replace(replace(replace(kStudy, "study: train", "study: sharing"), "  N: 32\n", ""),
                       "  distribution: uniform\n  L: 6\n", "") +
               "sharing: {lengths: [2, 3, 2]}\n");
  BOOST_TEST(twice.find("sharing.lengths: L = 2 is listed twice") != std::string::npos, twice);
  std::string second = error_of(std::string(kStudy) + "---\nstudy: nstar\n");
  BOOST_TEST(second.find("study.yaml:15:1: a second YAML document") != std::string::npos, second);
  std::string level =
      error_of(replace(kStudy, "seeds: [1, 2]", "stall_window: 100\n  plateau_level: training"));
  BOOST_TEST(level.find("training.plateau_level: must be task") != std::string::npos, level);
  // Nesting past yaml-cpp's guard is named as such (its own message says "bad file").
  std::string deep = error_of(std::string(kStudy) + "x: " + std::string(3000, '[') +
                              std::string(3000, ']') + "\n");
  BOOST_TEST(deep.find("levels deep") != std::string::npos, deep);
  BOOST_TEST(deep.find("study.yaml:") == 0u, deep);
  // Numbers are decimal: a hex float or integer is refused where it was written.
  std::string hex = error_of(replace(kStudy, "seeds: [1, 2]", "learning_rates: [0x10]"));
  BOOST_TEST(
      hex.find("training.learning_rates[0]: expected a number, got '0x10'") != std::string::npos,
      hex);
  std::string hex_seed = error_of(replace(kStudy, "seeds: [1, 2]", "seeds: [0x1p3]"));
  BOOST_TEST(hex_seed.find("got '0x1p3'") != std::string::npos, hex_seed);
  std::string format = error_of(replace(kStudy, "format: acot", "format: acto"));
  BOOST_TEST(format.find("study.yaml:9:11: data.format: unknown format 'acto' (available "
                         "formats: acot, code_trace, cot, outcome") == 0u,
             format);
}

// A format with options is a section; its keys are the plugin's, checked like a model's, and
// a format without options keys its trials by its name alone (as before formats had options).
BOOST_AUTO_TEST_CASE(a_format_section_carries_its_options) {
  const std::string trace =
      replace(kStudy, "format: acot", "format:\n    name: code_trace\n    every: 2");
  StudyConfig study = load_study_text(trace, "study.yaml");
  auto cells = prepare_study(study, test::plugins());
  BOOST_TEST(cells[0].label ==
             "modular(m=2) lstm(hidden=16,layers=1) code_trace(every=2) uniform L=6");
  BOOST_TEST(cells[0].cell.format_name() == "code_trace");
  BOOST_TEST(cells[0].vocab_size == 2 + 2 + 2 + 5);  // x = * ; print
  BOOST_TEST(cells[0].max_length == 6 * 6 + 3 * 2 + 2);
  BOOST_TEST(cells[0].action_positions);
  StudyConfig plain = load_study_text(kStudy, "study.yaml");
  auto acot = prepare_study(plain, test::plugins());
  BOOST_TEST(acot[0].cell.format.IsScalar());
  BOOST_TEST(yaml::flow(acot[0].cell.to_yaml()).find("format: acot") != std::string::npos);
  BOOST_TEST(acot[0].plugin_versions.find("format") == std::string::npos);  // 1.0.0
  // A default written out is the same cell; a typo is the plugin's unknown key.
  StudyConfig written = load_study_text(
      replace(kStudy, "format: acot", "format:\n    name: code_trace\n    every: 4"), "s.yaml");
  StudyConfig defaulted =
      load_study_text(replace(kStudy, "format: acot", "format: {name: code_trace}"), "s.yaml");
  BOOST_TEST(prepare_study(written, test::plugins())[0].key() ==
             prepare_study(defaulted, test::plugins())[0].key());
  const std::string typo =
      error_of(replace(kStudy, "format: acot", "format: {name: code_trace, evry: 2}"));
  BOOST_TEST(typo.find("data.format.evry") != std::string::npos, typo);
  BOOST_TEST(typo.find("format 'code_trace'") != std::string::npos, typo);
  const std::string unknown = error_of(replace(kStudy, "format: acot", "format: {name: trace}"));
  BOOST_TEST(unknown.find("data.format.name: unknown format 'trace'") != std::string::npos,
             unknown);
  // The grid reaches into the section.
  StudyConfig grid = load_study_text(replace(trace, "study: train", "study: nstar").substr(0) +
                                         "grid:\n  data.format.every: [1, 3]\n",
                                     "study.yaml");
  BOOST_TEST(grid.cells.size() == 2u);
}

BOOST_AUTO_TEST_CASE(syntax_errors_and_duplicate_keys_are_located) {
  std::string syntax = error_of("study: train\ntask: [unclosed\n");
  BOOST_TEST(syntax.find("study.yaml:") == 0u, syntax);
  BOOST_TEST(syntax.find("YAML syntax error") != std::string::npos, syntax);
  std::string duplicate = error_of(std::string(kStudy) + "task: {name: modular, m: 3}\n");
  BOOST_TEST(duplicate.find("study.yaml:15:1: duplicate key 'task' (first at line 2)") !=
                 std::string::npos,
             duplicate);
}

BOOST_AUTO_TEST_CASE(overrides_apply_and_are_named_in_errors) {
  StudyConfig study = load_study_text(kStudy, "study.yaml", {"data.L=8", "training.seeds=[5,6,7]"});
  BOOST_TEST(study.cells[0].L == 8);
  BOOST_TEST(study.seeds.size() == 3u);
  std::string message = error_of(kStudy, {"data.L=1"});
  BOOST_TEST(message.find("--set data.L=1: data.L: must be at least 2") != std::string::npos,
             message);
  std::string unknown = error_of(kStudy, {"model.depth=2"});
  BOOST_TEST(unknown.find("--set model.depth=2: unknown key 'model.depth'") != std::string::npos,
             unknown);
}

BOOST_AUTO_TEST_CASE(integers_may_be_written_in_scientific_notation) {
  StudyConfig study = load_study_text(replace(kStudy, "N: 32", "N: 1e3"), "s.yaml");
  BOOST_TEST(study.cells[0].n == 1000u);
  std::string message = error_of(replace(kStudy, "N: 32", "N: 1.5"));
  BOOST_TEST(
      message.find("data.N: expected a non-negative integer, got '1.5'") != std::string::npos,
      message);
}

BOOST_AUTO_TEST_CASE(resolved_config_holds_defaults) {
  StudyConfig study = load_study_text(kStudy, "study.yaml");
  prepare_study(study, test::plugins());
  YAML::Node resolved = yaml::resolved(study.root);
  BOOST_TEST(resolved["training"]["max_steps"].as<long>() == 250000);
  BOOST_TEST(resolved["training"]["epsilon"].as<double>() == 1e-4);
  YAML::Node cell = yaml::resolved(study.cells[0].root);
  BOOST_TEST(cell["model"]["hidden"].as<long>() == 16);
  BOOST_TEST(cell["data"]["validation"]["fraction"].as<double>() == 0.2);
}

BOOST_AUTO_TEST_CASE(grid_expands_into_the_cartesian_product) {
  std::string text = replace(kStudy, "study: train", "study: nstar");
  text = replace(text, "  N: 32\n", "");
  text += "grid:\n  task.m: [2, 3]\n  data:\n    format: [outcome, acot]\n    L: [4, 6, 8]\n";
  StudyConfig study = load_study_text(text, "study.yaml");
  BOOST_REQUIRE(study.cells.size() == 12u);
  // The last key varies fastest.
  BOOST_TEST(study.cells[0].grid_label == "task.m=2, data.format=outcome, data.L=4");
  BOOST_TEST(study.cells[1].L == 6);
  BOOST_TEST(study.cells[3].format_name == "acot");
  BOOST_TEST(study.cells[11].grid_label == "task.m=3, data.format=acot, data.L=8");
  auto cells = prepare_study(study, test::plugins());
  BOOST_TEST(cells[11].num_actions == 3);
  BOOST_TEST(cells[0].label == "modular(m=2) lstm(hidden=16,layers=1) outcome uniform L=4");
}

BOOST_AUTO_TEST_CASE(grid_errors_point_at_the_grid) {
  std::string text = replace(kStudy, "study: train", "study: nstar");
  text = replace(text, "  N: 32\n", "");
  std::string bad_value = error_of(text + "grid:\n  data.L: [4, 1]\n");
  BOOST_TEST(bad_value.find("study.yaml:15:15 (grid data.L): data.L: must be at least 2") !=
                 std::string::npos,
             bad_value);
  std::string bad_key = error_of(text + "grid:\n  model.hiden: [8]\n");
  BOOST_TEST(bad_key.find("(grid model.hiden): unknown key 'model.hiden'") != std::string::npos,
             bad_key);
  std::string outside = error_of(text + "grid:\n  training.seeds: [[1]]\n");
  BOOST_TEST(outside.find("grid.training.seeds: a grid varies keys under task, model or data") !=
                 std::string::npos,
             outside);
}

BOOST_AUTO_TEST_CASE(study_kinds_read_their_own_keys) {
  // nstar has no N: a given N is an unknown key.
  std::string nstar = error_of(replace(kStudy, "study: train", "study: nstar"));
  BOOST_TEST(nstar.find("unknown key 'data.N'") != std::string::npos, nstar);
  // sharing sets distribution and L itself.
  std::string sharing =
      error_of(replace(replace(kStudy, "study: train", "study: sharing"), "  N: 32\n", ""));
  BOOST_TEST(sharing.find("unknown key 'data.distribution'") != std::string::npos, sharing);
  std::string unknown = error_of(replace(kStudy, "study: train", "study: search"));
  BOOST_TEST(unknown.find("'search' is not one of: train, nstar, sharing, lengthgen, probe") !=
                 std::string::npos,
             unknown);
}

BOOST_AUTO_TEST_CASE(sharing_prepares_fixed_and_uniform_cells) {
  std::string text = replace(replace(kStudy, "study: train", "study: sharing"), "  N: 32\n", "");
  text = replace(replace(text, "  distribution: uniform\n", ""), "  L: 6\n", "");
  text += "sharing:\n  lengths: [2, 3, 4]\n";
  StudyConfig study = load_study_text(text, "study.yaml");
  auto cells = prepare_study(study, test::plugins());
  // Fixed n = 2, 3, 4, then Uniform L = 3, 4 (L = 2 is the Fixed cell).
  BOOST_REQUIRE(cells.size() == 5u);
  BOOST_TEST(cells[0].cell.distribution == "fixed");
  BOOST_TEST(cells[2].cell.L == 4);
  BOOST_TEST(cells[3].cell.distribution == "uniform");
  BOOST_TEST(cells[4].cell.L == 4);
}

// Issue-16 cases: each was silently accepted, or crashed or hung the host.
BOOST_AUTO_TEST_CASE(an_alias_bomb_is_refused_within_a_second) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    bomb += std::string(1, c) + ": &" + c + " [*" + char(c - 1) + ", *" + char(c - 1) + ", *" +
            char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" +
            char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + "]\n";
  const auto start = std::chrono::steady_clock::now();
  std::string message = error_of(std::string(kStudy) + "unused:\n" + [&] {
    std::string indented;
    std::stringstream lines(bomb);
    for (std::string line; std::getline(lines, line);) indented += "  " + line + "\n";
    return indented;
  }());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(message.find("study.yaml:") == 0u, message);
  BOOST_TEST(message.find("expands to more than 100000 YAML nodes") != std::string::npos, message);
  BOOST_TEST(seconds < 1.0);
  std::string in_set = error_of(kStudy, {"model.x=" + std::string("{") + [&] {
                                  std::string flow;
                                  std::stringstream lines(bomb);
                                  for (std::string line; std::getline(lines, line);)
                                    flow += (flow.empty() ? "" : ", ") + line;
                                  return flow;
                                }() + "}"});
  BOOST_TEST(in_set.find("--set model.x=") == 0u, in_set);
  BOOST_TEST(in_set.find("expands to more than") != std::string::npos, in_set);
}

BOOST_AUTO_TEST_CASE(a_key_without_a_value_is_an_error) {
  std::string in_file = error_of(replace(kStudy, "hidden: 16", "hidden:"));
  BOOST_TEST(in_file.find("study.yaml:8:1") == 0u, in_file);
  BOOST_TEST(in_file.find("model.hidden: has no value") != std::string::npos, in_file);
  std::string empty_set = error_of(kStudy, {"training.max_steps="});
  BOOST_TEST(empty_set ==
             "--set training.max_steps=: no value after '=' (to use the default, "
             "leave the --set out)");
  std::string nested = error_of(kStudy, {"model={name: lstm, hidden: }"});
  BOOST_TEST(nested.find("--set model={name: lstm, hidden: }: model.hidden: has no value") == 0u,
             nested);
  // An empty section is still an empty section.
  BOOST_TEST(error_of(std::string(kStudy) + "run:\n") == "");
}

BOOST_AUTO_TEST_CASE(overrides_name_themselves_and_may_not_fight_the_grid) {
  std::string text = replace(kStudy, "study: train", "study: nstar");
  text = replace(text, "  N: 32\n", "");
  const std::string grid = text + "grid:\n  model: [{name: lstm, hidden: 128}]\n";
  std::string fight = error_of(grid, {"model.hidden=32"});
  BOOST_TEST(fight.find("--set model.hidden=32: the grid varies model (study.yaml:15:11)") == 0u,
             fight);
  // Changing the grid itself is how to vary it.
  StudyConfig study =
      load_study_text(grid, "study.yaml", {"grid.model=[{name: lstm, hidden: 32}]"});
  BOOST_TEST(yaml::flow(yaml::raw(study.cells[0].model)) == "{name: lstm, hidden: 32}");
  // A grid written with a dotted key ("data.L") is overridden by the same path.
  StudyConfig dotted =
      load_study_text(text + "grid: {data.L: [4, 5]}\n", "study.yaml", {"grid.data.L=[6, 7, 8]"});
  BOOST_TEST(dotted.cells.size() == 3u);
  BOOST_TEST(dotted.cells[2].L == 8);
  std::string bad_grid_value = error_of(text, {"grid.data.L=[4, 1]"});
  BOOST_TEST(bad_grid_value.find(
                 "--set grid.data.L=[4, 1] (grid data.L): data.L: must be at least 2") == 0u,
             bad_grid_value);
  std::string unknown = error_of(kStudy, {"foo.bar=1"});
  BOOST_TEST(unknown.find("--set foo.bar=1: unknown key 'foo'") == 0u, unknown);
}

BOOST_AUTO_TEST_CASE(a_grid_sets_each_key_once) {
  std::string text = replace(kStudy, "study: train", "study: nstar");
  text = replace(text, "  N: 32\n", "");
  std::string twice = error_of(text + "grid: {data.L: [4, 5], data: {L: [6]}}\n");
  BOOST_TEST(twice.find("grid.data.L: given twice (also at study.yaml:14:17)") != std::string::npos,
             twice);
  std::string overlap = error_of(text + "grid:\n  model: [{name: lstm}]\n  model.hidden: [8]\n");
  BOOST_TEST(overlap.find("grid.model.hidden: overlaps grid.model (at study.yaml:15:11)") !=
                 std::string::npos,
             overlap);
}

BOOST_AUTO_TEST_CASE(sizes_a_study_asks_for_are_bounded) {
  std::string text = replace(kStudy, "study: train", "study: nstar");
  text = replace(text, "  N: 32\n", "");
  std::string values;
  for (int i = 0; i < 10000; ++i) values += (i ? ", " : "") + std::to_string(i + 2);
  const auto start = std::chrono::steady_clock::now();
  std::string huge = error_of(text + "grid: {task.m: [" + values + "]}\n");
  BOOST_TEST(huge.find("grid: more than 5000 cells; split the study into several files") !=
                 std::string::npos,
             huge);
  // 5,000 cells of a 5,000-value grid read in seconds: a cell shares the document, not copies it.
  values.clear();
  for (int i = 0; i < 5000; ++i) values += (i ? ", " : "") + std::to_string(i + 2);
  StudyConfig big = load_study_text(text + "grid: {task.m: [" + values + "]}\n", "study.yaml");
  BOOST_TEST(big.cells.size() == 5000u);
  BOOST_TEST(yaml::flow(yaml::raw(big.cells[4999].task)) == "{name: modular, m: 5001}");
  BOOST_TEST(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 20);
  std::string sharing = error_of(replace(replace(text, "study: nstar", "study: sharing"),
                                         "  distribution: uniform\n  L: 6\n", "") +
                                 "sharing: {lengths: [1e9]}\n");
  BOOST_TEST(sharing.find("sharing.lengths: every L must be at most 65535") != std::string::npos,
             sharing);
  std::string lengthgen =
      error_of(replace(replace(kStudy, "study: train", "study: lengthgen"), "L: 6", "L: 60000") +
               "lengthgen: {multiples: [1, 2], report_multiple: 2}\n");
  BOOST_TEST(lengthgen.find("lengthgen.multiples: reads sequences of length 120000 at L = "
                            "60000; at most 65535") != std::string::npos,
             lengthgen);
  // Data sets store lengths as 16-bit values: a longer L is refused by its key, not by a worker.
  std::string longer = error_of(replace(kStudy, "L: 6", "L: 70000"));
  BOOST_TEST(longer.find("data.L: must be at most 65535") != std::string::npos, longer);
  std::string batch =
      error_of(replace(kStudy, "seeds: [1, 2]", "seeds: [1, 2]\n  batch_size: 1e9"));
  BOOST_TEST(batch.find("training.batch_size: must be at most 1000000") != std::string::npos,
             batch);
  // A typo in a model's size is refused before anything is allocated.
  std::string wide = error_of(replace(kStudy, "hidden: 16", "hidden: 1e9"));
  BOOST_TEST(wide == "study.yaml:7:11: model.hidden: must be at most 65536", wide);
}

BOOST_AUTO_TEST_CASE(a_folder_is_not_a_study_file) {
  try {
    load_study(INDUCT_SOURCE_DIR, {});
    BOOST_FAIL("no error");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()) ==
               std::string(INDUCT_SOURCE_DIR) + ": a folder, not a study file");
  }
}

// Hydra's ${...} is not interpolated: such a value would be kept as literal text, so it is
// refused where it was written (the file's line, or the --set).
BOOST_AUTO_TEST_CASE(interpolation_is_refused_where_it_was_written) {
  const std::string in_file = error_of("name: ${data.format}_run\n" + std::string(kStudy));
  BOOST_TEST(in_file.find("study.yaml:1:7: name: '${data.format}_run' holds ${...}, and induct "
                          "does not interpolate") != std::string::npos,
             in_file);
  const std::string in_set = error_of(kStudy, {"model.name=${x}"});
  BOOST_TEST(
      in_set.find("--set model.name=${x}: model.name: '${x}' holds ${...}") != std::string::npos,
      in_set);
  const std::string in_list = error_of(replace(kStudy, "seeds: [1, 2]", "seeds: [1, \"${s}\"]"));
  BOOST_TEST(in_list.find("training.seeds: '${s}'") != std::string::npos, in_list);
  BOOST_TEST(error_of(replace(kStudy, "L: 6", "L: 6  # ${not a value}")) ==
             "");  // comments are not values
}

// yaml-cpp reads bytes that are not UTF-8 as U+FFFD without a word: refused at their line and
// column (or in the --set); UTF-8 beyond ASCII is read as written.
BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8_are_refused_where_they_are) {
  BOOST_TEST(error_of("name: \"ab\xff\"\n" + std::string(kStudy)) ==
             "study.yaml:1:10: not UTF-8 (byte 0xFF); a study file must be UTF-8 text");
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"})
    BOOST_TEST(error_of("name: x\n# " + std::string(bad) + "\n" + std::string(kStudy))
                       .find("study.yaml:2:3: not UTF-8") == 0u,
               bad);  // overlong, a surrogate, past U+10FFFF, cut short; in a comment too
  BOOST_TEST(error_of(kStudy, {"name=x\xfey"}).find("not UTF-8 (byte 0xFE)") != std::string::npos);
  // UTF-16 and UTF-32 without a byte-order mark: ASCII with NUL bytes between.
  std::string utf16;
  for (const char c : std::string("name: x\n") + kStudy) utf16 += std::string(1, c) + '\0';
  BOOST_TEST(
      error_of(utf16) ==
      "study.yaml:1:2: a NUL byte (UTF-16 or UTF-32 text?); a study file must be UTF-8 text");
  BOOST_TEST(error_of(std::string("\0\0\0n", 4)).find("study.yaml:1:1: a NUL byte") == 0u);
  BOOST_TEST(error_of("name: \"caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x93\x88\"\n" +
                      std::string(kStudy)) == "");
}

// yaml-cpp 0.7's LoadAll loops without end, allocating, on a ',' no node can start with
// outside [...] and {...} (as the document's first token, after any document marker, anchor or
// tag, starting a line less indented than the document, after a flow collection or quoted
// value; test_fuzz found the last kinds): the reader counts documents by where they start and
// refuses the ',' with its line and column (or the --set), while a ',' in a flow collection, a
// quoted scalar or a block scalar is YAML as before; and run's thread counts are bounded.
BOOST_AUTO_TEST_CASE(a_stray_comma_and_huge_thread_counts_are_refused) {
  for (const auto& [text, where] :
       std::vector<std::pair<std::string, std::string>>{{",\n", "1:1"},
                                                        {", a\n", "1:1"},
                                                        {",}\n", "1:1"},
                                                        {"# c\n, 1}\n", "2:1"},
                                                        {"---\n,\n", "2:1"},
                                                        {"--- ,\n", "1:5"},
                                                        {"%YAML 1.2\n---\n,\n", "3:1"},
                                                        {"study: train\n...\n,\n", "3:1"},
                                                        {"&a ,\n", "1:4"},
                                                        {"!!map ,\n", "1:7"},
                                                        {"! ,\n", "1:3"},
                                                        {"  a: 1\n, b\n", "2:1"},
                                                        {"  x: 1\n  y: 2\n , b\n", "3:2"},
                                                        {"   - a\n  , b\n", "2:3"},
                                                        {"  x: 1\n\n# c\n, b\n", "4:1"},
                                                        {"a\n#\n,\n", "3:1"},
                                                        {"a # c\n,\n", "2:1"},
                                                        {"{10, 20}, at most\n", "1:9"},
                                                        {"[1]\n, 2\n", "2:1"},
                                                        {"\"a\", b\n", "1:4"}}) {
    BOOST_TEST(error_of(text) == "study.yaml:" + where +
                                     ": YAML syntax error: ',' outside [...] and {...}, where it "
                                     "separates nothing",
               text << " -> " << error_of(text));
  }
  BOOST_TEST(error_of("study: train\n---\n,\n") ==
             "study.yaml:2:1: a second YAML document (after '---'); a study file holds one");
  for (const char* text : {"  x: \"a\n, b\"\n", "  x: [1,\n, 2]\n", "x: |\n  , text\n",
                           "  x: 'don''t\n, b'\n", "x: a[1], b\n", "x: it's, b\n",
                           "x: {a: [1, 2], b: 3}\n"})  // YAML: read, then refused by its key
    BOOST_TEST(error_of(text).find("unknown key 'x'") != std::string::npos, error_of(text));
  BOOST_TEST(error_of(kStudy, {"name=,"}) ==
             "--set name=,: YAML syntax error: ',' outside [...] and {...}, where it separates "
             "nothing");
  BOOST_TEST(error_of(kStudy, {"run.threads=100000"}).find("run.threads: must be at most 1024") !=
                 std::string::npos,
             error_of(kStudy, {"run.threads=100000"}));
  BOOST_TEST(error_of(kStudy, {"run.workers=4294967297"}).find("must be at most 1024") !=
             std::string::npos);
}
