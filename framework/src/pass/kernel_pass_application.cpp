// KernelPass: each application works on a copy of its node and sees the graph as it was before
// the pass; the copies are committed in graph order once all succeeded. This is what makes the
// result independent of the thread count and leaves the graph untouched when the pass fails (so a
// reproducer needs no snapshot). With sharing, the pass runs once per group of kernels equal up to
// their buffer names (kernel_sharing.h) and the other members take that result, renamed.
#include "kernel_pass_application.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <thread>

#include "kernel_sharing.h"
#include "tessera/ir/printer.h"

namespace tessera {

namespace {

struct Application {
  std::optional<Node> node;  // the rewritten copy
  std::optional<PassContext> ctx;
  Status status;
  std::string before, after;
};

std::string dialect_list(const std::vector<Dialect>& dialects) {
  std::string s;
  for (size_t i = 0; i < dialects.size(); ++i) s += (i ? " or " : "") + std::string(dialect_name(dialects[i]));
  return s;
}

// Runs the pass on a copy of `original`; checks that the copy is a node of a dialect the pass
// produces and still the same node.
void apply_one(KernelPass& pass, const Node& original, const PassContext& ctx, bool record_text, Application& out) {
  out.ctx.emplace(ctx.fork());
  out.node.emplace(original);
  Node& copy = *out.node;
  if (record_text) out.before = print_node(ctx.graph(), original);
  try {
    out.status = pass.run_on(copy, *out.ctx);
  } catch (const std::exception& e) {
    out.status = out.ctx->error_at(original, "internal error in " + std::string(pass.name()) + ": " + e.what());
  }
  if (!out.status) return;
  if (copy.id() != original.id()) {
    out.status = out.ctx->error_at(original, "internal error: " + std::string(pass.name()) + " renamed the node to '" +
                                                 copy.id() + "' (a kernel pass rewrites a node in place)");
    return;
  }
  const std::vector<Dialect> produced = pass.stages();
  if (!copy.op || std::find(produced.begin(), produced.end(), copy.dialect()) == produced.end()) {
    std::string now = copy.op ? std::string(dialect_name(copy.dialect())) + " IR" : "no op";
    out.status = out.ctx->error_at(original, std::string(pass.name()) + " could not lower node '" + original.id() +
                                                 "': it is left as " + now + ", and the pass produces " +
                                                 dialect_list(produced) + " IR");
    return;
  }
  if (record_text) out.after = print_node(ctx.graph(), copy);
}

// A member of a group takes its representative's application: the rewritten node, skips and
// diagnostics, each with the representative's buffer names replaced by the member's. When the
// result cannot be renamed (the pass gave the representative another input) the member is
// rewritten by the pass itself.
// Returns false when the member was rewritten by the pass itself.
bool share_one(KernelPass& pass, const Node& representative, Application& done, const Node& original,
               const PassContext& ctx, bool record_text, Application& out) {
  const BufferRenaming renaming(representative, original);
  out.ctx.emplace(ctx.fork());
  out.node.emplace(original);
  if (!renaming.apply(*done.node, *out.node)) {
    apply_one(pass, original, ctx, record_text, out);
    return false;
  }
  out.status = Status::ok();
  for (const PassContext::Skip& s : done.ctx->skips()) {
    Node at;
    at.set_id(renaming.rename(s.node));
    out.ctx->skip(at, renaming.rename(s.reason));
  }
  for (Diagnostic d : done.ctx->diagnostics().diagnostics()) {
    d.node = renaming.rename(d.node);
    d.message = renaming.rename(d.message);
    out.ctx->diagnostics().report(d);
  }
  if (record_text) {
    out.before = print_node(ctx.graph(), original);
    out.after = print_node(ctx.graph(), *out.node);
  }
  return true;
}

// Calls work(k) for every k in [0, count) on up to `workers` threads.
template <class Work>
void for_each_index(size_t count, size_t workers, Work&& work) {
  workers = std::min(workers, count);
  if (workers <= 1) {
    for (size_t k = 0; k < count; ++k) work(k);
    return;
  }
  std::atomic<size_t> next{0};
  auto loop = [&] {
    for (size_t k = next++; k < count; k = next++) work(k);
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(loop);
  loop();
  for (std::thread& t : pool) t.join();
}

}  // namespace

Status apply_kernel_pass(KernelPass& pass, Graph& g, PassContext& ctx, int threads,
                         std::vector<AppliedNodeText>* texts, KernelGroups* groups) {
  ctx.set_graph(&g);
  std::vector<Node*> targets;
  for (Node* n : g.nodes())
    if (pass.applies_to(*n)) targets.push_back(n);
  std::vector<Application> applications(targets.size());
  const bool record_text = texts != nullptr;

  // Choice sources answer by a decision's key (the kernel's structure, the pass, the knob), so
  // equal kernels get equal answers: sharing and the thread pool stay on with a tuner attached.
  std::vector<size_t> representative(targets.size());
  for (size_t k = 0; k < targets.size(); ++k) representative[k] = k;
  if (groups)
    representative = groups->representatives(g, std::vector<const Node*>(targets.begin(), targets.end()));
  std::vector<size_t> first, others;
  for (size_t k = 0; k < targets.size(); ++k) (representative[k] == k ? first : others).push_back(k);

  const size_t workers = static_cast<size_t>(std::max(threads, 1));
  for_each_index(first.size(), workers, [&](size_t i) {
    const size_t k = first[i];
    apply_one(pass, *targets[k], ctx, record_text, applications[k]);
  });
  // A failed representative fails the pass (it comes first in graph order); its members wait.
  std::atomic<bool> rewritten_alone{false};
  for_each_index(others.size(), workers, [&](size_t i) {
    const size_t k = others[i];
    Application& done = applications[representative[k]];
    if (!done.status) return;
    if (!share_one(pass, *targets[representative[k]], done, *targets[k], ctx, record_text, applications[k]))
      rewritten_alone = true;
  });
  if (rewritten_alone && groups) groups->invalidate();

  for (Application& a : applications) {
    if (!a.ctx) continue;  // a member of a failed representative
    ctx.join(*a.ctx);
    if (!a.status) return std::move(a.status);
  }
  for (size_t k = 0; k < targets.size(); ++k) {
    Node& n = *targets[k];
    Node& rewritten = *applications[k].node;
    n.op = std::move(rewritten.op);
    n.type = std::move(rewritten.type);
    n.loc = std::move(rewritten.loc);
    n.choices = std::move(rewritten.choices);
    if (!(n.inputs == rewritten.inputs)) n.inputs = rewritten.inputs.ids();
    if (record_text)
      texts->push_back({n.id(), std::move(applications[k].before), std::move(applications[k].after)});
  }
  return Status::ok();
}

Status KernelPass::run(Graph& g, PassContext& ctx) { return apply_kernel_pass(*this, g, ctx, 1, nullptr, nullptr); }

}  // namespace tessera
