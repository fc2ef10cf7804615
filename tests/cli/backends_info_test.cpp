// bonsai backends and bonsai info.
#include <fstream>

#include "bonsai/core/gguf.hpp"
#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

TEST(Backends, ListsTheCpuPlugin) {
  const auto r = run_bonsai({"backends"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string cpu_path = std::string(BONSAI_PLUGIN_DIR) + "/libbonsai_cpu.so";
  const size_t at = r.out.find("cpu\n  path:    " + cpu_path);
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string entry = r.out.substr(at);
  EXPECT_NE(entry.find("  abi:     1."), std::string::npos) << entry;
  EXPECT_NE(entry.find("  version: "), std::string::npos) << entry;
  EXPECT_NE(entry.find("  probe:   ok (1 device(s)"), std::string::npos) << entry;
  EXPECT_NE(r.out.find("searched: "), std::string::npos);
}

TEST(Backends, ReportsAFileThatIsNotAPlugin) {
  TempDir dir;
  const std::string fake = dir.file("libbonsai_fake.so");
  std::ofstream(fake) << "not an ELF file";
  setenv("BONSAI_PLUGIN_PATH", dir.file("").c_str(), 1);
  const auto r = run_bonsai({"backends"});
  unsetenv("BONSAI_PLUGIN_PATH");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("fake\n  path:    " + fake);
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  status:  not loadable: ", at), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu\n"), std::string::npos) << "the build tree is still searched";
}

// Expected values from tests/data/README.md (the golden model description).
TEST(Info, DescribesTheGoldenModels) {
  struct Case {
    const char *file;
    const char *types;
    const char *head;
  };
  for (const Case &c :
       {Case{"tiny-q1.gguf", "Q1_0 (1-bit, 128 per block)", "untied (output.weight, q1_0)"},
        Case{"tiny-q1-tied.gguf", "Q1_0 (1-bit, 128 per block)", "tied (token_embd.weight)"},
        Case{"tiny-q2.gguf", "Q2_0 (ternary, 128 per block, PrismML)",
             "untied (output.weight, q2_0)"},
        // Type 42 with 64 per block: named as mainline's layout, never as PrismML's.
        Case{"tiny-q2g64.gguf", "Q2_0 (ternary, 64 per block, mainline llama.cpp)",
             "untied (output.weight, q2_0_g64)"},
        Case{"tiny-ptq1.gguf", "PTQ1_0 (ternary, 1.75 bits, 128 per block, PrismML)",
             "untied (output.weight, ptq1_0)"},
        Case{"tiny-tq1.gguf", "TQ1_0 (ternary, 256 per block, ggml)",
             "tied (token_embd.weight)"}}) {
    const auto r = run_bonsai({"info", "-m", data_file(c.file)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string &o = r.out;
    EXPECT_NE(o.find("architecture:  qwen3\n"), std::string::npos) << o;
    EXPECT_NE(o.find("layers:        4\n"), std::string::npos) << o;
    EXPECT_NE(o.find("embedding:     512\n"), std::string::npos) << o;
    EXPECT_NE(o.find("heads:         4 query, 2 key/value, head dim 128\n"), std::string::npos);
    EXPECT_NE(o.find("feed-forward:  1536\n"), std::string::npos) << o;
    EXPECT_NE(o.find("rms eps 1e-06"), std::string::npos) << o;
    EXPECT_NE(o.find("rope:          none, base 1e+06\n"), std::string::npos) << o;
    EXPECT_NE(o.find(std::string("weight types:  ") + c.types + " x "), std::string::npos) << o;
    EXPECT_NE(o.find(std::string("lm head:       ") + c.head + "\n"), std::string::npos) << o;
    EXPECT_NE(o.find("vocabulary:    2048 rows, 2048 tokens"), std::string::npos) << o;
    EXPECT_NE(o.find("chat template: plain ChatML fallback"), std::string::npos) << o;
  }
}

// A model's name comes from the file: a terminal must not act on its escape
// sequences, and its line breaks must not break the report.
TEST(Info, EscapesWhatTheFileSaysBeforePrintingIt) {
  const gguf::File tiny = gguf::File::open(data_file("tiny-q1.gguf"));
  gguf::Writer copy;
  for (const auto &[key, value] : tiny.metadata())
    copy.set(key, value);
  copy.set_string("general.name", "\xff\n\x1b[31mred");
  for (const gguf::TensorInfo &t : tiny.tensors())
    copy.add_tensor_borrowed(t.name, t.type(), t.dims, {t.data, t.nbytes});
  TempDir dir;
  const std::string path = dir.file("named.gguf");
  copy.write(path);
  const auto r = run_bonsai({"info", "-m", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("name:          \\xff\\n\\x1b[31mred\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\xff'), std::string::npos) << r.out;
}

TEST(Info, RejectsAVocabularyOnlyFile) {
  // qwen3-vocab.gguf carries the real template but no tensors: not a model.
  const auto r = run_bonsai({"info", "-m", data_file("qwen3-vocab.gguf")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("token_embd.weight"), std::string::npos) << r.err;
}

} // namespace
} // namespace bonsai::test
