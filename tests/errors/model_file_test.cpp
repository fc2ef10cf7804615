// Catalogue rows "the model file itself": missing, unreadable, empty, a
// directory, a FIFO. Each row checks what `bonsai run` prints and its exit
// code, and what Engine::open throws (docs/errors.md, section 1).
#include <sys/stat.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/engine.hpp"
#include "errors_support.hpp"

namespace bonsai::errors_test {
namespace {

CliResult run_model(const std::string &model, RunAs as = RunAs::self) {
  return run_bonsai({"run", "-m", model, "-p", "hi", "--backend", cpu_plugin()}, as);
}

Thrown engine_open(const std::string &model) {
  return thrown_by([&] { (void)Engine::open(model, cpu_options()); });
}

TEST(ModelFileErrors, Missing) {
  TempDir dir;
  const std::string model = dir.path("missing.gguf");
  expect_cli_error(run_model(model), 1, with_path("MODEL: model file not found", model));
  const Thrown t = engine_open(model);
  EXPECT_EQ(t.type, "ModelError");
  EXPECT_EQ(t.message, with_path("MODEL: cannot open: No such file or directory", model));
}

TEST(ModelFileErrors, Unreadable) {
  TempDir dir;
  const std::string model = dir.write("locked.gguf", read_bytes(data_file("tiny-q1.gguf")));
  ASSERT_EQ(chmod(model.c_str(), 0), 0);
  // Root reads anything: the program runs as user nobody when we are root.
  expect_cli_error(run_model(model, RunAs::nobody), 1,
                   with_path("MODEL: cannot open: Permission denied", model));
  const std::string api = as_unprivileged([&] { return engine_open(model).message; });
  EXPECT_EQ(api, with_path("MODEL: cannot open: Permission denied", model));
}

TEST(ModelFileErrors, Empty) {
  TempDir dir;
  const std::string model = dir.write("empty.gguf", {});
  const std::string message = with_path("MODEL: empty file (0 bytes), not a GGUF file", model);
  expect_cli_error(run_model(model), 1, message);
  const Thrown t = engine_open(model);
  EXPECT_EQ(t.type, "ModelError");
  EXPECT_EQ(t.message, message);
}

TEST(ModelFileErrors, DirectoryInsteadOfFile) {
  TempDir dir;
  const std::string model = dir.path("a-folder.gguf");
  ASSERT_EQ(mkdir(model.c_str(), 0755), 0);
  expect_cli_error(run_model(model), 1,
                   with_path("MODEL: is a directory, not a model file", model));
  const Thrown t = engine_open(model);
  EXPECT_EQ(t.type, "ModelError");
  EXPECT_EQ(t.message, with_path("MODEL: is a directory, not a GGUF file", model));
}

// A FIFO used to block open() forever waiting for a writer.
TEST(ModelFileErrors, FifoIsRejectedWithoutBlocking) {
  TempDir dir;
  const std::string model = dir.path("pipe.gguf");
  ASSERT_EQ(mkfifo(model.c_str(), 0644), 0);
  const std::string message = with_path("MODEL: not a regular file", model);
  expect_cli_error(run_model(model), 1, message);
  const Thrown t = engine_open(model);
  EXPECT_EQ(t.type, "ModelError");
  EXPECT_EQ(t.message, message);
}

TEST(ModelFileErrors, NotAGgufFile) {
  const std::string model = data_file("tiny-q1.prompt.json");
  const std::string message = with_path(
      "MODEL: bad magic (expected 'GGUF' = 47 47 55 46, found 7b 22 74 6f): not a GGUF file",
      model);
  expect_cli_error(run_model(model), 1, message);
  EXPECT_EQ(engine_open(model).message, message);
}

} // namespace
} // namespace bonsai::errors_test
