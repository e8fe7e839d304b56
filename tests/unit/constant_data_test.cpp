// Unit tests for the deterministic data generators: the splitmix64 stream against its published
// values, distribution sanity, ConstantOp data (values / full / zeros / ones / randn * scale),
// checkpoint constants (read from their file, checked against the recorded stamp), the windowed
// form (constant_data_windows) and InputOp data (per-node streams, randint, dtype rounding).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "framework/src/eval/safetensors_file.h"
#include "support/cli_runner.h"
#include "tessera/eval/constant_data.h"
#include "support/hand_built_program.h"

namespace tessera {
namespace {

using test::f32;

TEST(ConstantDataTest, SplitMixMatchesPublishedSequence) {
  // Reference values of splitmix64 seeded with 0 (Vigna's reference implementation).
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(rng.next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(rng.next(), 0x06C45D188009454FULL);
}

TEST(ConstantDataTest, UniformAndNormalHaveTheRightMoments) {
  SplitMix64 rng(42);
  const int n = 200000;
  double sum_u = 0, sum_n = 0, sum_n2 = 0;
  for (int i = 0; i < n; ++i) {
    double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum_u += u;
  }
  for (int i = 0; i < n; ++i) {
    double z = rng.normal();
    ASSERT_TRUE(std::isfinite(z));
    sum_n += z;
    sum_n2 += z * z;
  }
  EXPECT_NEAR(sum_u / n, 0.5, 0.005);
  EXPECT_NEAR(sum_n / n, 0.0, 0.01);
  EXPECT_NEAR(sum_n2 / n, 1.0, 0.02);
}

TEST(ConstantDataTest, LiteralValuesAreUsedAsGiven) {
  ConstantOp op;
  op.values = {1.5, -2.0, 3.0, 4.25};
  Expected<TensorValue> v = constant_data(op, f32({2, 2}));
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->data, (std::vector<double>{1.5, -2.0, 3.0, 4.25}));
  EXPECT_EQ(v->type, f32({2, 2}));

  op.values = {7.0};
  v = constant_data(op, f32({3}));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->data, (std::vector<double>{7.0, 7.0, 7.0}));
}

TEST(ConstantDataTest, WrongNumberOfValuesIsAnErrorNamingTheConstant) {
  ConstantOp op;
  op.path = "up.weight";
  op.values = {1.0, 2.0};
  Expected<TensorValue> v = constant_data(op, f32({3}));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("up.weight"), std::string::npos) << v.error().message;
  EXPECT_NE(v.error().message.find("needs 3"), std::string::npos) << v.error().message;
}

TEST(ConstantDataTest, FullZerosOnesAndScaledRandn) {
  ConstantOp full;
  full.init = "full";
  full.scale = 0.25;
  EXPECT_EQ(constant_data(full, f32({2}))->data, (std::vector<double>{0.25, 0.25}));
  ConstantOp zeros;
  zeros.init = "zeros";
  EXPECT_EQ(constant_data(zeros, f32({2}))->data, (std::vector<double>{0.0, 0.0}));
  ConstantOp ones;
  ones.init = "ones";
  ones.scale = 5.0;  // scale does not apply to ones
  EXPECT_EQ(constant_data(ones, f32({2}))->data, (std::vector<double>{1.0, 1.0}));

  ConstantOp randn;
  randn.seed = 7;
  randn.scale = 0.5;
  Expected<TensorValue> a = constant_data(randn, f32({4, 8}));
  ASSERT_TRUE(a);
  SplitMix64 rng(7);
  // f32 constants hold what an f32 buffer stores.
  for (double v : a->data) EXPECT_EQ(v, static_cast<double>(static_cast<float>(rng.normal() * 0.5)));
  randn.seed = 8;
  EXPECT_NE(constant_data(randn, f32({4, 8}))->data, a->data);
}

TEST(ConstantDataTest, UnknownInitIsAnError) {
  ConstantOp op;
  op.init = "xavier";
  Expected<TensorValue> v = constant_data(op, f32({2}));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("'xavier'"), std::string::npos);
}

// Every window of constant_data_windows, concatenated: what constant_data returns.
std::vector<double> by_windows(const ConstantOp& op, const TensorType& type, int64_t window) {
  std::vector<double> all;
  Status st = constant_data_windows(op, type, window, [&](int64_t first, std::span<const double> values) {
    EXPECT_EQ(first, static_cast<int64_t>(all.size()));
    EXPECT_LE(static_cast<int64_t>(values.size()), window);
    all.insert(all.end(), values.begin(), values.end());
    return Status::ok();
  });
  EXPECT_TRUE(st) << st.message();
  return all;
}

TEST(ConstantDataTest, WindowsGiveExactlyTheWholeData) {
  for (const char* init : {"randn", "rand", "full", "zeros", "ones"}) {
    SCOPED_TRACE(init);
    ConstantOp op;
    op.init = init;
    op.seed = 99;
    op.scale = 0.75;
    const TensorType type = f32({7, 13});
    Expected<TensorValue> whole = constant_data(op, type);
    ASSERT_TRUE(whole);
    for (int64_t window : {1, 5, 64, 91, 1000}) EXPECT_EQ(by_windows(op, type, window), whole->data) << window;
  }
  ConstantOp literal;
  literal.values = {1, 2, 3, 4, 5};
  EXPECT_EQ(by_windows(literal, f32({5}), 2), (std::vector<double>{1, 2, 3, 4, 5}));
  // An error from the sink stops the walk and is returned.
  int calls = 0;
  Status st = constant_data_windows(literal, f32({5}), 2, [&](int64_t, std::span<const double>) -> Status {
    ++calls;
    return make_error("enough");
  });
  EXPECT_FALSE(st);
  EXPECT_EQ(calls, 1);
  EXPECT_NE(st.message().find("enough"), std::string::npos);
}

// Past 2^20 elements constant_data reads one window per core, in parallel: the values are those of
// one sequential walk, whatever the split (checked against windows of one size over the whole).
TEST(ConstantDataTest, LargeConstantsReadInParallelGiveTheSequentialData) {
  for (const char* init : {"randn", "rand"}) {
    SCOPED_TRACE(init);
    ConstantOp op;
    op.init = init;
    op.seed = 7;
    op.scale = 0.5;
    const TensorType type = f32({3, (int64_t{1} << 20) + 17});
    Expected<TensorValue> whole = constant_data(op, type);
    ASSERT_TRUE(whole);
    EXPECT_TRUE(by_windows(op, type, int64_t{1} << 22) == whole->data);
  }
}

// A checkpoint file with one F32, one F16 and one BF16 tensor, and a checkpoint constant for it.
struct CheckpointFixture {
  test::TempDir tmp;
  std::string file = tmp.path() + "/model.safetensors";

  CheckpointFixture() { write(1.0f); }

  // Writes the file with values scaled by `factor` (same size for every factor).
  void write(float factor) {
    SafetensorsFile f;
    std::string f32_bytes;
    for (float v : {1.5f, -2.25f, 3.0f, 0.1f, 1e-3f, -7.0f}) {
      v *= factor;
      f32_bytes.append(reinterpret_cast<const char*>(&v), 4);
    }
    f.tensors.push_back({"w.f32", DType::F32, {2, 3}, f32_bytes});
    const uint16_t halves[2] = {0x3c00, 0xc000};  // f16 1.0, -2.0
    f.tensors.push_back({"w.f16", DType::F16, {2}, std::string(reinterpret_cast<const char*>(halves), 4)});
    const uint16_t bf16[2] = {0x3fc0, 0x4049};  // bf16 1.5, 3.140625
    f.tensors.push_back({"w.bf16", DType::BF16, {2}, std::string(reinterpret_cast<const char*>(bf16), 4)});
    f.tensors.push_back({"ids", DType::I64, {1}, std::string(8, '\0')});
    Status st = write_safetensors_file(file, f);
    EXPECT_TRUE(st) << st.message();
  }

  ConstantOp constant(const std::string& tensor) const {
    struct stat st {};
    EXPECT_EQ(::stat(file.c_str(), &st), 0);
    ConstantOp op;
    op.path = tensor;
    op.checkpoint = CheckpointRef{file, static_cast<int64_t>(st.st_size),
                                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
    return op;
  }

  // Moves the file's modification time `seconds` away from now's.
  void shift_time(int seconds) const {
    auto t = std::filesystem::last_write_time(file);
    std::filesystem::last_write_time(file, t + std::chrono::seconds(seconds));
  }
};

TEST(ConstantDataTest, CheckpointConstantsReadTheirTensorConvertedToTheDtype) {
  CheckpointFixture ck;
  Expected<TensorValue> v = constant_data(ck.constant("w.f32"), f32({2, 3}));
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->data, (std::vector<double>{1.5, -2.25, 3.0, static_cast<double>(0.1f), static_cast<double>(1e-3f), -7.0}));
  EXPECT_EQ(constant_data(ck.constant("w.f16"), f32({2}))->data, (std::vector<double>{1.0, -2.0}));
  EXPECT_EQ(constant_data(ck.constant("w.bf16"), f32({2}))->data, (std::vector<double>{1.5, 3.140625}));
  // Converted to the constant's dtype as a buffer of it stores it.
  const TensorType bf16{Shape{2, 3}, DType::BF16};
  Expected<TensorValue> rounded = constant_data(ck.constant("w.f32"), bf16);
  ASSERT_TRUE(rounded);
  EXPECT_EQ(rounded->data[3], round_to_storage(0.1f, DType::BF16));
  EXPECT_NE(rounded->data[3], static_cast<double>(0.1f));
  EXPECT_EQ(by_windows(ck.constant("w.f32"), f32({2, 3}), 4), v->data);
}

TEST(ConstantDataTest, CheckpointConstantErrorsNameTheFileAndTheTensor) {
  CheckpointFixture ck;
  auto error_of = [](const ConstantOp& op, const TensorType& type) {
    Expected<TensorValue> v = constant_data(op, type);
    EXPECT_FALSE(v);
    return v ? std::string() : v.error().message;
  };
  const std::string prefix = "cannot read tensor 'w.f32' of checkpoint " + ck.file + ": ";
  std::string err = error_of(ck.constant("w.f32"), f32({3, 2}));
  EXPECT_NE(err.find(prefix + "its shape (2, 3) is not the constant's (3, 2) float32"), std::string::npos) << err;
  ConstantOp missing = ck.constant("w.f32");
  missing.path = "w.f64";
  err = error_of(missing, f32({2, 3}));
  EXPECT_NE(err.find("tensor 'w.f64' of checkpoint " + ck.file + ": the file has no such tensor"), std::string::npos) << err;
  err = error_of(ck.constant("ids"), f32({1}));
  EXPECT_NE(err.find("it is I64; a checkpoint constant is F32, F16 or BF16"), std::string::npos) << err;

  // Rewritten after the reference was taken: same size, other values, another time.
  const ConstantOp recorded = ck.constant("w.f32");
  ck.write(2.0f);
  ck.shift_time(5);
  err = error_of(recorded, f32({2, 3}));
  EXPECT_NE(err.find(prefix + "the file changed after the program was compiled (then "), std::string::npos) << err;
  EXPECT_NE(err.find("compile the program again"), std::string::npos) << err;
  Status windows = constant_data_windows(recorded, f32({2, 3}), 2, [](int64_t, std::span<const double>) {
    ADD_FAILURE() << "a window of a changed file";
    return Status::ok();
  });
  EXPECT_FALSE(windows);
  // Replaced by garbage: still reported as changed, not as a parse error of the new bytes.
  { std::ofstream(ck.file, std::ios::binary | std::ios::trunc) << "not a safetensors file"; }
  err = error_of(recorded, f32({2, 3}));
  EXPECT_NE(err.find(prefix + "the file changed after the program was compiled"), std::string::npos) << err;
  // Gone.
  std::filesystem::remove(ck.file);
  err = error_of(recorded, f32({2, 3}));
  EXPECT_NE(err.find(prefix + "No such file or directory (the file was there when the program was compiled"),
            std::string::npos)
      << err;
}

Graph two_input_graph() {
  Graph g;
  auto a = std::make_unique<InputOp>();
  g.add("a", std::move(a), {}, f32({3, 5}));
  auto b = std::make_unique<InputOp>();
  g.add("b", std::move(b), {}, f32({3, 5}));
  auto ids = std::make_unique<InputOp>();
  ids->init = "randint";
  ids->fill = 10;
  g.add("ids", std::move(ids), {}, TensorType{Shape{1000}, DType::I64});
  auto full = std::make_unique<InputOp>();
  full->init = "full";
  full->fill = 2.5;
  g.add("f", std::move(full), {}, f32({2}));
  auto w = std::make_unique<ConstantOp>();
  g.add("w", std::move(w), {}, f32({2}));
  return g;
}

TEST(ConstantDataTest, InputsAreDeterministicPerNodeAndSeed) {
  Graph g = two_input_graph();
  ValueMap v1 = make_inputs(g, 1);
  ValueMap v2 = make_inputs(g, 1);
  ValueMap v3 = make_inputs(g, 2);
  ASSERT_EQ(v1.size(), 4u);  // constants are not inputs
  EXPECT_FALSE(v1.count("w"));
  EXPECT_EQ(v1.at("a").data, v2.at("a").data);
  EXPECT_NE(v1.at("a").data, v1.at("b").data);  // same shape, different node: different stream
  EXPECT_NE(v1.at("a").data, v3.at("a").data);
  EXPECT_EQ(v1.at("f").data, (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(v1.at("a").type, f32({3, 5}));
}

TEST(ConstantDataTest, RandintIsIntegralAndInRange) {
  ValueMap v = make_inputs(two_input_graph(), 3);
  std::vector<int> seen(10, 0);
  for (double x : v.at("ids").data) {
    ASSERT_EQ(x, std::floor(x));
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 10.0);
    seen[static_cast<size_t>(x)]++;
  }
  for (int count : seen) EXPECT_GT(count, 50);  // 1000 draws over 10 values
}

TEST(ConstantDataTest, IntegerInputsAreRoundedToTheirDtype) {
  InputOp op;
  op.init = "full";
  op.fill = -2.75;
  Expected<TensorValue> v = input_data(op, TensorType{Shape{2}, DType::I32}, "x", 0);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->data, (std::vector<double>{-2.0, -2.0}));
  v = input_data(op, TensorType{Shape{1}, DType::Bool}, "x", 0);
  EXPECT_EQ(v->data, (std::vector<double>{1.0}));
}

}  // namespace
}  // namespace tessera
