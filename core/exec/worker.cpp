// The worker side of the pool, and the in-process runner: both run trials with run_trial().
#include "exec/worker.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <iostream>

#include "exec/protocol.hpp"
#include "exec/signals.hpp"
#include "plugin/registry.hpp"
#include "train/cell_setup.hpp"
#include "train/run_trial.hpp"
#include "util/process.hpp"

namespace induct {

namespace {

constexpr int kJobsFd = 0;
constexpr int kResultsFd = 3;

// Reports evaluations to the coordinator and notices its cancel message between steps.
class WorkerObserver final : public TrainObserver {
 public:
  WorkerObserver(MessageReader& jobs, uint64_t job) : jobs_(jobs), job_(job) {}

  void on_eval(const EvalPoint& point, double best_loss) override {
    write_message(kResultsFd, progress_message(job_, point, best_loss));
  }

  bool should_stop() override {
    // Messages read along with the job (a cancel sent right after it) come first.
    for (pollfd fd{kJobsFd, POLLIN, 0};;) {
      YAML::Node message;
      while (jobs_.pop(message))
        if (message["type"].as<std::string>() == "cancel" && message["job"].as<uint64_t>() == job_)
          cancelled_ = true;
      if (cancelled_ || ::poll(&fd, 1, 0) <= 0) break;
      if (!jobs_.read_available()) ::_exit(0);  // the coordinator is gone
    }
    return cancelled_;
  }

 private:
  MessageReader& jobs_;
  uint64_t job_;
  bool cancelled_ = false;
};

}  // namespace

int worker_main(int threads, const Measurements& measurements) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the coordinator
  ignore_stop_signals();  // Ctrl-C reaches the whole process group: the coordinator drains us
  if (::getppid() == 1) return 0;
  configure_process(std::max(1, threads));
  PluginRegistry registry;
  std::vector<std::string> loaded_path;
  MessageReader jobs(kJobsFd);
  SplitCache data;  // the data sets of this worker's trials, shared by those of one cell and seed
  YAML::Node message;
  while (jobs.read_one(message)) {
    if (message["type"].as<std::string>() != "job") continue;  // a late cancel
    const auto job = message["job"].as<uint64_t>();
    YAML::Node reply;
    reply["job"] = job;
    try {
      TrialSpec spec = TrialSpec::from_yaml(message["trial"]);
      if (loaded_path != spec.plugin_path) {
        registry.load_all(spec.plugin_path);
        loaded_path = spec.plugin_path;
      }
      WorkerObserver observer(jobs, job);
      TrialResult result = run_trial(spec, registry, &observer, &data, &measurements);
      reply["type"] = "result";
      reply["result"] = result.to_yaml();
    } catch (const std::exception& e) {
      reply["type"] = "error";
      reply["message"] = e.what();
    }
    if (!write_message(kResultsFd, reply)) return 1;
  }
  return 0;
}

void InProcessRunner::run(TrialSource& source) {
  // One trial at a time: a cancel can only concern trials that are not running any more.
  SplitCache data;
  while (auto job = source.next()) {
    source.on_start(job->ticket);
    struct Relay final : TrainObserver {
      TrialSource& source;
      size_t ticket;
      Relay(TrialSource& s, size_t t) : source(s), ticket(t) {}
      void on_eval(const EvalPoint& point, double best) override {
        source.on_progress(ticket, point, best);
      }
    } relay(source, job->ticket);
    TrialResult result;
    try {
      result = run_trial(*job->trial, registry_, &relay, &data, &measurements_);
    } catch (const std::exception& e) {
      result = TrialResult::failure(e.what());
    }
    source.on_done(job->ticket, result);
  }
}

}  // namespace induct
