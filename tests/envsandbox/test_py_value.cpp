// PyValue::from_wire: the host's check of untrusted value encodings (protocol.h).
#include <gtest/gtest.h>

#include <cmath>

#include "envsandbox/py_value.h"

namespace spade::envsandbox {
namespace {

using nlohmann::json;

const WireCaps kCaps = WireCaps::with_max_str_chars(1000);

std::optional<PyValue> decode(const std::string& text) {
  std::string error;
  return PyValue::from_wire(json::parse(text), kCaps, &error);
}

TEST(PyValue, DecodesEveryKind) {
  auto v = decode(R"({"t":"tuple","v":["obs",{"t":"float","v":0.5},true,null,
                     {"t":"dict","k":["a",1],"v":[{"t":"int","big":"-123456789012345678901234"},{"t":"float","s":"nan"}]},
                     {"t":"other","type":"numpy.bool_"},{"t":"str","v":"ab","cut":true},7]})");
  ASSERT_TRUE(v);
  const auto& t = v->items();
  EXPECT_TRUE(v->is_tuple());
  EXPECT_EQ(t[0].as_str(), "obs");
  EXPECT_TRUE(t[1].is_float() && t[1].as_double() == 0.5);
  EXPECT_TRUE(t[2].is_bool() && !t[2].is_number());
  EXPECT_TRUE(t[3].is_none());
  EXPECT_EQ(t[4].find("a")->repr(), "-123456789012345678901234");
  EXPECT_TRUE(std::isnan(t[4].items()[1].as_double()));
  EXPECT_EQ(t[5].type_label(), "numpy.bool_");
  EXPECT_TRUE(t[6].cut());
  EXPECT_TRUE(t[7].int_fits() && t[7].as_int() == 7);
  EXPECT_EQ(v->repr(200), "('obs', 0.5, True, None, {'a': -123456789012345678901234, 1: nan}, <numpy.bool_ object>, 'ab', 7)");
  EXPECT_EQ(v->repr(20), "('obs', 0.5, True...");
}

TEST(PyValue, RejectsMalformedNodes) {
  for (const char* bad : {R"(1.5)", R"([1])", R"({"t":"float"})", R"({"t":"int","big":"12a"})",
                          R"({"t":"dict","k":[1],"v":[]})", R"({"t":"other"})", R"({"t":"zzz"})",
                          R"({"t":"list","v":[{"t":"str"}]})", R"({"t":"str","v":"a","cut":1})",
                          R"(18446744073709551615)"}) {
    std::string error;
    EXPECT_FALSE(PyValue::from_wire(json::parse(bad), kCaps, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(PyValue, RejectsExcessiveNesting) {
  json deep = "leaf";
  for (int i = 0; i < 100; ++i) deep = json{{"t", "list"}, {"v", json::array({deep})}};
  std::string error;
  EXPECT_FALSE(PyValue::from_wire(deep, kCaps, &error));
}

// Issue 24: the host applies its own caps whatever the child claims ("cut" absent or false): a reply
// written by the program itself on the channel is decoded like any other.
TEST(PyValue, HostCutsOverlongStringsByCharacters) {
  // 5 characters, 9 bytes: 'a', 'é' (2 bytes), '€' (3 bytes), 'b', 'c'. Cut to 3 characters: "aé€".
  const std::string five = "a\xc3\xa9\xe2\x82\xac" "bc";
  std::string error;
  WireCaps three = WireCaps::with_max_str_chars(3);
  auto bare = PyValue::from_wire(json(five), three, &error);
  ASSERT_TRUE(bare) << error;
  EXPECT_EQ(bare->as_str(), "a\xc3\xa9\xe2\x82\xac");
  EXPECT_TRUE(bare->cut());
  auto tagged = PyValue::from_wire(json{{"t", "str"}, {"v", five}, {"cut", false}}, three, &error);
  ASSERT_TRUE(tagged) << error;
  EXPECT_EQ(tagged->as_str().size(), 6u);
  EXPECT_TRUE(tagged->cut());
  auto key = PyValue::from_wire(json{{"t", "dict"}, {"k", json::array({five})}, {"v", json::array({1})}}, three, &error);
  ASSERT_TRUE(key) << error;
  EXPECT_TRUE(key->keys()[0].cut());
  // Exactly at the cap: untouched.
  auto exact = PyValue::from_wire(json("abc"), three, &error);
  ASSERT_TRUE(exact);
  EXPECT_FALSE(exact->cut());
  EXPECT_EQ(exact->as_str(), "abc");
}

TEST(PyValue, HostCutsContainersPastTheElementCap) {
  // 10 elements under a cap of 4 nodes in the whole tree: the list node itself is 1, so 3 items stay.
  WireCaps caps{100, 4, 64};
  json list = json{{"t", "list"}, {"v", json::array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10})}};
  std::string error;
  auto v = PyValue::from_wire(list, caps, &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(v->items().size(), 3u);
  EXPECT_TRUE(v->cut());
}

TEST(PyValue, RejectsBigIntsWithMoreDigitsThanTheCap) {
  std::string error;
  json big = json{{"t", "int"}, {"big", std::string(5000, '7')}};
  EXPECT_FALSE(PyValue::from_wire(big, kCaps, &error));
  EXPECT_NE(error.find("digits"), std::string::npos) << error;
}

}  // namespace
}  // namespace spade::envsandbox
