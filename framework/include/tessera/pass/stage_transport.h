// Switching staged copies to an asynchronous transport, run by run: the one rewrite async_copy
// (cp.async) and tma_copy (TMA box copies) share. Each Stage the pass accepts takes the new
// transport, and an `AsyncWait(keep=0)` follows each run of consecutive Stages in which one
// switched (unless an AsyncWait already follows the run), so the slabs are visible to the block
// exactly where the synchronous copies made them visible.
#pragma once

#include "tessera/ir/stmt.h"

namespace tessera {

class StageTransportSwitch : public StmtMutator {
 public:
  // `rewrite` false: only count the Stages that would switch (`switched`), changing nothing.
  StageTransportSwitch(StageTransport to, bool rewrite) : to_(to), rewrite_(rewrite) {}
  int switched = 0;  // Stages accepted so far

  Body mutate_body(const Body& b) override;

 protected:
  // Whether `s` switches, where it stands (a subclass tracks the enclosing statements through the
  // mutate_* hooks, e.g. a Stage under a condition that must stay synchronous).
  virtual bool accept(const Stage& s) const = 0;

 private:
  StageTransport to_;
  bool rewrite_;
};

}  // namespace tessera
