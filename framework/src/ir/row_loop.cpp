// Row loops of reduction kernels (see tessera/ir/row_loop.h).
#include "tessera/ir/row_loop.h"

#include <algorithm>

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

std::vector<OuterAccumulator> outer_accumulators(const Loop& loop) {
  struct Collector final : StmtVisitor {
    std::set<std::string> inner_inits;
    std::vector<OuterAccumulator> accums;
    void visit_Init(const Init& s) override { inner_inits.insert(s.acc); }
    void visit_Accum(const Accum& s) override {
      for (OuterAccumulator& a : accums)
        if (a.acc == s.acc) {
          a.one_op = a.one_op && a.op == s.op;
          return;
        }
      accums.push_back({s.acc, s.op, true});
    }
  } collector;
  collector.visit(loop.body);
  std::erase_if(collector.accums, [&](const OuterAccumulator& a) { return collector.inner_inits.count(a.acc) > 0; });
  return std::move(collector.accums);
}

bool computes_values_only(const Body& body) {
  return std::all_of(body.begin(), body.end(), [](const Stmt& s) { return s.is<Load>() || s.is<Assign>() || s.is<Select>(); });
}

bool loads_only_from(const Body& body, const std::vector<std::string>& buffers) {
  for (const Stmt& s : body)
    if (const auto* load = s.as<Load>())
      if (std::find(buffers.begin(), buffers.end(), load->buffer) == buffers.end()) return false;
  return true;
}

bool reads_any(const Body& body, const std::set<std::string>& names) {
  for (const std::string& name : used_names(body))
    if (names.count(name)) return true;
  return false;
}

Body rewrite_statement_runs(const Body& body,
                            const std::function<std::optional<StatementRun>(const Body&, size_t)>& match) {
  Body out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (std::optional<StatementRun> run = match(body, i)) {
      out.insert(out.end(), run->replacement.begin(), run->replacement.end());
      i += run->length - 1;
      continue;
    }
    if (const auto* cond = body[i].as<Cond>()) {
      out.push_back(Cond{cond->cond, rewrite_statement_runs(cond->then_body, match),
                         rewrite_statement_runs(cond->else_body, match)});
      continue;
    }
    out.push_back(body[i]);
  }
  return out;
}

}  // namespace tessera
