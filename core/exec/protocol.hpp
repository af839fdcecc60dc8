// Messages between the coordinator and its worker processes: YAML documents framed as
// "<byte count>\n<document>" on pipes.
#pragma once

#include <yaml-cpp/yaml.h>

#include <deque>
#include <string>

namespace induct {

struct EvalPoint;

// Writes one message; false when the other end is gone.
bool write_message(int fd, const YAML::Node& message);

// A trial's progress at an evaluation (a worker's report, which an MPI rank relays), and back.
YAML::Node progress_message(uint64_t job, const EvalPoint& point, double best_loss);
EvalPoint progress_point(const YAML::Node& message);

class MessageReader {
 public:
  explicit MessageReader(int fd) : fd_(fd) {}
  // Reads what is available without blocking (fd must be readable or non-blocking) and
  // appends complete messages to the queue; false at end of file.
  bool read_available();
  // Blocks until a message is complete; false at end of file with none left.
  bool read_one(YAML::Node& message);
  bool pop(YAML::Node& message);
  int fd() const { return fd_; }

 private:
  void parse_buffer();
  int fd_;
  std::string buffer_;
  std::deque<YAML::Node> ready_;
};

}  // namespace induct
