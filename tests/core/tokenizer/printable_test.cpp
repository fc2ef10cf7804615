// printable(): what a terminal gets of text from a file. Expected strings are
// written out by hand.
#include <gtest/gtest.h>

#include "bonsai/core/printable.hpp"

namespace bonsai {
namespace {

TEST(Printable, ControlCharactersAndBrokenUtf8BecomeEscapes) {
  EXPECT_EQ(printable("plain text"), "plain text");
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  // ESC [ 3 1 m: a terminal would turn red.
  EXPECT_EQ(printable("\x1b[31mred\x7f"), "\\x1b[31mred\\x7f");
  EXPECT_EQ(printable(std::string_view("a\0b", 3)), "a\\x00b");
  // Whole characters stay; a lone continuation byte, a byte that never
  // starts one and a character cut at the end are bytes.
  EXPECT_EQ(printable("caf\xc3\xa9 \xe4\xb8\xad"), "caf\xc3\xa9 \xe4\xb8\xad");
  EXPECT_EQ(printable("\xff\x80x"), "\\xff\\x80x");
  EXPECT_EQ(printable("ok\xe4\xb8"), "ok\\xe4\\xb8");
}

TEST(Printable, QuotesAndBackslashesOnlyWhenAsked) {
  EXPECT_EQ(printable("say \"hi\" \\ no"), "say \"hi\" \\ no");
  EXPECT_EQ(printable("say \"hi\" \\ no", true), "say \\\"hi\\\" \\\\ no");
}

} // namespace
} // namespace bonsai
