// SPDX-License-Identifier: BSD-3-Clause
// Engine workers: one run-to-completion worker per lcore (their poll loop is forward.cc), which
// RX queues each polls, and the control operations on them: pause, resume, the worker hooks
// (worker_hooks.h) a test sets before they launch.
#include <rte_launch.h>
#include <rte_lcore.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/wait_until.h"
#include "dataplane/dpdk/engine_state.h"

namespace skbnf::dpdk {

absl::Status Engine::Impl::SetUpWorkers() {
  std::vector<unsigned> lcores;
  if (config.workers.empty()) {
    unsigned lc;
    RTE_LCORE_FOREACH_WORKER(lc) { lcores.push_back(lc); }
    if (lcores.empty()) {
      return absl::FailedPreconditionError(
          "no worker lcores: give EAL at least two, e.g. -l 0,1 (the first is the main lcore, "
          "which runs control)");
    }
    for (unsigned i = 0; i < lcores.size(); ++i) {
      auto w = std::make_unique<Worker>();
      w->lcore = lcores[i];
      w->index = i;
      workers.push_back(std::move(w));
    }
    // RX queues round-robin over the workers.
    size_t k = 0;
    for (uint16_t q = 0; q < config.rx_queues; ++q) {
      for (uint16_t id : port_ids) {
        workers[k++ % workers.size()]->rx.push_back({id, q});
      }
    }
  } else {
    for (const WorkerSpec& ws : config.workers) {
      if (ws.lcore >= RTE_MAX_LCORE || !rte_lcore_is_enabled(ws.lcore) ||
          ws.lcore == rte_get_main_lcore()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "worker lcore ", ws.lcore,
            " is not an enabled non-main EAL lcore; give EAL -l with it (main lcore is ",
            rte_get_main_lcore(), ")"));
      }
      auto w = std::make_unique<Worker>();
      w->lcore = ws.lcore;
      w->index = static_cast<unsigned>(workers.size());
      for (const auto& [name, q] : ws.rx) {
        auto id = ResolvePort(name);
        if (!id.ok()) return id.status();
        if (*id >= kMaxPorts || !ports[*id].active) {
          return absl::InvalidArgumentError(
              absl::StrCat("worker ", ws.lcore, ": port '", name, "' is not an engine port"));
        }
        if (q >= config.rx_queues) {
          return absl::InvalidArgumentError(
              absl::StrCat("worker ", ws.lcore, ": queue ", q, " >= rx_queues ", config.rx_queues));
        }
        w->rx.push_back({*id, q});
      }
      workers.push_back(std::move(w));
    }
  }
  for (auto& w : workers) {
    w->engine = this;
    if (!config.native_twin) continue;
    // Each queue's native twin (EngineConfig::native_twin), polled instead of it on the native
    // side: queue q + rx_queues on the same port.
    for (const RxQueue& q : w->rx) {
      w->twin_rx.push_back({q.port, static_cast<uint16_t>(q.queue + config.rx_queues)});
    }
  }
  return absl::OkStatus();
}

namespace {

// The CPUs an lcore's thread may run on (EAL's --lcores / -l mapping): "core 3", "cores 0-1".
std::string CoresOf(unsigned lcore) {
  const rte_cpuset_t set = rte_lcore_cpuset(lcore);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  if (cpus.size() == 1) return absl::StrCat("core ", cpus[0]);
  return absl::StrCat("cores ", absl::StrJoin(cpus, ","));
}

std::string ReadLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// What the kernel says the thread is doing: its state (/proc/<pid>/task/<tid>/stat, the field
// after the parenthesised name: proc(5)) and the kernel function it waits in (wchan, "0" when
// it runs or the kernel does not tell).
std::string ThreadState(int tid) {
  if (tid <= 0) return "its thread id is unknown";
  const std::string dir = absl::StrCat("/proc/self/task/", tid);
  const std::string stat = ReadLine(dir + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) {
    return absl::StrCat("thread ", tid, " not found");
  }
  const char state = stat[close + 2];
  static const std::pair<char, const char*> kStates[] = {
      {'R', "running"}, {'S', "sleeping"}, {'D', "in uninterruptible wait"}, {'T', "stopped"},
      {'t', "stopped by a tracer"}, {'Z', "a zombie"}};
  std::string what = absl::StrCat("state ", std::string(1, state));
  for (const auto& [c, name] : kStates) {
    if (c == state) absl::StrAppend(&what, " (", name, ")");
  }
  const std::string wchan = ReadLine(dir + "/wchan");
  if (!wchan.empty() && wchan != "0") absl::StrAppend(&what, ", waiting in ", wchan);
  return absl::StrCat("thread ", tid, " ", what);
}

// What a worker that did not stop was doing, from what the engine and the kernel know: whether
// its loop moved during the wait (its polls and parked-loop counters), whether it was parked,
// and its thread's state.
std::string DescribeStuckWorker(const Worker& w, uint64_t loops_before,
                                std::chrono::milliseconds bound) {
  const uint64_t loops = w.c.polls.Get() + w.c.parked_loops.Get();
  const std::string loop =
      loops == loops_before
          ? absl::StrCat("its loop did not come round in that time (", loops,
                         " passes before and after), ",
                         w.parked.load() ? "last parked" : "inside one pass (a PMD call, a "
                                                           "forward, a hook)")
          : absl::StrCat("its loop went round ", loops - loops_before,
                         " times but did not see the stop flag");
  return absl::StrCat("worker on lcore ", w.lcore, " (", CoresOf(w.lcore), ") did not stop within ",
                      bound.count(), " ms: ", loop, "; ", ThreadState(w.tid.load()));
}

}  // namespace

absl::Status Engine::Impl::WaitWorkersStopped(std::chrono::milliseconds bound) const {
  std::vector<uint64_t> before;
  for (const auto& w : workers) before.push_back(w->c.polls.Get() + w->c.parked_loops.Get());
  const auto deadline = std::chrono::steady_clock::now() + bound;
  auto in_loop = [](const Worker& w) {
    return w.launched.load() && rte_eal_get_lcore_state(w.lcore) != WAIT;
  };
  for (const auto& w : workers) {
    while (in_loop(*w) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::vector<std::string> stuck;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (in_loop(*workers[i])) stuck.push_back(DescribeStuckWorker(*workers[i], before[i], bound));
  }
  if (stuck.empty()) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrJoin(stuck, "; "));
}

Worker* Engine::Impl::FindWorker(unsigned lcore) const {
  for (const auto& w : workers) {
    if (w->lcore == lcore) return w.get();
  }
  return nullptr;
}

// Both wait for the worker's own flag (Worker::parked, written at its quiescent point), so a
// pause has taken effect when it returns, on the skbnf pool and on ring_mp_mc alike.
absl::Status Engine::Impl::PauseLocked(Worker& w, std::chrono::microseconds timeout) {
  if (!started || stopped) return absl::FailedPreconditionError("engine not running");
  if (pool != nullptr) {
    if (absl::Status st = pool->PauseWorker(static_cast<int>(w.lcore), timeout); !st.ok()) {
      return st;
    }
  } else {
    w.pause_requested.store(true, std::memory_order_release);
  }
  if (!WaitUntil(timeout, [&] { return w.parked.load(std::memory_order_acquire); })) {
    if (pool == nullptr) w.pause_requested.store(false);
    return absl::DeadlineExceededError(absl::StrCat(
        "worker ", w.lcore, " did not reach its quiescent point in ", timeout.count(), " us"));
  }
  return absl::OkStatus();
}

absl::Status Engine::Impl::ResumeLocked(Worker& w, std::chrono::microseconds timeout) {
  if (pool != nullptr) {
    if (absl::Status st = pool->ResumeWorker(static_cast<int>(w.lcore), timeout); !st.ok()) {
      return st;
    }
  } else {
    w.pause_requested.store(false, std::memory_order_release);
  }
  if (!started || stopped) return absl::OkStatus();
  if (!WaitUntil(timeout, [&] { return !w.parked.load(std::memory_order_acquire); })) {
    return absl::DeadlineExceededError(absl::StrCat(
        "worker ", w.lcore, " did not leave its parked state in ", timeout.count(), " us"));
  }
  return absl::OkStatus();
}

namespace {
std::chrono::microseconds OrDefault(std::chrono::microseconds t) {
  return t.count() > 0 ? t : std::chrono::microseconds(500'000);
}
}  // namespace

absl::Status Engine::PauseWorker(unsigned lcore, std::chrono::microseconds timeout) {
  pool::MutexLock lock(&impl_->control_mu);
  Worker* w = impl_->FindWorker(lcore);
  if (w == nullptr) return absl::NotFoundError(absl::StrCat("lcore ", lcore, " is not a worker"));
  return impl_->PauseLocked(*w, OrDefault(timeout));
}

absl::Status Engine::ResumeWorker(unsigned lcore, std::chrono::microseconds timeout) {
  pool::MutexLock lock(&impl_->control_mu);
  Worker* w = impl_->FindWorker(lcore);
  if (w == nullptr) return absl::NotFoundError(absl::StrCat("lcore ", lcore, " is not a worker"));
  return impl_->ResumeLocked(*w, OrDefault(timeout));
}

bool Engine::IsPaused(unsigned lcore) const {
  const Worker* w = impl_->FindWorker(lcore);
  return w != nullptr && w->parked.load(std::memory_order_acquire);
}

absl::Status Engine::SetWorkerHooks(std::unique_ptr<WorkerHooks> hooks) {
  pool::MutexLock lock(&impl_->control_mu);
  if (impl_->started) {
    return absl::FailedPreconditionError(
        "worker hooks are chosen when the workers launch: set them before Engine::Start");
  }
  impl_->worker_hooks = std::move(hooks);
  return absl::OkStatus();
}

std::vector<unsigned> Engine::WorkerLcores() const {
  std::vector<unsigned> out;
  for (const auto& w : impl_->workers) out.push_back(w->lcore);
  return out;
}

int Engine::LcoreSocket(unsigned lcore) const {
  if (lcore >= RTE_MAX_LCORE) return -1;
  const unsigned s = rte_lcore_to_socket_id(lcore);
  return s == static_cast<unsigned>(SOCKET_ID_ANY) ? -1 : static_cast<int>(s);
}

}  // namespace skbnf::dpdk
