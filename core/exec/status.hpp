// DIR/status.yaml: what a study's coordinator has done and is doing, rewritten (atomically)
// at every trial's start and end, at most once a second for training progress, so `induct status
// DIR` can tell from a login node, without opening the store the coordinator writes.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>

#include "exec/events.hpp"
#include "exec/runner.hpp"

namespace induct {

class StatusFile {
 public:
  // `decided`: how many outcomes (cells or searches concluded) the store holds now. Every
  // change is also an event of DIR/events.jsonl (events(); `warn` for its one message).
  StatusFile(std::filesystem::path dir, std::string study, std::string kind, size_t cells,
             int workers, std::function<size_t()> decided, std::ostream& warn);
  ~StatusFile();  // a study that ends by an exception: state "ended by an error"
  // running | finished | "stopped by SIGTERM" | ...; written at once.
  void set_state(const std::string& state);

  void started(size_t id, const TrialSpec& trial);
  void progressed(size_t id, const EvalPoint& point, double best_loss);
  void ended(size_t id, const TrialResult& result, bool record_only);
  EventLog& events() { return events_; }

 private:
  struct Running {
    std::string cell, configuration;
    uint64_t n = 0;
    int64_t step = 0, max_steps = 0;
    double val_loss = 0;
    bool evaluated = false;  // val_loss is measured (an evaluation has reported)
    std::chrono::steady_clock::time_point since;
  };
  void write(bool now);

  std::filesystem::path file_;
  std::string study_, kind_, state_ = "running", started_;
  size_t cells_;
  int workers_;
  std::function<size_t()> decided_;
  std::map<size_t, Running> running_;
  std::map<std::string, size_t> ended_;  // by status
  int64_t steps_ = 0;                    // optimisation steps of the trials that ended
  std::chrono::steady_clock::time_point begin_, last_write_;
  EventLog events_;
};

// A runner that tells a StatusFile about every trial of the runner it wraps.
class StatusRunner final : public TrialRunner {
 public:
  StatusRunner(TrialRunner& inner, StatusFile& status) : inner_(inner), status_(status) {}
  void run(TrialSource& source) override;
  int parallelism() const override { return inner_.parallelism(); }
  std::string describe() const override { return inner_.describe(); }

 private:
  TrialRunner& inner_;
  StatusFile& status_;
  size_t next_id_ = 0;
};

// DIR/run.lock, held (flock, exclusive) while a study runs into DIR: a second `induct run` into
// the same folder stops at once with an error naming the first (its pid and host), instead of
// training the same trials twice and recording its cancellations over the other's results.
// The kernel releases the lock when the process ends, however it ends, so none is ever stale.
// On a filesystem without locks it says so and runs unguarded.
class RunLock {
 public:
  explicit RunLock(const std::filesystem::path& dir);  // std::runtime_error when held
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// `induct status DIR`: the status file as a person reads it (and whether its writer is alive).
std::string describe_status(const std::filesystem::path& dir);

// `induct status DIR --follow`: the events of the latest run in DIR/events.jsonl as lines, from
// its start, then as they come (polling every `poll_seconds`) until the run ends or its process
// on this machine is gone. Returns the lines' count.
size_t follow_events(const std::filesystem::path& dir, std::ostream& out,
                     double poll_seconds = 0.5);

}  // namespace induct
