// LibTorch archives on disk (training states, checkpoints), written whole or not at all and
// carrying a digest of their bytes: a file cut short, flipped or written by anything else is
// detected when read, never trusted.
#pragma once

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <string>

namespace induct {

// Serializes `archive` in memory, then writes "induct-archive <digest> <bytes>\n" and the bytes
// to a temporary file beside `path` (`path`.<host>.<pid>.partial), renamed over it. Throws
// std::runtime_error naming the file when it cannot be written (a full disk); the temporary file is
// removed then.
void write_archive_file(torch::serialize::OutputArchive& archive, const std::string& path);

// Reads a file written by write_archive_file into `archive` (tensors onto `device`). Throws
// std::runtime_error with a one-line reason when the file is not one (no header: written by an
// earlier induct or by something else) or its bytes do not match its digest (damaged).
void read_archive_file(torch::serialize::InputArchive& archive, const std::string& path,
                       c10::optional<torch::Device> device = c10::nullopt);

// Why the file at `path` is not a whole archive written by write_archive_file ("no such file",
// "damaged: ..."), without loading it; "" when it verifies.
std::string archive_file_problem(const std::string& path);

// Removes the temporary files under `dir` (any depth) that writers on this machine left when
// they were killed: those whose process is gone. A file of a live process, or of another
// machine (a rank elsewhere may still be writing it), stays. Returns how many were removed.
size_t remove_stale_partial_files(const std::string& dir);

}  // namespace induct
