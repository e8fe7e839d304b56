// RoleScheduler (see role_scheduler.h).
#include "role_scheduler.h"

#include <thread>
#include <utility>

namespace tessera::sim {

RoleScheduler::RoleScheduler() { roles_.emplace(0, std::make_unique<Role>()); }

RoleScheduler::~RoleScheduler() = default;

void RoleScheduler::hand_over() {
  auto it = roles_.upper_bound(running_);
  for (size_t n = 0; n < roles_.size(); ++n, ++it) {
    if (it == roles_.end()) it = roles_.begin();
    if (it->second->state == State::Runnable || it->second->state == State::Waiting) {
      running_ = it->first;
      it->second->turn.notify_one();
      return;
    }
  }
  // Unreachable while a role runs: the last child to finish makes its parent runnable.
}

void RoleScheduler::await_turn(std::unique_lock<std::mutex>& lock, int id) {
  Role& role = *roles_.at(id);
  role.turn.wait(lock, [&] { return running_ == id; });
}

Status RoleScheduler::run_concurrently(const std::vector<std::function<Status()>>& bodies) {
  std::unique_lock<std::mutex> lock(mutex_);
  const int parent = running_;
  std::vector<int> ids;
  for (size_t i = 0; i < bodies.size(); ++i) {
    const int id = next_id_++;
    auto role = std::make_unique<Role>();
    role->parent = parent;
    roles_.emplace(id, std::move(role));
    ids.push_back(id);
  }
  roles_.at(parent)->state = State::Joining;
  roles_.at(parent)->children_left = static_cast<int>(bodies.size());
  std::vector<std::thread> threads;
  threads.reserve(bodies.size());
  for (size_t i = 0; i < bodies.size(); ++i) {
    threads.emplace_back([this, id = ids[i], &body = bodies[i]] {
      std::unique_lock<std::mutex> l(mutex_);
      await_turn(l, id);
      Role& role = *roles_.at(id);
      if (failed_) {
        role.cancelled = true;
      } else {
        ++steps_;  // a role starting is progress
        l.unlock();
        Status result = body();
        l.lock();
        role.result = std::move(result);
        if (!role.result.is_ok() && !role.cancelled) failed_ = true;
      }
      role.state = State::Finished;
      ++steps_;
      Role& up = *roles_.at(role.parent);
      if (--up.children_left == 0) up.state = State::Runnable;
      hand_over();
    });
  }
  hand_over();
  await_turn(lock, parent);
  lock.unlock();
  for (std::thread& t : threads) t.join();
  lock.lock();
  Status first = Status::ok();
  for (int id : ids) {
    Role& role = *roles_.at(id);
    if (first.is_ok() && !role.cancelled && !role.result.is_ok()) first = std::move(role.result);
    roles_.erase(id);
  }
  if (roles_.size() == 1) failed_ = false;  // the block's error travels up as `first`
  return first;
}

Status RoleScheduler::wait_until(const std::function<bool()>& ready, const std::function<Diagnostic()>& stuck) {
  if (ready()) return Status::ok();
  std::unique_lock<std::mutex> lock(mutex_);
  const int me = running_;
  Role& role = *roles_.at(me);
  if (roles_.size() == 1) return stuck();  // no other role could end the wait
  role.state = State::Waiting;
  role.steps_at_wait = steps_;
  role.stuck = &stuck;
  for (;;) {
    hand_over();
    await_turn(lock, me);
    if (failed_) {
      role.state = State::Runnable;
      role.stuck = nullptr;
      role.cancelled = true;
      return make_error("sim: cancelled (another role of the block failed)");
    }
    if (ready()) {
      role.state = State::Runnable;
      role.stuck = nullptr;
      ++steps_;
      return Status::ok();
    }
    if (steps_ == role.steps_at_wait) {  // every other role had a turn since, and none went on
      role.state = State::Runnable;
      role.stuck = nullptr;
      failed_ = true;
      Diagnostic error = stuck();
      for (const auto& [id, other] : roles_)  // they wait too (their stacks are alive, their turn is ours)
        if (id != me && other->state == State::Waiting && other->stuck != nullptr)
          error.note("meanwhile: " + (*other->stuck)().message);
      return error;
    }
    role.steps_at_wait = steps_;
  }
}

}  // namespace tessera::sim
