/* Tessera's C API: load a model, generate or stream text, reset.
 *
 * Objects are opaque handles made by tessera_<object>_create and released by
 * tessera_<object>_free (free accepts NULL). Functions that can fail return
 * NULL or a negative int; tessera_last_error() then gives this thread's
 * message. No C++ exception ever crosses this boundary.
 *
 *   tessera_engine* e = tessera_engine_create("smollm2-135m-instruct", NULL);
 *   tessera_request* q = tessera_request_create();
 *   tessera_request_add_message(q, "user", "Why is the sky blue?");
 *   tessera_generation_settings s;
 *   tessera_generation_settings_init(&s);
 *   s.max_tokens = 64;
 *   tessera_request_set_settings(q, &s);
 *   tessera_result* r = tessera_engine_generate(e, q, print_piece, NULL);
 *   printf("%s\n", tessera_result_text(r));
 *   tessera_result_free(r); tessera_request_free(q); tessera_engine_free(e);
 */
#ifndef TESSERA_TESSERA_H
#define TESSERA_TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tessera_engine tessera_engine;
typedef struct tessera_request tessera_request;
typedef struct tessera_result tessera_result;

typedef struct tessera_engine_options {
  int threads;             /* default 0: this machine's physical cores */
  int slots;               /* conversations whose KV state is kept; default 1 */
  int queue_capacity;      /* default 16 */
  int64_t context_length;  /* 0: the model's */
  uint64_t prefix_cache_bytes;       /* session state kept for shared prompt prefixes; default 256 MiB, 0: off */
  uint64_t prefix_cache_disk_bytes;  /* its disk tier, kept across runs; default 0: off */
  const char* prefix_cache_dir;      /* NULL: $TESSERA_HOME/prefix-cache/<model> */
  const char* arithmetic;  /* "fast" (NULL: the default, one int8 activation pass) or "exact" (two) */
  const char* kv_type;     /* "f32" (NULL: the default) or "f16" */
} tessera_engine_options;

/* `count` NUL-terminated strings at `items` (items may be NULL when count is 0). */
typedef struct tessera_strings {
  const char* const* items;
  size_t count;
} tessera_strings;

/* Every generation setting, field for field and in the order of the one list
 * in tessera/generation_settings.hpp, which gives each one's meaning, default
 * and range (the library does not build if this struct and the list differ).
 * Fill it with tessera_generation_settings_init, change what you need and
 * hand it to tessera_request_set_settings. */
typedef struct tessera_generation_settings {
  int64_t max_tokens;          /* default 128 */
  float temperature;           /* default 0: greedy */
  float top_p;                 /* default 1: off */
  float min_p;                 /* default 0: off */
  float repeat_penalty;        /* default 1: off */
  int64_t top_k;               /* default 0: off */
  int64_t repeat_last_n;       /* default 64; -1: the whole context */
  uint64_t seed;               /* default 0 */
  tessera_strings stop;        /* default none; copied by tessera_request_set_settings */
  int ignore_eos;              /* default 0 */
  int64_t max_tokens_per_call; /* default 0: the largest prefill program */
  const char* speculative;     /* "off" (NULL: the default), "lookup", "auto", "draft:PATH", "draft-all:PATH", "lookup+draft:PATH" */
  int64_t draft_max;           /* default 8 */
  const char* json_schema;     /* NULL or "": none; a JSON Schema's text */
  const char* grammar;         /* NULL or "": none; GBNF text */
  const char* regex;           /* NULL or "": none; a regular expression */
  const char* structural_tag;  /* NULL or "": none; an XGrammar structural tag (JSON) */
} tessera_generation_settings;

/* Receives text as it becomes final (not NUL-terminated); return 0 to cancel. */
typedef int (*tessera_text_callback)(const char* text, size_t length, void* user_data);

/* This thread's message for the last failed call ("" if none). */
const char* tessera_last_error(void);

void tessera_engine_options_init(tessera_engine_options* options);
/* options may be NULL (the defaults). NULL on failure. */
tessera_engine* tessera_engine_create(const char* model, const tessera_engine_options* options);
void tessera_engine_free(tessera_engine* engine);
int tessera_engine_reset(tessera_engine* engine);
/* on_text may be NULL. NULL on failure (bad settings, prompt too long, ...). */
tessera_result* tessera_engine_generate(tessera_engine* engine, const tessera_request* request,
                                        tessera_text_callback on_text, void* user_data);

tessera_request* tessera_request_create(void);
void tessera_request_free(tessera_request* request);
/* The prompt: plain text, chat messages (added in order) or token ids; one kind per request. */
int tessera_request_set_prompt(tessera_request* request, const char* text);
int tessera_request_add_message(tessera_request* request, const char* role, const char* content);
int tessera_request_set_prompt_ids(tessera_request* request, const int32_t* ids, size_t count);
/* An image (`size` bytes of a file; mime_type "image/jpeg", "image/png" or
 * NULL to let the bytes say) for the message added last, shown before its
 * text, or, with no message, for the plain prompt's next image mark (Gemma 3:
 * <start_of_image>). Only for a model with an image encoder. */
int tessera_request_add_image(tessera_request* request, const char* mime_type, const void* bytes, size_t size);
/* Every setting at its default. */
void tessera_generation_settings_init(tessera_generation_settings* settings);
/* Replaces all of the request's settings (its stop strings too) with a copy of
 * `settings`; they are checked when the request runs. */
int tessera_request_set_settings(tessera_request* request, const tessera_generation_settings* settings);
/* Shorthands that set one setting (add_stop appends a stop string). */
int tessera_request_set_max_tokens(tessera_request* request, int64_t max_tokens);
int tessera_request_set_temperature(tessera_request* request, float temperature);
int tessera_request_set_top_p(tessera_request* request, float top_p);
int tessera_request_set_seed(tessera_request* request, uint64_t seed);
int tessera_request_add_stop(tessera_request* request, const char* stop);

void tessera_result_free(tessera_result* result);
const char* tessera_result_text(const tessera_result* result);
const char* tessera_result_finish_reason(const tessera_result* result);
size_t tessera_result_token_count(const tessera_result* result);
const int32_t* tessera_result_tokens(const tessera_result* result);
int64_t tessera_result_prompt_tokens(const tessera_result* result);
int64_t tessera_result_reused_tokens(const tessera_result* result);
double tessera_result_ttft_ms(const tessera_result* result);
double tessera_result_prefill_tok_s(const tessera_result* result);
double tessera_result_decode_tok_s(const tessera_result* result);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TESSERA_H */
