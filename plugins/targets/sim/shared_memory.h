// SharedMemory: the Smem buffers of the block being simulated, with the bookkeeping that turns
// CUDA's undefined behaviour into errors:
//   * an "initialized" bit per element (reading an element no thread wrote is an error);
//   * race tracking per barrier epoch: the thread that wrote the element and up to two threads
//     that read it since the last Sync(); a write by one thread and any access by another in the
//     same epoch is a race;
//   * cp.async: copies issued by a thread join its open group, CpAsyncCommit closes the group,
//     CpAsyncWait(keep=N) lands all but the newest N committed groups (as writes by the issuing
//     thread); reading or writing an element with a copy still in flight is an error, and so is
//     issuing a copy into an element another thread read or wrote since the last Sync() (the copy
//     may land at once: a ring slot refilled while its readers may still read it);
//   * a ring-buffered Smem (slots > 1) is named with its slot in every report.
// Every check returns an error message ("" when the access is fine); the block executor adds the
// kernel, statement and thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "kernel_program.h"

namespace tessera::sim {

class SharedMemory {
 public:
  // `thread_name(lane)` spells a thread of the block for messages, e.g. "(3, 0, 0)".
  SharedMemory(const std::vector<SmemDecl>& decls, int lanes, std::function<std::string(int)> thread_name);

  // A new block: every element uninitialized, no access history, no copies in flight.
  void reset();
  // Sync(): accesses before it no longer race with accesses after it.
  void barrier() { ++epoch_; }

  int64_t size(int buffer) const { return static_cast<int64_t>(buffers_[static_cast<size_t>(buffer)].data.size()); }
  const SmemDecl& decl(int buffer) const { return buffers_[static_cast<size_t>(buffer)].decl; }
  // "x_smem[1, 7]"
  std::string element_str(int buffer, int64_t flat) const;

  std::string read(int buffer, int64_t flat, int lane, double& value);
  std::string write(int buffer, int64_t flat, int lane, const SimStmt& at, double value);

  // cp.async: `value` was read from global memory when the copy was issued.
  std::string issue_copy(int buffer, int64_t flat, int lane, const SimStmt& at, double value);
  void commit_copies(int lane);
  std::string wait_copies(int lane, int64_t keep);

 private:
  struct Element {
    uint64_t epoch = 0;           // the barrier epoch the access history below belongs to
    int32_t writer = -1;          // lane that wrote it in that epoch
    int32_t reader0 = -1, reader1 = -1;  // up to two distinct lanes that read it in that epoch
    bool initialized = false;
    int32_t pending = 0;          // cp.async copies in flight into it
    const SimStmt* writer_stmt = nullptr;
  };
  struct Buffer {
    SmemDecl decl;
    std::vector<double> data;
    std::vector<Element> state;
  };
  struct PendingCopy {
    int buffer;
    int64_t flat;
    double value;
    const SimStmt* stmt;
  };
  struct ThreadCopies {
    std::vector<PendingCopy> open;
    std::deque<std::vector<PendingCopy>> committed;
  };

  Element& touch(int buffer, int64_t flat);

  std::vector<Buffer> buffers_;
  std::vector<ThreadCopies> copies_;  // per lane
  std::function<std::string(int)> thread_name_;
  uint64_t epoch_ = 1;
};

}  // namespace tessera::sim
