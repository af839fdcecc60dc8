#include "exec/pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

#include "exec/signals.hpp"
#include "util/process.hpp"

extern char** environ;

namespace induct {

std::vector<std::string> visible_gpu_ids(const char* cuda_visible_devices, int count) {
  std::vector<std::string> ids;
  if (cuda_visible_devices) {
    std::string list = cuda_visible_devices;
    size_t start = 0;
    while (start <= list.size() && static_cast<int>(ids.size()) < count) {
      const size_t comma = std::min(list.find(',', start), list.size());
      if (comma > start) ids.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
  }
  for (int k = static_cast<int>(ids.size()); k < count && !cuda_visible_devices; ++k)
    ids.push_back(std::to_string(k));
  return ids;
}

PoolSettings default_pool_settings(int configured_workers, int configured_threads,
                                   int configured_blas_threads, size_t trials,
                                   const std::string& device, int visible_gpus, int cores) {
  if (cores <= 0) cores = usable_cores();
  PoolSettings s;
  const int most = thread_limit(cores);
  s.threads = std::max(1, configured_threads);
  if (s.threads > most) {
    s.lowered = "run.threads " + std::to_string(s.threads) + " lowered to " + std::to_string(most) +
                " (" + std::to_string(cores) + " usable core(s) and this process's limits)";
    s.threads = most;
  }
  if (configured_blas_threads > most) {
    s.lowered += std::string(s.lowered.empty() ? "" : "; ") + "run.blas_threads " +
                 std::to_string(configured_blas_threads) + " lowered to " + std::to_string(most);
    configured_blas_threads = most;
  }
  if (device == "cpu") {
    s.workers = configured_workers > 0 ? configured_workers : std::max(1, cores / s.threads);
  } else {
    const int per_gpu = configured_workers > 0 ? configured_workers : kDefaultWorkersPerGpu;
    if (device == "cuda") {
      s.gpus = visible_gpu_ids(std::getenv("CUDA_VISIBLE_DEVICES"), visible_gpus);
      s.workers = per_gpu * std::max<int>(1, static_cast<int>(s.gpus.size()));
    } else {
      s.workers = per_gpu;  // cuda:N: every worker on that GPU
    }
  }
  s.workers = std::max<int>(1, std::min<size_t>(s.workers, std::max<size_t>(trials, 1)));
  s.blas_threads = configured_blas_threads > 0 ? configured_blas_threads
                                               : std::max(1, cores / (s.workers * s.threads));
  s.worker_executable = boost::dll::program_location().string();
  return s;
}

WorkerPool::WorkerPool(PoolSettings settings) : settings_(std::move(settings)) {
  if (settings_.worker_executable.empty())
    settings_.worker_executable = boost::dll::program_location().string();
  // A worker that dies must not take the coordinator with it through SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
}

WorkerPool::~WorkerPool() {
  for (auto& worker : workers_) stop(worker);
}

void WorkerPool::stop(Worker& worker) {
  if (worker.to_worker >= 0) ::close(worker.to_worker);  // EOF: the worker exits
  if (worker.reader) ::close(worker.reader->fd());
  if (worker.pid > 0) {
    if (worker.trial >= 0) ::kill(worker.pid, SIGKILL);
    int status;
    ::waitpid(worker.pid, &status, 0);
  }
  worker = Worker{};
}

WorkerPool::Worker WorkerPool::spawn(int slot) {
  int jobs[2], results[2];
  if (::pipe2(jobs, O_CLOEXEC) != 0 || ::pipe2(results, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot create pipes for a worker: ") +
                             std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, jobs[0], 0);
  posix_spawn_file_actions_adddup2(&actions, results[1], 3);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);  // a plugin's prints must not reach fd 3

  // Thread counts must be in the environment before OpenMP and OpenBLAS start.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    if (entry.rfind("OMP_NUM_THREADS=", 0) == 0 || entry.rfind("OPENBLAS_NUM_THREADS=", 0) == 0 ||
        entry.rfind("MKL_NUM_THREADS=", 0) == 0 ||
        (!settings_.gpus.empty() && entry.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0))
      continue;
    env_strings.push_back(entry);
  }
  if (!settings_.gpus.empty())
    env_strings.push_back("CUDA_VISIBLE_DEVICES=" + settings_.gpus[slot % settings_.gpus.size()]);
  env_strings.push_back("OMP_NUM_THREADS=" + std::to_string(settings_.threads));
  env_strings.push_back("OPENBLAS_NUM_THREADS=" + std::to_string(settings_.blas_threads));
  env_strings.push_back("MKL_NUM_THREADS=" + std::to_string(settings_.blas_threads));
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string threads = std::to_string(settings_.threads);
  std::string exe = settings_.worker_executable;
  std::string command = "__worker";
  std::string flag = "--threads";
  std::vector<char*> argv{exe.data(), command.data(), flag.data(), threads.data(), nullptr};

  Worker worker;
  worker.slot = slot;
  int rc = ::posix_spawn(&worker.pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(jobs[0]);
  ::close(results[1]);
  if (rc != 0) {
    ::close(jobs[1]);
    ::close(results[0]);
    throw std::runtime_error("cannot start a worker process (" + exe + "): " + std::strerror(rc));
  }
  worker.to_worker = jobs[1];
  worker.reader = std::make_unique<MessageReader>(results[0]);
  return worker;
}

std::string WorkerPool::exit_description(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) < 0) return "the worker process vanished";
  if (WIFSIGNALED(status))
    return std::string("the worker process was killed by signal ") +
           std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status))
    return "the worker process exited with status " + std::to_string(WEXITSTATUS(status));
  return "the worker process ended";
}

void WorkerPool::run(TrialSource& source) {
  size_t running = 0;
  auto cancel = [&](size_t ticket) {
    for (auto& w : workers_)
      if (w.trial == static_cast<long>(ticket) && !w.cancel_sent) {
        YAML::Node message;
        message["type"] = "cancel";
        message["job"] = w.job;
        write_message(w.to_worker, message);
        w.cancel_sent = true;
      }
  };
  auto finish = [&](size_t ticket, const TrialResult& result) {
    for (size_t c : source.on_done(ticket, result)) cancel(c);
  };
  std::optional<TrialSource::Job> pending;  // handed out, not yet sent to a worker
  bool draining = false;
  size_t drained = 0;  // trials the stop signal cancelled, recorded through on_abandoned

  for (;;) {
    if (settings_.drain_on_signal && stop_signal() != 0 && !draining) {
      draining = true;
      for (auto& w : workers_)
        if (w.trial >= 0 && !w.cancel_sent) {
          cancel(static_cast<size_t>(w.trial));
        }
    }
    if (settings_.drain_on_signal &&
        (stop_signals_received() > 1 || drain_overdue(settings_.drain_seconds)))
      throw Interrupted(stop_signal(), running, true);
    for (size_t c : source.cancels()) cancel(c);
    // Hand out work: idle workers first, then new ones up to the pool size.
    for (; !draining;) {
      auto idle = std::find_if(workers_.begin(), workers_.end(),
                               [](const Worker& w) { return w.trial < 0; });
      if (idle == workers_.end() && static_cast<int>(workers_.size()) >= settings_.workers) break;
      if (!pending) pending = source.next();
      if (!pending) break;
      if (idle == workers_.end()) {
        int slot = 0;  // the lowest free one
        while (std::any_of(workers_.begin(), workers_.end(),
                           [&](const Worker& w) { return w.slot == slot; }))
          ++slot;
        workers_.push_back(spawn(slot));
        idle = workers_.end() - 1;
      }
      YAML::Node message;
      message["type"] = "job";
      message["job"] = next_job_;
      message["trial"] = pending->trial->to_yaml();
      if (!write_message(idle->to_worker, message)) {
        // The worker is gone: the job goes to another one.
        stop(*idle);
        workers_.erase(idle);
        continue;
      }
      idle->trial = static_cast<long>(pending->ticket);
      idle->job = next_job_++;
      idle->cancel_sent = false;
      ++running;
      const size_t ticket = pending->ticket;
      pending.reset();
      source.on_start(ticket);
    }
    if (running == 0) {
      if (draining) throw Interrupted(stop_signal(), drained, false);
      if (!source.open()) break;
    }

    std::vector<pollfd> fds;
    for (auto& w : workers_) fds.push_back({w.reader->fd(), POLLIN, 0});
    const size_t worker_fds = fds.size();
    if (stop_signal_fd() >= 0) fds.push_back({stop_signal_fd(), POLLIN, 0});
    const int wait = source.wait_ms();  // while draining, wake each second for the deadline
    int ready =
        ::poll(fds.data(), fds.size(), draining ? (wait < 0 ? 1000 : std::min(wait, 1000)) : wait);
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    if (fds.size() > worker_fds && (fds.back().revents & POLLIN)) {
      char bytes[64];
      while (::read(stop_signal_fd(), bytes, sizeof bytes) > 0) {
      }
    }
    // What a trial's end means: a result, or during a drain a record of what was cancelled.
    auto end = [&](size_t index, const TrialResult& result) {
      if (draining &&
          (result.status == TrialStatus::kCancelled || result.status == TrialStatus::kError)) {
        source.on_abandoned(index, result);
        ++drained;
      } else {
        finish(index, result);
      }
    };
    for (size_t k = 0; k < worker_fds; ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Worker& w = workers_[k];
      const bool alive = w.reader->read_available();
      YAML::Node message;
      while (w.reader->pop(message)) {
        const std::string type = message["type"].as<std::string>();
        if (message["job"].as<uint64_t>() != w.job || w.trial < 0) continue;
        const auto index = static_cast<size_t>(w.trial);
        if (type == "progress") {
          source.on_progress(index, progress_point(message), message["best_loss"].as<double>());
        } else if (type == "result" || type == "error") {
          w.trial = -1;
          --running;
          end(index, type == "result" ? TrialResult::from_yaml(message["result"])
                                      : TrialResult::failure(message["message"].as<std::string>()));
        }
      }
      if (!alive) {
        // End of file: the worker died. Its trial fails with the reason; others go on.
        long lost = w.trial;
        ::close(w.to_worker);
        ::close(w.reader->fd());
        std::string why = exit_description(w.pid);
        w = Worker{};
        if (lost >= 0) {
          --running;
          end(static_cast<size_t>(lost), TrialResult::failure(why + " while running this trial"));
        }
      }
    }
    workers_.erase(
        std::remove_if(workers_.begin(), workers_.end(), [](const Worker& w) { return w.pid < 0; }),
        workers_.end());
  }
}

}  // namespace induct
