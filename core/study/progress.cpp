#include "study/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <ostream>

namespace induct {

Progress::Progress(std::ostream& out, bool interactive, double quiet_interval)
    : out_(out),
      interactive_(interactive),
      quiet_interval_(quiet_interval),
      started_(std::chrono::steady_clock::now()),
      last_draw_(started_) {}

Progress::~Progress() { clear(); }

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void Progress::status(const std::string& line) {
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  if (interactive_) {
    if (since < 0.2 && !shown_.empty()) return;
    out_ << "\r\033[K" << line << std::flush;
    shown_ = line;
  } else {
    if (since < quiet_interval_) return;
    out_ << line << "\n" << std::flush;
  }
  last_draw_ = now;
}

void Progress::log(const std::string& line) {
  if (interactive_ && !shown_.empty()) out_ << "\r\033[K";
  out_ << line << "\n";
  if (interactive_ && !shown_.empty()) out_ << shown_;
  out_ << std::flush;
}

void Progress::clear() {
  if (interactive_ && !shown_.empty()) out_ << "\r\033[K" << std::flush;
  shown_.clear();
}

bool stderr_is_terminal() { return ::isatty(2) == 1; }

}  // namespace induct
