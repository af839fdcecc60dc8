#include "exec/events.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <ostream>

#include "store/json.hpp"
#include "util/files.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace induct {

namespace {

// UTC with milliseconds: 2026-12-08T01:46:11.123Z.
std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  char buffer[40];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", std::gmtime(&t));
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buffer, static_cast<int>(ms));
  return out;
}

std::string field(const std::string& name, const std::string& json) {
  return ", " + json_string(name) + ": " + json;
}

}  // namespace

EventLog::EventLog(const std::filesystem::path& dir, std::ostream& warn)
    : file_(dir / "events.jsonl"), warn_(warn), begin_(std::chrono::steady_clock::now()) {
  fd_ = ::open(file_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    warn_ << "induct: " << file_.string() << ": cannot open (" << std::strerror(errno)
          << "); the study runs without its event log\n";
    return;
  }
  // A line cut by a full disk (or a kill inside a write) stays a line of its own.
  const off_t size = ::lseek(fd_, 0, SEEK_END);
  if (size > 0) {
    char last = '\n';
    const int in = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
    if (in >= 0) {
      if (::pread(in, &last, 1, size - 1) != 1) last = '\n';
      ::close(in);
    }
    if (last != '\n' && !write_all(fd_, "\n", 1)) {
      ::close(fd_);
      fd_ = -1;
    }
  }
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

void EventLog::write(const std::string& name, const std::string& fields) {
  if (fd_ < 0) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
  const std::string line = "{\"event\": " + json_string(name) +
                           field("time", json_string(utc_now())) +
                           field("elapsed_s", json_number(elapsed)) + fields + "}\n";
  if (!write_all(fd_, line.data(), line.size())) {
    warn_ << "induct: " << file_.string() << ": cannot write (" << std::strerror(errno)
          << "); the events stop here, the study goes on\n";
    ::close(fd_);
    fd_ = -1;
  }
}

void EventLog::run_started(const std::string& study, const std::string& kind, size_t cells,
                           int workers, const std::vector<std::string>& command) {
  std::string args;
  for (const auto& arg : command) args += (args.empty() ? "" : ", ") + json_string(arg);
  write("run_started",
        field("schema", std::to_string(kSchema)) + field("study", json_string(study)) +
            field("kind", json_string(kind)) + field("cells", std::to_string(cells)) +
            field("workers", std::to_string(workers)) + field("host", json_string(host_name())) +
            field("pid", std::to_string(::getpid())) + field("command", "[" + args + "]"));
}

void EventLog::trial_started(size_t id, const TrialSpec& trial) {
  const std::string key = trial.key();
  keys_[id] = key;
  write("trial_started", field("id", std::to_string(id)) + field("trial", json_string(key)) +
                             field("cell", json_string(cell_label(trial.cell))) +
                             field("n", std::to_string(trial.n)) +
                             field("lr", json_number(trial.lr)) +
                             field("seed", std::to_string(trial.seed)) +
                             field("max_steps", std::to_string(trial.training.max_steps)) +
                             field("options", to_json(trial.identity())));
}

void EventLog::evaluated(size_t id, const EvalPoint& point, double best_loss) {
  write("evaluation", field("id", std::to_string(id)) +
                          field("trial", json_string(keys_.count(id) ? keys_[id] : "")) +
                          field("step", std::to_string(point.step)) +
                          field("train_loss", json_number(point.train_loss)) +
                          field("val_loss", json_number(point.val_loss)) +
                          field("best_loss", json_number(best_loss)));
}

void EventLog::trial_ended(size_t id, const TrialResult& result, bool recorded) {
  std::string fields = field("id", std::to_string(id)) +
                       field("trial", json_string(keys_.count(id) ? keys_[id] : "")) +
                       field("status", json_string(to_string(result.status))) +
                       field("recorded", recorded ? "true" : "false") +
                       field("steps", std::to_string(result.steps)) +
                       field("best_loss", json_number(result.best_loss)) +
                       field("val_loss", json_number(result.last.loss)) +
                       field("final_accuracy", json_number(result.last.final_accuracy)) +
                       field("seconds", json_number(result.seconds));
  if (!result.stopped_by.empty()) fields += field("stopped_by", json_string(result.stopped_by));
  if (!result.error.empty()) fields += field("error", json_string(result.error));
  keys_.erase(id);
  write("trial_ended", fields);
}

void EventLog::outcome_stored(const StoredOutcome& outcome) {
  write("outcome",
        field("kind", json_string(outcome.kind)) + field("label", json_string(outcome.label)) +
            field("key", json_string(outcome.key)) + field("value", to_json(outcome.value)));
}

void EventLog::run_ended(const std::string& state) {
  write("run_ended", field("state", json_string(state)));
}

namespace {

std::string text_of(const YAML::Node& n) { return n ? n.as<std::string>() : std::string("?"); }

// One event as a line for a terminal ("" for an event it does not show).
std::string describe_event(const YAML::Node& e) {
  const std::string name = e["event"].as<std::string>();
  const std::string time = text_of(e["time"]);
  const std::string at = (time.size() >= 19 ? time.substr(11, 8) : time) + " ";
  const std::string trial = "trial " + text_of(e["id"]);
  if (name == "run_started")
    return at + "run started: " + text_of(e["kind"]) + " study '" + text_of(e["study"]) + "', " +
           text_of(e["cells"]) + " cell(s), " + text_of(e["workers"]) + " worker(s), pid " +
           text_of(e["pid"]) + " on " + text_of(e["host"]);
  if (name == "trial_started")
    return at + trial + " started: " + text_of(e["cell"]) + " N=" + text_of(e["n"]) +
           " lr=" + text_of(e["lr"]) + " seed=" + text_of(e["seed"]);
  if (name == "evaluation")
    return at + trial + " step " + text_of(e["step"]) + ": validation loss " +
           format_number(e["val_loss"].as<double>(), 3) + " (best " +
           format_number(e["best_loss"].as<double>(), 3) + ")";
  if (name == "trial_ended")
    return at + trial + " " + text_of(e["status"]) +
           (e["recorded"].as<bool>() ? "" : " (cancelled by the stop)") + " at step " +
           text_of(e["steps"]) + ", best loss " + format_number(e["best_loss"].as<double>(), 3) +
           ", final-state accuracy " + format_number(e["final_accuracy"].as<double>(), 3) +
           (e["error"] ? ": " + text_of(e["error"]) : std::string());
  if (name == "outcome") {
    std::string line = at + "outcome stored: " + text_of(e["kind"]) + " " + text_of(e["label"]);
    std::string scalars;
    size_t shown = 0;
    for (const auto& entry : e["value"])  // its first short fields (learned, nstar, ...)
      if (entry.second.IsScalar() && entry.second.Scalar().size() <= 24 && shown < 4) {
        scalars += (scalars.empty() ? "" : ", ") + entry.first.as<std::string>() + " " +
                   entry.second.as<std::string>();
        ++shown;
      }
    return scalars.empty() ? line : line + " (" + scalars + ")";
  }
  if (name == "run_ended") return at + "run ended: " + text_of(e["state"]);
  return "";
}

}  // namespace

EventLines read_events(const std::filesystem::path& file, uint64_t& offset, bool final) {
  EventLines out;
  std::ifstream in(file, std::ios::binary);
  if (!in) return out;
  in.seekg(static_cast<std::streamoff>(offset));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t from = 0;
  for (size_t end; (end = text.find('\n', from)) != std::string::npos; from = end + 1) {
    const std::string line = text.substr(from, end - from);
    if (line.empty()) continue;
    try {
      const YAML::Node e = YAML::Load(line);
      if (!e.IsMap() || !e["event"]) throw YAML::Exception(YAML::Mark::null_mark(), "no event");
      if (e["event"].as<std::string>() == "run_started" &&
          e["schema"].as<int>(0) > EventLog::kSchema) {
        out.lines.push_back(file.string() + ": events of a newer schema (" +
                            e["schema"].as<std::string>() + ") than this induct reads (" +
                            std::to_string(EventLog::kSchema) + ")");
        ++out.skipped;
        continue;
      }
      const std::string shown = describe_event(e);
      if (!shown.empty()) out.lines.push_back(shown);
      out.ended = out.ended || e["event"].as<std::string>() == "run_ended";
    } catch (const std::exception&) {
      ++out.skipped;  // a line cut by a full disk, or not ours
    }
  }
  offset += from;
  if (final && from < text.size()) {
    out.lines.push_back(file.string() + ": its last line is cut (" +
                        std::to_string(text.size() - from) + " bytes), skipped");
    ++out.skipped;
    offset += text.size() - from;
  }
  return out;
}

}  // namespace induct
