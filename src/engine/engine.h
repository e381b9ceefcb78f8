// The engine: one loaded Model, a few session slots holding conversations'
// KV state, and a scheduler thread that runs requests from a bounded queue.
// The C++ and C APIs, the Python Engine and `tessera serve` all sit on it.
//
// Scheduling: continuous batching. Every slot can hold a running request;
// the scheduler admits queued requests while a slot is free (prefilling each
// on its slot), then advances every running request by one token per step,
// all of them in one call of the programs (Session::decode_batch: the
// weights are read once for all, and each request gets exactly the tokens
// it would get alone). Requests with speculative decoding run their own
// verify steps in turn. A finished request frees its slot for the next.
// A long prompt admitted while others are generating is prefilled in chunks
// of kPrefillChunk tokens, one chunk between two of their decode steps, so
// that their streams pause for a chunk at a time, not for the whole prompt
// (chunks of 4+ tokens keep the bits of one call: kernels' split invariance).
//
// KV reuse: a request continues the slot whose history shares the longest
// common token prefix with its prompt (slot_choice.h) when that slot holds
// (nearly) nothing beyond the prefix — the next turn of its conversation.
// Otherwise the prompt diverges from that slot's conversation: the shared
// prefix goes into the prefix cache (prefix_cache.h), and the request runs on
// an empty or the least recently used slot, restored from the cache entry
// sharing the most with it, so the other conversation keeps its state. A
// chat request's system messages are also cached at their exact end (its
// prefill stops there once to take the snapshot), which is what a sliding-
// window model needs to reuse a shared system prompt. Only the rest of the
// prompt is prefilled. When a state cannot be cut where the prompt diverges
// (a sliding-window ring no longer holds what the position needs) the result
// says so (reused_tokens lower than shared, reuse_note) — never silently.
// With the prefix cache's disk tier on, cache entries are also written as
// session files and survive the process: a restarted engine starts a known
// system prompt from disk (reused_from "disk").
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "engine/engine_observer.h"
#include "engine/prefix_cache.h"
#include "engine/prompt_images.h"
#include "engine/request.h"
#include "generation/output_constraint.h"
#include "runtime/model.h"
#include "runtime/session.h"

namespace tessera::engine {

struct EngineOptions {
  LoadOptions load;        // threads, kv_type, ...
  bool reference = false;  // GGUF / HF sources: run the source dequantized to f32, not its cached bundle
  int slots = 1;           // session slots (KV states kept), >= 1
  int queue_capacity = 16; // requests waiting beyond the running one, >= 1
  int64_t context_length = 0;  // per slot; 0: the model's
  // Prefix cache capacity (bytes of session state kept); 0: no prefix cache,
  // a prompt then always continues its best slot, cutting it where they differ.
  uint64_t prefix_cache_bytes = 256ull << 20;
  // Its disk tier (disk_prefix_store.h): bytes of session files kept; 0: off.
  // Needs the in-memory cache (prefix_cache_bytes > 0).
  uint64_t prefix_cache_disk_bytes = 0;
  // Where; empty: $TESSERA_HOME/prefix-cache/<first 16 characters of the model's identity>.
  std::string prefix_cache_dir;
  // What an image in a request may be (checked from its header, before any
  // pixel buffer exists), and how many one request may hold.
  ImageLimits image_limits;
  // An mmproj GGUF (llama.cpp's vision projector file) for a text model
  // loaded from a GGUF or bundle ("": the model directory's own vision tower, if any).
  std::string mmproj;
  int max_images_per_request = 32;
};

// Thrown by submit() when the queue is full (the server answers 503).
class QueueFull : public Error {
 public:
  explicit QueueFull(size_t capacity);
};

class Engine {
 public:
  // Loads `name_or_path` as `tessera run` does (a bundle, or a GGUF / HF
  // directory / pulled name through its cached default bundle). Throws Error.
  static std::unique_ptr<Engine> load(const std::string& name_or_path, const EngineOptions& options);
  // `images`: the model's image encoder (null: the model takes no images);
  // load() opens it from an HF checkpoint directory with a vision tower.
  Engine(std::unique_ptr<Model> model, const EngineOptions& options, std::unique_ptr<ImageEncoder> images = nullptr);
  // stop(), then waits for the running request to end.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues the request. Throws Error for bad settings or no prompt, QueueFull
  // when the queue holds queue_capacity requests. The future yields the
  // Result, or rethrows the Error the request hit (prompt too long, no chat
  // template, token id outside the vocabulary, ...).
  std::future<Result> submit(Request request);
  // submit(...).get().
  Result run(Request request);
  // Empties every slot (waits for the running request).
  void reset();
  // Cancels the running request at its next token, fails the queued ones
  // with Error ("the engine stopped") and refuses new ones. Returns at once;
  // callable from any thread (not from a signal handler).
  void stop();

  const Model& model() const { return *model_; }
  const EngineOptions& options() const { return options_; }
  // Requests waiting, not counting cancelled ones.
  size_t queued() const;
  // Takes the cancelled requests out of the queue now (their results say
  // "cancelled"), rather than when a slot would have reached them: a client
  // that left frees its place in the queue. submit() does it too.
  void drop_cancelled();
  // Entries and bytes in the prefix cache (0, 0 when disabled), as of the
  // last request placed; never waits for the running one.
  std::pair<size_t, uint64_t> prefix_cache_usage() const { return {cache_entries_.load(), cache_bytes_.load()}; }
  // Requests between admission and their last token, as of the last scheduler step.
  size_t running() const { return running_count_.load(); }
  // Bytes the slots' sequence states take at their current lengths, and at
  // their full context (state/sequence_state.h, layer_bytes), as of the
  // last scheduler step.
  std::pair<uint64_t, uint64_t> kv_usage() const { return {kv_used_.load(), kv_capacity_}; }
  // Tells `observer` (null: no one) of every request from now on; returns
  // once no call to the previous observer is under way (engine_observer.h).
  void set_observer(EngineObserver* observer);

 private:
  struct Job {
    Request request;
    GenerateOptions options;
    std::promise<Result> promise;
    double submitted_at = 0;
  };
  struct Slot {
    std::unique_ptr<Session> session;
    uint64_t last_used = 0;
    bool busy = false;  // a running request holds it
  };
  // A request between admission and its last token.
  struct Running {
    std::unique_ptr<Job> job;
    size_t slot = 0;
    Result result;
    PromptWithImages prompt;   // the whole prompt: ids, keys (what the slot's history will hold), images
    int64_t done = 0;          // of it, in the slot's session
    int64_t cache_at = 0;      // > done: the end of its system messages, cached when reached
    std::function<bool(std::string_view)> on_text;
    std::unique_ptr<Generation> generation;  // null while the prompt is prefilled in chunks
    int64_t prefilled_before = 0;  // prompt tokens prefilled before the generation's own prefill
    double early_prefill_seconds = 0;  // their compute time
    double admitted_at = 0, generation_at = 0;  // now_ms() at admission and at the generation's start
    double last_token_at = 0;  // now_ms() at its latest generated token
    size_t tokens_told = 0;    // generated tokens the observer has heard of
  };
  // Where a request runs and how much of its prompt the slot then holds.
  struct ReusePlan {
    size_t slot = 0;
    int64_t reused = 0;
    std::string from;  // "slot", "prefix cache" or "" (nothing reused)
    std::string note;
  };

  void scheduler_loop();
  // Places, prefills and starts a job; false (its promise set) when it ended
  // or failed there.
  bool admit(Running& run);
  // One decode step of every running request; finished ones are delivered.
  void step_all();
  // One prefill chunk of every request whose prompt is prefilled in chunks;
  // the last starts its generation.
  void advance_prefills();
  // Runs `n` more prompt tokens of `run` on its slot (not the last ones).
  void prefill_part(Running& run, int64_t n);
  // Builds and starts the generation on the rest of the prompt; false (the
  // result delivered or the failure set) when it ended there.
  bool start_generation(Running& run);
  void deliver(Running& run);
  void fail_running(Running& run, std::exception_ptr error);
  // Sets the job's promise to its Result or its error, and tells the
  // observer; every request ends through one of these.
  void end_job(Job& job, Result result);
  void end_job(Job& job, std::exception_ptr error);
  // Tells the observer of run's tokens generated since it last heard.
  void tell_tokens(Running& run);
  bool has_free_slot() const;
  std::vector<int32_t> prompt_ids(const Request& request) const;
  // The prompt with its images placed (prompt_images.h); keys = ids without images.
  PromptWithImages prompt_of(const Request& request) const;
  // Chooses the slot, puts the reusable state into it and says what it holds.
  ReusePlan place(const std::vector<int32_t>& ids);
  // Length of the prompt's leading system messages as tokens, where caching
  // them is worthwhile (long enough, not cached yet); 0 otherwise.
  int64_t system_prefix_to_cache(const Request& request, const std::vector<int32_t>& ids) const;

  std::unique_ptr<Model> model_;
  EngineOptions options_;
  std::unique_ptr<ImageEncoder> image_encoder_;  // null: the model takes no images
  std::vector<Slot> slots_;
  std::unique_ptr<PrefixCache> prefix_cache_;  // null when disabled
  // Compiles requests' constraints (json_schema / grammar / regex) for this
  // model's vocabulary on the submitting thread; made at the first one.
  std::once_flag constraint_compiler_made_;
  std::unique_ptr<ConstraintCompiler> constraint_compiler_;
  uint64_t clock_ = 0;  // last_used stamps

  mutable std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<std::unique_ptr<Job>> queue_;
  bool stopping_ = false;
  std::atomic<bool> cancel_running_{false};

  std::vector<std::unique_ptr<Running>> running_;  // scheduler thread only
  std::mutex run_mutex_;  // held during each scheduler step, and by reset()
  std::condition_variable idle_cv_;  // running_ became empty (reset() waits for it)
  std::atomic<size_t> cache_entries_{0};
  std::atomic<uint64_t> cache_bytes_{0};
  std::atomic<size_t> running_count_{0};
  std::atomic<uint64_t> kv_used_{0};
  uint64_t kv_capacity_ = 0;
  EngineObserver* observer_ = nullptr;  // changed with both queue_mutex_ and run_mutex_ held
  void publish_cache_usage();
  // running() and kv_usage() from the scheduler's state (scheduler thread).
  void publish_slot_usage();
  void drop_cancelled_locked();
  // The request is cancelled, or the engine is stopping.
  bool stop_requested(const Request& r) const;
  std::thread scheduler_;
};

}  // namespace tessera::engine
