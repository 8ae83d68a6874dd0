// The safetensors reader's rules (policy/safetensors_header.h), one hand-built file per rule. Every
// file is bytes written here: the 8-byte little-endian length, the header text as given (no padding
// added), then the data bytes. The rules and their limits come from Hugging Face's reference
// implementation (safetensors crate, tensor.rs: read_metadata, Metadata::validate) and the format's
// README; the expected numbers in messages are worked out by hand in the comments.
#include <gtest/gtest.h>
#include <unistd.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/safetensors.h"
#include "tests/testing/test_util.h"

using namespace spade::policy;

namespace fs = std::filesystem;

namespace {

using spade::fixtures::error_of;

// One folder per test process: ctest runs each test in its own process, in parallel, and a shared
// folder was emptied by one while another was writing into it.
std::string dir() {
  static const std::string d =
      spade::fixtures::fresh_test_dir("policy_safetensors_rules", "files-" + std::to_string(getpid()));
  return d;
}

// A file whose header length field says `declared` bytes, followed by `header` and `data`.
std::string write_with_length(const std::string& name, uint64_t declared, const std::string& header,
                              const std::string& data) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((declared >> (8 * i)) & 0xff));
  s += header;
  s += data;
  const std::string path = dir() + "/" + name + ".safetensors";
  std::ofstream(path, std::ios::binary) << s;
  return path;
}

std::string write_raw(const std::string& name, const std::string& header, const std::string& data = "") {
  return write_with_length(name, header.size(), header, data);
}

// The message of opening `path` ("" when it opens).
std::string open_error(const std::string& path) {
  return error_of([&] { SafetensorsFile::open(path); });
}

// Expects the error for `path` to name the file, `subject` and `rule`, and to contain `detail`.
void expect_rule(const std::string& path, const std::string& subject, const std::string& rule, const std::string& detail) {
  const std::string e = open_error(path);
  EXPECT_NE(e.find(path + ": " + subject + ": "), std::string::npos) << e;
  EXPECT_NE(e.find("[" + rule + "]"), std::string::npos) << e;
  EXPECT_NE(e.find(detail), std::string::npos) << e;
}

const std::string kF32x1 = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";  // 1 x 4 bytes

}  // namespace

// header_length: at least the 8 length bytes; N <= 100,000,000 (MAX_HEADER_SIZE, decimal: 10^8, not
// 100 MiB = 104,857,600); N bytes present after the length.
TEST(SafetensorsRules, HeaderLength) {
  const std::string tiny = dir() + "/tiny.safetensors";
  std::ofstream(tiny, std::ios::binary) << "abc";
  expect_rule(tiny, "header", "header_length", "3 bytes; the 8-byte little-endian header length is missing");
  const std::string empty = dir() + "/empty.safetensors";
  std::ofstream(empty, std::ios::binary).flush();
  expect_rule(empty, "header", "header_length", "(0 bytes;");

  // 100,000,001 is over the limit although below 100 MiB.
  expect_rule(write_with_length("too_long", 100'000'001, "{}", ""), "header", "header_length",
              "header length 100000001 exceeds 100,000,000 bytes");
  // Exactly 100,000,000 is allowed by the limit; this file then lacks those bytes (2 follow the length).
  expect_rule(write_with_length("at_limit", 100'000'000, "{}", ""), "header", "header_length",
              "header claims 100000000 bytes but the file has only 2 after the length");
}

// header_start: the header's first byte is '{' (README: "MUST begin with a { character").
TEST(SafetensorsRules, HeaderStartsWithBrace) {
  expect_rule(write_raw("leading_space", " {}"), "header", "header_start", "begins with byte 32, not '{'");
  expect_rule(write_raw("empty_header", ""), "header", "header_start", "the header is empty");
}

// header_json: one JSON object, UTF-8.
TEST(SafetensorsRules, HeaderIsJson) {
  expect_rule(write_raw("not_json", "{not json"), "header", "header_json", "not valid JSON");
  expect_rule(write_raw("bad_utf8", "{\"w\xff\":" + kF32x1 + "}", std::string(4, '\0')), "header", "header_json",
              "not valid JSON");
  expect_rule(write_raw("unclosed", "{\"a\":\"}\""), "header", "header_json", "not valid JSON");  // '}' in a string
}

// header_padding: after the object only spaces (0x20); NUL, other whitespace or a second value are errors.
TEST(SafetensorsRules, HeaderPaddedWithSpacesOnly) {
  // "{}" then 6 spaces: 8 header bytes, no tensors, no data: a valid empty file.
  EXPECT_EQ(open_error(write_raw("spaces", "{}      ")), "");
  // The NUL is at header offset 2, file offset 8 + 2 = 10.
  expect_rule(write_raw("nul", std::string("{}\0\0\0\0\0\0", 8)), "header", "header_padding",
              "a NUL byte at header offset 2 (file offset 10)");
  expect_rule(write_raw("newline", "{}\n"), "header", "header_padding", "byte 10 at header offset 2");
  expect_rule(write_raw("second_object", "{} {}"), "header", "header_padding", "byte 123 at header offset 3");
  expect_rule(write_raw("extra_brace", "{}}"), "header", "header_padding", "byte 125 at header offset 2");
  // Whitespace inside the object is JSON and allowed.
  EXPECT_EQ(open_error(write_raw("inner_ws", "{ \"w\" :\n\t" + kF32x1 + " }  ", std::string(4, '\0'))), "");
}

// duplicate_key: no key twice in one object, at any level.
TEST(SafetensorsRules, NoDuplicateKeys) {
  const std::string b = R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})";
  expect_rule(write_raw("dup_tensor", "{\"w\":" + kF32x1 + ",\"w\":" + b + "}", std::string(8, '\0')), "key 'w'",
              "duplicate_key", "appears twice in the header");
  expect_rule(write_raw("dup_field", R"({"w":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})",
                        std::string(4, '\0')),
              "tensor 'w'", "duplicate_key", "key 'dtype' appears twice");
  expect_rule(write_raw("dup_meta_key", R"({"__metadata__":{"a":"1","a":"2"}})"), "key '__metadata__'",
              "duplicate_key", "key 'a' appears twice");
  expect_rule(write_raw("dup_meta", R"({"__metadata__":{"a":"1"},"__metadata__":{"b":"2"}})"), "key '__metadata__'",
              "duplicate_key", "appears twice in the header");
}

// metadata: "__metadata__" is a string -> string map and never a tensor.
TEST(SafetensorsRules, MetadataIsAStringMap) {
  const std::string ok = write_raw("meta_ok", R"({"__metadata__":{"format":"pt","note":""},"w":)" + kF32x1 + "}",
                                   std::string(4, '\0'));
  auto f = SafetensorsFile::open(ok);
  EXPECT_EQ(f->metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"note", ""}}));
  EXPECT_EQ(f->names(), std::vector<std::string>{"w"});

  expect_rule(write_raw("meta_number", R"({"__metadata__":{"format":1}})"), "key '__metadata__'", "metadata",
              "the value of 'format' is an integer 1");
  expect_rule(write_raw("meta_string", R"({"__metadata__":"pt"})"), "key '__metadata__'", "metadata",
              "its value is a string \"pt\"");
  // Shaped like a tensor entry: still the metadata map, whose values must be strings.
  expect_rule(write_raw("meta_tensor", R"({"__metadata__":)" + kF32x1 + "}", std::string(4, '\0')),
              "key '__metadata__'", "metadata", "never a tensor");
}

// tensor_entry: every other key is an object with dtype, shape and data_offsets.
TEST(SafetensorsRules, TensorEntryHasItsFields) {
  expect_rule(write_raw("entry_array", R"({"w":[1,2]})"), "tensor 'w'", "tensor_entry", "the entry is an array [1,2]");
  expect_rule(write_raw("entry_no_offsets", R"({"w":{"dtype":"F32","shape":[1]}})"), "tensor 'w'", "tensor_entry",
              "the entry has no \"data_offsets\"");
}

// dtype: a string naming a supported type.
TEST(SafetensorsRules, Dtype) {
  expect_rule(write_raw("dtype_unknown", R"({"w":{"dtype":"F8_E9","shape":[1],"data_offsets":[0,1]}})",
                        std::string(1, '\0')),
              "tensor 'w'", "dtype", "unsupported safetensors dtype 'F8_E9'");
  expect_rule(write_raw("dtype_number", R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
              "tensor 'w'", "dtype", "dtype is an integer 4");
}

// shape: an array of non-negative JSON integers within int64; 2.0 is a float, "2" a string.
TEST(SafetensorsRules, ShapeIsNonNegativeIntegers) {
  const std::string d8(8, '\0');
  expect_rule(write_raw("shape_float", R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", d8), "tensor 'w'",
              "shape", "shape[0] is a float 2.0");
  expect_rule(write_raw("shape_negative", R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})", d8),
              "tensor 'w'", "shape", "shape[1] is negative (-1)");
  expect_rule(write_raw("shape_string", R"({"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", d8),
              "tensor 'w'", "shape", "shape[0] is a string \"2\"");
  expect_rule(write_raw("shape_scalar", R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", d8), "tensor 'w'",
              "shape", "shape is an integer 2; expected an array");
  // 2^63 = 9223372036854775808 is one past int64's maximum; with a 0 beside it the size is 0 bytes.
  expect_rule(write_raw("shape_huge", R"({"w":{"dtype":"F32","shape":[0,9223372036854775808],"data_offsets":[0,0]}})"),
              "tensor 'w'", "shape", "shape[1] = 9223372036854775808 does not fit in int64");
}

// data_offsets: [begin, end], non-negative JSON integers, begin <= end.
TEST(SafetensorsRules, DataOffsetsAreAnOrderedIntegerPair) {
  const std::string d4(4, '\0');
  expect_rule(write_raw("off_float", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4.0]}})", d4), "tensor 'w'",
              "data_offsets", "data_offsets[1] is a float 4.0");
  expect_rule(write_raw("off_negative", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", d4), "tensor 'w'",
              "data_offsets", "data_offsets[0] is negative (-4)");
  expect_rule(write_raw("off_string", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":["0",4]}})", d4), "tensor 'w'",
              "data_offsets", "data_offsets[0] is a string \"0\"");
  expect_rule(write_raw("off_one", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4]}})", d4), "tensor 'w'",
              "data_offsets", "data_offsets is an array [4]; expected [begin, end]");
  expect_rule(write_raw("off_inverted", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", std::string(8, '\0')),
              "tensor 'w'", "data_offsets", "data_offsets [8, 4] are inverted");
}

// size_overflow: element count and byte size in 64 bits (the reference's checked_mul).
TEST(SafetensorsRules, SizeWithoutOverflow) {
  // 2^32 x 2^32 = 2^64 elements: one more than u64 holds.
  expect_rule(write_raw("numel_overflow", R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"),
              "tensor 'w'", "size_overflow", "the element count of shape [4294967296,4294967296] overflows 64 bits");
  // 2^62 = 4611686018427387904 elements fit; x 4 bytes (F32) = 2^64 bytes does not.
  expect_rule(write_raw("bytes_overflow", R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})"),
              "tensor 'w'", "size_overflow", "4611686018427387904 elements x 4 bytes (F32) overflows 64 bits");
}

// size_mismatch: end - begin equals element count x dtype size.
TEST(SafetensorsRules, SizeMatchesOffsets) {
  // F32 [2, 2]: 4 elements x 4 bytes = 16, the offsets span 12.
  expect_rule(write_raw("span", R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", std::string(12, '\0')),
              "tensor 'w'", "size_mismatch", "data_offsets span 12 bytes but F32 x shape [2,2] needs 16");
  // BF16 [3]: 3 x 2 = 6 bytes, the offsets span 4.
  expect_rule(write_raw("span_bf16", R"({"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}})", std::string(4, '\0')),
              "tensor 'w'", "size_mismatch", "data_offsets span 4 bytes but BF16 x shape [3] needs 6");
}

// tiling: sorted by offset, the ranges start at 0, follow each other without gap or overlap and end at
// the end of the file.
TEST(SafetensorsRules, OffsetsTileTheDataRegion) {
  const std::string a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  // In the header b comes first and starts at 4: sorted by offset it follows a exactly.
  auto f = SafetensorsFile::open(write_raw(
      "tiled", R"({"b":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},)" + a +
                   R"(,"e":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}})",
      std::string("\0\0\x80\x3f\x07\0\0\0", 8)));  // a = 1.0f (0x3f800000 little-endian), b = 7
  EXPECT_EQ(f->get("a").item<float>(), 1.0f);
  EXPECT_EQ(f->get("b").item<int32_t>(), 7);
  EXPECT_EQ(f->get("e").numel(), 0);

  expect_rule(write_raw("gap_start", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0')),
              "tensor 'a'", "tiling", "data_offsets [4, 8] leave a gap of 4 bytes at the start of the data region");
  expect_rule(write_raw("gap_middle", "{" + a + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                        std::string(12, '\0')),
              "tensor 'b'", "tiling", "leave a gap of 4 bytes after tensor 'a' (which ends at 4)");
  expect_rule(write_raw("overlap", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        std::string(12, '\0')),
              "tensor 'b'", "tiling", "data_offsets [4, 12] overlap tensor 'a' (which ends at 8)");
  // A zero-size tensor also sits where the previous one ends: [2, 2] inside a's [0, 4] is an overlap.
  expect_rule(write_raw("empty_inside", "{" + a + R"(,"e":{"dtype":"F32","shape":[0],"data_offsets":[2,2]}})",
                        std::string(4, '\0')),
              "tensor 'e'", "tiling", "data_offsets [2, 2] overlap tensor 'a' (which ends at 4)");
  // 8 data bytes, a covers 4: 4 trailing.
  expect_rule(write_raw("trailing", "{" + a + "}", std::string(8, '\0')), "header", "tiling",
              "4 trailing bytes after the last tensor 'a' (which ends at 4) in a data region of 8 bytes");
  expect_rule(write_raw("trailing_no_tensor", "{}", std::string(3, '\0')), "header", "tiling",
              "3 trailing bytes after the header (no tensor covers them)");
  // a ends at 4, only 2 data bytes: truncated.
  expect_rule(write_raw("short", "{" + a + "}", std::string(2, '\0')), "tensor 'a'", "tiling",
              "data_offsets end 4 is beyond the data region (2 bytes)");
}

// The writer's files pass every rule: a mix of dtypes, a 0-dim and an empty tensor, metadata; the header
// is the JSON object padded with spaces to a multiple of 8 and the ranges tile the data region.
TEST(SafetensorsRules, WriterOutputPassesEveryRule) {
  std::map<std::string, at::Tensor> t = {
      {"u8", torch::arange(3, torch::kUInt8)},  // 3 bytes: the next tensor starts unaligned
      {"f32", torch::randn({2, 3})},
      {"bf16", torch::randn({5}).to(torch::kBFloat16)},
      {"empty", torch::zeros({0, 4})},
      {"scalar", torch::scalar_tensor(7, torch::kLong)},
      {"flag", torch::tensor({true, false})},
  };
  const std::string path = dir() + "/written.safetensors";
  write_safetensors(path, t, {{"format", "pt"}, {"by", "spade"}});
  EXPECT_EQ(open_error(path), "");
  const std::string raw = spade::read_file(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[i]);
  EXPECT_EQ(n % 8, 0u);
  const std::string header = raw.substr(8, n);
  const size_t close = header.find_last_of('}');
  ASSERT_NE(close, std::string::npos);
  EXPECT_EQ(header.substr(close + 1), std::string(n - close - 1, ' '));
  // Data bytes: bf16 5x2 + empty 0 + f32 6x4 + flag 2x1 + scalar 8 + u8 3 = 10 + 0 + 24 + 2 + 8 + 3 = 47.
  EXPECT_EQ(raw.size(), 8 + n + 47);
  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f->metadata().at("by"), "spade");
  for (const auto& kv : t) EXPECT_TRUE(torch::equal(f->get(kv.first).reshape({-1}), kv.second.reshape({-1}))) << kv.first;
}

// The streaming writer (SafetensorsWriter): tensors written in reverse name order, one cast on the way
// (float32 values into a BF16 slot), give the bytes write_safetensors gives for the same tensors in
// their stored dtypes; the layout is fixed by the specs, not by the order of the writes.
TEST(SafetensorsRules, StreamingWriterInAnyOrderEqualsTheWholeWrite) {
  const at::Tensor f32 = torch::randn({2, 3}), bf16 = torch::randn({5});
  const std::map<std::string, at::Tensor> whole = {
      {"a_u8", torch::arange(3, torch::kUInt8)}, {"b_f32", f32}, {"c_bf16", bf16.to(torch::kBFloat16)}};
  write_safetensors(dir() + "/whole.safetensors", whole);
  {
    SafetensorsWriter w(dir() + "/streamed.safetensors", {{"c_bf16", torch::kBFloat16, {5}},
                                                          {"a_u8", torch::kUInt8, {3}},
                                                          {"b_f32", torch::kFloat, {2, 3}}});
    EXPECT_EQ(w.data_bytes(), 3u + 24u + 10u);
    w.write("c_bf16", bf16);  // float32 in, stored as BF16
    w.write("b_f32", f32);
    w.write("a_u8", whole.at("a_u8"));
    EXPECT_FALSE(fs::exists(dir() + "/streamed.safetensors"));  // not before commit
    w.commit();
  }
  EXPECT_EQ(spade::read_file(dir() + "/streamed.safetensors"), spade::read_file(dir() + "/whole.safetensors"));
  EXPECT_FALSE(fs::exists(dir() + "/streamed.safetensors.tmp"));
}

// Wrong writes are errors naming the file and tensor; an uncommitted writer leaves no file behind.
TEST(SafetensorsRules, StreamingWriterRefusesWrongWrites) {
  const std::string path = dir() + "/refused.safetensors";
  auto msg = [](auto&& f) { return spade::fixtures::error_of(f); };
  EXPECT_NE(msg([&] { SafetensorsWriter(path, {{"x", torch::kFloat, {2}}, {"x", torch::kFloat, {2}}}); })
                .find(path + ": tensor 'x' is listed twice"),
            std::string::npos);
  {
    SafetensorsWriter w(path, {{"x", torch::kFloat, {2}}, {"y", torch::kFloat, {3}}});
    EXPECT_NE(msg([&] { w.write("z", torch::zeros({2})); }).find(path + ": tensor 'z' is not one this file was planned with"),
              std::string::npos);
    EXPECT_NE(msg([&] { w.write("x", torch::zeros({3})); }).find(path + ": tensor 'x' has shape [3], planned [2]"),
              std::string::npos);
    w.write("x", torch::zeros({2}));
    EXPECT_NE(msg([&] { w.write("x", torch::zeros({2})); }).find("tensor 'x' written twice"), std::string::npos);
    EXPECT_NE(msg([&] { w.commit(); }).find(path + ": tensor 'y' was never written"), std::string::npos);
    EXPECT_TRUE(fs::exists(path + ".tmp"));
  }
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_FALSE(fs::exists(path));
}
