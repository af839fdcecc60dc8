// Progress of long work: a live status line on a terminal, plain log lines otherwise.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>

namespace induct {

class Progress {
 public:
  // interactive: redraw one status line in place (a terminal); otherwise status lines are
  // printed as log lines at most every `quiet_interval` seconds.
  Progress(std::ostream& out, bool interactive, double quiet_interval = 30);
  ~Progress();
  void status(const std::string& line);
  void log(const std::string& line);
  void clear();
  double elapsed() const;

 private:
  std::ostream& out_;
  bool interactive_;
  double quiet_interval_;
  std::chrono::steady_clock::time_point started_, last_draw_;
  std::string shown_;
};

bool stderr_is_terminal();

}  // namespace induct
