#include "exec/status.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "util/files.hpp"
#include "util/process.hpp"
#include "util/table.hpp"
#include "util/text.hpp"

namespace induct {

namespace {

std::string utc(std::time_t t) {
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Alive and not a zombie (a killed coordinator nobody has reaped yet).
bool process_alive(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
}

// Whether an `induct run` holds DIR/run.lock now (RunLock); nullopt when there is no lock file
// or the filesystem has no locks.
std::optional<bool> run_lock_held(const std::filesystem::path& dir) {
  const int fd = ::open((dir / "run.lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<bool> held;
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0)
    held = false;  // released with the descriptor below
  else if (errno == EWOULDBLOCK)
    held = true;
  ::close(fd);
  return held;
}

// A number of status.yaml that must be finite (a damaged or hand-edited file is refused).
double finite(const YAML::Node& s, const char* key) {
  const double v = s[key].as<double>();
  if (!std::isfinite(v)) throw std::runtime_error(std::string(key) + " is not a finite number");
  return v;
}

// Whether the `induct run` that wrote DIR/status.yaml (on `host`, as `pid`) is gone, as far as
// this machine can tell: on its own machine, its lock released (without a lock file: a
// filesystem without locks, its pid dead); on another machine, not known (false).
bool run_gone(const std::filesystem::path& dir, const std::string& host, long pid) {
  if (host != host_name()) return false;
  const std::optional<bool> held = run_lock_held(dir);
  return held ? !*held : !process_alive(pid);
}

std::string describe_status_file(const std::filesystem::path& dir, const YAML::Node& s);

}  // namespace

StatusFile::StatusFile(std::filesystem::path dir, std::string study, std::string kind, size_t cells,
                       int workers, std::function<size_t()> decided, std::ostream& warn)
    : file_(dir / "status.yaml"),
      study_(std::move(study)),
      kind_(std::move(kind)),
      started_(utc(std::time(nullptr))),
      cells_(cells),
      workers_(workers),
      decided_(std::move(decided)),
      begin_(std::chrono::steady_clock::now()),
      events_(dir, warn) {
  write(true);
}

StatusFile::~StatusFile() {
  if (state_ != "running") return;
  state_ = "ended by an error (its message is the study's last line)";
  running_.clear();
  try {
    events_.run_ended(state_);
    write(true);
  } catch (...) {
  }
}

void StatusFile::set_state(const std::string& state) {
  state_ = state;
  if (state_ != "running") {
    running_.clear();
    events_.run_ended(state_);
  }
  write(true);
}

void StatusFile::started(size_t id, const TrialSpec& trial) {
  Running r;
  r.cell = cell_label(trial.cell);
  r.configuration = trial.configuration();
  r.n = trial.n;
  r.max_steps = trial.training.max_steps;
  r.since = std::chrono::steady_clock::now();
  running_[id] = r;
  events_.trial_started(id, trial);
  write(true);
}

void StatusFile::progressed(size_t id, const EvalPoint& point, double best_loss) {
  auto found = running_.find(id);
  if (found == running_.end()) return;
  events_.evaluated(id, point, best_loss);
  found->second.step = point.step;
  found->second.val_loss = point.val_loss;
  found->second.evaluated = true;
  write(false);
}

void StatusFile::ended(size_t id, const TrialResult& result, bool record_only) {
  running_.erase(id);
  events_.trial_ended(id, result, !record_only);
  ++ended_[record_only ? "cancelled by the stop" : to_string(result.status)];
  steps_ += result.steps;
  write(true);
}

void StatusFile::write(bool now) {
  if (!now && seconds_since(last_write_) < 1.0) return;
  last_write_ = std::chrono::steady_clock::now();
  const double elapsed = seconds_since(begin_);
  YAML::Node out;
  out["study"] = study_;
  out["kind"] = kind_;
  out["state"] = state_;
  out["host"] = host_name();
  out["pid"] = static_cast<long>(::getpid());
  out["started"] = started_;
  out["updated"] = utc(std::time(nullptr));
  out["updated_epoch"] = static_cast<long long>(std::time(nullptr));
  out["elapsed_s"] = elapsed;
  out["cells"] = cells_;
  out["workers"] = workers_;
  out["outcomes_stored"] = decided_ ? decided_() : 0;
  int64_t steps = steps_;
  double left = 0;  // the longest of the running trials' remaining times at their own rates
  YAML::Node running(YAML::NodeType::Sequence);
  for (const auto& [id, r] : running_) {
    YAML::Node t;
    t["cell"] = r.cell;
    t["N"] = r.n;
    t["configuration"] = r.configuration;
    t["step"] = r.step;
    t["max_steps"] = r.max_steps;
    if (r.evaluated) t["val_loss"] = r.val_loss;  // absent until the first evaluation
    running.push_back(t);
    steps += r.step;
    const double ran = seconds_since(r.since);
    if (r.step > 0) left = std::max(left, ran / r.step * (r.max_steps - r.step));
  }
  for (const auto& [status, count] : ended_) out["trials_ended"][status] = count;
  out["steps"] = steps;
  out["steps_per_s"] = elapsed > 0 ? steps / elapsed : 0;
  out["running"] = running;
  out["running_left_s"] = left;
  YAML::Emitter text;
  text << out;
  write_file_atomically(
      file_.string(),
      std::string("# written by induct run while it runs; `induct status DIR` reads it\n") +
          text.c_str() + "\n");
}

void StatusRunner::run(TrialSource& source) {
  struct Relay final : TrialSource {
    TrialSource& inner;
    StatusFile& status;
    size_t& next_id;
    std::map<size_t, std::pair<size_t, const TrialSpec*>> ids;  // ticket -> (id, trial)
    Relay(TrialSource& i, StatusFile& s, size_t& n) : inner(i), status(s), next_id(n) {}
    std::optional<Job> next() override {
      auto job = inner.next();
      if (job) ids[job->ticket] = {next_id++, job->trial};
      return job;
    }
    void on_start(size_t ticket) override {
      const auto& [id, trial] = ids.at(ticket);
      status.started(id, *trial);
      inner.on_start(ticket);
    }
    void on_progress(size_t ticket, const EvalPoint& point, double best) override {
      status.progressed(ids.at(ticket).first, point, best);
      inner.on_progress(ticket, point, best);
    }
    std::vector<size_t> on_done(size_t ticket, const TrialResult& result) override {
      status.ended(ids.at(ticket).first, result, false);
      ids.erase(ticket);
      return inner.on_done(ticket, result);
    }
    void on_abandoned(size_t ticket, const TrialResult& result) override {
      status.ended(ids.at(ticket).first, result, true);
      ids.erase(ticket);
      inner.on_abandoned(ticket, result);
    }
  } relay(source, status_, next_id_);
  inner_.run(relay);
}

RunLock::RunLock(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "run.lock";
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error(file.string() + ": cannot open (" + std::strerror(errno) + ")");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::ifstream in(file);
    std::string holder;
    std::getline(in, holder);
    ::close(fd_);
    fd_ = -1;
    if (error != EWOULDBLOCK) {  // a filesystem without locks (some network mounts)
      std::cerr << file.string() << ": cannot lock (" << std::strerror(error)
                << "): running without the guard against a second run into this folder\n";
      return;
    }
    throw std::runtime_error(
        "another `induct run` (" + (holder.empty() ? std::string("its pid unknown") : holder) +
        ") is running into " + dir.string() +
        ": two runs into one folder would train the same trials twice. Wait for it (`induct "
        "status " +
        dir.string() + "`), stop it, or give this one another --out");
  }
  const std::string holder = "pid " + std::to_string(::getpid()) + " on " + host_name() + "\n";
  // Who holds it, for the message of a second run (without it: "its pid unknown").
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::write(fd_, holder.data(), holder.size());
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

std::string describe_status(const std::filesystem::path& dir) {
  const auto file = dir / "status.yaml";
  if (!std::filesystem::exists(file))
    throw std::runtime_error(file.string() + ": no such file (is " + dir.string() +
                             " the --out folder of `induct run`?)");
  if (std::filesystem::is_directory(file))
    throw std::runtime_error(file.string() + ": is a folder, not the status file of `induct run`");
  try {
    const YAML::Node s = YAML::LoadFile(file.string());
    if (!s.IsMap() || !s["state"])
      throw std::runtime_error("no state (empty, or not a status file of `induct run`)");
    return describe_status_file(dir, s);
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() + ": not a readable status file: " + e.what());
  }
}

namespace {

std::string describe_status_file(const std::filesystem::path& dir, const YAML::Node& s) {
  const std::string state = s["state"].as<std::string>();
  const std::string host = s["host"].as<std::string>();
  const long pid = s["pid"].as<long>();
  const long long age = std::time(nullptr) - s["updated_epoch"].as<long long>();
  std::ostringstream out;
  out << s["kind"].as<std::string>() << " study '" << s["study"].as<std::string>() << "' in "
      << dir.string() << ": " << s["cells"].as<size_t>() << " cell(s), " << s["workers"].as<int>()
      << " worker(s), coordinator pid " << pid << " on " << host << "\n";
  out << "state: " << state << " (started " << s["started"].as<std::string>() << ", "
      << (state == "running" ? "" : "ran ") << format_duration(finite(s, "elapsed_s"))
      << (state == "running" ? " in" : "") << "; last update "
      << format_duration(static_cast<double>(age)) << " ago)\n";
  // On this machine: the run holds its folder's lock while it lives (a pid alone may since
  // belong to another process); without a lock file, whether the pid lives.
  const bool gone = state == "running" && run_gone(dir, host, pid);
  if (state == "running") {
    if (gone)
      out << "  its process is gone (killed, or its machine stopped): the trials it ran are "
             "stored; the same `induct run` command resumes\n";
    else if (host != host_name())
      out << "  running on another machine: this file is as of its last update\n";
  }
  out << "outcomes stored: " << s["outcomes_stored"].as<size_t>() << "\n";
  size_t ended = 0;
  std::string by_status;
  for (const auto& entry : s["trials_ended"]) {
    ended += entry.second.as<size_t>();
    by_status += (by_status.empty() ? "" : ", ") + entry.first.as<std::string>() + " " +
                 entry.second.as<std::string>();
  }
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f", finite(s, "steps_per_s"));
  out << "trials ended since it started: " << ended
      << (by_status.empty() ? "" : " (" + by_status + ")") << "; " << s["steps"].as<int64_t>()
      << " optimisation steps, " << rate << " steps/s\n";
  const YAML::Node running = s["running"];
  out << (gone ? "running when it stopped: " : "running: ") << running.size() << "\n";
  for (const auto& t : running)
    out << "  " << t["cell"].as<std::string>() << " N=" << t["N"].as<uint64_t>() << " "
        << t["configuration"].as<std::string>() << ": step " << t["step"].as<int64_t>() << " of "
        << t["max_steps"].as<int64_t>()
        << (t["val_loss"] ? ", val loss " + format_number(t["val_loss"].as<double>(), 4)
                          : std::string(", no evaluation yet"))
        << "\n";
  if (running.size() > 0 && !gone)
    out << "the trials running now end within " << format_duration(finite(s, "running_left_s"))
        << " at most, at their own rates so far (searches then choose their next sizes from "
           "the results, so the whole study's time left is not known in advance)\n";
  return out.str();
}

}  // namespace

size_t follow_events(const std::filesystem::path& dir, std::ostream& out, double poll_seconds) {
  const std::filesystem::path file = dir / "events.jsonl";
  if (!std::filesystem::exists(file))
    throw std::runtime_error(file.string() + ": no such file (a run of this induct writes it; is " +
                             dir.string() + " the --out folder of `induct run`?)");
  // The latest run's first line.
  uint64_t offset = 0;
  {
    std::ifstream in(file, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t last = text.rfind("\n{\"event\": \"run_started\"");
    if (last != std::string::npos) offset = last + 1;  // else the first line starts it
  }
  size_t shown = 0;
  for (;;) {
    // Whether the writer is gone (run_gone), asked before reading, so that nothing it wrote
    // is missed; a status file that does not read says nothing.
    bool gone = false;
    try {
      const YAML::Node s = YAML::LoadFile((dir / "status.yaml").string());
      gone = run_gone(dir, s["host"].as<std::string>(), s["pid"].as<long>());
    } catch (const std::exception&) {
    }
    EventLines read = read_events(file, offset, gone);
    for (const auto& line : read.lines) out << line << "\n";
    out.flush();
    shown += read.lines.size();
    if (read.ended) return shown;
    if (gone) {
      out << "the run's process is gone (killed, or its machine stopped) without a run_ended "
             "event; the same `induct run` command resumes\n";
      return shown;
    }
    ::usleep(static_cast<useconds_t>(poll_seconds * 1e6));
  }
}

}  // namespace induct
