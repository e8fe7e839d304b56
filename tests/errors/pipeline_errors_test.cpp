// Error tests for pipeline files: each bad YAML file under tests/errors/pipelines/ must be
// rejected by the right step (parse or validate) with its exact message and file:line:col.
#include <gtest/gtest.h>

#include <memory>

#include "tessera/pass/pass.h"
#include "tessera/pass/pipeline.h"
#include "tessera/plugin/registry.h"
#include "tessera/tune/tuner.h"

namespace tessera {
namespace {

class ErrorTestPass final : public Pass {
 public:
  ErrorTestPass(std::string name, Dialect stage, std::vector<KnobSpec> knobs)
      : name_(std::move(name)), stage_(stage), knobs_(std::move(knobs)) {}
  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return "test pass"; }
  std::vector<Dialect> stages() const override { return {stage_}; }
  std::vector<KnobSpec> knobs() const override { return knobs_; }
  Status run(Graph&, PassContext&) override { return Status::ok(); }

 private:
  std::string name_;
  Dialect stage_;
  std::vector<KnobSpec> knobs_;
};

class ErrorTestTuner final : public Tuner {
 public:
  std::string_view name() const override { return "mcts"; }
  std::string_view summary() const override { return "test tuner"; }
  std::vector<KnobSpec> options() const override {
    return {KnobSpec{"patience", KnobType::Int, {}, std::nullopt, ""}, KnobSpec{"ucb_c", KnobType::Float, {}, std::nullopt, ""}};
  }
  Expected<std::unique_ptr<TaskSearch>> start(const TuneTask&, TrialRunner&, const TuneOptions&) const override {
    return make_error("test tuner: no search");
  }
};

std::unique_ptr<Registry> error_test_registry() {
  auto r = std::make_unique<Registry>();
  r->begin_plugin(PluginRecord{"<builtin>", "pipeline_errors_test", "1.0", {}});
  auto add = [&](std::string name, Dialect stage, std::vector<KnobSpec> knobs) {
    r->add_pass(name, [=] { return std::make_unique<ErrorTestPass>(name, stage, knobs); });
  };
  add("fuse", Dialect::Loop, {});
  add("stage_inputs", Dialect::Tile, {});
  add("launch_geometry", Dialect::Tile,
      {KnobSpec{"BN", KnobType::Int, {int64_t{32}, int64_t{64}, int64_t{128}}, std::nullopt, ""},
       KnobSpec{"swizzle", KnobType::Bool, {}, std::nullopt, ""},
       KnobSpec{"tiles", KnobType::IntList, {}, std::nullopt, ""}});
  r->add_tuner("mcts", [] { return std::make_unique<ErrorTestTuner>(); });
  EXPECT_TRUE(r->end_plugin());
  return r;
}

std::string pipeline_path(const std::string& name) { return TESSERA_SOURCE_DIR "/tests/errors/pipelines/" + name + ".yaml"; }

enum class Step { Parse, Validate };

struct PipelineErrorCase {
  const char* file;  // under tests/errors/pipelines/, without .yaml
  Step step;         // which step must report it
  int line, col;
  const char* message;
};

void PrintTo(const PipelineErrorCase& c, std::ostream* os) { *os << c.file; }

// Loads and validates a pipeline file; the first error, or nullopt when it is fine.
std::optional<Diagnostic> first_error(const std::string& path, Step* failed_step) {
  Expected<PipelineSpec> spec = load_pipeline_file(path);
  if (!spec) {
    *failed_step = Step::Parse;
    return spec.error();
  }
  *failed_step = Step::Validate;
  Status s = validate_pipeline(*spec, *error_test_registry());
  if (!s) return s.error();
  return std::nullopt;
}

class PipelineErrorTest : public ::testing::TestWithParam<PipelineErrorCase> {};

TEST_P(PipelineErrorTest, ReportsMessageAndLocation) {
  const PipelineErrorCase& c = GetParam();
  const std::string path = pipeline_path(c.file);
  Step step = Step::Parse;
  std::optional<Diagnostic> d = first_error(path, &step);
  ASSERT_TRUE(d.has_value()) << c.file << " was accepted";
  EXPECT_EQ(step, c.step) << d->render();
  EXPECT_EQ(d->message, c.message);
  EXPECT_EQ(d->loc.file, path);
  EXPECT_EQ(d->loc.line, c.line) << d->render();
  EXPECT_EQ(d->loc.col, c.col) << d->render();
  const std::string head = path + ":" + std::to_string(c.line) + ":" + std::to_string(c.col) + ": error: " + c.message + "\n";
  EXPECT_EQ(d->render().substr(0, head.size()), head);
}

const PipelineErrorCase kCases[] = {
    {"invalid_yaml", Step::Parse, 4, 1, "invalid YAML: end of sequence flow not found"},
    {"unknown_top_level_key", Step::Parse, 2, 1, "unknown top-level key 'stage' (did you mean 'stages'?)"},
    {"unknown_target_key", Step::Parse, 4, 22, "unknown key 'archh' in 'target' (did you mean 'arch'?)"},
    {"unknown_tuner_option", Step::Validate, 4, 21, "unknown option 'patiense' of tuner 'mcts' (did you mean 'patience'?)"},
    {"unknown_stage", Step::Parse, 4, 3, "unknown stage 'tiles' (did you mean 'tile'?)"},
    {"duplicate_stage", Step::Parse, 5, 3, "stage 'tile' appears twice in 'stages'"},
    {"stages_not_a_map", Step::Parse, 2, 9, "'stages' must be a map from stage name to a list of passes, got a list"},
    {"pass_list_not_a_list", Step::Parse, 3, 9, "the passes of stage 'tile' must be a list, got a scalar ('stage_inputs')"},
    {"knobs_not_a_map", Step::Parse, 4, 24,
     "the knobs of pass 'launch_geometry' must be a map {KNOB: value, ...}, got a scalar ('128')"},
    {"pass_entry_with_two_keys", Step::Parse, 4, 7,
     "a pass entry is `name` or `name: {KNOB: value, ...}`, but this one has 2 keys ('launch_geometry', 'BN')"},
    {"knob_list_not_ints", Step::Parse, 4, 36,
     "knob 'tiles' of pass 'launch_geometry': a list value holds integers only, got a scalar ('wide')"},
    {"knob_without_value", Step::Parse, 4, 25,
     "knob 'BN' of pass 'launch_geometry' has no value (write a value, or `auto`)"},
    {"duplicate_knob", Step::Parse, 4, 33, "duplicate key 'BN' in the knobs of pass 'launch_geometry'"},
    {"missing_name", Step::Parse, 1, 1, "missing required key 'name'"},
    {"two_documents", Step::Parse, 3, 1, "a pipeline file holds one YAML document; this one has 2"},
    {"unknown_arch", Step::Parse, 4, 28, "unknown arch 'sm_91' in 'target' (did you mean 'sm_90'?)"},
    {"unknown_pass", Step::Validate, 5, 7, "unknown pass 'stage_inptus' (did you mean 'stage_inputs'?)"},
    {"unknown_pass_far", Step::Validate, 3, 10, "unknown pass 'quantum_annealing'"},
    {"wrong_stage", Step::Validate, 5, 7, "pass 'stage_inputs' cannot run in stage 'loop' (it runs in: tile)"},
    {"unknown_knob", Step::Validate, 4, 25, "unknown knob 'BNN' of pass 'launch_geometry' (did you mean 'BN'?)"},
    {"unknown_auto_knob", Step::Validate, 4, 33, "unknown knob 'swizle' of pass 'launch_geometry' (did you mean 'swizzle'?)"},
    {"knob_on_pass_without_knobs", Step::Validate, 4, 22, "unknown knob 'depth' of pass 'stage_inputs'"},
    {"ill_typed_knob", Step::Validate, 4, 25, "knob 'BN' of pass 'launch_geometry' expects int, got 'big'"},
    {"knob_not_a_candidate", Step::Validate, 5, 9, "knob 'BN' of pass 'launch_geometry' must be one of 32, 64, 128; got '100'"},
    {"ill_typed_tuner_option", Step::Validate, 2, 21, "option 'patience' of tuner 'mcts' expects int, got 'soon'"},
    {"nested_too_deep", Step::Parse, 5, 91,
     "invalid YAML: lists and maps nested deeper than 64 levels (a pipeline needs a handful)"},
};

INSTANTIATE_TEST_SUITE_P(Files, PipelineErrorTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<PipelineErrorCase>& info) { return std::string(info.param.file); });

TEST(PipelineErrorDetailTest, UnknownPassShowsTheLineWithACaret) {
  const std::string path = pipeline_path("unknown_pass");
  Step step = Step::Parse;
  std::optional<Diagnostic> d = first_error(path, &step);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->render(), path +
                             ":5:7: error: unknown pass 'stage_inptus' (did you mean 'stage_inputs'?)\n"
                             "      - stage_inptus\n"
                             "        ^~~~~~~~~~~~\n"
                             "note: `tessera passes` lists the passes of the loaded plugins\n");
}

TEST(PipelineErrorDetailTest, IllTypedKnobUnderlinesTheWholePin) {
  Step step = Step::Parse;
  std::optional<Diagnostic> d = first_error(pipeline_path("ill_typed_knob"), &step);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->source_line, "    - launch_geometry: {BN: big}");
  EXPECT_EQ(d->loc.length, 7);  // "BN: big"
}

TEST(PipelineErrorDetailTest, UnknownKnobListsTheKnobs) {
  Step step = Step::Parse;
  std::optional<Diagnostic> d = first_error(pipeline_path("unknown_knob"), &step);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->notes, (std::vector<std::string>{"knobs of 'launch_geometry': BN, swizzle, tiles"}));
}

TEST(PipelineErrorDetailTest, MisindentedKnobsGetAHint) {
  Step step = Step::Parse;
  std::optional<Diagnostic> d = first_error(pipeline_path("pass_entry_with_two_keys"), &step);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->notes, (std::vector<std::string>{
                          "to pin knobs, indent them under the pass name or write `- launch_geometry: {KNOB: value}`"}));
}

TEST(PipelineErrorDetailTest, EmptyFileNamesTheFile) {
  const std::string path = pipeline_path("empty");
  Expected<PipelineSpec> spec = load_pipeline_file(path);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().render(),
            path + ": error: empty pipeline file (expected a map with at least `name:` and `stages:`)\n");
}

TEST(PipelineErrorDetailTest, MissingFileNamesTheFile) {
  const std::string path = pipeline_path("does_not_exist");
  Expected<PipelineSpec> spec = load_pipeline_file(path);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().message, "cannot read pipeline file '" + path + "': no such file");
  Expected<PipelineSpec> dir = load_pipeline_file(TESSERA_SOURCE_DIR "/tests/errors/pipelines");
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos);
}

TEST(PipelineErrorDetailTest, ArchIsCheckedOnSpecsBuiltInCode) {
  PipelineSpec spec;
  spec.name = "built";
  spec.target.arch = "sm_7";
  Status s = validate_pipeline(spec, *error_test_registry());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("unknown arch 'sm_7'"), std::string::npos) << s.message();
}

// Malformed input of every kind is an error value (or a spec), never a crash or an exception.
TEST(PipelineErrorDetailTest, GarbageNeverCrashes) {
  const std::vector<std::string> inputs = {
      "{",  "[",  "]", "name: [", "- - -", "\t", "name: a\nstages: {tile: [[a]]}", "&a [*a]", "*nope",
      "name: !!binary xyz", "? [a]\n: b", "name: a\nstages: {tile: [{a: 1, b: 2}]}", "name: a\nstages: {? [x]: [y]}",
      "name: a\nstages: {tile: [{launch_geometry: {? [k]: 1}}]}", "name: {a: b}", "name: a\nplugins: [[x]]",
      "name: a\ntarget: {arch: [sm_90]}", "name: a\ntuner: {name: [x]}", "name: a\ntuner: {depth: {x: 1}}",
      "name: a\nstages: {core: [x]}", "name: a\nstages: {tile: [null, ~]}", std::string("name: a\0b", 9),
      "\xff\xfe", "name: \"\\x\"", std::string(5000, '['), "name: a\n" + std::string(3000, ' ') + "x"};
  for (const std::string& text : inputs) {
    Expected<PipelineSpec> spec = parse_pipeline(text, "garbage.yaml");
    if (!spec) {
      EXPECT_FALSE(spec.error().message.empty()) << text;
    } else {
      EXPECT_FALSE(spec->name.empty()) << text;  // `name` is required
      Status s = validate_pipeline(*spec, *error_test_registry());
      if (!s) {
        EXPECT_FALSE(s.error().message.empty()) << text;
      }
    }
  }
}

}  // namespace
}  // namespace tessera
