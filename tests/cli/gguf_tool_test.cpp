// bonsai-gguf follows the bonsai program's conventions: the GGUF file as the
// first word or as -m FILE, --help on stdout with exit 0, command-line
// mistakes as one error line with exit 2, runtime errors with exit 1.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

const std::string kVocab = data_file("qwen3-vocab.gguf");
const std::string kTiny = data_file("tiny-q1.gguf");

ProcessResult run_gguf_tool(std::vector<std::string> args) {
  args.insert(args.begin(), std::string(BONSAI_BIN_DIR) + "/bonsai-gguf");
  return run_process({std::move(args), {}, milliseconds(60000)});
}

// One "bonsai-gguf CMD: error: ..." line naming `needle`, nothing on stdout.
void expect_error(const ProcessResult &r, int exit_code, const std::string &command,
                  const std::string &needle) {
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, exit_code) << r.err;
  EXPECT_EQ(r.out, "") << "stdout must stay empty on errors";
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << "expected exactly one line on stderr, got:\n" << r.err;
  EXPECT_EQ(lines[0].rfind("bonsai-gguf " + command + ": error: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(needle), std::string::npos)
      << "message should mention '" << needle << "': " << lines[0];
}

TEST(GgufTool, HelpGoesToStdoutWithExitZero) {
  const auto top = run_gguf_tool({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_EQ(top.err, "");
  EXPECT_EQ(top.out.rfind("usage: bonsai-gguf <command>", 0), 0u) << top.out;
  for (const char *command : {"info", "tokenize", "detokenize", "convert", "make-model"}) {
    EXPECT_NE(top.out.find(std::string("  ") + command + " "), std::string::npos) << command;
    const auto r = run_gguf_tool({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_EQ(r.err, "") << command;
    EXPECT_EQ(r.out.rfind(std::string("usage: bonsai-gguf ") + command, 0), 0u) << r.out;
    EXPECT_NE(r.out.find("--help"), std::string::npos) << r.out;
  }
  // The commands that read a GGUF file take it with -m as well.
  for (const char *command : {"info", "tokenize", "detokenize", "convert"})
    EXPECT_NE(run_gguf_tool({command, "-h"}).out.find("-m [ --model ]"), std::string::npos)
        << command;
}

TEST(GgufTool, NoCommandOrAnUnknownOneIsAUsageError) {
  const auto none = run_gguf_tool({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err.rfind("usage: bonsai-gguf <command>", 0), 0u) << none.err;
  const auto unknown = run_gguf_tool({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(unknown.err, "bonsai-gguf: error: unknown command 'frobnicate' (see 'bonsai-gguf "
                         "--help')\n");
}

TEST(GgufTool, ModelFlagWorksWhereverTheFileIsAWord) {
  // Qwen3's tokenizer: "Hello" is 9707, " world" 1879.
  for (const auto &file : std::vector<std::vector<std::string>>{{kVocab}, {"-m", kVocab}}) {
    auto args = std::vector<std::string>{"tokenize"};
    args.insert(args.end(), file.begin(), file.end());
    args.insert(args.end(), {"--text", "Hello world"});
    const auto tokenize = run_gguf_tool(args);
    EXPECT_EQ(tokenize.exit_code, 0) << tokenize.err;
    EXPECT_EQ(tokenize.out, "9707,1879\n");

    args = {"detokenize"};
    args.insert(args.end(), file.begin(), file.end());
    args.push_back("9707,1879");
    const auto detokenize = run_gguf_tool(args);
    EXPECT_EQ(detokenize.exit_code, 0) << detokenize.err;
    EXPECT_EQ(detokenize.out, "Hello world\n");
  }
  const auto info_word = run_gguf_tool({"info", kTiny});
  const auto info_flag = run_gguf_tool({"info", "--model", kTiny});
  EXPECT_EQ(info_flag.exit_code, 0) << info_flag.err;
  EXPECT_EQ(info_flag.out.rfind("file:      " + kTiny + "\n", 0), 0u) << info_flag.out;
  EXPECT_EQ(info_flag.out, info_word.out);

  TempDir dir;
  const std::string out = dir.file("g64.gguf");
  const auto convert =
      run_gguf_tool({"convert", "-m", data_file("tiny-q2.gguf"), "-o", out, "--type", "q2_0_g64"});
  EXPECT_EQ(convert.exit_code, 0) << convert.err;
  EXPECT_NE(convert.out.find("30 matrices converted"), std::string::npos) << convert.out;
  EXPECT_TRUE(std::filesystem::exists(out));
}

TEST(GgufTool, TextAsASecondWordPointsToTextFlag) {
  expect_error(run_gguf_tool({"tokenize", kVocab, "Hello world"}), 2, "tokenize",
               "unexpected argument 'Hello world': use --text");
  expect_error(run_gguf_tool({"tokenize", "-m", kVocab, "Hello", "world"}), 2, "tokenize",
               "unexpected arguments 'Hello', 'world': use --text");
}

TEST(GgufTool, CommandLineMistakesExitTwo) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"info", kTiny, "--bogus"}, "unrecognised option '--bogus'"},
      {{"info"}, "no GGUF file given: pass FILE or -m FILE"},
      {{"info", "-m", kTiny, kTiny}, "the GGUF file is already given with -m"},
      {{"info", kTiny, "--items", "many"}, "--items"},
      {{"info", kTiny, "--items", "-1"}, "--items must be >= 0, got -1"},
      {{"info", kTiny, "--chars", "-5"}, "--chars must be >= 0, got -5"},
      {{"tokenize", kVocab, "--tex", "hi"}, "unrecognised option '--tex'"}, // no abbreviations
      {{"tokenize", kVocab}, "give exactly one of --text TEXT or --text-file F"},
      {{"detokenize", kVocab}, "no token ids given"},
      {{"detokenize", kVocab, "9707,x"}, "IDS: 'x' is not a token id"},
      {{"detokenize", kVocab, "9707,", "1879"}, "unexpected argument '1879'"},
      {{"convert", kTiny, "-o"}, "the required argument for option '--output' is missing"},
      {{"convert", kTiny, "--type", "q2_0"}, "no output file given: pass -o OUT.gguf"},
      {{"convert", kTiny, "-o", kTiny, "--type", "q8_0"}, "--type must be q1_0, q2_0"},
      {{"convert", kTiny, "-o", kTiny, "--type", "q2_0"}, "the output must be another file"},
      {{"make-model", "-o", "x.gguf"}, "--vocab VOCAB.gguf is required"},
      {{"make-model", "--vocab", kVocab, "-o", "x.gguf", "--preset", "tiny", "--hidden", "100"},
       "--hidden 100 must be a multiple of 128"},
      {{"make-model", "extra"}, "unexpected argument 'extra'"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.args[0] + " " + c.args.back());
    expect_error(run_gguf_tool(c.args), 2, c.args[0], c.needle);
  }
}

TEST(GgufTool, RuntimeErrorsExitOne) {
  TempDir dir;
  const std::string text = dir.file("notes.txt");
  std::ofstream(text) << "not a GGUF file\n";
  expect_error(run_gguf_tool({"info", dir.file("missing.gguf")}), 1, "info", "missing.gguf");
  expect_error(run_gguf_tool({"info", "-m", text}), 1, "info", "not a GGUF file");
  expect_error(run_gguf_tool({"tokenize", kVocab, "--text-file", dir.file("missing.txt")}), 1,
               "tokenize", "cannot open the file given to --text-file");
  expect_error(run_gguf_tool({"tokenize", kVocab, "--text-file", dir.path().string()}), 1,
               "tokenize", "is a directory, not the file --text-file takes");
  // The output is renamed into place: a FIFO there would become a regular
  // file, so it is refused and stays a FIFO.
  const std::string fifo = dir.file("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error(run_gguf_tool({"convert", kTiny, "-o", fifo, "--type", "q2_0"}), 1, "convert",
               "exists and is not a regular file; not replacing it");
  struct stat after {};
  ASSERT_EQ(::stat(fifo.c_str(), &after), 0);
  EXPECT_TRUE(S_ISFIFO(after.st_mode));
  // tiny-q1 has 2048 tokens: the id is well formed, the file refuses it (as
  // bonsai treats a token id outside the vocabulary).
  expect_error(run_gguf_tool({"detokenize", kTiny, "9707"}), 1, "detokenize", "out of range");
}

// make-model --perturb-of: a copy whose matrices have a fraction of their
// blocks replaced; metadata, norms and shapes untouched.
TEST(GgufTool, PerturbedCopyReplacesTheAskedFractionOfBlocks) {
  TempDir dir;
  const auto count_differing_blocks = [](const std::string &a, const std::string &b) {
    const gguf::File fa = gguf::File::open(a), fb = gguf::File::open(b);
    EXPECT_EQ(fa.tensors().size(), fb.tensors().size());
    size_t differ = 0, total = 0;
    for (size_t i = 0; i < fa.tensors().size(); ++i) {
      const auto &ta = fa.tensors()[i], &tb = fb.tensors()[i];
      EXPECT_EQ(ta.name, tb.name);
      EXPECT_EQ(ta.dims, tb.dims);
      EXPECT_EQ(ta.type(), tb.type());
      const size_t block = traits_of(ta.type()).block_bytes;
      if (traits_of(ta.type()).block_elements == 1) {
        EXPECT_EQ(std::memcmp(ta.data, tb.data, ta.nbytes), 0) << ta.name << " is not a matrix";
        continue;
      }
      for (size_t off = 0; off < ta.nbytes; off += block, ++total)
        differ += std::memcmp(ta.data + off, tb.data + off, block) != 0;
    }
    return std::pair{differ, total};
  };
  const std::string same = dir.file("same.gguf"), half = dir.file("half.gguf");
  ASSERT_EQ(
      run_gguf_tool({"make-model", "--perturb-of", kTiny, "--perturb", "0", "-o", same}).exit_code,
      0);
  EXPECT_EQ(count_differing_blocks(kTiny, same).first, 0u);
  const auto r =
      run_gguf_tool({"make-model", "--perturb-of", kTiny, "--perturb", "0.5", "-o", half});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto [differ, total] = count_differing_blocks(kTiny, half);
  // Half the blocks are replaced; a replacement may be the block itself or
  // an equal one, so somewhat fewer differ.
  EXPECT_GT(differ, total * 4 / 10) << differ << " of " << total;
  EXPECT_LT(differ, total * 6 / 10) << differ << " of " << total;
  const auto bad = run_gguf_tool(
      {"make-model", "--perturb-of", kTiny, "--perturb", "1.5", "-o", dir.file("bad.gguf")});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--perturb must be in [0, 1]"), std::string::npos) << bad.err;
  const auto mixed = run_gguf_tool({"make-model", "--perturb-of", kTiny, "--perturb", "0.1",
                                    "--preset", "tiny", "-o", dir.file("mixed.gguf")});
  EXPECT_NE(mixed.err.find("--preset does not apply to --perturb-of"), std::string::npos)
      << mixed.err;
}

// make-model --layer-gain G: the matrices that write into the residual stream
// (attn_output, ffn_down) keep their signs and have every scale times G;
// every other tensor is the same bytes as without it.
TEST(GgufTool, LayerGainScalesOnlyTheResidualWriters) {
  TempDir dir;
  const std::string plain = dir.file("plain.gguf"), quiet = dir.file("quiet.gguf");
  for (const auto &[path, gain] : {std::pair{plain, "1"}, std::pair{quiet, "0.25"}}) {
    const auto r = run_gguf_tool({"make-model", "--vocab", kVocab, "--preset", "tiny",
                                  "--vocab-size", "512", "--layer-gain", gain, "-o", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const gguf::File a = gguf::File::open(plain), b = gguf::File::open(quiet);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  size_t scaled = 0;
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const auto &ta = a.tensors()[i], &tb = b.tensors()[i];
    ASSERT_EQ(ta.nbytes, tb.nbytes);
    const bool writer =
        ta.name.ends_with("attn_output.weight") || ta.name.ends_with("ffn_down.weight");
    if (!writer) {
      EXPECT_EQ(std::memcmp(ta.data, tb.data, ta.nbytes), 0) << ta.name;
      continue;
    }
    ++scaled;
    for (size_t off = 0; off < ta.nbytes; off += sizeof(BlockQ1_0)) {
      BlockQ1_0 x, y;
      std::memcpy(&x, ta.data + off, sizeof x);
      std::memcpy(&y, tb.data + off, sizeof y);
      ASSERT_EQ(std::memcmp(x.signs, y.signs, sizeof x.signs), 0) << ta.name;
      // A power of two: the f16 scale is exactly a quarter (no subnormals at this width).
      ASSERT_EQ(fp16_to_f32(y.d), 0.25f * fp16_to_f32(x.d)) << ta.name << " at " << off;
    }
  }
  EXPECT_EQ(scaled, 8u); // 4 layers x (attn_output, ffn_down)
  const auto bad = run_gguf_tool({"make-model", "--vocab", kVocab, "--preset", "tiny",
                                  "--layer-gain", "1001", "-o", dir.file("bad.gguf")});
  expect_error(bad, 2, "make-model", "--layer-gain must be in [0, 1000]");
}

// make-model --mtp: a qwen35 model with an MTP layer after the trunk
// (nextn_predict_layers 1, the layer's tensors under blk.<layers>). An
// agreeing one passes the embedding through: eh_proj is exactly [I | 0]
// (checked value by value), enorm ones, and its residual writers zero.
TEST(GgufTool, MtpAddsAnMtpLayerThatCanAgreeWithTheTrunk) {
  TempDir dir;
  const std::string agree = dir.file("agree.gguf"), random = dir.file("random.gguf");
  for (const auto &[path, kind] : {std::pair{agree, "agree"}, std::pair{random, "random"}}) {
    const auto r = run_gguf_tool({"make-model", "--vocab", kVocab, "--preset", "tiny-q35",
                                  "--vocab-size", "512", "--mtp", kind, "-o", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("MTP layer: blk.4"), std::string::npos) << r.out;
  }
  const gguf::File a = gguf::File::open(agree), r = gguf::File::open(random);
  EXPECT_EQ(a.get_u64("qwen35.block_count"), 5u);
  EXPECT_EQ(a.get_u64("qwen35.nextn_predict_layers"), 1u);
  const gguf::TensorInfo *eh = a.find_tensor("blk.4.nextn.eh_proj.weight");
  ASSERT_NE(eh, nullptr);
  ASSERT_EQ(eh->dims, (std::vector<int64_t>{1024, 512}));
  std::vector<float> row(1024);
  for (int64_t i = 0; i < 512; ++i) {
    dequantize_row(eh->type(), eh->data + i * row_bytes(eh->type(), 1024), row.data(), 1024);
    for (int64_t j = 0; j < 1024; ++j)
      ASSERT_EQ(row[static_cast<size_t>(j)], i == j ? 1.0f : 0.0f) << i << ", " << j;
  }
  const gguf::TensorInfo *enorm = a.find_tensor("blk.4.nextn.enorm.weight");
  ASSERT_NE(enorm, nullptr);
  std::vector<float> ones(512);
  dequantize_row(enorm->type(), enorm->data, ones.data(), 512);
  for (float v : ones)
    ASSERT_EQ(v, 1.0f);
  for (const char *writer : {"blk.4.attn_output.weight", "blk.4.ffn_down.weight"}) {
    const gguf::TensorInfo *t = a.find_tensor(writer);
    ASSERT_NE(t, nullptr) << writer;
    std::vector<float> values(static_cast<size_t>(t->dims[0]));
    dequantize_row(t->type(), t->data, values.data(), t->dims[0]);
    for (float v : values)
      ASSERT_EQ(v, 0.0f) << writer;
  }
  // The random layer's are random weights of --type, like the trunk's.
  EXPECT_EQ(r.find_tensor("blk.4.nextn.eh_proj.weight")->type(), GgmlType::Q1_0);
  EXPECT_EQ(r.find_tensor("blk.3.attn_q.weight")->nbytes,
            r.find_tensor("blk.4.attn_q.weight")->nbytes);

  const auto qwen3 = run_gguf_tool({"make-model", "--vocab", kVocab, "--preset", "tiny", "--mtp",
                                    "agree", "-o", dir.file("bad.gguf")});
  expect_error(qwen3, 2, "make-model", "--mtp adds a qwen35 layer");
  const auto kind = run_gguf_tool({"make-model", "--vocab", kVocab, "--preset", "tiny-q35", "--mtp",
                                   "maybe", "-o", dir.file("bad.gguf")});
  expect_error(kind, 2, "make-model", "--mtp must be 'random' or 'agree'");
}

// make-model --head-of: the wider model's embedding and LM head rows are the
// narrower model's followed by zeros, its output norm the narrower one's then
// ones; with quiet layers in both, the two models choose the same tokens.
TEST(GgufTool, HeadOfMakesAWiderModelChooseTheNarrowerModelsTokens) {
  TempDir dir;
  const std::string draft = dir.file("draft.gguf"), wide = dir.file("wide.gguf"),
                    loud = dir.file("loud.gguf");
  const std::vector<std::string> common = {"make-model", "--vocab",      kVocab, "--preset",
                                           "tiny",       "--vocab-size", "4096"};
  const auto make = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_gguf_tool(args);
  };
  ASSERT_EQ(make({"--untied", "--layer-gain", "0", "-o", draft}).exit_code, 0);
  const auto made = make({"--untied", "--hidden", "1024", "--seed", "9", "--layer-gain", "0",
                          "--head-of", draft, "-o", wide});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("zero-padded to 1024"), std::string::npos) << made.out;
  ASSERT_EQ(make({"--untied", "--hidden", "1024", "--seed", "9", "--head-of", draft, "-o", loud})
                .exit_code,
            0);

  const gguf::File d = gguf::File::open(draft), w = gguf::File::open(wide);
  for (const char *name : {"token_embd.weight", "output.weight"}) {
    const auto *td = d.find_tensor(name), *tw = w.find_tensor(name);
    ASSERT_TRUE(td && tw) << name;
    ASSERT_EQ(tw->dims, (std::vector<int64_t>{1024, 4096})) << name;
    const size_t narrow = 4 * sizeof(BlockQ1_0), row = 8 * sizeof(BlockQ1_0);
    for (size_t r = 0; r < 4096; ++r) {
      ASSERT_EQ(std::memcmp(tw->data + r * row, td->data + r * narrow, narrow), 0) << name;
      for (size_t k = narrow; k < row; ++k)
        ASSERT_EQ(tw->data[r * row + k], 0) << name << " row " << r;
    }
  }
  const auto *nd = d.find_tensor("output_norm.weight"), *nw = w.find_tensor("output_norm.weight");
  ASSERT_TRUE(nd && nw);
  std::vector<float> norm(1024);
  std::memcpy(norm.data(), nw->data, nw->nbytes);
  EXPECT_EQ(std::memcmp(norm.data(), nd->data, nd->nbytes), 0);
  for (size_t i = 512; i < 1024; ++i)
    ASSERT_EQ(norm[i], 1.0f) << i;

  // Zero columns scale RMSNorm's output by a constant, so the argmax of
  // every step is the draft's: the same greedy text. With loud layers, not.
  const auto text = [](const std::string &model) {
    const auto r = run_bonsai({"run", "-m", model, "-p", "Once upon a time", "-n", "12", "--temp",
                               "0", "--ignore-eos", "--no-chat", "-t", "2"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string expected = text(draft);
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(text(wide), expected);
  EXPECT_NE(text(loud), expected);

  expect_error(make({"--hidden", "256", "--heads", "2", "--kv-heads", "1", "--head-of", draft, "-o",
                     dir.file("narrow.gguf")}),
               1, "make-model", "more than the new model's 256");
  const std::string q2_draft = dir.file("q2-draft.gguf");
  ASSERT_EQ(make({"--untied", "--type", "q2_0", "-o", q2_draft}).exit_code, 0);
  expect_error(make({"--hidden", "1024", "--head-of", q2_draft, "-o", dir.file("q1.gguf")}), 1,
               "make-model", "pass --type q2_0");
  expect_error(make({"--hidden", "1024", "--type", "q2_0_g64", "--head-of", draft, "-o",
                     dir.file("g.gguf")}),
               1, "make-model", "works with q1_0 and q2_0");
  expect_error(
      make({"--hidden", "1024", "--tied", "--head-of", draft, "-o", dir.file("tied.gguf")}), 1,
      "make-model", "pass --untied");
}

// A ternary model with a 1-bit model's head: each Q1_0 block becomes the
// Q2_0 block of the same values (sign set: code 2, +d; clear: code 0, -d),
// decoded here by hand, and with quiet layers the two choose the same tokens.
TEST(GgufTool, HeadOfAQ1ModelGivesAQ2ModelTheSameValues) {
  TempDir dir;
  const std::string draft = dir.file("draft.gguf"), ternary = dir.file("ternary.gguf");
  const std::vector<std::string> common = {"make-model", "--vocab",      kVocab, "--preset",
                                           "tiny",       "--vocab-size", "4096", "--untied"};
  auto args = common;
  args.insert(args.end(), {"--layer-gain", "0", "-o", draft});
  ASSERT_EQ(run_gguf_tool(args).exit_code, 0);
  args = common;
  args.insert(args.end(), {"--hidden", "1024", "--type", "q2_0", "--seed", "9", "--layer-gain", "0",
                           "--head-of", draft, "-o", ternary});
  const auto made = run_gguf_tool(args);
  ASSERT_EQ(made.exit_code, 0) << made.err;

  const gguf::File d = gguf::File::open(draft), t = gguf::File::open(ternary);
  for (const char *name : {"token_embd.weight", "output.weight"}) {
    const auto *td = d.find_tensor(name), *tt = t.find_tensor(name);
    ASSERT_TRUE(td && tt) << name;
    ASSERT_EQ(tt->type(), GgmlType::Q2_0) << name;
    ASSERT_EQ(tt->dims, (std::vector<int64_t>{1024, 4096})) << name;
    for (size_t r = 0; r < 4096; r += 97) // every 97th row, 4 blocks of 8 each
      for (size_t b = 0; b < 8; ++b) {
        BlockQ2_0 q2;
        std::memcpy(&q2, tt->data + (r * 8 + b) * sizeof q2, sizeof q2);
        if (b >= 4) { // padding: d = 0
          ASSERT_EQ(q2.d, 0) << name << " row " << r;
          continue;
        }
        BlockQ1_0 q1;
        std::memcpy(&q1, td->data + (r * 4 + b) * sizeof q1, sizeof q1);
        ASSERT_EQ(q2.d, q1.d);
        for (int j = 0; j < 128; ++j) {
          const int sign = (q1.signs[j / 8] >> (j % 8)) & 1 ? 1 : -1;
          const int code = (q2.codes[j / 4] >> (2 * (j % 4))) & 3;
          ASSERT_EQ(code - 1, sign) << name << " row " << r << " block " << b << " value " << j;
        }
      }
  }
  // Exact kernels: the fast sets quantize a Q2_0 matmul's inputs in other
  // groups than a Q1_0 one's, which moves near-tied logits of random weights.
  const auto text = [](const std::string &model) {
    const auto r = run_bonsai({"run", "-m", model, "-p", "Once upon a time", "-n", "12", "--temp",
                               "0", "--ignore-eos", "--no-chat", "-t", "2", "--backend-options",
                               "kernels=reference"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string expected = text(draft);
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(text(ternary), expected);
}

} // namespace
} // namespace bonsai::test
