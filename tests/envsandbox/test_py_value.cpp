// PyValue::from_wire: the host's check of untrusted value encodings (protocol.h).
#include <gtest/gtest.h>

#include <cmath>

#include "envsandbox/py_value.h"

namespace spade::envsandbox {
namespace {

using nlohmann::json;

std::optional<PyValue> decode(const std::string& text) {
  std::string error;
  return PyValue::from_wire(json::parse(text), &error);
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
    EXPECT_FALSE(PyValue::from_wire(json::parse(bad), &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(PyValue, RejectsExcessiveNesting) {
  json deep = "leaf";
  for (int i = 0; i < 100; ++i) deep = json{{"t", "list"}, {"v", json::array({deep})}};
  std::string error;
  EXPECT_FALSE(PyValue::from_wire(deep, &error));
}

}  // namespace
}  // namespace spade::envsandbox
