// The stop-string filter of generated text (host/src/generation/stop_string_filter.hpp):
// hand-worked cases, and random pushes against a naive filter that keeps the
// whole text and searches all of it on every push.
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

#include "generation/stop_string_filter.hpp"

namespace {

using bonsai::host::StopStringFilter;

// What the filter must do, by definition: release the text up to the first
// start of a stop string in everything seen so far, or, while none has
// completed, all but the longest suffix that is a proper prefix of one.
class NaiveFilter {
public:
  explicit NaiveFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  StopStringFilter::Result push(std::string_view piece) {
    if (stopped_)
      return {{}, true};
    text_.append(piece);
    size_t first = std::string::npos;
    for (const auto &stop : stops_)
      if (!stop.empty())
        first = std::min(first, text_.find(stop));
    if (first != std::string::npos) {
      stopped_ = true;
      EXPECT_GE(first, released_) << "a stop string was released before it completed";
      return {text_.substr(released_, first - released_), true};
    }
    const size_t end = text_.size() - undecided();
    EXPECT_GE(end, released_);
    StopStringFilter::Result result{text_.substr(released_, end - released_), false};
    released_ = end;
    return result;
  }

  std::string finish() { return stopped_ ? std::string() : text_.substr(released_); }

private:
  size_t undecided() const {
    size_t longest = 0;
    for (const auto &stop : stops_)
      for (size_t k = 1; k < stop.size() && k <= text_.size(); ++k)
        if (text_.compare(text_.size() - k, k, stop, 0, k) == 0)
          longest = std::max(longest, k);
    return longest;
  }

  std::vector<std::string> stops_;
  std::string text_;
  size_t released_ = 0;
  bool stopped_ = false;
};

// Pushes `pieces` and returns everything released, and whether it stopped.
std::pair<std::string, bool> run(StopStringFilter &filter, const std::vector<std::string> &pieces) {
  std::string out;
  for (const auto &piece : pieces) {
    auto result = filter.push(piece);
    out += result.released;
    if (result.stopped)
      return {out, true};
  }
  return {out + filter.finish(), false};
}

TEST(StopStringFilter, WithoutStopsReleasesEverythingAtOnce) {
  StopStringFilter filter({});
  EXPECT_EQ(filter.push("hello").released, "hello");
  EXPECT_EQ(filter.push("").released, "");
  EXPECT_EQ(filter.finish(), "");
}

TEST(StopStringFilter, HoldsBackAPossibleStartUntilDecided) {
  StopStringFilter filter({"hello"});
  EXPECT_EQ(filter.push("say hel").released, "say ");
  EXPECT_EQ(filter.push("p").released, "help");
  EXPECT_EQ(filter.push(" hell").released, " ");
  EXPECT_EQ(filter.finish(), "hell");
}

TEST(StopStringFilter, StopStringAndWhatFollowsAreNeverReleased) {
  StopStringFilter filter({"END"});
  EXPECT_EQ(filter.push("abcE").released, "abc");
  const auto result = filter.push("NDxyz");
  EXPECT_EQ(result.released, "");
  EXPECT_TRUE(result.stopped);
  EXPECT_TRUE(filter.push("more").stopped);
  EXPECT_EQ(filter.push("more").released, "");
  EXPECT_EQ(filter.finish(), "");
}

TEST(StopStringFilter, NamesTheStopStringThatCutTheText) {
  // Anthropic's stop_sequence: which of the strings ended the reply, here
  // the one that starts first although another completes in the same piece.
  StopStringFilter filter({"cde", "bcdefg", "xyz"});
  EXPECT_EQ(filter.push("ab").released, "a");
  EXPECT_EQ(filter.matched(), "");
  const auto result = filter.push("cdefgh");
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(result.released, ""); // "a" went out with the first piece
  EXPECT_EQ(filter.matched(), "bcdefg");
  StopStringFilter split({"END"});
  EXPECT_FALSE(split.push("xE").stopped);
  EXPECT_TRUE(split.push("ND").stopped);
  EXPECT_EQ(split.matched(), "END");
}

TEST(StopStringFilter, SelfOverlappingStop) {
  // "aaab": the held "aa" must stay a candidate when a third 'a' arrives.
  StopStringFilter filter({"aab"});
  EXPECT_EQ(run(filter, {"a", "a", "a", "b", "c"}), std::make_pair(std::string("a"), true));
}

TEST(StopStringFilter, OfStopsCompletingInOnePieceTheFirstToStartWins) {
  {
    StopStringFilter filter({"bcd", "abcde"});
    EXPECT_EQ(run(filter, {"xabcdef"}), std::make_pair(std::string("x"), true));
  }
  {
    StopStringFilter filter({"abcd", "c"});
    EXPECT_EQ(run(filter, {"zabcd"}), std::make_pair(std::string("z"), true));
  }
  {
    // Piece by piece, "c" completes first: the earlier start of "abcd" is
    // never seen.
    StopStringFilter filter({"abcd", "c"});
    EXPECT_EQ(run(filter, {"z", "a", "b", "c", "d"}), std::make_pair(std::string("zab"), true));
  }
}

TEST(StopStringFilter, LongStopStrings) {
  const std::string stop = std::string(1000, 'a') + "b";
  std::string text = std::string(1500, 'a') + "c" + std::string(1000, 'a') + "b" + "tail";
  std::vector<std::string> pieces;
  for (size_t i = 0; i < text.size(); i += 7)
    pieces.push_back(text.substr(i, 7));
  StopStringFilter filter({stop});
  EXPECT_EQ(run(filter, pieces), std::make_pair(std::string(1500, 'a') + "c", true));
}

TEST(StopStringFilter, MatchesTheNaiveFilterOnRandomPushes) {
  std::mt19937 rng(31337);
  const auto random_string = [&](size_t min, size_t max) {
    std::string s(min + rng() % (max - min + 1), 'a');
    for (char &c : s)
      c = static_cast<char>('a' + rng() % 3);
    return s;
  };
  for (int round = 0; round < 20000; ++round) {
    std::vector<std::string> stops;
    const size_t n_stops = rng() % 5;
    for (size_t i = 0; i < n_stops; ++i)
      stops.push_back(random_string(i == 0 ? 0 : 1, 6)); // sometimes an empty one
    StopStringFilter filter(stops);
    NaiveFilter naive(stops);
    const size_t n_pushes = rng() % 12;
    for (size_t i = 0; i < n_pushes; ++i) {
      const std::string piece = random_string(0, 5);
      const auto got = filter.push(piece);
      const auto want = naive.push(piece);
      ASSERT_EQ(got.released, want.released) << "round " << round << " push " << i;
      ASSERT_EQ(got.stopped, want.stopped) << "round " << round << " push " << i;
    }
    ASSERT_EQ(filter.finish(), naive.finish()) << "round " << round;
  }
}

} // namespace
