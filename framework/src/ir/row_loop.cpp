// Row loops of reduction kernels (see tessera/ir/row_loop.h).
#include "tessera/ir/row_loop.h"

namespace tessera {

std::optional<RowLoop> row_loop(const Stmt& s) {
  if (const auto* sl = s.as<StridedLoop>()) {
    if (sl->role == LoopRole::Reduce) return RowLoop{&sl->body, true};
    return std::nullopt;
  }
  const auto* loop = s.as<Loop>();
  if (loop == nullptr || loop->role != LoopRole::Reduce) return std::nullopt;
  if (loop->body.size() == 1)
    if (const auto* sl = loop->body[0].as<StridedLoop>())
      return sl->role == LoopRole::Reduce ? std::optional<RowLoop>(RowLoop{&sl->body, true}) : std::nullopt;
  return RowLoop{&loop->body, false};
}

Stmt with_row_body(const Stmt& loop, Body body) {
  if (const auto* sl = loop.as<StridedLoop>()) {
    StridedLoop out = *sl;
    out.body = std::move(body);
    return out;
  }
  Loop out = *loop.as<Loop>();
  if (out.body.size() == 1 && out.body[0].is<StridedLoop>()) {
    StridedLoop inner = *out.body[0].as<StridedLoop>();
    inner.body = std::move(body);
    out.body = {Stmt(std::move(inner))};
  } else {
    out.body = std::move(body);
  }
  return out;
}

}  // namespace tessera
