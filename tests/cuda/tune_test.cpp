// The decode tuner's parts that need no device (plugins/cuda/src/common):
// its options, the names of its choices, the candidate list, the check of a
// candidate's outputs, the verdict, and the cache file. The tuner on the
// fake driver, with scripted times: tune_fake_driver_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "cuda_test_support.hpp"
#include "decode_choice.hpp"
#include "options.hpp"
#include "plugin_error.hpp"
#include "tune_cache.hpp"
#include "tune_candidates.hpp"
#include "tune_check.hpp"
#include "tune_choice.hpp"

namespace {

using namespace bonsai::cuda;
using ::testing::HasSubstr;

TEST(CudaTuneOptions, TuneIsOnWithABudgetOfThreeSecondsUnlessSaidOtherwise) {
  const ContextOptions defaults = parse_options("");
  EXPECT_EQ(defaults.tuning.tune, TuneMode::on);
  EXPECT_EQ(defaults.tuning.tune_budget_ms, 3000);
  EXPECT_EQ(parse_options("tune=off").tuning.tune, TuneMode::off);
  EXPECT_EQ(parse_options("tune=fresh").tuning.tune, TuneMode::fresh);
  EXPECT_EQ(parse_options("tune_budget_ms=250").tuning.tune_budget_ms, 250);
  EXPECT_TRUE(parse_options("tune=fresh;tune_budget_ms=1").warnings.empty());
  EXPECT_FALSE(defaults.tuning.balanced_shares);
  EXPECT_TRUE(parse_options("persistent_shares=balanced").tuning.balanced_shares);
  EXPECT_FALSE(parse_options("persistent_shares=tiles").tuning.balanced_shares);
  EXPECT_EQ(defaults.tuning.stream_slots, 1);
  EXPECT_EQ(parse_options("persistent_stream=3").tuning.stream_slots, 3);
  EXPECT_EQ(parse_options("persistent_stream=off").tuning.stream_slots, 1);
  EXPECT_FALSE(defaults.tuning.fused_qkv_attention);
  EXPECT_TRUE(parse_options("persistent_qkv=fused").tuning.fused_qkv_attention);
  for (const char *bad : {"tune=yes", "tune_budget_ms=0", "tune_budget_ms=-5", "tune_budget_ms=1.5",
                          "tune_budget_ms=600001", "persistent_shares=even", "persistent_stream=5",
                          "persistent_stream=1", "persistent_qkv=together"}) {
    try {
      parse_options(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const PluginError &e) {
      EXPECT_EQ(e.status(), BONSAI_ERR_INVALID_ARGUMENT) << bad;
    }
  }
}

DecodeChoice persistent(bool head, bool prefetch, bool balanced = false, int stream = 1) {
  DecodeChoice c;
  c.persistent = true;
  c.variant = {head, prefetch, balanced, stream};
  return c;
}

TEST(CudaTuneChoice, EveryChoiceIsNamedByTheOptionsThatSelectItAndBack) {
  EXPECT_EQ(choice_options(DecodeChoice{}), "decode=graph");
  EXPECT_EQ(choice_options(persistent(true, false)), "decode=persistent");
  EXPECT_EQ(choice_options(persistent(false, false)), "decode=persistent;persistent_head=off");
  EXPECT_EQ(choice_options(persistent(true, true)), "decode=persistent;persistent_prefetch=next");
  EXPECT_EQ(choice_options(persistent(false, true, true)),
            "decode=persistent;persistent_head=off;persistent_prefetch=next;persistent_shares="
            "balanced");
  EXPECT_EQ(choice_options(persistent(true, false, false, 3)),
            "decode=persistent;persistent_stream=3");
  DecodeChoice fused = persistent(true, false);
  fused.variant.fused = true;
  EXPECT_EQ(choice_options(fused), "decode=persistent;persistent_qkv=fused");
  EXPECT_EQ(choice_from_options("decode=persistent;persistent_qkv=fused"), fused);
  for (const DecodeChoice &c : {DecodeChoice{}, persistent(true, false), persistent(false, true),
                                persistent(true, false, true), persistent(true, true, true, 4)})
    EXPECT_EQ(choice_from_options(choice_options(c)), c) << choice_options(c);
  // Not a name this build writes: another order, another option, a typo,
  // decode=auto, a bad value.
  for (const char *text :
       {"persistent_prefetch=next;decode=persistent", "decode=persistent;kv=f16",
        "decode=persistant", "decode=auto", "decode=persistent;persistent_head=maybe", "",
        "decode=persistent;persistent_head=on"})
    EXPECT_EQ(choice_from_options(text), std::nullopt) << text;
}

std::vector<std::string> names(const std::vector<DecodeCandidate> &candidates) {
  std::vector<std::string> out;
  for (const DecodeCandidate &c : candidates)
    out.push_back(c.name);
  return out;
}

TEST(CudaTuneCandidates, TheFixedChoiceComesFirstAndEachCandidateOnce) {
  EXPECT_THAT(names(decode_candidates({true, true}, persistent(true, false))),
              ::testing::ElementsAre("decode=persistent", "decode=graph",
                                     "decode=persistent;persistent_head=off",
                                     "decode=persistent;persistent_prefetch=next",
                                     "decode=persistent;persistent_shares=balanced"));
  // Before sm_90 the fixed choice is the graph path.
  EXPECT_THAT(names(decode_candidates({true, true}, DecodeChoice{})),
              ::testing::ElementsAre("decode=graph", "decode=persistent",
                                     "decode=persistent;persistent_head=off",
                                     "decode=persistent;persistent_prefetch=next",
                                     "decode=persistent;persistent_shares=balanced"));
  // A head that cannot be in the launch: every persistent candidate runs it
  // after the launch, and says so.
  EXPECT_THAT(
      names(decode_candidates({true, false}, persistent(true, false))),
      ::testing::ElementsAre("decode=persistent;persistent_head=off", "decode=graph",
                             "decode=persistent;persistent_head=off;persistent_prefetch=next",
                             "decode=persistent;persistent_head=off;persistent_shares=balanced"));
  // Weights streamed two instructions ahead where three slots fit the step.
  EXPECT_THAT(names(decode_candidates({true, true, true}, persistent(true, false))),
              ::testing::Contains("decode=persistent;persistent_stream=3"));
  EXPECT_EQ(decode_candidates({true, true, true}, persistent(true, false)).size(), 6u);
  // Q/K/V fused with attention where the step's shares all have a block.
  EXPECT_THAT(names(decode_candidates({true, true, true, true}, persistent(true, false))),
              ::testing::Contains("decode=persistent;persistent_qkv=fused"));
  EXPECT_EQ(decode_candidates({true, true, true, true}, persistent(true, false)).size(), 7u);
  // Without the persistent kernel only the graph path is left.
  EXPECT_THAT(names(decode_candidates({false, false}, persistent(true, true))),
              ::testing::ElementsAre("decode=graph"));
}

StepOutputs outputs(std::vector<float> logits, std::vector<int32_t> argmax) {
  StepOutputs out;
  out.n_tokens = static_cast<int>(argmax.size());
  out.n_vocab = static_cast<int>(logits.size() / argmax.size());
  out.logits = std::move(logits);
  out.argmax = std::move(argmax);
  return out;
}

TEST(CudaTuneCheck, APathPassesWhenItsLogitsAndIdsAgreeWithTheReferences) {
  const StepOutputs reference = outputs({1, 5, 2, 0, -1, 3, 9, 4}, {1, 2});
  EXPECT_EQ(check_step_outputs(reference, reference), "");
  // Small differences, the same ids.
  EXPECT_EQ(check_step_outputs(reference, outputs({1.01f, 5, 2, 0, -1, 3.02f, 9, 4}, {1, 2})), "");
  // A near tie may flip: the reference's second best is within 1 % of its
  // range of its best.
  const StepOutputs tie = outputs({0, 5, 4.99f, -5}, {1});
  EXPECT_EQ(check_step_outputs(tie, outputs({0, 4.99f, 5, -5}, {2})), "");
}

TEST(CudaTuneCheck, ABrokenPathFailsNamingTheTokenAndWhy) {
  const StepOutputs reference = outputs({1, 5, 2, 0, -1, 3, 9, 4}, {1, 2});
  // Unrelated logits (what a lost handoff gives).
  EXPECT_THAT(check_step_outputs(reference, outputs({1, 5, 2, 0, 9, 3, -1, 4}, {1, 0})),
              HasSubstr("token 1: cosine"));
  // Its argmax ids disagree with its own logits (a broken argmax stage).
  EXPECT_THAT(check_step_outputs(reference, outputs({1, 5, 2, 0, -1, 3, 9, 4}, {1, 3})),
              HasSubstr("token 1: its argmax says 3, its logits 2"));
  // Not finite.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(check_step_outputs(reference, outputs({1, nan, 2, 0, -1, 3, 9, 4}, {1, 2})),
              HasSubstr("token 0: logit 1 is not finite"));
  // Close in cosine, but another token wins by more than a near tie.
  std::vector<float> wide(10000, 0.0f), flipped(10000, 0.0f);
  for (size_t i = 0; i < wide.size(); ++i)
    wide[i] = flipped[i] = static_cast<float>(i % 97);
  wide[500] = 100, flipped[500] = 95, flipped[501] = 100;
  EXPECT_THAT(check_step_outputs(outputs(wide, {500}), outputs(flipped, {501})),
              HasSubstr("not a near tie"));
  // Another shape.
  EXPECT_THAT(check_step_outputs(reference, outputs({1, 5, 2, 0}, {1})), HasSubstr("shape"));
}

TEST(CudaTuneChoice, TheFastestCandidateThatPassedWins) {
  std::vector<CandidateTime> table{{"a", 80, true, ""},
                                   {"b", 40, false, "token 0: cosine 0.1"},
                                   {"c", 60, true, ""},
                                   {"d", 60, true, ""},
                                   {"e", -1, false, "its launch stalled"}};
  EXPECT_EQ(fastest_passed(table), 2); // not b, which failed; c before its equal d
  table[2].passed = false;
  EXPECT_EQ(fastest_passed(table), 3);
  EXPECT_EQ(fastest_passed({{"x", 5, false, "failed"}}), -1);
  EXPECT_EQ(fastest_passed({}), -1);
}

TuneRecord sample_record() {
  TuneRecord r;
  r.key = {"NVIDIA H200, sm_90, 132 SMs", "36 layers, embd 4096, q1_0", "graphs=on", 1};
  r.stamp = {13000, "gnu-0123abcd"};
  r.choice = "decode=persistent;persistent_prefetch=next";
  r.table = {{"decode=persistent", 812.5, true, ""},
             {"decode=graph", 1234.25, true, ""},
             {"decode=persistent;persistent_head=off", -1, false, "token 0: cosine 0.1"},
             {"decode=persistent;persistent_prefetch=next", 700, true, ""}};
  return r;
}

TEST(CudaTuneCache, ARecordSurvivesItsFileAndNamesWhatItWasMeasuredWith) {
  const TuneRecord r = sample_record();
  const std::string text = encode_tune_record(r);
  EXPECT_THAT(text, HasSubstr("\ndriver 13000\nbuild gnu-0123abcd\n"));
  std::string why;
  const std::optional<TuneRecord> back = decode_tune_record(text, &why);
  ASSERT_TRUE(back.has_value()) << why;
  EXPECT_EQ(*back, r);
  // The key's parts all go into the file's name.
  TuneKey other = r.key;
  EXPECT_EQ(other.file_name(), r.key.file_name());
  EXPECT_THAT(r.key.file_name(), ::testing::MatchesRegex("[0-9a-f]{16}\\.tune"));
  for (auto change : {+[](TuneKey &k) { k.device += "x"; }, +[](TuneKey &k) { k.model += "x"; },
                      +[](TuneKey &k) { k.options += "x"; }, +[](TuneKey &k) { k.width = 2; }}) {
    TuneKey changed = r.key;
    change(changed);
    EXPECT_NE(changed.file_name(), r.key.file_name());
  }
}

TEST(CudaTuneCache, ADamagedFileIsNotARecord) {
  const std::string good = encode_tune_record(sample_record());
  std::string why;
  auto damaged = [&](std::string text) {
    why.clear();
    return !decode_tune_record(text, &why).has_value() && !why.empty();
  };
  EXPECT_TRUE(damaged(""));
  EXPECT_TRUE(damaged("garbage\n"));
  EXPECT_TRUE(damaged(good.substr(0, good.size() - 5))); // truncated mid-line
  EXPECT_THAT(why, HasSubstr("whole line"));
  EXPECT_TRUE(damaged(good.substr(0, good.find("candidate")))); // no table: the choice is no row
  std::string bad_width = good;
  bad_width.replace(bad_width.find("width 1"), 7, "width x");
  EXPECT_TRUE(damaged(bad_width));
  std::string bad_row = good;
  bad_row.replace(bad_row.find("\t812.500\t"), 9, "\tfast\t");
  EXPECT_TRUE(damaged(bad_row));
  EXPECT_THAT(why, HasSubstr("candidate's row"));
  // A choice that failed its check, or was never timed, is no choice.
  TuneRecord failed = sample_record();
  failed.choice = "decode=persistent;persistent_head=off";
  EXPECT_TRUE(damaged(encode_tune_record(failed)));
  EXPECT_THAT(why, HasSubstr("not a timed candidate that passed"));
}

TEST(CudaTuneCache, LoadSaysHitMissStaleOrCorruptAndStoreLeavesOneWholeFile) {
  const cuda_test::TempDir dir;
  const TuneCache cache(dir.path() / "cuda-tune");
  const TuneRecord r = sample_record();
  EXPECT_EQ(cache.load(r.key, r.stamp).lookup, TuneLookup::miss);
  ASSERT_EQ(cache.store(r), "");
  const TuneFound hit = cache.load(r.key, r.stamp);
  EXPECT_EQ(hit.lookup, TuneLookup::hit);
  EXPECT_EQ(hit.record, r);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(cache.dir()), {}), 1)
      << "a temporary file was left";
  // Another driver or build measured it: stale, saying which.
  const TuneFound driver = cache.load(r.key, {12080, r.stamp.build});
  EXPECT_EQ(driver.lookup, TuneLookup::stale);
  EXPECT_THAT(driver.why, HasSubstr("driver 13000 measured it, this is 12080"));
  const TuneFound build = cache.load(r.key, {r.stamp.driver_version, "gnu-ffff"});
  EXPECT_EQ(build.lookup, TuneLookup::stale);
  EXPECT_THAT(build.why, HasSubstr("plugin build gnu-0123abcd measured it, this is gnu-ffff"));
  // A file holding another key (as a hash collision would).
  TuneRecord other = r;
  other.key.model = "another model";
  std::ofstream(cache.entry_path(r.key)) << encode_tune_record(other);
  EXPECT_EQ(cache.load(r.key, r.stamp).lookup, TuneLookup::stale);
  std::ofstream(cache.entry_path(r.key)) << "bonsai cuda tune 1\nhalf a file";
  const TuneFound corrupt = cache.load(r.key, r.stamp);
  EXPECT_EQ(corrupt.lookup, TuneLookup::corrupt);
  EXPECT_FALSE(corrupt.why.empty());
  ASSERT_EQ(cache.store(r), ""); // rewritten whole
  EXPECT_EQ(cache.load(r.key, r.stamp).lookup, TuneLookup::hit);
  // Beside the PTX cache's folder.
  EXPECT_EQ(tune_cache_dir("/x/bonsai/cuda-ptx"), std::filesystem::path("/x/bonsai/cuda-tune"));
}

TEST(CudaTuneChoice, TheTableMarksTheChoiceAndSaysWhyACandidateFailed) {
  const std::vector<std::string> lines = tune_table_lines(sample_record(), "measured in 40 ms");
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_THAT(lines[0], HasSubstr("steps of 1 token on NVIDIA H200, sm_90, 132 SMs (measured in "
                                  "40 ms): decode=persistent;persistent_prefetch=next"));
  EXPECT_THAT(lines[2], ::testing::MatchesRegex("decode tune:   decode=persistent +812.5  passed"));
  EXPECT_THAT(lines[4], HasSubstr("-  failed: token 0: cosine 0.1"));
  EXPECT_THAT(lines[5],
              ::testing::MatchesRegex(
                  "decode tune: \\* decode=persistent;persistent_prefetch=next +700.0  passed"));
}

} // namespace
