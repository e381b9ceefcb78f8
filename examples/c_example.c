/* The C API in a few lines: load a model, stream a chat reply, read the
 * result's numbers, and see an error reported as a string. Usage:
 * tessera_c_example MODEL. Exits non-zero if anything is not as promised, so
 * that CI runs it as a test. */
#include <stdio.h>
#include <string.h>
#include <tessera/tessera.h>

static int stop_at_once(const char* text, size_t length, void* user_data) {
  (void)text, (void)length, (void)user_data;
  return 0; /* cancels the generation */
}

static int print_piece(const char* text, size_t length, void* user_data) {
  int* pieces = (int*)user_data;
  ++*pieces;
  fwrite(text, 1, length, stdout);
  fflush(stdout);
  return 1; /* 0 would cancel */
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL\n", argv[0]);
    return 2;
  }
  tessera_engine_options options;
  tessera_engine_options_init(&options);
  options.threads = 2;
  tessera_engine* engine = tessera_engine_create(argv[1], &options);
  if (!engine) {
    fprintf(stderr, "error: %s\n", tessera_last_error());
    return 1;
  }
  int status = 0;
  tessera_request* request = tessera_request_create();
  tessera_request_add_message(request, "user", "Say hello.");
  tessera_request_set_max_tokens(request, 16);
  int pieces = 0;
  tessera_result* result = tessera_engine_generate(engine, request, print_piece, &pieces);
  if (!result) {
    fprintf(stderr, "error: %s\n", tessera_last_error());
    status = 1;
  } else {
    printf("\n[%s, %zu tokens, %lld prompt tokens, ttft %.1f ms, %.1f tok/s]\n", tessera_result_finish_reason(result),
           tessera_result_token_count(result), (long long)tessera_result_prompt_tokens(result),
           tessera_result_ttft_ms(result), tessera_result_decode_tok_s(result));
    if (tessera_result_token_count(result) == 0 || (pieces == 0 && tessera_result_text(result)[0] != '\0')) {
      fprintf(stderr, "expected generated tokens and the text streamed\n");
      status = 1;
    }
    tessera_result_free(result);
  }

  /* Cancelling from the callback. */
  tessera_request_set_max_tokens(request, 64);
  result = tessera_engine_generate(engine, request, stop_at_once, NULL);
  if (!result || strcmp(tessera_result_finish_reason(result), "cancelled") != 0) {
    fprintf(stderr, "expected a cancelled generation, got %s\n", result ? tessera_result_finish_reason(result) : tessera_last_error());
    status = 1;
  }
  tessera_result_free(result);

  /* An error: max_tokens 0 is refused, and the message says which field. */
  tessera_request_set_max_tokens(request, 0);
  result = tessera_engine_generate(engine, request, NULL, NULL);
  if (result || strstr(tessera_last_error(), "max_tokens") == NULL) {
    fprintf(stderr, "expected max_tokens 0 to be refused, got: %s\n", tessera_last_error());
    tessera_result_free(result);
    status = 1;
  } else {
    printf("refused as expected: %s\n", tessera_last_error());
  }

  tessera_request_free(request);
  tessera_engine_free(engine);
  return status;
}
