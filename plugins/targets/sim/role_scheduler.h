// RoleScheduler: runs the two branches of a Cond whose threads wait for each other (a
// warp-specialized kernel's producer and consumers: mbarrier waits, named barriers, setmaxnreg.inc)
// as coroutines of one block, the way the warps run concurrently on the GPU.
//
// The block executor runs a block's threads together over lane vectors, a Cond's branches one
// after the other. That is exact until a branch waits for something only the other branch does
// (the producer waits for the consumers to free a ring slot while they wait for its copies): run
// in sequence, the first branch would wait forever. So the executor hands such a Cond's branches
// to run_concurrently, which runs each as a role (a thread of its own), one role at a time: a role
// runs until it must wait (wait_until with a condition that does not hold), then hands over to the
// next role in turn. A role's waiting ends when its condition holds at its turn; when every role
// is finished or waiting and none made progress since the waiting role last looked (each got a
// turn), the block would hang on the GPU and wait_until returns the waiting statement's error.
// Roles share the executor's state without locks: only the role holding the turn runs.
//
// Deterministic: the turn order is the roles' creation order, and a role yields only at a wait.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "tessera/support/status.h"

namespace tessera::sim {

class RoleScheduler {
 public:
  RoleScheduler();
  ~RoleScheduler();
  RoleScheduler(const RoleScheduler&) = delete;
  RoleScheduler& operator=(const RoleScheduler&) = delete;

  // Runs `roles` concurrently as children of the role running now and returns when all have
  // finished: the first error among them (in role order), else ok.
  Status run_concurrently(const std::vector<std::function<Status()>>& roles);

  // Called by the running role at a statement that may wait: returns ok once `ready()` holds
  // (asked again at each of the role's turns), or `stuck()` when no role can make progress, with
  // a note of what each other waiting role waits for.
  Status wait_until(const std::function<bool()>& ready, const std::function<Diagnostic()>& stuck);

 private:
  enum class State { Runnable, Waiting, Joining, Finished };
  struct Role {
    int parent = -1;
    State state = State::Runnable;
    int children_left = 0;
    uint64_t steps_at_wait = 0;  // the progress count when the role last found its condition false
    bool cancelled = false;      // stopped at a wait because another role failed
    const std::function<Diagnostic()>* stuck = nullptr;  // while waiting: what it waits for
    Status result = Status::ok();
    std::condition_variable turn;
  };

  // Gives the turn to the next role after the running one (in creation order, cyclically) that is
  // runnable or waiting; the caller holds the lock.
  void hand_over();
  void await_turn(std::unique_lock<std::mutex>& lock, int id);

  std::mutex mutex_;
  std::map<int, std::unique_ptr<Role>> roles_;  // by id; 0 is the block executor's own thread
  int next_id_ = 1;
  int running_ = 0;
  uint64_t steps_ = 0;   // progress: turns on which a role went on running
  bool failed_ = false;  // a role failed: the others stop at their next wait
};

}  // namespace tessera::sim
