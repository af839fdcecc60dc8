// SIGINT and SIGTERM (Ctrl-C, `kill`, Slurm's walltime) as a request to stop: the coordinator
// drains its workers (no new trials, those in flight cancelled and recorded) and exits with a
// line saying what is stored and that the same command resumes. A second signal, a second or
// more after the first, stops at once (one sooner is the same stop delivered twice, as `timeout`
// does: to its command, then to the command's process group), and so does a drain still
// waiting kDrainSeconds after the first signal (a worker that cannot answer the cancel: the
// first signal always ends the run, within Slurm's 30 s between SIGTERM and SIGKILL).
#pragma once

#include <stdexcept>
#include <string>

namespace induct {

// Installs the handlers (the coordinator; idempotent). Workers ignore both signals instead:
// the coordinator cancels them, and they never outlive it (PR_SET_PDEATHSIG).
void install_stop_signals();
void ignore_stop_signals();

// The last stop signal received (0: none) and how many have arrived (repeats within a second
// of the first not counted).
int stop_signal();
int stop_signals_received();
// Readable (a byte per signal) once a signal has arrived: for poll() beside other fds.
int stop_signal_fd();

// A worker answers a cancel between two training steps; a drain waits this long for them.
inline constexpr long kDrainSeconds = 15;
// True once `seconds` have passed since the first stop signal.
bool drain_overdue(long seconds = kDrainSeconds);

// Thrown by a runner once it has drained after a stop signal.
class Interrupted : public std::runtime_error {
 public:
  Interrupted(int signal, size_t cancelled, bool at_once);
  int signal() const { return signal_; }
  size_t cancelled() const { return cancelled_; }  // trials in flight that were cancelled
  bool at_once() const { return at_once_; }  // a second signal or drain_overdue(): not drained

 private:
  int signal_;
  size_t cancelled_;
  bool at_once_;
};

}  // namespace induct
