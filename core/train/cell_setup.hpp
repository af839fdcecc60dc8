// A cell's task, format and model built from their sections, with every check in one place:
// used by the coordinator (to validate a study before it runs) and by the workers.
#pragma once

#include <torch/types.h>

#include <memory>

#include "data/dataset.hpp"
#include "data/transitions.hpp"
#include "format/format.hpp"
#include "induct/model.hpp"
#include "plugin/registry.hpp"
#include "train/settings.hpp"
#include "train/trial.hpp"

namespace induct {

// The task of a `task:` section; rejects keys the plugin did not read.
std::shared_ptr<Task> make_task_checked(const PluginRegistry& registry, const Options& section);
// The format of a `format:` section (its name and options); rejects keys the plugin did not read.
std::shared_ptr<const Format> make_format_checked(const PluginRegistry& registry,
                                                  const Options& section);
// A cell's resolved format (Cell::format: a name, or a map with its name) as a section.
Options format_section(const YAML::Node& format);

struct ModelShape {
  int64_t vocab_size = 0;
  int64_t max_length = 0;
  int64_t pad = 0;
};

// The model of a `model:` section: seeds torch with `seed`, calls the factory, rejects keys
// the plugin did not read, moves it to `device` and checks that a forward pass on
// [2, max_length] tokens gives [2, max_length, vocab_size] logits (PluginError otherwise).
std::shared_ptr<SequenceModel> make_model_checked(const PluginRegistry& registry,
                                                  const Options& section, const ModelShape& shape,
                                                  uint64_t seed, torch::Device device);

// A sequence model's logits at t may depend on tokens 0..t only (next-token prediction): a
// PluginError naming `who`, the first position whose logits change and the later position
// changed when they do, over the first kCausalCheckLength positions (one forward pass of at
// most 33 sequences).
inline constexpr int64_t kCausalCheckLength = 128;
// "[2, 10, 6]": a tensor shape in messages.
std::string shape_string(const at::IntArrayRef& sizes);

// "model 'lstm' (/path/libinduct_lstm.so)": how errors about a model name it.
std::string model_who(const PluginRegistry& registry, const std::string& name);
void check_causal(SequenceModel& model, const ModelShape& shape, torch::Device device,
                  const std::string& who);

// Everything a trial of a cell needs besides the model.
struct CellData {
  std::shared_ptr<Task> task;
  std::shared_ptr<Transitions> transitions;
  Vocabulary vocab;
  std::shared_ptr<const Format> format;
  DataSpec data;
};
CellData make_cell_data(const PluginRegistry& registry, const Cell& cell);
// The same from a task and format already made (the coordinator's view).
CellData make_cell_data(const std::shared_ptr<Task>& task, const std::string& task_name,
                        std::shared_ptr<const Format> format, const std::string& distribution,
                        int L, const ValidationPolicy& validation, uint64_t n_cap);

// Whether a format agrees with itself on sequences of 1..longest actions of the cell's task
// (a few lengths past 64): encode() writes sequence_length(n) tokens, every token in the
// vocabulary, every target kNoTarget or a token, the final state at final_position(n);
// lengths never shrink; prompt_length(n) in [1, sequence_length(n)]; action positions all -1
// or increasing inside the sequence. A PluginError naming `who` and the first disagreement.
void check_format(const CellData& cell, int longest, const std::string& who);

// The failure detector's plateau reference for a cell's trials (TrainSettings::plateau_level):
// kTask, the chance loss over the cell's sequences (all of them where the space holds at most
// kPlateauSample besides the validation set, else a fixed draw of that many: the same for every
// N and seed); kValidation, over `validation` (the set the trial evaluates on).
inline constexpr uint64_t kPlateauSample = 4096;
double plateau_loss(const CellData& cell, const ExampleSet& validation,
                    TrainSettings::PlateauLevel level);

}  // namespace induct
