// Switching staged copies to an asynchronous transport (see stage_transport.h).
#include "tessera/pass/stage_transport.h"

namespace tessera {

Body StageTransportSwitch::mutate_body(const Body& b) {
  Body out;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!b[i].is<Stage>()) {
      out.push_back(mutate(b[i]));
      continue;
    }
    bool run_switched = false;
    for (; i < b.size() && b[i].is<Stage>(); ++i) {
      Stage s = *b[i].as<Stage>();
      if (accept(s)) {
        ++switched;
        run_switched = true;
        if (rewrite_) s.transport = to_;
      }
      out.push_back(s);
    }
    if (rewrite_ && run_switched && (i == b.size() || !b[i].is<AsyncWait>())) out.push_back(AsyncWait{0});
    --i;  // the loop's ++i moves to the first statement after the run
  }
  return out;
}

}  // namespace tessera
