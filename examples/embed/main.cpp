// Embedding bonsai in a C++ program: open a model, stream one completion
// through a callback, then cancel a second one from another thread.
//
//   embed MODEL.gguf [BACKEND]     BACKEND: "auto" (default), "cpu", or a plugin .so path
#include <bonsai/engine.hpp>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace {

void print_stats(const bonsai::GenerateResult &result) {
  const bonsai::GenerateStats &s = result.stats;
  std::printf("\n[stop: %s] prompt %d tokens in %.1f ms (%.1f t/s), generated %d tokens in "
              "%.1f ms (%.1f t/s)\n",
              std::string(bonsai::to_string(result.stop_reason)).c_str(), s.prompt_tokens,
              s.prompt_ms, s.prompt_tps, s.gen_tokens, s.gen_ms, s.gen_tps);
}

// Streams a greedy completion of `prompt` to stdout.
void stream_completion(const bonsai::Engine &engine, const std::string &prompt) {
  bonsai::Session session = engine.create_session();
  bonsai::GenerateRequest request;
  request.prompt = prompt;
  request.n_predict = 24;
  request.sampling.temperature = 0.0f; // greedy: the same text on every run
  std::printf("%s", prompt.c_str());
  const bonsai::GenerateResult result = session.generate(request, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true; // keep going
  });
  print_stats(result);
}

// Starts an endless generation and cancels it from a second thread as soon as
// the first piece of text arrives. Returns true when it stopped as cancelled.
bool cancel_from_another_thread(const bonsai::Engine &engine) {
  bonsai::Session session = engine.create_session();
  std::mutex mutex;
  std::condition_variable started;
  bool first_piece = false;

  std::thread canceller([&] {
    std::unique_lock lock(mutex);
    started.wait(lock, [&] { return first_piece; });
    session.cancel(); // the one Session member any thread may call
  });

  bonsai::GenerateRequest request;
  request.prompt = "Count to one thousand:";
  request.n_predict = -1; // until a stop token, the context's end, or cancel()
  request.stop_tokens = std::vector<int32_t>{}; // no stop tokens: only cancel() ends it
  const bonsai::GenerateResult result = session.generate(request, [&](std::string_view) {
    {
      std::lock_guard lock(mutex);
      first_piece = true;
    }
    started.notify_one();
    return true;
  });
  canceller.join();
  std::printf("second session: %zu tokens before the cancel took effect", result.tokens.size());
  print_stats(result);
  return result.stop_reason == bonsai::StopReason::cancelled;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [BACKEND]\n", argv[0]);
    return 2;
  }
  try {
    bonsai::EngineOptions options;
    options.backend = argc > 2 ? argv[2] : "auto";
    options.n_ctx = 512;
    const bonsai::Engine engine = bonsai::Engine::open(argv[1], options);
    const bonsai::ModelInfo &model = engine.model();
    std::printf("model %s: %d layers, %d-token vocabulary; backend %s\n", model.name.c_str(),
                model.n_layer, model.n_vocab, engine.backend().name.c_str());

    stream_completion(engine, "The quick brown fox");
    return cancel_from_another_thread(engine) ? 0 : 1;
  } catch (const bonsai::Error &e) { // every bonsai failure derives from bonsai::Error
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
