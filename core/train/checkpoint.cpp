#include "train/checkpoint.hpp"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <filesystem>

#include "induct/options.hpp"
#include "train/archive_file.hpp"

namespace induct {

std::string checkpoint_path(const std::string& checkpoint_dir, const std::string& key) {
  return (std::filesystem::path(checkpoint_dir) / (key + ".pt")).string();
}

void save_checkpoint(SequenceModel& model, const std::string& path) {
  namespace fs = std::filesystem;
  fs::create_directories(fs::path(path).parent_path());
  torch::serialize::OutputArchive archive;
  model.save(archive);
  write_archive_file(archive, path);
}

void load_checkpoint(SequenceModel& model, const std::string& path) {
  if (!std::filesystem::exists(path)) throw ConfigError(path + ": no such checkpoint");
  try {
    torch::serialize::InputArchive archive;
    read_archive_file(archive, path);
    model.load(archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(path + ": not a checkpoint of this model (" +
                             e.what_without_backtrace() +
                             "); delete it and rerun to train the configuration again");
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": not a usable checkpoint (" + std::string(e.what()) +
                             "); delete it and rerun to train the configuration again");
  }
}

}  // namespace induct
