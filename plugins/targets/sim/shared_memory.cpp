// SharedMemory: per-block Smem contents with initialization, race and cp.async tracking
// (see shared_memory.h).
#include "shared_memory.h"

#include <algorithm>
#include <utility>

namespace tessera::sim {

SharedMemory::SharedMemory(const std::vector<SmemDecl>& decls, int lanes, std::function<std::string(int)> thread_name)
    : copies_(static_cast<size_t>(lanes)), thread_name_(std::move(thread_name)) {
  for (const SmemDecl& d : decls) {
    int64_t n = 1;
    for (int64_t e : d.shape) n *= e;
    buffers_.push_back(Buffer{d, std::vector<double>(static_cast<size_t>(n), 0.0), std::vector<Element>(static_cast<size_t>(n))});
  }
}

void SharedMemory::reset() {
  for (Buffer& b : buffers_) std::fill(b.state.begin(), b.state.end(), Element{});
  for (ThreadCopies& t : copies_) {
    t.open.clear();
    t.committed.clear();
  }
  ++epoch_;
}

std::string SharedMemory::element_str(int buffer, int64_t flat) const {
  const SmemDecl& d = decl(buffer);
  std::vector<int64_t> index(d.shape.size(), 0);
  for (size_t i = d.shape.size(); i-- > 0;) {
    index[i] = flat % d.shape[i];
    flat /= d.shape[i];
  }
  std::string s = d.name + "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  s += "]";
  if (d.slots > 1 && !index.empty()) s += " (slot " + std::to_string(index[0]) + " of the ring)";
  return s;
}

SharedMemory::Element& SharedMemory::touch(int buffer, int64_t flat) {
  Element& e = buffers_[static_cast<size_t>(buffer)].state[static_cast<size_t>(flat)];
  if (e.epoch != epoch_) {  // a barrier since its last access: forget who touched it
    e.epoch = epoch_;
    e.writer = -1;
    e.reader0 = e.reader1 = -1;
    e.writer_stmt = nullptr;
  }
  return e;
}

std::string SharedMemory::read(int buffer, int64_t flat, int lane, double& value) {
  Element& e = touch(buffer, flat);
  if (e.pending > 0)
    return "read before cp.async wait: " + element_str(buffer, flat) + " has a cp.async copy in flight";
  if (!e.initialized) return "reads uninitialized shared element " + element_str(buffer, flat);
  if (e.writer >= 0 && e.writer != lane)
    return "race on " + element_str(buffer, flat) + ": thread " + thread_name_(e.writer) + " wrote it (at `" +
           stmt_text(*e.writer_stmt->source) + "`) and this thread reads it with no Sync() in between";
  if (e.reader0 < 0) e.reader0 = lane;
  else if (e.reader0 != lane && e.reader1 < 0) e.reader1 = lane;
  value = buffers_[static_cast<size_t>(buffer)].data[static_cast<size_t>(flat)];
  return {};
}

std::string SharedMemory::write(int buffer, int64_t flat, int lane, const SimStmt& at, double value) {
  Element& e = touch(buffer, flat);
  if (e.pending > 0)
    return "writes " + element_str(buffer, flat) + " while a cp.async copy into it is in flight";
  if (e.writer >= 0 && e.writer != lane)
    return "race on " + element_str(buffer, flat) + ": thread " + thread_name_(e.writer) + " wrote it (at `" +
           stmt_text(*e.writer_stmt->source) + "`) and this thread writes it with no Sync() in between";
  int other_reader = e.reader0 >= 0 && e.reader0 != lane ? e.reader0 : e.reader1;
  if (other_reader >= 0)
    return "race on " + element_str(buffer, flat) + ": thread " + thread_name_(other_reader) +
           " read it and this thread writes it with no Sync() in between";
  e.writer = lane;
  e.writer_stmt = &at;
  e.initialized = true;
  Buffer& b = buffers_[static_cast<size_t>(buffer)];
  b.data[static_cast<size_t>(flat)] = round_to_storage(value, b.decl.dtype);
  return {};
}

std::string SharedMemory::issue_copy(int buffer, int64_t flat, int lane, const SimStmt& at, double value) {
  Element& e = touch(buffer, flat);
  if (e.pending > 0)
    return "starts a cp.async into " + element_str(buffer, flat) + " while another copy into it is in flight";
  // The copy may land at any moment until its wait returns, so it conflicts with every access by
  // another thread since the last barrier, as a write would (a slot refilled before its readers
  // passed a Sync()).
  if (e.writer >= 0 && e.writer != lane)
    return "race on " + element_str(buffer, flat) + ": thread " + thread_name_(e.writer) + " wrote it (at `" +
           stmt_text(*e.writer_stmt->source) + "`) and this thread refills it with cp.async with no Sync() in between";
  int other_reader = e.reader0 >= 0 && e.reader0 != lane ? e.reader0 : e.reader1;
  if (other_reader >= 0)
    return "race on " + element_str(buffer, flat) + ": thread " + thread_name_(other_reader) +
           " read it and this thread refills it with cp.async with no Sync() in between";
  ++e.pending;
  copies_[static_cast<size_t>(lane)].open.push_back(PendingCopy{buffer, flat, value, &at});
  return {};
}

void SharedMemory::commit_copies(int lane) {
  ThreadCopies& t = copies_[static_cast<size_t>(lane)];
  t.committed.push_back(std::move(t.open));  // an empty group still counts, as in CUDA
  t.open.clear();
}

std::string SharedMemory::wait_copies(int lane, int64_t keep) {
  ThreadCopies& t = copies_[static_cast<size_t>(lane)];
  while (static_cast<int64_t>(t.committed.size()) > keep) {
    for (const PendingCopy& c : t.committed.front()) {
      --touch(c.buffer, c.flat).pending;
      std::string err = write(c.buffer, c.flat, lane, *c.stmt, c.value);  // the copy lands: a write by its issuer
      if (!err.empty()) return err;
    }
    t.committed.pop_front();
  }
  return {};
}

}  // namespace tessera::sim
