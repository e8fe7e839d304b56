// Tests for PluginHost (loading plugins with Boost.DLL, every refusal and its message, double
// loads, independent hosts) and for the canonicalize pass plugin loaded through it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tessera/ir/op.h"
#include "tessera/ir/stmt.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/plugin_host.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

const std::string kPluginDir = TESSERA_BUILD_DIR "/lib/tessera/plugins";
const std::string kFixtureDir = TESSERA_FIXTURE_DIR;

std::string canonical(const std::string& path) { return fs::canonical(path).string(); }
std::string canonicalize_plugin() { return canonical(kPluginDir + "/libcanonicalize.so"); }
std::string fixture(const std::string& name) { return canonical(kFixtureDir + "/lib" + name + ".so"); }

// A scratch directory removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            (std::string("tessera_plugin_host_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

TEST(PluginHostTest, DefaultDirectoryIsTheBuildPluginDirectory) {
  std::vector<std::string> dirs = PluginHost::default_directories();
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(dirs[0], canonical(kPluginDir));
}

TEST(PluginHostTest, LoadsTheBuildPluginDirectory) {
  PluginHost host;
  Status s = host.load_directory(kPluginDir);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(host.registry().has(ComponentKind::Pass, "canonicalize"));
  EXPECT_EQ(host.registry().owner(ComponentKind::Pass, "canonicalize"), canonicalize_plugin());
  const auto& files = host.loaded_files();
  EXPECT_NE(std::find(files.begin(), files.end(), canonicalize_plugin()), files.end());

  const PluginRecord* record = nullptr;
  for (const PluginRecord& r : host.registry().plugins())
    if (r.file == canonicalize_plugin()) record = &r;
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->name, "canonicalize");
  EXPECT_EQ(record->version, "1.0.0");
  EXPECT_EQ(record->components,
            (std::vector<std::pair<ComponentKind, std::string>>{{ComponentKind::Pass, "canonicalize"}}));

  std::unique_ptr<Pass> pass = host.registry().make_pass("canonicalize");
  ASSERT_NE(pass, nullptr);
  EXPECT_EQ(pass->name(), "canonicalize");
  EXPECT_TRUE(pass->knobs().empty());
  EXPECT_EQ(pass->stages().size(), 6u);
}

TEST(PluginHostTest, MissingDirectoryIsSkipped) {
  PluginHost host;
  EXPECT_TRUE(host.load_directory("/nonexistent/tessera/plugins"));
  EXPECT_TRUE(host.loaded_files().empty());
}

TEST(PluginHostTest, MissingFileIsReported) {
  PluginHost host;
  Status s = host.load_file("/nonexistent/libnothing.so");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "plugin file not found: /nonexistent/libnothing.so");
  EXPECT_FALSE(s.error().loc.valid());
}

TEST(PluginHostTest, ErrorCarriesTheOriginWhenGiven) {
  PluginHost host;
  SourceLoc origin{"pipelines/custom.yaml", 3, 5, 12};
  Status s = host.load_file("/nonexistent/libnothing.so", origin);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().loc.str(), "pipelines/custom.yaml:3:5");
  EXPECT_EQ(s.error().message, "plugin file not found: /nonexistent/libnothing.so");
}

TEST(PluginHostTest, LibraryWithoutEntryPointIsNotAPlugin) {
  PluginHost host;
  Status s = host.load_file(kFixtureDir + "/libnot_a_plugin.so");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, fixture("not_a_plugin") +
                                   " is not a Tessera plugin: it does not export "
                                   "'tessera_plugin_entry'");
  EXPECT_TRUE(host.loaded_files().empty());
}

TEST(PluginHostTest, ApiVersionMismatchNamesFileAndBothVersions) {
  PluginHost host;
  Status s = host.load_file(kFixtureDir + "/libwrong_api.so");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, fixture("wrong_api") + ": plugin API version 999 does not match host "
                                                      "API version " +
                                   std::to_string(kPluginApiVersion));
  EXPECT_TRUE(host.registry().plugins().empty());
}

TEST(PluginHostTest, DuplicatePassNamesBothFiles) {
  PluginHost host;
  ASSERT_TRUE(host.load_file(canonicalize_plugin()));
  Status s = host.load_file(kFixtureDir + "/libduplicate_pass.so");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "pass 'canonicalize' registered by both " + canonicalize_plugin() +
                                   " and " + fixture("duplicate_pass"));
  // The first plugin keeps the name and the refused one is not listed.
  EXPECT_EQ(host.registry().owner(ComponentKind::Pass, "canonicalize"), canonicalize_plugin());
  EXPECT_EQ(host.loaded_files(), std::vector<std::string>{canonicalize_plugin()});
  EXPECT_EQ(host.registry().plugins().size(), 1u);
}

TEST(PluginHostTest, DuplicateErrorCarriesTheOrigin) {
  PluginHost host;
  ASSERT_TRUE(host.load_file(canonicalize_plugin()));
  Status s = host.load_file(fixture("duplicate_pass"), SourceLoc{"p.yaml", 2, 12, 1});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().loc.str(), "p.yaml:2:12");
}

TEST(PluginHostTest, GarbageSharedObjectIsAnErrorWithTheLoaderReason) {
  ScratchDir dir;
  const std::string path = dir.file("x.so");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 256; ++i) out << "this is not an ELF file ";
  }
  const std::string short_path = dir.file("short.so");
  { std::ofstream(short_path, std::ios::binary) << "tiny"; }
  PluginHost host;
  Status s = host.load_file(path);
  ASSERT_FALSE(s);
  const std::string& m = s.error().message;
  EXPECT_EQ(m.rfind("cannot load plugin " + canonical(path) + ": ", 0), 0u) << m;
  EXPECT_NE(m.find("invalid ELF header"), std::string::npos) << m;
  // The loader's reason follows the file name once, not twice.
  EXPECT_EQ(m.find(canonical(path)), m.rfind(canonical(path))) << m;

  Status short_file = host.load_file(short_path);
  ASSERT_FALSE(short_file);
  EXPECT_EQ(short_file.error().message, "cannot load plugin " + canonical(short_path) + ": file too short");
  EXPECT_TRUE(host.loaded_files().empty());
}

TEST(PluginHostTest, DirectoryWithABadPluginReportsIt) {
  ScratchDir dir;
  fs::copy_file(kFixtureDir + "/libwrong_api.so", dir.file("libwrong_api.so"));
  fs::copy_file(kFixtureDir + "/libfixture_pass.so", dir.file("libfixture_pass.so"));
  { std::ofstream(dir.file("README.txt")) << "not a plugin, and not a .so: ignored\n"; }
  PluginHost host;
  Status s = host.load_directory(dir.file(""));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("libwrong_api.so: plugin API version 999"), std::string::npos)
      << s.error().message;
  // Files load in sorted order: libfixture_pass.so came before the failure.
  EXPECT_TRUE(host.registry().has(ComponentKind::Pass, "fixture_noop"));
}

TEST(PluginHostTest, LoadingTheSameFileTwiceIsANoOp) {
  PluginHost host;
  ASSERT_TRUE(host.load_file(canonicalize_plugin()));
  // Another spelling of the same path, e.g. the plugin directory plus --plugin.
  Status again = host.load_file(kPluginDir + "/./../plugins/libcanonicalize.so");
  ASSERT_TRUE(again) << again.message();
  Status dir = host.load_directory(kPluginDir);
  ASSERT_TRUE(dir) << dir.message();
  EXPECT_EQ(std::count(host.loaded_files().begin(), host.loaded_files().end(), canonicalize_plugin()), 1);
  size_t records = 0;
  for (const PluginRecord& r : host.registry().plugins()) records += r.file == canonicalize_plugin();
  EXPECT_EQ(records, 1u);
}

TEST(PluginHostTest, TwoHostsAreIndependent) {
  PluginHost first;
  PluginHost second;
  ASSERT_TRUE(first.load_file(canonicalize_plugin()));
  // The impostor conflicts only where the real canonicalize is loaded.
  Status s = second.load_file(fixture("duplicate_pass"));
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(first.registry().owner(ComponentKind::Pass, "canonicalize"), canonicalize_plugin());
  EXPECT_EQ(second.registry().owner(ComponentKind::Pass, "canonicalize"), fixture("duplicate_pass"));
  EXPECT_EQ(second.registry().make_pass("canonicalize")->summary(),
            "fixture: clashes with the real canonicalize");

  ASSERT_TRUE(second.load_file(fixture("fixture_pass")));
  EXPECT_TRUE(second.registry().has(ComponentKind::Pass, "fixture_noop"));
  EXPECT_FALSE(first.registry().has(ComponentKind::Pass, "fixture_noop"));
}

TEST(PluginHostTest, DestroyingOneHostKeepsAnotherHostsPluginLoaded) {
  // Both hosts open the same library; the transient host's destruction must not unload it under
  // the pass the other host made.
  auto keeper = std::make_unique<PluginHost>();
  ASSERT_TRUE(keeper->load_file(canonicalize_plugin()));
  std::unique_ptr<Pass> pass = keeper->registry().make_pass("canonicalize");
  {
    PluginHost transient;
    ASSERT_TRUE(transient.load_file(canonicalize_plugin()));
  }
  EXPECT_EQ(pass->name(), "canonicalize");
}

TEST(PluginHostTest, FixturePassListsTwoKnobsOfDifferentTypes) {
  PluginHost host;
  ASSERT_TRUE(host.load_file(fixture("fixture_pass")));
  std::unique_ptr<Pass> pass = host.registry().make_pass("fixture_noop");
  ASSERT_NE(pass, nullptr);
  std::vector<KnobSpec> knobs = pass->knobs();
  ASSERT_EQ(knobs.size(), 2u);
  EXPECT_EQ(knobs[0].name, "width");
  EXPECT_EQ(knobs[0].type, KnobType::Int);
  EXPECT_EQ(knobs[0].candidates.size(), 3u);
  EXPECT_EQ(knobs[1].name, "enabled");
  EXPECT_EQ(knobs[1].type, KnobType::Bool);
  ASSERT_TRUE(knobs[1].default_value.has_value());
  EXPECT_EQ(*knobs[1].default_value, AttrValue{true});
  ASSERT_EQ(host.registry().plugins().size(), 1u);
  EXPECT_EQ(host.registry().plugins()[0].name, "fixture_pass");
  EXPECT_EQ(host.registry().plugins()[0].version, "0.3.0");
}

// ---- the canonicalize pass ----------------------------------------------------------------

// in:  x, unused_input  ->  dead = relu(x) (torch, unused), c (constant, unused),
//      dead_loop (loop over x, unused), out = loop { for i: t = load x[i]; u = exp(t); out[i] = u }
Graph graph_with_dead_nodes_and_odd_names() {
  Graph g;
  const TensorType vec{{Dim(8)}, DType::F32};
  g.add("x", std::make_unique<InputOp>(), {}, vec);
  g.add("unused_input", std::make_unique<InputOp>(), {}, vec);
  auto constant = std::make_unique<ConstantOp>();
  constant->path = "unused.weight";
  g.add("c", std::move(constant), {}, vec);
  auto relu = std::make_unique<TorchOp>();
  relu->target = "relu";
  g.add("dead", std::move(relu), {"x"}, vec);

  auto loop_over_x = [](const std::string& out, const std::string& axis, const std::string& loaded,
                        const std::string& value) {
    auto op = std::make_unique<LoopOp>();
    op->name = "k_" + out;
    Body inner = {
        Load{loaded, "x", {Expr::var(axis)}},
        Assign{value, ElementwiseFn::Exp, {Expr::var(loaded)}},
        Write{out, {Expr::var(axis)}, Expr::var(value)},
    };
    op->body = {Loop{axis, Expr::int_(0), Expr::int_(8), LoopRole::Free, 0, inner}};
    return op;
  };
  g.add("dead_loop", loop_over_x("dead_loop", "q", "t", "u"), {"x"}, vec);
  g.add("out", loop_over_x("out", "row_index", "loaded_x", "e"), {"x"}, vec);
  g.outputs() = {"out"};
  return g;
}

TEST(CanonicalizePassTest, RemovesDeadNodesAndCanonicalizesKernelNames) {
  PluginHost host;
  ASSERT_TRUE(host.load_file(canonicalize_plugin()));
  std::unique_ptr<Pass> pass = host.registry().make_pass("canonicalize");
  ASSERT_NE(pass, nullptr);

  Graph g = graph_with_dead_nodes_and_odd_names();
  DeviceDesc device;
  device.name = "test";
  DiagnosticEngine diags;
  PassContext ctx("canonicalize", "l:001_canonicalize", pass->knobs(), {}, {}, &device, &diags);
  Status s = pass->run(g, ctx);
  ASSERT_TRUE(s) << s.message();

  std::vector<std::string> ids;
  for (const Node* n : g.nodes()) ids.push_back(n->id());
  EXPECT_EQ(ids, (std::vector<std::string>{"x", "unused_input", "out"}));
  EXPECT_EQ(g.outputs(), std::vector<std::string>{"out"});

  const auto* loop_op = g.find("out")->op_as<LoopOp>();
  ASSERT_NE(loop_op, nullptr);
  EXPECT_EQ(loop_op->name, "k_out");
  ASSERT_EQ(loop_op->body.size(), 1u);
  const Loop* loop = loop_op->body[0].as<Loop>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->var, "a0");
  ASSERT_EQ(loop->body.size(), 3u);
  const Load* load = loop->body[0].as<Load>();
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->dst, "in0");
  EXPECT_EQ(load->buffer, "x");
  EXPECT_EQ(load->index[0].name(), "a0");
  const Assign* assign = loop->body[1].as<Assign>();
  ASSERT_NE(assign, nullptr);
  EXPECT_EQ(assign->dst, "v0");
  EXPECT_EQ(assign->args[0].name(), "in0");
  const Write* write = loop->body[2].as<Write>();
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(write->buffer, "out");
  EXPECT_EQ(write->value.name(), "v0");

  Status verified = verify_graph(g, Dialect::Loop);
  EXPECT_TRUE(verified) << verified.message();
  EXPECT_TRUE(ctx.skips().empty());
  EXPECT_FALSE(diags.has_errors());
}

TEST(CanonicalizePassTest, IsIdempotent) {
  PluginHost host;
  ASSERT_TRUE(host.load_file(canonicalize_plugin()));
  std::unique_ptr<Pass> pass = host.registry().make_pass("canonicalize");
  ASSERT_NE(pass, nullptr);
  DeviceDesc device;
  DiagnosticEngine diags;
  PassContext ctx("canonicalize", "l:001_canonicalize", {}, {}, {}, &device, &diags);

  Graph g = graph_with_dead_nodes_and_odd_names();
  ASSERT_TRUE(pass->run(g, ctx));
  const Body once = g.find("out")->op_as<LoopOp>()->body;
  ASSERT_TRUE(pass->run(g, ctx));
  EXPECT_EQ(g.size(), 3u);
  EXPECT_EQ(print_body(g.find("out")->op_as<LoopOp>()->body), print_body(once));
}

TEST(CanonicalizePassTest, KeepsChainsThatReachAnOutput) {
  PluginHost host;
  ASSERT_TRUE(host.load_file(canonicalize_plugin()));
  std::unique_ptr<Pass> pass = host.registry().make_pass("canonicalize");
  ASSERT_NE(pass, nullptr);
  DeviceDesc device;
  DiagnosticEngine diags;
  PassContext ctx("canonicalize", "g:001_canonicalize", {}, {}, {}, &device, &diags);

  Graph g;
  const TensorType vec{{Dim(4)}, DType::F32};
  g.add("x", std::make_unique<InputOp>(), {}, vec);
  g.add("w", std::make_unique<ConstantOp>(), {}, vec);
  auto add = std::make_unique<TorchOp>();
  add->target = "add";
  g.add("sum", std::move(add), {"x", "w"}, vec);
  auto relu = std::make_unique<TorchOp>();
  relu->target = "relu";
  g.add("r", std::move(relu), {"sum"}, vec);
  auto neg = std::make_unique<TorchOp>();
  neg->target = "neg";
  g.add("unused_neg", std::move(neg), {"sum"}, vec);
  g.outputs() = {"r"};

  ASSERT_TRUE(pass->run(g, ctx));
  std::vector<std::string> ids;
  for (const Node* n : g.nodes()) ids.push_back(n->id());
  EXPECT_EQ(ids, (std::vector<std::string>{"x", "w", "sum", "r"}));
}

}  // namespace
}  // namespace tessera
