// `bonsai bench`: the JSON report has one row per test with the token counts
// asked for and plausible timings; --membw's bytes per token against hand
// counts; progress on stderr, the report alone on stdout; bad values are
// usage errors.
#include <algorithm>

#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

TEST(Bench, JsonReportHasOneRowPerTest) {
  const ProcessResult r = run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "16", "-n",
                                      "4", "-r", "3", "-o", "json", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const mini_json::Value rows = mini_json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["test"].as_string(), "pp16");
  EXPECT_EQ(rows[1]["test"].as_string(), "tg4");
  EXPECT_EQ(rows[0]["n_tokens"].as_int(), 16);
  EXPECT_EQ(rows[1]["n_tokens"].as_int(), 4);
  EXPECT_EQ(rows[0]["backend"].as_string(), "cpu");
  EXPECT_EQ(rows[0]["threads"].as_int(), 1);
  EXPECT_EQ(rows[0]["model"].as_string(), "tiny-q1.gguf");
  // Tensor bytes, like llama-bench's size (not the file, which adds metadata):
  // per layer Q1_0 q 512x512, k and v 256x512, o 512x512, gate and up
  // 1536x512, down 512x1536 = 3,145,728 weights at 18 bytes per 128, plus
  // 1,280 f32 norm values; token_embd and output 2048x512 Q1_0 each, and
  // the 512-value output norm: 4 * (442,368 + 5,120) + 2 * 147,456 + 2,048.
  EXPECT_EQ(rows[0]["size_bytes"].as_int(), 2086912);
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i]["samples_s"].size(), 3u) << "three measured repetitions";
    double sum_tps = 0;
    for (size_t k = 0; k < 3; ++k) {
      const double s = rows[i]["samples_s"][k].as_number();
      EXPECT_GT(s, 0.0);
      sum_tps += rows[i]["n_tokens"].as_number() / s;
    }
    // The mean is the mean of the per-repetition rates.
    EXPECT_NEAR(rows[i]["avg_ts"].as_number(), sum_tps / 3, 1e-3 * sum_tps);
  }
}

// With a draft, each tg row of one sequence is followed by "gen" and
// "gen+draft" rows of the same token count, and stderr counts the proposals;
// a draft flag without a draft model is a usage error.
TEST(Bench, ADraftAddsGenerationRowsWithoutAndWithIt) {
  const ProcessResult r = run_bonsai({"bench",
                                      "-m",
                                      data_file("tiny-q1.gguf"),
                                      "-p",
                                      "0",
                                      "-n",
                                      "8",
                                      "-r",
                                      "2",
                                      "-o",
                                      "json",
                                      "-t",
                                      "1",
                                      "-md",
                                      data_file("tiny-q1.gguf"),
                                      "--draft-p-min",
                                      "0",
                                      "--draft-fixed",
                                      "--draft-max",
                                      "3",
                                      "--backend-options",
                                      "kernels=reference",
                                      "--backend-draft",
                                      "cpu",
                                      "--backend-options-draft",
                                      "kernels=reference"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const mini_json::Value rows = mini_json::parse(r.out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["test"].as_string(), "tg8");
  EXPECT_EQ(rows[1]["test"].as_string(), "tg8 gen");
  EXPECT_EQ(rows[2]["test"].as_string(), "tg8 gen+draft");
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(rows[i]["n_tokens"].as_int(), 8);
  // The model drafting for itself on the exact kernels, 3 proposals a step:
  // every one is kept.
  const size_t at = r.err.find("tg8 gen+draft: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  int verified = -1, kept = -1;
  ASSERT_EQ(std::sscanf(r.err.c_str() + at, "tg8 gen+draft: %d proposals verified, %d kept",
                        &verified, &kept),
            2)
      << r.err;
  EXPECT_GT(verified, 0);
  EXPECT_EQ(kept, verified);

  const ProcessResult bad =
      run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-n", "4", "--backend-draft", "cpu"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("need a draft model"), std::string::npos) << bad.err;
}

TEST(Bench, MarkdownTableHasTheLlamaBenchColumns) {
  const ProcessResult r =
      run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n", "0", "-r", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0], "| model | size | params | backend | threads | test | t/s | median t/s |");
  EXPECT_NE(lines[2].find("| pp8 |"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("| 1.99 MiB |"), std::string::npos) << lines[2]; // 2,086,912 tensor bytes
}

TEST(Bench, DepthRunsEachTestAfterThatManyCachedTokens) {
  const ProcessResult r = run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n",
                                      "4", "-d", "40", "-r", "1", "-o", "json", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const mini_json::Value rows = mini_json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u);
  // llama-bench's spelling of a test at depth: "pp8 @ d40".
  EXPECT_EQ(rows[0]["test"].as_string(), "pp8 @ d40");
  EXPECT_EQ(rows[1]["test"].as_string(), "tg4 @ d40");
  EXPECT_EQ(rows[1]["n_tokens"].as_int(), 4); // the depth tokens are not timed
}

TEST(Bench, CommaListsRunEveryCombinationThreadsOutermost) {
  const ProcessResult r = run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8,16", "-n",
                                      "2", "-d", "0,4", "-t", "1,2", "-r", "1", "-o", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  // 2 thread counts x 2 depths x (2 pp + 1 tg) tests, one JSON object a line.
  ASSERT_EQ(lines.size(), 12u) << r.out;
  const char *tests[] = {"pp8", "pp16", "tg2", "pp8 @ d4", "pp16 @ d4", "tg2 @ d4"};
  for (size_t i = 0; i < lines.size(); ++i) {
    const mini_json::Value row = mini_json::parse(lines[i]);
    EXPECT_EQ(row["threads"].as_int(), i < 6 ? 1 : 2) << lines[i];
    EXPECT_EQ(row["test"].as_string(), tests[i % 6]) << lines[i];
  }
}

TEST(Bench, ParallelRunsEachTestOnThatManySessionsAtOnce) {
  const ProcessResult r = run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n",
                                      "4", "-np", "1,3", "-t", "1", "-r", "1", "-o", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  const char *tests[] = {"pp8", "tg4", "pp8 x3", "tg4 x3"};
  const int tokens[] = {8, 4, 24, 12}; // three sequences: three times the tokens
  for (size_t i = 0; i < 4; ++i) {
    const mini_json::Value row = mini_json::parse(lines[i]);
    EXPECT_EQ(row["test"].as_string(), tests[i]);
    EXPECT_EQ(row["n_tokens"].as_int(), tokens[i]);
  }
}

// More sequences than generated tokens: each decode step carries 8 tokens,
// more than the 4 positions the tests need, which once made the context
// (and with it the batch) too small to run.
TEST(Bench, MoreSequencesThanGeneratedTokensStillRun) {
  const ProcessResult r = run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "0", "-n",
                                      "4", "-np", "8", "-t", "1", "-r", "1", "-o", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const mini_json::Value row = mini_json::parse(lines[0]);
  EXPECT_EQ(row["test"].as_string(), "tg4 x8");
  EXPECT_EQ(row["n_tokens"].as_int(), 32);
}

// More sequences than the CPU plugin's 256 slots: the batch opens sessions
// of their own for the rest, uploading the weights again through the
// progress callback it kept, which once pointed at a bar gone out of scope.
TEST(Bench, MoreSequencesThanThePluginsSlotsStillRun) {
  const ProcessResult r = run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n",
                                      "0", "-np", "257", "-t", "1", "-r", "1", "-o", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("256 KV slots"), std::string::npos) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const mini_json::Value row = mini_json::parse(lines[0]);
  EXPECT_EQ(row["test"].as_string(), "pp8 x257");
  EXPECT_EQ(row["n_tokens"].as_int(), 8 * 257);
}

TEST(Bench, MembwStatesEachTgRowAsAShareOfTheBandwidthLimit) {
  const ProcessResult r =
      run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n", "4", "-d", "40", "-np",
                  "1,3", "-t", "1", "-r", "1", "--membw", "-o", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  // Per token a decode step reads every tensor but token_embd (2,086,912 -
  // 147,456 bytes) and one embedding row (147,456 / 2048 = 72), shared by
  // the step's sequences, plus each sequence's keys and values: 4 layers x
  // 2 x 256 values x 4 bytes = 8,192 per position, at the mean position of
  // the test, 40 + (4 + 1) / 2 = 42.5.
  const double weights = 2086912 - 147456 + 72, kv = 8192 * 42.5;
  const double expected[] = {0, weights + kv, 0, weights / 3 + kv}; // pp rows: compute-bound
  for (size_t i = 0; i < 4; ++i) {
    const mini_json::Value row = mini_json::parse(lines[i]);
    const double bandwidth = row["read_bytes_per_s"].as_number();
    EXPECT_GT(bandwidth, 1e8) << lines[i]; // any machine reads faster than 100 MB/s
    EXPECT_NEAR(row["bytes_per_token"].as_number(), expected[i], 1.0) << lines[i];
    if (expected[i] == 0) {
      EXPECT_EQ(row["limit_ts"].as_number(), 0.0);
      continue;
    }
    const double limit = bandwidth / expected[i];
    EXPECT_NEAR(row["limit_ts"].as_number(), limit, 1e-3 * limit) << lines[i];
    EXPECT_NEAR(row["share_of_limit"].as_number(), row["median_ts"].as_number() / limit, 1e-3)
        << lines[i];
  }
}

// --bandwidth states the rows against a given bandwidth (a GPU's, which
// bench cannot measure) with the same bytes per token as --membw.
TEST(Bench, AGivenBandwidthStatesEachTgRowAsAShareOfItsLimit) {
  const ProcessResult r =
      run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n", "4", "-d", "40", "-t",
                  "1", "-r", "1", "--bandwidth", "2.5", "-o", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const mini_json::Value pp = mini_json::parse(lines[0]), tg = mini_json::parse(lines[1]);
  EXPECT_EQ(pp["read_bytes_per_s"].as_number(), 2.5e9);
  EXPECT_EQ(pp["limit_ts"].as_number(), 0.0); // pp rows: compute-bound
  EXPECT_EQ(tg["read_bytes_per_s"].as_number(), 2.5e9);
  // The hand count of MembwStatesEachTgRowAsAShareOfTheBandwidthLimit.
  const double bytes = 2086912 - 147456 + 72 + 8192 * 42.5, limit = 2.5e9 / bytes;
  EXPECT_NEAR(tg["bytes_per_token"].as_number(), bytes, 1.0);
  EXPECT_NEAR(tg["limit_ts"].as_number(), limit, 1e-3 * limit);
  EXPECT_NEAR(tg["share_of_limit"].as_number(), tg["median_ts"].as_number() / limit, 1e-3);
}

TEST(Bench, MembwCountsTheCpuPluginsF16CacheAtTwoBytesAValue) {
  const ProcessResult r = run_bonsai({"bench",
                                      "-m",
                                      data_file("tiny-q1.gguf"),
                                      "-p",
                                      "0",
                                      "-n",
                                      "4",
                                      "-d",
                                      "40",
                                      "-t",
                                      "1",
                                      "-r",
                                      "1",
                                      "--membw",
                                      "--backend",
                                      "cpu",
                                      "--backend-options",
                                      "kv=f16",
                                      "-o",
                                      "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const mini_json::Value row = mini_json::parse(lines_of(r.out).at(0));
  EXPECT_NEAR(row["bytes_per_token"].as_number(), 2086912 - 147456 + 72 + 4096 * 42.5, 1.0);
}

TEST(Bench, MembwOrAGivenBandwidthAddsThreeColumnsToTheTable) {
  for (const std::vector<std::string> &flag :
       {std::vector<std::string>{"--membw"}, {"--bandwidth", "4176"}}) {
    std::vector<std::string> args{
        "bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n", "2", "-r", "1", "-t", "1"};
    args.insert(args.end(), flag.begin(), flag.end());
    const ProcessResult r = run_bonsai(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 4u) << r.out;
    EXPECT_EQ(lines[0], "| model | size | params | backend | threads | test | t/s | median t/s | "
                        "read GB/s | limit t/s | % of limit |");
    EXPECT_NE(lines[2].find("| - | - |"), std::string::npos) << lines[2]; // pp: no limit
    EXPECT_NE(lines[3].find(" % |"), std::string::npos) << lines[3];
    if (flag.size() == 2) { // the bandwidth given, not measured
      EXPECT_NE(lines[3].find("| 4176.0 |"), std::string::npos) << lines[3];
    }
  }
}

TEST(Bench, CsvHasAHeaderAndOneRowPerTest) {
  const ProcessResult r = run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n",
                                      "2", "-r", "2", "-o", "csv", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0], "model,size_bytes,n_params,backend,threads,test,n_tokens,avg_ts,stddev_ts,"
                      "median_ts,samples_s");
  EXPECT_EQ(lines[1].rfind("tiny-q1.gguf,2086912,", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(",cpu,1,pp8,8,"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(",cpu,1,tg2,2,"), std::string::npos) << lines[2];
  // Two samples, separated by ';' in the last field.
  EXPECT_EQ(std::count(lines[1].begin(), lines[1].end(), ';'), 1) << lines[1];
}

TEST(Bench, ProgressGoesToStderrAndStdoutIsExactlyTheTable) {
  const std::vector<std::string> args = {
      "bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n", "4", "-r", "1", "-t", "1"};
  const ProcessResult r = run_bonsai(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A line per test as it starts (stderr is a pipe here, not a terminal).
  EXPECT_EQ(lines_of(r.err), (std::vector<std::string>{"bonsai bench: test 1 of 2: pp8, 1 thread",
                                                       "bonsai bench: test 2 of 2: tg4, 1 thread"}))
      << r.err;
  // stdout: the header, its rule and one row per test, nothing else.
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0], "| model | size | params | backend | threads | test | t/s | median t/s |");
  EXPECT_EQ(lines[1], "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |");
  const std::string row = "| tiny-q1.gguf | 1.99 MiB | 14.69 M | cpu | 1 | ";
  EXPECT_EQ(lines[2].rfind(row + "pp8 | ", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind(row + "tg4 | ", 0), 0u) << lines[3];
  for (size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(std::count(lines[i].begin(), lines[i].end(), '|'), 9) << lines[i];
    EXPECT_EQ(lines[i].back(), '|') << lines[i];
  }
  EXPECT_EQ(r.out.back(), '\n');
  // --no-progress: the same stdout shape, and stderr stays empty.
  std::vector<std::string> quiet_args = args;
  quiet_args.push_back("--no-progress");
  const ProcessResult quiet = run_bonsai(quiet_args);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  EXPECT_EQ(lines_of(quiet.out).size(), 4u) << quiet.out;
}

TEST(Bench, OnATerminalTheProgressLineIsErasedBeforeEachRow) {
  PtyChild terminal({bonsai_program(), "bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n",
                     "0", "-r", "1", "-t", "1", "--no-progress"});
  const ProcessResult quiet = terminal.finish(milliseconds(60000));
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("bonsai bench:"), std::string::npos) << quiet.out;
  PtyChild shown({bonsai_program(), "bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n", "0",
                  "-r", "1", "-t", "1"});
  const ProcessResult r = shown.finish(milliseconds(60000));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // No line break after it: carriage return and erase-line, then the table.
  EXPECT_NE(r.out.find("bonsai bench: test 1 of 1: pp8, 1 thread\r\x1b[K| model | size |"),
            std::string::npos)
      << r.out;
}

TEST(Bench, ProgressCountsEveryCombination) {
  // 2 depths x 2 -np x (1 pp + 1 tg; -p 0 skips) = 8 tests, one row each.
  const ProcessResult r =
      run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8,0", "-n", "2", "-d", "0,4",
                  "-np", "1,2", "-t", "1", "-r", "1", "-o", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> rows = lines_of(r.out);
  const std::vector<std::string> progress = lines_of(r.err);
  ASSERT_EQ(rows.size(), 8u) << r.out;
  ASSERT_EQ(progress.size(), 8u) << r.err;
  for (size_t i = 0; i < 8; ++i) {
    const std::string test = mini_json::parse(rows[i])["test"].as_string();
    EXPECT_EQ(progress[i],
              "bonsai bench: test " + std::to_string(i + 1) + " of 8: " + test + ", 1 thread");
  }
}

TEST(Bench, RejectsBadValues) {
  for (const std::vector<std::string> &extra : {std::vector<std::string>{"-r", "0"},
                                                {"-p", "-1"},
                                                {"-p", "0", "-n", "0"},
                                                {"-o", "xml"},
                                                {"-d", "-3"},
                                                {"-p", "8,"},
                                                {"-n", "4,x"},
                                                {"-t", "1,-2"},
                                                {"-np", "0"},
                                                {"--bandwidth", "0"},
                                                {"--bandwidth", "-5"},
                                                {"--bandwidth", "nan"},
                                                {"--bandwidth", "inf"},
                                                {"--bandwidth", "fast"},
                                                {"--bandwidth", "100", "--membw"}}) {
    std::vector<std::string> args{"bench", "-m", data_file("tiny-q1.gguf")};
    args.insert(args.end(), extra.begin(), extra.end());
    const ProcessResult r = run_bonsai(args);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << " " << extra[1];
    EXPECT_TRUE(r.out.empty());
    EXPECT_NE(r.err.find("bonsai: error:"), std::string::npos) << r.err;
  }
}

} // namespace
} // namespace bonsai::test
