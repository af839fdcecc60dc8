// DIR/events.jsonl: what a study does, as it happens, one JSON object per line (docs/store.md,
// "Events"), for a notebook, a dashboard or `induct status DIR --follow` to follow while it
// runs. Each line is written whole with one write(2) on a descriptor opened for appending, so
// a reader never sees half an event unless the disk filled; a run that resumes appends after
// the last one (after a line break when the last line was cut). A file that cannot be written
// stops the events with one message, never the study. Torch-free.
#pragma once

#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "store/store.hpp"
#include "train/trial.hpp"

namespace induct {

class EventLog {
 public:
  // The schema's version, in every run_started event; a reader refuses a newer one.
  static constexpr int kSchema = 1;

  // Opens DIR/events.jsonl for appending (`warn`: where the one message about a failed write
  // goes).
  EventLog(const std::filesystem::path& dir, std::ostream& warn);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  void run_started(const std::string& study, const std::string& kind, size_t cells, int workers,
                   const std::vector<std::string>& command);
  // `id`: the run's number for the trial, the same in its evaluations and its end.
  void trial_started(size_t id, const TrialSpec& trial);
  void evaluated(size_t id, const EvalPoint& point, double best_loss);
  // `recorded`: false for a trial a stop cancelled (its record is stored, not a result).
  void trial_ended(size_t id, const TrialResult& result, bool recorded);
  void outcome_stored(const StoredOutcome& outcome);
  // The run's last state: finished, "stopped by SIGTERM", "ended by an error ...".
  void run_ended(const std::string& state);

  const std::filesystem::path& file() const { return file_; }

 private:
  // {"event": name, "time": ..., "elapsed_s": ..., <fields>}
  void write(const std::string& name, const std::string& fields);

  std::filesystem::path file_;
  std::ostream& warn_;
  int fd_ = -1;
  std::chrono::steady_clock::time_point begin_;
  std::map<size_t, std::string> keys_;  // id -> trial key
};

// The events of a file as printable lines (`induct status --follow`): one line per complete
// event from byte `offset` on; `offset` moves past what was read, and a cut last line is left
// for the next call (or, with `final`, skipped and said). Lines that are not events of this
// schema are skipped and counted in `skipped`.
struct EventLines {
  std::vector<std::string> lines;
  bool ended = false;  // a run_ended event was read
  size_t skipped = 0;
};
EventLines read_events(const std::filesystem::path& file, uint64_t& offset, bool final);

}  // namespace induct
