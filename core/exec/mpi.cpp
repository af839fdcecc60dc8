#include "exec/mpi.hpp"

#include <mpi.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <boost/mpi/environment.hpp>
#include <cstdlib>
#include <deque>
#include <list>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include "exec/pool.hpp"
#include "exec/runner.hpp"
#include "exec/signals.hpp"
#include "util/process.hpp"

namespace induct {

namespace {

constexpr int kTag = 7;
// How often a rank looks for messages when it has nothing else to wait on: the most a job or a
// cancel waits before it is seen (MPI offers no file descriptor to poll with the pipes).
constexpr int kPollMs = 10;
std::unique_ptr<boost::mpi::environment> environment;
bool stopped = false;
struct {
  int rank = 0, size = 1;         // this rank among the ranks on its machine
  bool with_coordinator = false;  // rank 0 is on this machine
} node;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// Messages are YAML documents as strings. Sends never block (a blocking send of a large
// result to a rank that is itself sending could wait forever): each buffer lives until its
// send completes.
class Mailbox {
 public:
  void send(int rank, const YAML::Node& message) {
    YAML::Emitter out;
    out << message;
    sends_.push_back({out.c_str(), MPI_REQUEST_NULL});
    Pending& p = sends_.back();
    MPI_Isend(p.text.data(), static_cast<int>(p.text.size()), MPI_CHAR, rank, kTag, MPI_COMM_WORLD,
              &p.request);
    collect();
  }
  // A message that has arrived, if any (its sender in `from`).
  bool receive(YAML::Node& message, int& from) {
    collect();
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &flag, &status);
    if (!flag) return false;
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    std::string text(static_cast<size_t>(count), '\0');
    MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, kTag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    message = YAML::Load(text);
    from = status.MPI_SOURCE;
    return true;
  }
  void flush() {
    for (auto& p : sends_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    sends_.clear();
  }

 private:
  struct Pending {
    std::string text;
    MPI_Request request;
  };
  void collect() {
    for (auto it = sends_.begin(); it != sends_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? sends_.erase(it) : std::next(it);
    }
  }
  std::list<Pending> sends_;
};

Mailbox& mailbox() {
  static Mailbox box;
  return box;
}

// Waits up to `ms` for a stop signal (the coordinator has no other file descriptor to wait on).
void nap(int ms) {
  pollfd fd{stop_signal_fd(), POLLIN, 0};
  if (fd.fd >= 0)
    ::poll(&fd, 1, ms);
  else
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// A rank's relay: the jobs rank 0 sends, handed to the local pool; their ends sent back.
class Relay final : public TrialSource {
 public:
  std::optional<Job> next() override {
    pump();
    if (queue_.empty()) return std::nullopt;
    const size_t id = queue_.front();
    queue_.pop_front();
    return Job{id, &specs_.at(id)};
  }
  // After rank 0's stop nothing is sent: it no longer receives.
  void on_progress(size_t id, const EvalPoint& point, double best) override {
    if (!closed_) mailbox().send(0, progress_message(id, point, best));
  }
  std::vector<size_t> on_done(size_t id, const TrialResult& result) override {
    specs_.erase(id);
    if (closed_) return {};
    YAML::Node m;
    m["type"] = "done";
    m["job"] = id;
    m["result"] = result.to_yaml();
    mailbox().send(0, m);
    return {};
  }
  bool open() const override { return !closed_; }
  int wait_ms() const override { return kPollMs; }
  std::vector<size_t> cancels() override {
    pump();
    std::vector<size_t> out;
    out.swap(cancels_);
    return out;
  }

 private:
  void pump() {
    if (stop_signals_received() > signals_seen_) {  // Slurm's SIGTERM reaches every rank
      signals_seen_ = stop_signals_received();
      YAML::Node m;
      m["type"] = "signal";
      m["signal"] = stop_signal();
      mailbox().send(0, m);
    }
    YAML::Node m;
    int from = 0;
    while (mailbox().receive(m, from)) {
      const std::string type = m["type"].as<std::string>();
      if (type == "job") {
        const size_t id = m["job"].as<size_t>();
        specs_.emplace(id, TrialSpec::from_yaml(m["trial"]));
        queue_.push_back(id);
      } else if (type == "cancel") {
        const size_t id = m["job"].as<size_t>();
        auto queued = std::find(queue_.begin(), queue_.end(), id);
        if (queued != queue_.end()) {  // not started here yet
          queue_.erase(queued);
          on_done(id, TrialResult::cancelled());
        } else {
          cancels_.push_back(id);
        }
      } else if (type == "stop") {  // rank 0 is done, or stopped at once: cancel what runs
        closed_ = true;
        queue_.clear();
        for (const auto& [id, spec] : specs_) cancels_.push_back(id);
      }
    }
  }
  std::map<size_t, TrialSpec> specs_;
  std::deque<size_t> queue_;
  std::vector<size_t> cancels_;
  bool closed_ = false;
  int signals_seen_ = 0;
};

// Rank 0's runner: the other ranks' worker slots, filled as they free up.
class MpiRunner final : public TrialRunner {
 public:
  MpiRunner(const RunSettings& run, size_t trials) {
    YAML::Node start;
    start["type"] = "start";
    start["workers"] = run.workers;
    start["threads"] = run.threads;
    start["blas_threads"] = run.blas_threads;
    start["device"] = run.device;
    start["trials"] = trials;
    const int size = world_size();
    for (int r = 1; r < size; ++r) mailbox().send(r, start);
    free_.assign(size, 0);
    for (int ready = 1; ready < size;) {
      YAML::Node m;
      int from = 0;
      if (!mailbox().receive(m, from)) {
        nap(kPollMs);
        continue;
      }
      if (m["type"].as<std::string>() == "signal") {
        remote_signal_ = m["signal"].as<int>();
        continue;
      }
      free_[from] = m["slots"].as<int>();
      slots_ += free_[from];
      hosts_[m["host"].as<std::string>()] += free_[from];
      ++ready;
    }
  }
  int parallelism() const override { return slots_; }
  std::string describe() const override {
    std::string out = std::to_string(slots_) + " worker(s) on " + std::to_string(free_.size() - 1) +
                      " MPI rank(s) (";
    for (auto it = hosts_.begin(); it != hosts_.end(); ++it)
      out += (it == hosts_.begin() ? "" : ", ") + it->first + ": " + std::to_string(it->second);
    return out + ")";
  }

  void run(TrialSource& source) override {
    std::map<size_t, int> running;  // ticket -> rank
    std::set<size_t> cancel_sent;
    auto cancel = [&](size_t ticket) {
      auto found = running.find(ticket);
      if (found == running.end() || !cancel_sent.insert(ticket).second) return;
      YAML::Node m;
      m["type"] = "cancel";
      m["job"] = ticket;
      mailbox().send(found->second, m);
    };
    bool draining = false;
    size_t drained = 0;
    for (;;) {
      const int signal = stop_signal() != 0 ? stop_signal() : remote_signal_;
      if (signal != 0 && !draining) {
        draining = true;
        for (const auto& [ticket, rank] : running) cancel(ticket);
      }
      if (stop_signals_received() > 1 || (draining && drain_overdue()))
        throw Interrupted(signal, running.size(), true);
      while (!draining) {
        auto rank = std::max_element(free_.begin(), free_.end());
        if (rank == free_.end() || *rank <= 0) break;
        auto job = source.next();
        if (!job) break;
        YAML::Node m;
        m["type"] = "job";
        m["job"] = job->ticket;
        m["trial"] = job->trial->to_yaml();
        const int r = static_cast<int>(rank - free_.begin());
        mailbox().send(r, m);
        --free_[r];
        running[job->ticket] = r;
        source.on_start(job->ticket);
      }
      if (running.empty()) {
        if (draining) throw Interrupted(signal, drained, false);
        return;
      }
      YAML::Node m;
      int from = 0;
      if (!mailbox().receive(m, from)) {
        nap(kPollMs);
        continue;
      }
      const std::string type = m["type"].as<std::string>();
      if (type == "signal") {
        remote_signal_ = m["signal"].as<int>();
      } else if (type == "progress") {
        source.on_progress(m["job"].as<size_t>(), progress_point(m), m["best_loss"].as<double>());
      } else if (type == "done") {
        const size_t ticket = m["job"].as<size_t>();
        if (!running.erase(ticket)) continue;
        cancel_sent.erase(ticket);
        ++free_[from];
        const TrialResult result = TrialResult::from_yaml(m["result"]);
        if (draining &&
            (result.status == TrialStatus::kCancelled || result.status == TrialStatus::kError)) {
          source.on_abandoned(ticket, result);
          ++drained;
        } else {
          for (size_t c : source.on_done(ticket, result)) cancel(c);
        }
      }
    }
  }

 private:
  std::vector<int> free_;  // free worker slots per rank (rank 0: none)
  int slots_ = 0;
  std::map<std::string, int> hosts_;  // worker slots per host
  int remote_signal_ = 0;
};

}  // namespace

int start_mpi() {
  environment = std::make_unique<boost::mpi::environment>(
      false);  // errors end with our message, not MPI_Abort
  // Which ranks share this machine (collective: every rank takes part, right at the start).
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank(), MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &node.rank);
  MPI_Comm_size(local, &node.size);
  int coordinator_here = world_rank() == 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &coordinator_here, 1, MPI_INT, MPI_MAX, local);
  node.with_coordinator = coordinator_here != 0;
  MPI_Comm_free(&local);
  const int tasks = launcher_tasks();
  if (world_size() != tasks)  // e.g. srun without an MPI plugin: every task a job of its own
    throw std::runtime_error(
        "induct run: the launcher started " + std::to_string(tasks) + " tasks but MPI sees " +
        std::to_string(world_size()) +
        " in this job, so each would run the whole study into the "
        "same folder; under Slurm use `srun --mpi=pmix` (or pmi2, as the cluster supports) or "
        "`mpirun` inside the allocation (docs/cluster.md)");
  return world_rank();
}

void stop_mpi() {
  if (!environment || stopped) return;
  stopped = true;
  if (world_rank() == 0) {
    YAML::Node m;
    m["type"] = "stop";
    for (int r = 1; r < world_size(); ++r) mailbox().send(r, m);
  }
  mailbox().flush();
  environment.reset();
}

int mpi_rank_main() {
  install_stop_signals();
  const std::string host = boost::mpi::environment::processor_name();
  YAML::Node start;
  for (int from = 0;;) {
    if (mailbox().receive(start, from)) {
      if (start["type"].as<std::string>() == "stop") {
        stop_mpi();
        return 0;
      }
      break;
    }
    nap(kPollMs);
  }
  // Ranks that share this machine share its cores (unless the launcher bound each to its own)
  // and its GPUs; the coordinator (rank 0) runs no trials.
  const int sharing = std::max(1, node.size - (node.with_coordinator ? 1 : 0));
  const int index = std::max(0, node.rank - (node.with_coordinator ? 1 : 0));
  int cores = usable_cores();
  if (cores == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())))
    cores = std::max(1, cores / sharing);
  const int workers = start["workers"].as<int>();
  const std::string device = start["device"].as<std::string>();
  PoolSettings settings = default_pool_settings(
      workers, start["threads"].as<int>(), start["blas_threads"].as<int>(),
      start["trials"].as<size_t>(), device, device == "cpu" ? 0 : visible_gpus(), cores);
  if (device == "cuda" && sharing > 1 && !settings.gpus.empty()) {  // this rank's own GPU
    settings.gpus = {settings.gpus[index % settings.gpus.size()]};
    settings.workers = std::min(settings.workers, workers > 0 ? workers : kDefaultWorkersPerGpu);
  }
  settings.drain_on_signal = false;
  WorkerPool pool(settings);
  YAML::Node ready;
  ready["type"] = "ready";
  ready["slots"] = pool.parallelism();
  ready["host"] = host;
  mailbox().send(0, ready);
  Relay relay;
  pool.run(relay);
  stop_mpi();
  return 0;
}

std::unique_ptr<TrialRunner> make_mpi_runner(const RunSettings& run, size_t trials_per_step) {
  if (!environment || world_size() < 2) return nullptr;
  return std::make_unique<MpiRunner>(run, trials_per_step);
}

}  // namespace induct
