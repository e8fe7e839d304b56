// Unit tests for pipeline files: parsing every entry form and value type, validation against a
// registry of test passes, markers, and print_pipeline's round trip (print -> parse -> same spec ->
// identical print) on pipelines/default.yaml and on a pipeline with pins.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "tessera/pass/pass.h"
#include "tessera/pass/pipeline.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/tune/tuner.h"

namespace tessera {
namespace {

class TestPass final : public Pass {
 public:
  TestPass(std::string name, std::vector<Dialect> stages, std::vector<KnobSpec> knobs)
      : name_(std::move(name)), stages_(std::move(stages)), knobs_(std::move(knobs)) {}
  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return "test pass"; }
  std::vector<Dialect> stages() const override { return stages_; }
  std::vector<KnobSpec> knobs() const override { return knobs_; }
  Status run(Graph&, PassContext&) override { return Status::ok(); }

 private:
  std::string name_;
  std::vector<Dialect> stages_;
  std::vector<KnobSpec> knobs_;
};

class TestTuner final : public Tuner {
 public:
  std::string_view name() const override { return "mcts"; }
  std::string_view summary() const override { return "test tuner"; }
  std::vector<KnobSpec> options() const override {
    return {KnobSpec{"patience", KnobType::Int, {}, AttrValue(int64_t{60}), ""},
            KnobSpec{"ucb_c", KnobType::Float, {}, AttrValue(1.41), ""}};
  }
  Expected<std::unique_ptr<TaskSearch>> start(const TuneTask&, TrialRunner&, const TuneOptions&) const override {
    return make_error("test tuner: it does not search");
  }
};

std::vector<KnobSpec> launch_geometry_knobs() {
  return {KnobSpec{"BN", KnobType::Int, {int64_t{32}, int64_t{64}, int64_t{128}}, std::nullopt, "threads per block"},
          KnobSpec{"swizzle", KnobType::Bool, {}, std::nullopt, ""},
          KnobSpec{"order", KnobType::String, {}, std::nullopt, ""},
          KnobSpec{"ratio", KnobType::Float, {}, AttrValue(0.5), ""},
          KnobSpec{"tiles", KnobType::IntList, {}, std::nullopt, ""}};
}

void add_test_pass(Registry& r, std::string name, std::vector<Dialect> stages, std::vector<KnobSpec> knobs = {}) {
  r.add_pass(name, [=] { return std::make_unique<TestPass>(name, stages, knobs); });
}

std::unique_ptr<Registry> test_registry(bool with_tuner = true) {
  auto r = std::make_unique<Registry>();
  r->begin_plugin(PluginRecord{"<builtin>", "pipeline_test", "1.0", {}});
  add_test_pass(*r, "canonicalize", {Dialect::Torch, Dialect::Tensor, Dialect::Loop});
  add_test_pass(*r, "decompose", {Dialect::Tensor});
  add_test_pass(*r, "compose_index_maps", {Dialect::Tensor});
  add_test_pass(*r, "lift", {Dialect::Loop});
  add_test_pass(*r, "fuse", {Dialect::Loop});
  add_test_pass(*r, "dedup_loads", {Dialect::Loop});
  add_test_pass(*r, "stage_inputs", {Dialect::Tile});
  add_test_pass(*r, "launch_geometry", {Dialect::Tile}, launch_geometry_knobs());
  if (with_tuner) r->add_tuner("mcts", [] { return std::make_unique<TestTuner>(); });
  EXPECT_TRUE(r->end_plugin());
  return r;
}

// The registry of the plugins this build ships (for the default pipeline, which names them all),
// plus the test tuner `mcts` stands in for until the tuner plugin exists.
const Registry& built_registry() {
  // Never destroyed: plugins stay loaded until the process ends (as in the CLI).
  static const PluginHost* host = [] {
    auto* h = new PluginHost();
    Status s = h->load_directory(TESSERA_BUILD_DIR "/lib/tessera/plugins");
    EXPECT_TRUE(s) << s.message();
    return h;
  }();
  return host->registry();
}

PipelineSpec parse_ok(const std::string& text, const std::string& file = "test.yaml") {
  Expected<PipelineSpec> spec = parse_pipeline(text, file);
  EXPECT_TRUE(spec) << spec.error().render();
  return spec ? *spec : PipelineSpec{};
}

const std::string kPinnedPipeline = R"(# a pipeline with pins, stages out of order
name: pinned
stages:
  tile:
    - stage_inputs
    - launch_geometry: {BN: 128, swizzle: false, order: "64", tiles: [2, 4], ratio: 1}
  torch: [canonicalize]
  loop:
    - fuse:
target: {arch: sm_80}
tuner: {patience: 10}
)";

TEST(PipelineTest, StageLettersAndMarkers) {
  EXPECT_EQ(pass_marker(Dialect::Tile, 7, "stage_inputs"), "t:007_stage_inputs");
  EXPECT_EQ(pass_marker(Dialect::Torch, 1, "canonicalize"), "g:001_canonicalize");
  EXPECT_EQ(pass_marker(Dialect::Cuda, 12, "emit"), "c:012_emit");
  std::string letters;
  for (Dialect d : {Dialect::Torch, Dialect::Tensor, Dialect::Loop, Dialect::Tile, Dialect::Kernel, Dialect::Cuda})
    letters += stage_letter(d);
  EXPECT_EQ(letters, "gdltkc");
}

TEST(PipelineTest, LoadsTheDefaultPipeline) {
  Expected<PipelineSpec> spec = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
  ASSERT_TRUE(spec) << spec.error().render();
  EXPECT_EQ(spec->name, "default");
  ASSERT_EQ(spec->stages.count(Dialect::Torch), 1u);
  ASSERT_FALSE(spec->stages.at(Dialect::Torch).empty());
  EXPECT_EQ(spec->stages.at(Dialect::Torch).front().name, "canonicalize");
  EXPECT_EQ(spec->target.name, "cuda");
  // No arch or device: commands that run on a GPU compile for the GPU present (cli_session.h).
  EXPECT_EQ(spec->target.arch, "");
  EXPECT_EQ(spec->target.device, "");
  EXPECT_EQ(spec->tuner.name, "mcts");
  ASSERT_EQ(spec->tuner.options.size(), 2u);
  EXPECT_EQ(spec->tuner.options[0].knob, "patience");
  EXPECT_EQ(spec->tuner.options[0].value, AttrValue(int64_t{60}));
  EXPECT_EQ(spec->tuner.options[1].value, AttrValue(1.41));
  EXPECT_TRUE(validate_pipeline(*spec, built_registry()));
}

TEST(PipelineTest, ReadsEveryPassEntryForm) {
  PipelineSpec spec = parse_ok(R"(name: forms
stages:
  tile:
    - stage_inputs
    - launch_geometry: {BN: 64}
    - launch_geometry:
        BN: 32
        swizzle: true
    - launch_geometry: null
    - launch_geometry:
    - launch_geometry: {BN: auto, swizzle: auto}
)");
  const std::vector<PassEntry>& tile = spec.stages.at(Dialect::Tile);
  ASSERT_EQ(tile.size(), 6u);
  EXPECT_EQ(tile[0].name, "stage_inputs");
  EXPECT_EQ(tile[0].loc.line, 4);
  EXPECT_EQ(tile[0].loc.col, 7);
  ASSERT_EQ(tile[1].pins.size(), 1u);
  EXPECT_EQ(tile[1].pins[0].value, AttrValue(int64_t{64}));
  ASSERT_EQ(tile[2].pins.size(), 2u);
  EXPECT_EQ(tile[2].pins[1].knob, "swizzle");
  EXPECT_EQ(tile[2].pins[1].value, AttrValue(true));
  EXPECT_EQ(tile[2].pins[1].loc.line, 8);
  EXPECT_EQ(tile[2].pins[1].loc.col, 9);
  EXPECT_TRUE(tile[3].pins.empty());
  EXPECT_TRUE(tile[4].pins.empty());
  EXPECT_TRUE(tile[5].pins.empty());  // auto pins nothing...
  ASSERT_EQ(tile[5].auto_knobs.size(), 2u);  // ...but the names are kept for validation
  EXPECT_EQ(tile[5].auto_knobs[1].first, "swizzle");
  EXPECT_TRUE(validate_pipeline(spec, *test_registry()));
}

TEST(PipelineTest, TypesKnobValuesByContent) {
  PipelineSpec spec = parse_ok(R"(name: types
stages:
  tile:
    - launch_geometry: {BN: 128, swizzle: false, order: col_major, ratio: 0.25, tiles: [1, -2, 3]}
    - launch_geometry: {order: "128", tiles: [], ratio: 2}
)");
  const std::vector<PassEntry>& tile = spec.stages.at(Dialect::Tile);
  ASSERT_EQ(tile.size(), 2u);
  ASSERT_EQ(tile[0].pins.size(), 5u);
  EXPECT_EQ(tile[0].pins[0].value, AttrValue(int64_t{128}));
  EXPECT_EQ(tile[0].pins[1].value, AttrValue(false));
  EXPECT_EQ(tile[0].pins[2].value, AttrValue(std::string("col_major")));
  EXPECT_EQ(tile[0].pins[3].value, AttrValue(0.25));
  EXPECT_EQ(tile[0].pins[4].value, AttrValue(std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(tile[1].pins[0].value, AttrValue(std::string("128")));  // quoted: a string
  EXPECT_EQ(tile[1].pins[1].value, AttrValue(std::vector<int64_t>{}));
  EXPECT_EQ(tile[1].pins[2].value, AttrValue(int64_t{2}));  // an int, accepted by a float knob
  EXPECT_TRUE(validate_pipeline(spec, *test_registry()));
}

TEST(PipelineTest, ResolvesPluginsRelativeToTheFile) {
  namespace fs = std::filesystem;
  PipelineSpec spec = parse_ok("name: p\nplugins: [libmine.so, ../lib/libother.so, /abs/libx.so]\n",
                               "/opt/proj/pipelines/p.yaml");
  ASSERT_EQ(spec.plugins.size(), 3u);
  EXPECT_EQ(spec.plugins[0], "/opt/proj/pipelines/libmine.so");
  EXPECT_EQ(spec.plugins[1], "/opt/proj/lib/libother.so");
  EXPECT_EQ(spec.plugins[2], "/abs/libx.so");
  ASSERT_EQ(spec.plugin_locs.size(), 3u);
  EXPECT_EQ(spec.plugin_locs[1].line, 2);
  EXPECT_EQ(spec.plugin_locs[1].col, 23);
  // A relative file name still yields an absolute path, so the spec prints the same anywhere.
  PipelineSpec relative = parse_ok("name: p\nplugins: [libmine.so]\n", "pipelines/p.yaml");
  EXPECT_TRUE(fs::path(relative.plugins.at(0)).is_absolute()) << relative.plugins[0];
  EXPECT_EQ(fs::path(relative.plugins[0]).filename(), "libmine.so");
}

TEST(PipelineTest, LastStageIsTheFurthestWithPasses) {
  EXPECT_EQ(parse_ok("name: a\n").last_stage(), Dialect::Torch);
  EXPECT_EQ(parse_ok("name: a\nstages: {loop: [fuse], torch: [canonicalize], kernel: []}\n").last_stage(), Dialect::Loop);
  EXPECT_EQ(parse_ok(kPinnedPipeline).last_stage(), Dialect::Tile);
}

TEST(PipelineTest, ValidatesAgainstTheRegistry) {
  PipelineSpec spec = parse_ok(kPinnedPipeline);
  EXPECT_TRUE(validate_pipeline(spec, *test_registry()));
  // The same spec is wrong for a plugin set without launch_geometry.
  Registry empty;
  Status s = validate_pipeline(spec, empty);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("unknown pass 'canonicalize'"), std::string::npos) << s.message();
}

TEST(PipelineTest, PrintsTheEffectivePipeline) {
  PipelineSpec spec = parse_ok(kPinnedPipeline);
  const std::string expected =
      "# Effective pipeline: every knob of every pass is listed, pinned or `auto` (the tuner or the\n"
      "# pass's heuristic decides).\n"
      "name: pinned\n"
      "stages:\n"
      "  torch:\n"
      "    - canonicalize\n"
      "  loop:\n"
      "    - fuse\n"
      "  tile:\n"
      "    - stage_inputs\n"
      "    - launch_geometry: {BN: 128, swizzle: false, order: \"64\", ratio: 1, tiles: [2, 4]}"
      "  # BN: int in {32, 64, 128}, default heuristic; swizzle: bool, default heuristic; "
      "order: string, default heuristic; ratio: float, default 0.5; tiles: int-list, default heuristic\n"
      "target: {name: cuda, arch: sm_80}\n"
      "tuner: {name: mcts, patience: 10, ucb_c: auto}\n"
      "threads: 1\n";
  EXPECT_EQ(print_pipeline(spec, *test_registry()), expected);
}

TEST(PipelineTest, ThreadsIsAPositiveIntegerAndRoundTrips) {
  PipelineSpec spec = parse_ok("name: t\nthreads: 8\nstages: {torch: [canonicalize]}\n");
  EXPECT_EQ(spec.threads, 8);
  EXPECT_EQ(parse_ok("name: t\nstages: {}\n").threads, 1);
  Expected<PipelineSpec> reread = parse_pipeline(print_pipeline(spec, *test_registry()), "<printed>");
  ASSERT_TRUE(reread) << reread.error().render();
  EXPECT_EQ(reread->threads, 8);
  EXPECT_TRUE(same_pipeline(spec, *reread));
  for (const char* bad : {"threads: 0", "threads: -2", "threads: many", "threads: \"4\"", "threads: 1.5",
                          "threads: [2]", "threads: 5000"}) {
    Expected<PipelineSpec> p = parse_pipeline(std::string("name: t\n") + bad + "\n", "bad.yaml");
    ASSERT_FALSE(p) << bad;
    EXPECT_NE(p.error().message.find("'threads' must be an integer from 1 to 1024"), std::string::npos)
        << p.error().render();
    EXPECT_EQ(p.error().loc.line, 2) << bad;
  }
}

TEST(PipelineTest, PrintListsUnpinnedKnobsAsAuto) {
  PipelineSpec spec = parse_ok("name: a\nstages:\n  tile: [launch_geometry]\n");
  std::string printed = print_pipeline(spec, *test_registry());
  EXPECT_NE(printed.find("- launch_geometry: {BN: auto, swizzle: auto, order: auto, ratio: auto, tiles: auto}  # BN:"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("target: {name: cuda, arch: sm_90, device: h100}\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("tuner: {name: mcts, patience: auto, ucb_c: auto}\n"), std::string::npos) << printed;
}

// print -> parse -> same spec, and printing the re-read spec gives the identical text.
void expect_round_trip(const PipelineSpec& spec, const Registry& registry) {
  std::string printed = print_pipeline(spec, registry);
  Expected<PipelineSpec> reread = parse_pipeline(printed, "<printed>");
  ASSERT_TRUE(reread) << reread.error().render() << printed;
  EXPECT_TRUE(validate_pipeline(*reread, registry)) << printed;
  EXPECT_TRUE(same_pipeline(spec, *reread)) << printed;
  EXPECT_EQ(print_pipeline(*reread, registry), printed);
}

TEST(PipelineTest, DefaultPipelineRoundTrips) {
  Expected<PipelineSpec> spec = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
  ASSERT_TRUE(spec) << spec.error().render();
  expect_round_trip(*spec, built_registry());
}

TEST(PipelineTest, PinnedPipelineRoundTrips) {
  PipelineSpec spec = parse_ok(kPinnedPipeline);
  expect_round_trip(spec, *test_registry());
}

TEST(PipelineTest, OddValuesRoundTrip) {
  PipelineSpec spec = parse_ok(R"(name: "true"
plugins: ["/x/lib with space.so"]
stages:
  tile:
    - launch_geometry: {order: "a: b", ratio: 1.0e-30, tiles: [0]}
    - launch_geometry: {order: 'auto', ratio: .inf}
target: {name: sim, arch: sm_90a, device: "h100"}
tuner: {name: mcts, seed: "7", note: "#hash"}
)",
                               "/work/p.yaml");
  EXPECT_EQ(spec.name, "true");
  expect_round_trip(spec, *test_registry(/*with_tuner=*/false));
}

TEST(PipelineTest, PrintingIsDeterministic) {
  PipelineSpec spec = parse_ok(kPinnedPipeline);
  auto registry = test_registry();
  EXPECT_EQ(print_pipeline(spec, *registry), print_pipeline(spec, *registry));
  EXPECT_EQ(print_pipeline(spec, *registry), print_pipeline(parse_ok(kPinnedPipeline), *test_registry()));
}

TEST(PipelineTest, SamePipelineComparesMeaning) {
  PipelineSpec a = parse_ok("name: a\nstages: {tile: [{launch_geometry: {BN: 64, swizzle: true}}]}\n");
  // Key order, locations, `auto` and default target fields carry no meaning.
  PipelineSpec b = parse_ok(
      "# comment\nname: a\nstages:\n  tile:\n    - launch_geometry: {swizzle: true, order: auto, BN: 64}\n"
      "target: {name: cuda, arch: sm_90, device: h100}\ntuner: {name: mcts}\n",
      "other.yaml");
  EXPECT_TRUE(same_pipeline(a, b));
  EXPECT_FALSE(same_pipeline(a, parse_ok("name: a\nstages: {tile: [{launch_geometry: {BN: 32, swizzle: true}}]}\n")));
  EXPECT_FALSE(same_pipeline(a, parse_ok("name: a\nstages: {tile: [{launch_geometry: {BN: 64}}]}\n")));
  EXPECT_FALSE(same_pipeline(a, parse_ok("name: a\nstages: {tile: [{launch_geometry: {BN: 64.0, swizzle: true}}]}\n")));
  EXPECT_FALSE(same_pipeline(a, parse_ok("name: b\nstages: {tile: [{launch_geometry: {BN: 64, swizzle: true}}]}\n")));
  EXPECT_FALSE(same_pipeline(
      a, parse_ok("name: a\nstages: {tile: [{launch_geometry: {BN: 64, swizzle: true}}]}\ntarget: {arch: sm_80}\n")));
  EXPECT_FALSE(same_pipeline(
      a, parse_ok("name: a\nstages: {tile: [{launch_geometry: {BN: 64, swizzle: true}}]}\ntuner: {patience: 3}\n")));
  EXPECT_FALSE(same_pipeline(
      a, parse_ok("name: a\nstages: {loop: [fuse], tile: [{launch_geometry: {BN: 64, swizzle: true}}]}\n")));
}

// A ',' outside a flow collection once made the YAML loader start empty documents forever (a fuzz
// finding, tests/fuzz/regressions/pipeline_yaml/); it is a located error now.
TEST(PipelineTest, StrayCommaIsALocatedErrorNotAHang) {
  struct Case {
    const char* text;
    int line, col;
  };
  for (const Case& c : {Case{",", 1, 1}, Case{"- 1\n,", 2, 1}, Case{"name: t\nstages: {}\n---\n,\n", 4, 1}}) {
    Expected<PipelineSpec> p = parse_pipeline(c.text, "comma.yaml");
    ASSERT_FALSE(p) << c.text;
    EXPECT_NE(p.error().message.find("unexpected ',' outside a flow collection"), std::string::npos)
        << p.error().render();
    EXPECT_EQ(p.error().loc.line, c.line) << c.text;
    EXPECT_EQ(p.error().loc.col, c.col) << c.text;
  }
  // A ',' inside a flow collection is YAML's separator and reads as usual.
  EXPECT_TRUE(parse_pipeline("name: t\nstages: {torch: [canonicalize], tensor: []}\n", "ok.yaml"));
}

}  // namespace
}  // namespace tessera
