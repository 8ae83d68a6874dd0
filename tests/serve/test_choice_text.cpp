// serve/choice_text.h on a hand-made vocabulary: the pieces a stream sends add up to the text a plain
// reply returns, half a UTF-8 character is never sent, stop strings are cut (and never sent even in
// part), a final stop token is left out, and Qwen tool-call blocks become tool calls. The decode below
// is a model of a byte-level tokenizer written for this test: ids -> byte strings laid end to end, an
// incomplete UTF-8 sequence decoded as U+FFFD (as the real decoders do).
#include <gtest/gtest.h>

#include <map>

#include "serve/choice_text.h"

using namespace spade::serve;

namespace {

const std::map<int64_t, std::string> kVocab = {
    {0, "Hel"}, {1, "lo"}, {2, " wor"}, {3, "ld"}, {4, "\xE2"}, {5, "\x82\xAC"},  // 4 + 5 = "€" (E2 82 AC)
    {6, "<tool"}, {7, "_call>"}, {8, "{\"name\": \"f\", \"arguments\": {\"x\": 1}}"}, {9, "</tool_call>"},
    {10, "STOP"}, {11, "\n"}, {12, "<eos>"}, {13, "ST"}, {14, "OP!"}, {15, "{broken"}};

/// The bytes of `ids`, with every incomplete UTF-8 sequence replaced by U+FFFD.
std::string decode(const std::vector<int64_t>& ids) {
  std::string bytes, out;
  for (int64_t id : ids) bytes += kVocab.at(id);
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char c = bytes[i];
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool whole = len > 0 && i + len <= bytes.size();
    for (size_t k = 1; whole && k < len; ++k) whole = (static_cast<unsigned char>(bytes[i + k]) & 0xC0) == 0x80;
    if (whole) {
      out += bytes.substr(i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

/// Streams `tokens` one at a time (all but the last `final` ones), then finishes; returns the pieces sent.
std::vector<std::string> stream(ChoiceText& t, const std::vector<int64_t>& tokens, size_t final, const std::string& reason,
                                const std::string& stop_string, bool stop_token) {
  std::vector<std::string> pieces;
  for (size_t i = 0; i + final < tokens.size(); ++i) pieces.push_back(t.push({tokens[i]}));
  pieces.push_back(t.finish(std::vector<int64_t>(tokens.end() - final, tokens.end()), reason, stop_string, stop_token));
  return pieces;
}

std::string whole(const std::vector<int64_t>& tokens, std::vector<std::string> stop, const std::string& reason,
                  const std::string& stop_string, bool stop_token) {
  ChoiceText t(decode, std::move(stop));
  t.finish(tokens, reason, stop_string, stop_token);
  return t.content();
}

}  // namespace

TEST(ChoiceText, StreamedPiecesNeverSplitACharacterAndAddUpToTheText) {
  ChoiceText t(decode, {});
  const std::vector<std::string> pieces = stream(t, {0, 1, 2, 3, 4, 5}, 1, "length", "", false);
  // Token 4 is the first byte of "€": nothing is sent until token 5 completes it (at the finish here).
  EXPECT_EQ(pieces, (std::vector<std::string>{"Hel", "lo", " wor", "ld", "", "\xE2\x82\xAC"}));
  EXPECT_EQ(t.content(), "Hello world\xE2\x82\xAC");
  EXPECT_EQ(t.finish_reason(), "length");
  EXPECT_EQ(whole({0, 1, 2, 3, 4, 5}, {}, "length", "", false), t.content());
  // Streamed one token at a time to the end, the last piece arrives with the push that completes it.
  ChoiceText u(decode, {});
  EXPECT_EQ(stream(u, {0, 4, 5, 1}, 1, "length", "", false), (std::vector<std::string>{"Hel", "", "\xE2\x82\xAC", "lo"}));
}

TEST(ChoiceText, AFinalStopTokenIsLeftOut) {
  ChoiceText t(decode, {});
  EXPECT_EQ(stream(t, {0, 1, 12}, 1, "stop", "", true), (std::vector<std::string>{"Hel", "lo", ""}));
  EXPECT_EQ(t.content(), "Hello");
  EXPECT_EQ(t.finish_reason(), "stop");
  EXPECT_EQ(whole({0, 1, 12}, {}, "stop", "", true), "Hello");
}

// stop "STOP": 3 bytes (its length - 1) are held back, so no part of it is ever sent; the text is cut
// before it. Spelled by tokens 13 + 14 ("ST" + "OP!"), the sampler stops at 14 and the "!" after the stop
// string is cut too.
TEST(ChoiceText, StopStringsAreCutAndNeverSentInPart) {
  ChoiceText t(decode, {"STOP", "zz"});
  EXPECT_EQ(stream(t, {0, 1, 2, 3, 13, 14}, 1, "stop", "STOP", false),
            (std::vector<std::string>{"", "He", "llo ", "wo", "rl", "d"}));
  EXPECT_EQ(t.content(), "Hello world");
  EXPECT_EQ(whole({0, 1, 2, 3, 13, 14}, {"STOP", "zz"}, "stop", "STOP", false), "Hello world");
  // Cut by length (no stop string found): held-back text is released at the end.
  ChoiceText u(decode, {"STOP"});
  EXPECT_EQ(stream(u, {0, 1, 13}, 1, "length", "", false), (std::vector<std::string>{"", "He", "lloST"}));
}

TEST(ChoiceText, QwenToolCallBlocksBecomeToolCalls) {
  const std::vector<int64_t> tokens = {0, 11, 6, 7, 11, 8, 11, 9, 12};  // "Hel\n<tool_call>\n{...}\n</tool_call>" <eos>
  ChoiceText t(decode, {}, /*tool_calls=*/true, /*parallel=*/true, "x_");
  const std::vector<std::string> pieces = stream(t, tokens, 1, "stop", "", true);
  std::string sent;
  for (const std::string& p : pieces) sent += p;
  EXPECT_EQ(sent, "Hel\n");  // "<tool" was held back as a possible tag start, and then the tag
  EXPECT_EQ(pieces[2], "");  // after "<tool": nothing sent
  EXPECT_EQ(t.content(), "Hel\n");
  ASSERT_EQ(t.tool_calls().size(), 1u);
  EXPECT_EQ(t.tool_calls()[0].id, "call_x_0");
  EXPECT_EQ(t.tool_calls()[0].name, "f");
  EXPECT_EQ(t.tool_calls()[0].arguments, R"({"x":1})");
  EXPECT_EQ(t.finish_reason(), "tool_calls");

  // Two blocks; parallel_tool_calls = false keeps the first.
  const std::vector<int64_t> two = {6, 7, 8, 9, 6, 7, 8, 9};
  ChoiceText both(decode, {}, true, true), one(decode, {}, true, false);
  both.finish(two, "length", "", false);
  one.finish(two, "length", "", false);
  EXPECT_EQ(both.tool_calls().size(), 2u);
  EXPECT_EQ(one.tool_calls().size(), 1u);
  EXPECT_EQ(both.content(), "");

  // A block that does not parse is not a call: the whole text is the content.
  ChoiceText bad(decode, {}, true, true);
  stream(bad, {0, 6, 7, 15, 9}, 1, "length", "", false);
  EXPECT_TRUE(bad.tool_calls().empty());
  EXPECT_EQ(bad.content(), "Hel<tool_call>{broken</tool_call>");
  EXPECT_EQ(bad.finish_reason(), "length");

  // Without tool calls enabled the same text is plain content.
  EXPECT_EQ(whole({0, 6, 7, 8, 9}, {}, "stop", "", false), "Hel<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>");
}
