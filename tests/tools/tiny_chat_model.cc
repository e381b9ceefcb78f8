// tessera_tiny_chat_model DIR [SEED [SLIDING_WINDOW]]: writes the tiny random chat model of
// src/sources/tiny_chat_model_for_tests.h into DIR (for the examples' ctests
// and the server's pytests, which need a model with a tokenizer and a chat
// template without downloading one).
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "sources/tiny_chat_model_for_tests.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s DIR [SEED [SLIDING_WINDOW]]\n", argv[0]);
    return 2;
  }
  try {
    tessera::testing::write_tiny_chat_model(argv[1], argc >= 3 ? std::strtoull(argv[2], nullptr, 10) : 1,
                                            argc == 4 ? std::atoi(argv[3]) : 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
