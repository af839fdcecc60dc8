#include "exec/signals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace induct {

namespace {

volatile sig_atomic_t last_signal = 0;
volatile sig_atomic_t signal_count = 0;
volatile sig_atomic_t first_seconds = 0, first_ms = 0;  // CLOCK_MONOTONIC of the first
int pipe_fds[2] = {-1, -1};

// A signal within this long of the first is the same stop sent twice (`timeout` signals its
// command and then the command's process group; a group kill reaches the process twice), not
// a second stop.
constexpr long kRepeatMs = 1000;

void on_stop_signal(int signal) {
  const int saved = errno;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  const long ms = static_cast<long>(now.tv_nsec / 1000000);
  if (signal_count > 0 &&
      (static_cast<long>(now.tv_sec) - first_seconds) * 1000 + (ms - first_ms) < kRepeatMs) {
    errno = saved;
    return;
  }
  if (signal_count == 0) {
    first_seconds = static_cast<sig_atomic_t>(now.tv_sec);
    first_ms = static_cast<sig_atomic_t>(ms);
  }
  last_signal = signal;
  signal_count = signal_count + 1;
  const char byte = 1;
  if (pipe_fds[1] >= 0) {
    const ssize_t written = ::write(pipe_fds[1], &byte, 1);  // a full pipe already wakes poll
    (void)written;
  }
  errno = saved;
}

}  // namespace

void install_stop_signals() {
  if (pipe_fds[0] < 0) {
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0)
      throw std::runtime_error(std::string("cannot create the signal pipe: ") +
                               std::strerror(errno));
  }
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

void ignore_stop_signals() {
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
}

int stop_signal() { return last_signal; }
int stop_signals_received() { return signal_count; }
int stop_signal_fd() { return pipe_fds[0]; }

bool drain_overdue(long seconds) {
  if (signal_count == 0) return false;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const long ms = static_cast<long>(now.tv_nsec / 1000000);
  return (static_cast<long>(now.tv_sec) - first_seconds) * 1000 + (ms - first_ms) >= seconds * 1000;
}

Interrupted::Interrupted(int signal, size_t cancelled, bool at_once)
    : std::runtime_error(std::string("stopped by ") + (signal == SIGINT ? "SIGINT" : "SIGTERM")),
      signal_(signal),
      cancelled_(cancelled),
      at_once_(at_once) {}

}  // namespace induct
