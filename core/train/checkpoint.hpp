// A trained model's checkpoint: its parameters and buffers in one file, whole or absent.
#pragma once

#include <string>

#include "induct/model.hpp"

namespace induct {

// DIR/checkpoints/<trial key>.pt: where a trial with checkpoint_dir DIR/checkpoints saves its
// trained model.
std::string checkpoint_path(const std::string& checkpoint_dir, const std::string& key);
// LibTorch's serialization of the model's parameters and buffers (by name), written to a
// temporary file and renamed, so a checkpoint is whole or absent; load_checkpoint reads one
// into a model built from the same cell (a name or shape that differs is an error).
void save_checkpoint(SequenceModel& model, const std::string& path);
void load_checkpoint(SequenceModel& model, const std::string& path);

}  // namespace induct
