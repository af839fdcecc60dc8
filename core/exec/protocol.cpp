#include "exec/protocol.hpp"

#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "train/trial.hpp"
#include "util/files.hpp"

namespace induct {

YAML::Node progress_message(uint64_t job, const EvalPoint& point, double best_loss) {
  YAML::Node message;
  message["type"] = "progress";
  message["job"] = job;
  message["step"] = point.step;
  message["train_loss"] = point.train_loss;
  message["val_loss"] = point.val_loss;
  message["best_loss"] = best_loss;
  return message;
}

EvalPoint progress_point(const YAML::Node& message) {
  return {message["step"].as<int64_t>(), message["train_loss"].as<double>(),
          message["val_loss"].as<double>()};
}

bool write_message(int fd, const YAML::Node& message) {
  YAML::Emitter emitter;
  emitter << message;
  std::string payload = emitter.c_str();
  std::string frame = std::to_string(payload.size()) + "\n" + payload;
  return write_all(fd, frame.data(), frame.size());
}

void MessageReader::parse_buffer() {
  for (;;) {
    auto newline = buffer_.find('\n');
    if (newline == std::string::npos) return;
    size_t size = std::stoull(buffer_.substr(0, newline));
    if (buffer_.size() < newline + 1 + size) return;
    ready_.push_back(YAML::Load(buffer_.substr(newline + 1, size)));
    buffer_.erase(0, newline + 1 + size);
  }
}

bool MessageReader::read_available() {
  char chunk[65536];
  ssize_t got;
  do {
    got = ::read(fd_, chunk, sizeof chunk);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return false;
  buffer_.append(chunk, static_cast<size_t>(got));
  parse_buffer();
  return true;
}

bool MessageReader::pop(YAML::Node& message) {
  if (ready_.empty()) return false;
  message = ready_.front();
  ready_.pop_front();
  return true;
}

bool MessageReader::read_one(YAML::Node& message) {
  while (ready_.empty())
    if (!read_available()) return false;
  return pop(message);
}

}  // namespace induct
