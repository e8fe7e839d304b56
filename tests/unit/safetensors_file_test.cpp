// The safetensors reader and writer (framework/src/eval/safetensors_file.h): byte-exact round trips
// of every dtype `tessera run --save-io` writes, the deterministic layout, rejection of corrupt
// files with located messages, and (when python3 is present) an independent reading of the header
// with Python's standard library, plus one with the `safetensors` package when it is installed.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "framework/src/eval/safetensors_file.h"
#include "support/cli_runner.h"

namespace tessera {
namespace {

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// One tensor of each dtype the writer handles, with values that exercise every bit: negative
// zero, subnormals, infinities and NaN payloads for the float types.
SafetensorsFile sample_file() {
  SafetensorsFile f;
  f.metadata["tessera.inputs"] = R"(["x", "x_1"])";
  f.metadata["tessera.program"] = "import torch\nBlock()(torch.randn(2, 3))  # \xc3\xa9";
  f.tensors.push_back({"x", DType::F32, {2, 3},
                       raw_bytes<float>({1.5f, -0.0f, 1e-45f, std::bit_cast<float>(0x7fc01234u),
                                         -INFINITY, 3.4028235e38f})});
  f.tensors.push_back({"p_w", DType::BF16, {4}, raw_bytes<uint16_t>({0x3f80, 0x8000, 0x7f81, 0x0001})});
  f.tensors.push_back({"x_1", DType::F16, {2, 2}, raw_bytes<uint16_t>({0x3c00, 0xfc00, 0x0001, 0x7e00})});
  f.tensors.push_back({"ids", DType::I64, {3}, raw_bytes<int64_t>({0, -1, INT64_MAX})});
  f.tensors.push_back({"mask", DType::Bool, {1, 5}, std::string("\x01\x00\x01\x01\x00", 5)});
  f.tensors.push_back({"scalar", DType::F32, {}, raw_bytes<float>({42.0f})});
  f.tensors.push_back({"empty", DType::F32, {0, 7}, ""});
  return f;
}

std::string encoded_sample() {
  Expected<std::string> bytes = encode_safetensors(sample_file());
  EXPECT_TRUE(bytes) << bytes.error().render();
  return bytes ? *bytes : std::string();
}

uint64_t header_length(const std::string& file) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(file[static_cast<size_t>(i)]);
  return n;
}

// `file` with its header replaced by `header` (padded to keep the data section where it was not
// needed: the length field is rewritten).
std::string with_header(const std::string& file, const std::string& header) {
  const uint64_t old_len = header_length(file);
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return out + header + file.substr(8 + old_len);
}

std::string header_of(const std::string& file) { return file.substr(8, header_length(file)); }

std::string decode_error(const std::string& bytes) {
  Expected<SafetensorsFile> f = decode_safetensors(bytes, "io.safetensors");
  if (f) return "";
  return f.error().render();
}

TEST(SafetensorsFile, RoundTripIsBitExactForEveryDtype) {
  const SafetensorsFile original = sample_file();
  const std::string bytes = encoded_sample();
  Expected<SafetensorsFile> back = decode_safetensors(bytes, "io.safetensors");
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_EQ(back->metadata, original.metadata);
  ASSERT_EQ(back->tensors.size(), original.tensors.size());
  for (const SafetensorsTensor& t : original.tensors) {
    const SafetensorsTensor* r = back->find(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(r->dtype, t.dtype) << t.name;
    EXPECT_EQ(r->shape, t.shape) << t.name;
    EXPECT_EQ(r->bytes, t.bytes) << t.name;  // byte equality: NaN payloads and -0 included
  }
}

// Values are doubles once read: an int64 from 2^53 on would lose bits, so reading it is an error
// naming the tensor and element; smaller ones read exactly.
TEST(SafetensorsFile, Int64ValuesFromTwoToThe53AreRefusedWhenRead) {
  const std::string bytes = raw_bytes<int64_t>({-9007199254740991, 7, 9007199254740993});
  SafetensorsTensorView ids{"ids", DType::I64, {3}, bytes};
  std::vector<double> first(2);
  ASSERT_TRUE(safetensors_values_into(ids, 0, first, "io.safetensors"));
  EXPECT_EQ(first, (std::vector<double>{-9007199254740991.0, 7.0}));
  Expected<std::vector<double>> all = safetensors_values(ids, "io.safetensors");
  ASSERT_FALSE(all);
  const std::string message = all.error().render();
  EXPECT_NE(message.find("io.safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find("tensor 'ids': element 2 is 9007199254740993, not below 2^53"), std::string::npos) << message;
}

TEST(SafetensorsFile, LayoutIsDeterministicAndAligned) {
  const std::string bytes = encoded_sample();
  // The same tensors in another order give the same bytes.
  SafetensorsFile shuffled = sample_file();
  std::reverse(shuffled.tensors.begin(), shuffled.tensors.end());
  Expected<std::string> again = encode_safetensors(shuffled);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, bytes);

  const uint64_t n = header_length(bytes);
  EXPECT_EQ(n % 8, 0u);
  const std::string header = header_of(bytes);
  EXPECT_EQ(header.rfind("{\"__metadata__\":{\"tessera.inputs\"", 0), 0u) << header;
  EXPECT_LT(header.find("\"empty\""), header.find("\"ids\""));
  EXPECT_LT(header.find("\"ids\""), header.find("\"mask\""));
  // Widest dtype first in the data section: the i64 tensor starts at 0, every tensor is aligned.
  EXPECT_NE(header.find("\"ids\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[0,24]}"), std::string::npos)
      << header;
  Expected<SafetensorsFile> back = decode_safetensors(bytes, "io.safetensors");
  ASSERT_TRUE(back);
  // Trailing spaces only after the JSON object.
  const size_t close = header.find_last_of('}');
  EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos);
}

TEST(SafetensorsFile, WriterRefusesInconsistentTensors) {
  SafetensorsFile f;
  f.tensors.push_back({"x", DType::F32, {2, 2}, std::string(15, '\0')});
  Expected<std::string> e = encode_safetensors(f);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("'x' has 15 bytes"), std::string::npos) << e.error().message;

  f.tensors = {{"a", DType::F32, {1}, std::string(4, '\0')}, {"a", DType::F32, {1}, std::string(4, '\0')}};
  e = encode_safetensors(f);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("two tensors are named 'a'"), std::string::npos);

  f.tensors = {{"__metadata__", DType::F32, {1}, std::string(4, '\0')}};
  EXPECT_FALSE(encode_safetensors(f));

  f.tensors.clear();
  f.metadata["bad"] = "\xff\xfe";
  e = encode_safetensors(f);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("UTF-8"), std::string::npos);
}

TEST(SafetensorsFile, FileRoundTrip) {
  test::TempDir dir;
  const std::string path = dir.path() + "/io.safetensors";
  ASSERT_TRUE(write_safetensors_file(path, sample_file()));
  Expected<SafetensorsFile> back = read_safetensors_file(path);
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_EQ(back->tensors.size(), sample_file().tensors.size());

  Expected<SafetensorsFile> missing = read_safetensors_file(dir.path() + "/nope.safetensors");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().render().find("nope.safetensors"), std::string::npos);
  EXPECT_NE(missing.error().render().find("cannot open"), std::string::npos);
}

struct CorruptCase {
  const char* what;
  std::string bytes;
  const char* expected;  // a piece of the error message
};

std::vector<CorruptCase> corrupt_cases() {
  const std::string good = encoded_sample();
  const std::string header = header_of(good);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string h = header;
    const size_t at = h.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    h.replace(at, from.size(), to);
    return with_header(good, h);
  };
  std::string huge_len = good;
  huge_len[7] = '\x7f';
  std::string past_end = good;
  past_end[0] = static_cast<char>(0xff);
  past_end[1] = static_cast<char>(0xff);
  std::string deep(40, '[');
  return {
      {"empty file", "", "shorter than the 8-byte header length"},
      {"7 bytes", std::string(7, '\0'), "shorter than the 8-byte header length"},
      {"header length over the limit", huge_len, "exceeds the limit"},
      {"header length past the end", past_end, "reaches past the end"},
      {"header not an object", with_header(good, "[1, 2]  "), "must start with '{'"},
      {"truncated JSON", with_header(good, header.substr(0, header.size() / 2)), "not valid JSON"},
      {"deep nesting", with_header(good, "{\"a\":" + deep), "nested deeper than"},
      {"duplicate tensor", replaced("\"mask\":", "\"ids\":"), "'ids' appears twice"},
      {"unknown dtype", replaced("\"dtype\":\"I64\"", "\"dtype\":\"Q64\""), "'Q64' is not a safetensors dtype"},
      {"unsupported dtype", replaced("\"dtype\":\"I64\"", "\"dtype\":\"U8\""), "'U8' is not one Tessera reads"},
      {"dtype not a string", replaced("\"dtype\":\"I64\"", "\"dtype\":64"), "dtype is not a string"},
      {"shape with a negative dim", replaced("\"shape\":[3]", "\"shape\":[-3]"), "shape[0] is -3"},
      {"shape with a float dim", replaced("\"shape\":[3]", "\"shape\":[3.0]"), "not a non-negative integer"},
      {"shape too large", replaced("\"shape\":[3]", "\"shape\":[4294967296,4294967296,4294967296]"),
       "too large to address"},
      {"byte count mismatch", replaced("\"shape\":[3]", "\"shape\":[2]"), "holds 16 bytes, but data_offsets"},
      {"offsets reversed", replaced("\"data_offsets\":[0,24]", "\"data_offsets\":[24,0]"), "end before they begin"},
      {"offsets past the data", replaced("\"data_offsets\":[0,24]", "\"data_offsets\":[100000,100024]"),
       "reach past the data section"},
      {"offsets not two", replaced("\"data_offsets\":[0,24]", "\"data_offsets\":[0]"), "not [begin, end]"},
      {"unknown key", replaced("\"shape\":[3]", "\"shape\":[3],\"stride\":[1]"), "unknown key 'stride'"},
      {"missing key", replaced("\"shape\":[3],", ""), "missing key 'shape'"},
      {"metadata not strings", replaced("\"tessera.inputs\":\"[\\\"x\\\", \\\"x_1\\\"]\"", "\"tessera.inputs\":[1]"),
       "__metadata__ value of 'tessera.inputs'"},
      {"gap in the data", with_header(good, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}"),
       "leaving bytes 0..4"},
      {"trailing bytes", with_header(good, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"),
       "but the tensors cover 4"},
  };
}

TEST(SafetensorsFile, CorruptFilesAreRejectedWithLocatedErrors) {
  for (const CorruptCase& c : corrupt_cases()) {
    const std::string error = decode_error(c.bytes);
    ASSERT_FALSE(error.empty()) << c.what << ": accepted";
    EXPECT_NE(error.find("io.safetensors"), std::string::npos) << c.what << ": " << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.what << ": " << error;
  }
}

// A number too large for a double once escaped the reader as an exception (a fuzz finding,
// tests/fuzz/regressions/safetensors/); it is an error naming the header byte of the number.
TEST(SafetensorsFile, NumberOverflowIsALocatedError) {
  const std::string header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1E400],\"data_offsets\":[0,4]}}";
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  bytes += header + std::string(4, '\0');
  const std::string error = decode_error(bytes);
  EXPECT_NE(error.find("number overflow parsing '1E400'"), std::string::npos) << error;
  EXPECT_NE(error.find("header byte " + std::to_string(8 + header.find("1E400"))), std::string::npos) << error;
}

TEST(SafetensorsFile, OverlappingTensorsAreRejected) {
  // Two 4-byte tensors over the same bytes, and 4 more so the section is covered.
  const std::string header =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  bytes += header + std::string(8, '\0');
  const std::string error = decode_error(bytes);
  EXPECT_NE(error.find("overlap tensor"), std::string::npos) << error;
}

TEST(SafetensorsFile, EveryTruncationIsRejectedNeverCrashes) {
  const std::string good = encoded_sample();
  for (size_t n = 0; n < good.size(); ++n) {
    Expected<SafetensorsFile> f = decode_safetensors(std::string_view(good).substr(0, n), "io.safetensors");
    EXPECT_FALSE(f) << "a truncation to " << n << " bytes was accepted";
  }
  // Flipping any single header byte either still parses consistently or is an error, never a crash.
  for (size_t i = 0; i < 8 + header_length(good); ++i) {
    std::string flipped = good;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    Expected<SafetensorsFile> f = decode_safetensors(flipped, "io.safetensors");
    if (!f) continue;
    for (const SafetensorsTensor& t : f->tensors) {
      EXPECT_EQ(t.bytes.size(), static_cast<size_t>(num_elements(Shape(t.shape.begin(), t.shape.end())) *
                                                    dtype_bytes(t.dtype)));
    }
  }
}

// Runs `script` with python3 on `file`; exit code 77 means "skip", with the reason on stdout.
struct PythonResult {
  bool ran = false;
  int code = -1;
  std::string out;
};

PythonResult run_python(const test::TempDir& dir, const std::string& script, const std::string& file) {
  PythonResult r;
  if (std::system("python3 -c 'pass' > /dev/null 2>&1") != 0) return r;
  const std::string script_path = dir.write("check.py", script);
  const std::string out_path = dir.path() + "/python.out";
  const int status =
      std::system(("python3 '" + script_path + "' '" + file + "' > '" + out_path + "' 2>&1").c_str());
  r.ran = true;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = test::read_file(out_path);
  return r;
}

TEST(SafetensorsFile, PythonStandardLibraryReadsTheHeader) {
  test::TempDir dir;
  const std::string path = dir.path() + "/io.safetensors";
  ASSERT_TRUE(write_safetensors_file(path, sample_file()));
  const PythonResult r = run_python(dir, R"(import json, struct, sys
data = open(sys.argv[1], 'rb').read()
(n,) = struct.unpack('<Q', data[:8])
header = json.loads(data[8:8 + n].decode('utf-8'))
assert (8 + n) % 8 == 0
meta = header.pop('__metadata__')
assert json.loads(meta['tessera.inputs']) == ['x', 'x_1'], meta
end = 0
for name, e in sorted(header.items(), key=lambda kv: kv[1]['data_offsets']):
    b, f = e['data_offsets']
    assert b == end, (name, b, end)
    end = f
assert end == len(data) - 8 - n
x = header['x']
b, _ = x['data_offsets']
vals = struct.unpack('<6f', data[8 + n + b: 8 + n + b + 24])
assert vals[0] == 1.5 and vals[5] == 3.4028234663852886e38, vals
print('ok')
)", path);
  if (!r.ran) GTEST_SKIP() << "python3 is not on PATH";
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
}

TEST(SafetensorsFile, PythonSafetensorsPackageReadsTheFile) {
  test::TempDir dir;
  const std::string path = dir.path() + "/io.safetensors";
  ASSERT_TRUE(write_safetensors_file(path, sample_file()));
  // safetensors.deserialize needs neither torch nor numpy: it returns each tensor's raw bytes.
  const PythonResult r = run_python(dir, R"(import sys
try:
    from safetensors import deserialize
except ImportError as e:
    print('the Python safetensors package is not installed (%s)' % e)
    sys.exit(77)
import struct
tensors = dict(deserialize(open(sys.argv[1], 'rb').read()))
assert sorted(tensors) == ['empty', 'ids', 'mask', 'p_w', 'scalar', 'x', 'x_1'], sorted(tensors)
dtypes = {name: t['dtype'].upper() for name, t in tensors.items()}
assert dtypes == {'empty': 'F32', 'ids': 'I64', 'mask': 'BOOL', 'p_w': 'BF16', 'scalar': 'F32', 'x': 'F32',
                  'x_1': 'F16'}, dtypes
assert tensors['ids']['shape'] == [3], tensors['ids']
assert struct.unpack('<3q', bytes(tensors['ids']['data'])) == (0, -1, 2**63 - 1)
assert bytes(tensors['mask']['data']) == bytes([1, 0, 1, 1, 0])
assert struct.unpack('<4H', bytes(tensors['p_w']['data'])) == (0x3f80, 0x8000, 0x7f81, 0x0001)
assert tensors['scalar']['shape'] == [] and tensors['empty']['shape'] == [0, 7]
print('ok')
)", path);
  if (!r.ran) GTEST_SKIP() << "python3 is not on PATH";
  if (r.code == 77) GTEST_SKIP() << r.out;
  EXPECT_EQ(r.code, 0) << r.out;
}

}  // namespace
}  // namespace tessera
