// Unit tests for Registry: registration by kind and name, attribution to plugin files, sorted
// listings, and the all-or-nothing handling of conflicting plugins.
#include <gtest/gtest.h>

#include <memory>

#include "tessera/pass/pass.h"
#include "tessera/plugin/registry.h"
#include "tessera/tune/tuner.h"

namespace tessera {
namespace {

class NamedPass final : public Pass {
 public:
  explicit NamedPass(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return "test pass"; }
  std::vector<Dialect> stages() const override { return {Dialect::Torch}; }
  Status run(Graph&, PassContext&) override { return Status::ok(); }

 private:
  std::string name_;
};

class NamedTuner final : public Tuner {
 public:
  std::string_view name() const override { return "t"; }
  std::string_view summary() const override { return "test tuner"; }
  Expected<std::unique_ptr<TaskSearch>> start(const TuneTask&, TrialRunner&, const TuneOptions&) const override {
    return make_error("test tuner: no search");
  }
};

PassFactory pass_factory(std::string name) {
  return [name] { return std::make_unique<NamedPass>(name); };
}

PluginRecord record(std::string file, std::string name) {
  return PluginRecord{std::move(file), std::move(name), "1.0", {}};
}

TEST(RegistryTest, ComponentKindNames) {
  EXPECT_EQ(component_kind_name(ComponentKind::Pass), "pass");
  EXPECT_EQ(component_kind_name(ComponentKind::Frontend), "frontend");
  EXPECT_EQ(component_kind_name(ComponentKind::Target), "target");
  EXPECT_EQ(component_kind_name(ComponentKind::Tuner), "tuner");
}

TEST(RegistryTest, MakesRegisteredPassesAndNothingElse) {
  Registry r;
  r.add_pass("fuse", pass_factory("fuse"));
  std::unique_ptr<Pass> p = r.make_pass("fuse");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name(), "fuse");
  EXPECT_EQ(r.make_pass("lift"), nullptr);
  EXPECT_EQ(r.make_tuner("fuse"), nullptr);  // names are per kind
  EXPECT_TRUE(r.has(ComponentKind::Pass, "fuse"));
  EXPECT_FALSE(r.has(ComponentKind::Target, "fuse"));
}

TEST(RegistryTest, InProcessRegistrationsBelongToBuiltin) {
  Registry r;
  r.add_pass("a", pass_factory("a"));
  r.add_tuner("mcts", [] { return std::make_unique<NamedTuner>(); });
  EXPECT_EQ(r.owner(ComponentKind::Pass, "a"), "<builtin>");
  EXPECT_EQ(r.owner(ComponentKind::Pass, "missing"), "");
  ASSERT_EQ(r.plugins().size(), 1u);
  EXPECT_EQ(r.plugins()[0].file, "<builtin>");
  ASSERT_EQ(r.plugins()[0].components.size(), 2u);
  EXPECT_EQ(r.plugins()[0].components[1].first, ComponentKind::Tuner);
  EXPECT_NE(r.make_tuner("mcts"), nullptr);
  EXPECT_TRUE(r.end_plugin()) << "no conflict among distinct builtin names";
}

TEST(RegistryTest, NamesAreSortedPerKind) {
  Registry r;
  r.add_pass("zeta", pass_factory("zeta"));
  r.add_pass("alpha", pass_factory("alpha"));
  r.add_pass("mid", pass_factory("mid"));
  r.add_tuner("greedy", [] { return std::make_unique<NamedTuner>(); });
  EXPECT_EQ(r.names(ComponentKind::Pass), (std::vector<std::string>{"alpha", "mid", "zeta"}));
  EXPECT_EQ(r.names(ComponentKind::Tuner), (std::vector<std::string>{"greedy"}));
  EXPECT_TRUE(r.names(ComponentKind::Frontend).empty());
}

TEST(RegistryTest, PluginRegistrationsAreAttributedToTheirFile) {
  Registry r;
  r.begin_plugin(record("/p/liba.so", "a"));
  r.add_pass("x", pass_factory("x"));
  r.add_pass("y", pass_factory("y"));
  ASSERT_TRUE(r.end_plugin());
  r.begin_plugin(record("/p/libb.so", "b"));
  r.add_pass("z", pass_factory("z"));
  ASSERT_TRUE(r.end_plugin());

  EXPECT_EQ(r.owner(ComponentKind::Pass, "x"), "/p/liba.so");
  EXPECT_EQ(r.owner(ComponentKind::Pass, "z"), "/p/libb.so");
  ASSERT_EQ(r.plugins().size(), 2u);
  EXPECT_EQ(r.plugins()[0].name, "a");
  EXPECT_EQ(r.plugins()[0].components.size(), 2u);
  EXPECT_EQ(r.plugins()[1].components,
            (std::vector<std::pair<ComponentKind, std::string>>{{ComponentKind::Pass, "z"}}));
}

TEST(RegistryTest, ConflictNamesBothFilesAndWithdrawsTheWholePlugin) {
  Registry r;
  r.begin_plugin(record("/p/libfirst.so", "first"));
  r.add_pass("canonicalize", pass_factory("first"));
  ASSERT_TRUE(r.end_plugin());

  r.begin_plugin(record("/p/libsecond.so", "second"));
  r.add_pass("extra", pass_factory("extra"));
  r.add_pass("canonicalize", pass_factory("second"));
  Status s = r.end_plugin();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            "pass 'canonicalize' registered by both /p/libfirst.so and /p/libsecond.so");

  // The first registration keeps the name; nothing of the refused plugin remains.
  EXPECT_EQ(r.owner(ComponentKind::Pass, "canonicalize"), "/p/libfirst.so");
  EXPECT_EQ(r.make_pass("canonicalize")->name(), "first");
  EXPECT_FALSE(r.has(ComponentKind::Pass, "extra"));
  ASSERT_EQ(r.plugins().size(), 1u);
  EXPECT_EQ(r.plugins()[0].name, "first");

  // The conflict was consumed: the next plugin loads cleanly.
  r.begin_plugin(record("/p/libthird.so", "third"));
  r.add_pass("extra", pass_factory("extra"));
  EXPECT_TRUE(r.end_plugin());
  EXPECT_EQ(r.owner(ComponentKind::Pass, "extra"), "/p/libthird.so");
}

TEST(RegistryTest, SameNameInDifferentKindsDoesNotConflict) {
  Registry r;
  r.begin_plugin(record("/p/liba.so", "a"));
  r.add_pass("mcts", pass_factory("mcts"));
  r.add_tuner("mcts", [] { return std::make_unique<NamedTuner>(); });
  EXPECT_TRUE(r.end_plugin());
}

TEST(RegistryTest, PluginRegisteringANameTwiceIsRefused) {
  Registry r;
  r.begin_plugin(record("/p/liba.so", "a"));
  r.add_pass("x", pass_factory("x"));
  r.add_pass("x", pass_factory("x"));
  Status s = r.end_plugin();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "pass 'x' registered twice by /p/liba.so");
  EXPECT_FALSE(r.has(ComponentKind::Pass, "x"));
}

TEST(RegistryTest, AbortWithdrawsEveryRegistrationOfThePlugin) {
  Registry r;
  r.add_pass("kept", pass_factory("kept"));
  r.begin_plugin(record("/p/libbad.so", "bad"));
  r.add_pass("half", pass_factory("half"));
  r.abort_plugin();
  EXPECT_FALSE(r.has(ComponentKind::Pass, "half"));
  EXPECT_TRUE(r.has(ComponentKind::Pass, "kept"));
  ASSERT_EQ(r.plugins().size(), 1u);
  EXPECT_EQ(r.plugins()[0].file, "<builtin>");
}

TEST(RegistryTest, BuiltinConflictIsReportedByEndPlugin) {
  Registry r;
  r.add_pass("x", pass_factory("one"));
  r.add_pass("x", pass_factory("two"));
  Status s = r.end_plugin();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "pass 'x' registered twice by <builtin>");
  EXPECT_EQ(r.make_pass("x")->name(), "one");
}

}  // namespace
}  // namespace tessera
