// The C++ API in a few lines: load a model, stream a chat reply, ask a
// follow-up that reuses the first turn's KV, and cancel a generation from
// its callback. Usage: tessera_cpp_example MODEL (a bundle, GGUF, HF
// directory or pulled name). Exits non-zero if anything is not as promised,
// so that CI runs it as a test.
#include <cstdio>
#include <iostream>
#include <tessera/tessera.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " MODEL\n";
    return 2;
  }
  try {
    tessera::Engine engine = tessera::Engine::load(argv[1], {.threads = 2});

    tessera::Request request;
    request.messages = {{"system", "You are brief."}, {"user", "Name a colour."}};
    request.max_tokens = 16;
    const tessera::Result first = engine.stream(request, [](std::string_view piece) {
      std::cout << piece << std::flush;
      return true;
    });
    std::cout << "\n[" << first.finish_reason << ", " << first.prompt_tokens << " prompt tokens, "
              << first.decode_tok_s << " tok/s]\n";

    // Turn two: the conversation so far plus a new question. Its prompt
    // starts with turn one's, whose KV the engine kept.
    request.messages.push_back({"assistant", first.text});
    request.messages.push_back({"user", "And another?"});
    const tessera::Result second = engine.generate(request);
    std::cout << second.text << "\n[reused " << second.reused_tokens << " of " << second.prompt_tokens
              << " prompt tokens]\n";
    if (second.reused_tokens < first.prompt_tokens) {
      std::cerr << "expected turn two to reuse at least turn one's " << first.prompt_tokens << " prompt tokens\n";
      return 1;
    }

    // Cancelling: the callback returns false after the first piece.
    tessera::Request long_one;
    long_one.prompt = "Once upon a time";
    long_one.max_tokens = 100;
    long_one.ignore_eos = true;
    const tessera::Result cancelled = engine.stream(long_one, [](std::string_view) { return false; });
    if (cancelled.finish_reason != "cancelled") {
      std::cerr << "expected a cancelled generation, got " << cancelled.finish_reason << "\n";
      return 1;
    }

    // Bad input is an exception with a message, not a crash.
    tessera::Request bad;
    bad.prompt = "x";
    bad.max_tokens = 0;
    try {
      engine.generate(bad);
      std::cerr << "max_tokens 0 was accepted\n";
      return 1;
    } catch (const std::runtime_error& e) {
      std::cout << "refused as expected: " << e.what() << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
