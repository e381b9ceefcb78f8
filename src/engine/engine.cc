#include "engine/engine.h"

#include <chrono>
#include <filesystem>

#include "engine/slot_choice.h"
#include "engine/prompt_images.h"
#include "load/draft_models.h"
#include "load/model_loader.h"
#include "generation/chat.h"
#include "sources/model_registry.h"

namespace tessera::engine {

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The request's own cancel flag is set (its client left, its callback said stop).
bool cancel_requested(const Request& r) { return r.cancel && r.cancel->load(); }

}  // namespace

QueueFull::QueueFull(size_t capacity)
    : Error("engine", "queue", fmt::format("{} requests are already waiting; try again later", capacity)) {}

std::unique_ptr<Engine> Engine::load(const std::string& name_or_path, const EngineOptions& options) {
  std::unique_ptr<Model> model = load_model_for_running(name_or_path, options.load, options.reference);
  std::unique_ptr<ImageEncoder> images =
      open_image_encoder(name_or_path, options.mmproj, options.mmproj.empty() ? nullptr : &model->require_tokenizer(),
                         options.image_limits, options.reference);
  return std::make_unique<Engine>(std::move(model), options, std::move(images));
}

Engine::Engine(std::unique_ptr<Model> model, const EngineOptions& options, std::unique_ptr<ImageEncoder> images)
    : model_(std::move(model)), options_(options), image_encoder_(std::move(images)) {
  if (options_.slots < 1) fail("options", "slots", "must be at least 1, got {}", options_.slots);
  if (options_.queue_capacity < 1)
    fail("options", "queue_capacity", "must be at least 1, got {}", options_.queue_capacity);
  if (options_.context_length < 0)
    fail("options", "context_length", "must be >= 0 (0: the model's), got {}", options_.context_length);
  for (int i = 0; i < options_.slots; ++i)
    slots_.push_back(Slot{std::make_unique<Session>(*model_, options_.context_length), 0});
  if (options_.prefix_cache_disk_bytes > 0 && options_.prefix_cache_bytes == 0)
    fail("options", "prefix_cache_disk_bytes", "the disk tier needs the in-memory prefix cache (prefix_cache_bytes > 0)");
  if (options_.prefix_cache_bytes > 0) {
    std::unique_ptr<DiskPrefixStore> disk;
    if (options_.prefix_cache_disk_bytes > 0) {
      const std::string dir = !options_.prefix_cache_dir.empty()
                                  ? options_.prefix_cache_dir
                                  : (std::filesystem::path(tessera_home()) / "prefix-cache" /
                                     model_->identity().substr(0, 16))
                                        .string();
      disk = std::make_unique<DiskPrefixStore>(dir, options_.prefix_cache_disk_bytes, model_->identity(),
                                               [](const std::string& line) { fmt::print(stderr, "warning: {}\n", line); });
    }
    const int64_t context = slots_[0].session->context_length();
    prefix_cache_ = std::make_unique<PrefixCache>(options_.prefix_cache_bytes, std::move(disk), [this, context] {
      return SequenceState(model_->spec(), context, model_->kv_type());  // the slots' shape, empty
    });
  }
  const SequenceState& state = slots_[0].session->state();
  for (int64_t layer = 0; layer < state.num_layers(); ++layer)
    kv_capacity_ += state.layer_bytes(layer, state.context_length());
  kv_capacity_ *= slots_.size();
  scheduler_ = std::thread([this] { scheduler_loop(); });
}

Engine::~Engine() {
  stop();
  scheduler_.join();
}

void Engine::stop() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  cancel_running_ = true;
  queue_cv_.notify_all();
}

std::future<Result> Engine::submit(Request request) {
  const int given = !request.prompt_ids.empty() + request.prompt.has_value() + request.messages.has_value();
  if (given != 1) fail("request", "prompt", "give exactly one of prompt_ids, prompt and messages (got {})", given);
  if (request.messages && (!request.messages->is_array() || request.messages->empty()))
    fail("request", "messages", "must be a non-empty array of messages");
  auto job = std::make_unique<Job>();
  job->options = make_generate_options(request.settings);
  load_draft_model(job->options, *model_);  // before the generation, never inside it
  if (!job->options.constraint.empty()) {  // compiled here, so that a bad schema fails the submit
    std::call_once(constraint_compiler_made_,
                   [&] { constraint_compiler_ = ConstraintCompiler::for_model(*model_, job->options.constraint); });
    job->options.compiled_constraint = constraint_compiler_->compile(job->options.constraint);
  }
  job->request = std::move(request);
  job->submitted_at = now_ms();
  std::future<Result> result = job->promise.get_future();
  {
    std::lock_guard lock(queue_mutex_);
    if (stopping_) fail("engine", "queue", "the engine is stopping");
    drop_cancelled_locked();
    if (queue_.size() >= static_cast<size_t>(options_.queue_capacity)) {
      if (observer_) observer_->refused();
      throw QueueFull(queue_.size());
    }
    queue_.push_back(std::move(job));
    if (observer_) observer_->submitted();
  }
  queue_cv_.notify_one();
  return result;
}

Result Engine::run(Request request) { return submit(std::move(request)).get(); }

void Engine::reset() {
  std::unique_lock lock(run_mutex_);
  idle_cv_.wait(lock, [&] { return running_.empty(); });
  for (Slot& s : slots_) {
    s.session->reset();
    s.last_used = 0;
  }
  if (prefix_cache_) prefix_cache_->clear_memory();  // the disk tier keeps its files
  publish_cache_usage();
}

void Engine::set_observer(EngineObserver* observer) {
  std::scoped_lock lock(queue_mutex_, run_mutex_);
  observer_ = observer;
}

void Engine::end_job(Job& job, Result result) {
  if (observer_) observer_->ended(&result, (now_ms() - job.submitted_at) / 1000.0);
  job.promise.set_value(std::move(result));
}

void Engine::end_job(Job& job, std::exception_ptr error) {
  if (observer_) observer_->ended(nullptr, (now_ms() - job.submitted_at) / 1000.0);
  job.promise.set_exception(std::move(error));
}

void Engine::tell_tokens(Running& run) {
  if (!run.generation || !run.job) return;
  const size_t tokens = run.generation->result().ids.size();
  if (tokens <= run.tokens_told) return;
  const double now = now_ms();
  if (observer_) {
    if (run.tokens_told == 0) observer_->first_token((now - run.job->submitted_at) / 1000.0);
    else observer_->more_tokens(static_cast<int64_t>(tokens - run.tokens_told), (now - run.last_token_at) / 1000.0);
  }
  run.tokens_told = tokens;
  run.last_token_at = now;
}

void Engine::publish_slot_usage() {
  running_count_ = running_.size();
  uint64_t used = 0;
  for (const Slot& slot : slots_) {
    const SequenceState& state = slot.session->state();
    for (int64_t layer = 0; layer < state.num_layers(); ++layer) used += state.layer_bytes(layer, state.length());
  }
  kv_used_ = used;
}

void Engine::publish_cache_usage() {
  cache_entries_ = prefix_cache_ ? prefix_cache_->size() : 0;
  cache_bytes_ = prefix_cache_ ? prefix_cache_->bytes() : 0;
}

bool Engine::stop_requested(const Request& r) const { return cancel_requested(r) || cancel_running_.load(); }

size_t Engine::queued() const {
  std::lock_guard lock(queue_mutex_);
  size_t n = 0;
  for (const auto& job : queue_) n += !cancel_requested(job->request);
  return n;
}

void Engine::drop_cancelled() {
  std::lock_guard lock(queue_mutex_);
  drop_cancelled_locked();
}

void Engine::drop_cancelled_locked() {
  for (auto it = queue_.begin(); it != queue_.end();) {
    Job& job = **it;
    if (cancel_requested(job.request)) {
      Result r;
      r.queue_ms = now_ms() - job.submitted_at;
      r.generation.finish_reason = "cancelled";
      end_job(job, std::move(r));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
}

bool Engine::has_free_slot() const {
  for (const Slot& slot : slots_)
    if (!slot.busy) return true;
  return false;
}

void Engine::scheduler_loop() {
  for (;;) {
    std::vector<std::unique_ptr<Job>> admitted;
    {
      std::unique_lock lock(queue_mutex_);
      queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !running_.empty(); });
      if (stopping_) {
        for (auto& waiting : queue_)
          end_job(*waiting, std::make_exception_ptr(Error("engine", "queue", "the engine stopped")));
        queue_.clear();
      }
      // Every free slot takes a waiting request (slots are only taken here).
      size_t free = 0;
      for (const Slot& slot : slots_) free += !slot.busy;
      while (!queue_.empty() && admitted.size() < free) {
        admitted.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    for (auto& job : admitted) {
      auto run = std::make_unique<Running>();
      run->job = std::move(job);
      std::lock_guard lock(run_mutex_);
      if (admit(*run)) running_.push_back(std::move(run));
    }
    {
      std::lock_guard lock(run_mutex_);
      advance_prefills();
      step_all();
      publish_slot_usage();
    }
    idle_cv_.notify_all();
    bool stop = false;
    {
      std::lock_guard lock(queue_mutex_);
      stop = stopping_ && running_.empty() && queue_.empty();
    }
    if (stop) return;
  }
}

void Engine::deliver(Running& run) {
  if (run.generation) {
    run.result.generation = run.generation->result();
    // Time to first token from admission: the prompt's earlier parts (and
    // the other requests' steps between its chunks) come before the
    // generation's own clock starts.
    run.result.generation.ttft_ms += run.generation_at - run.admitted_at;
  } else {  // cancelled while its prompt was prefilled in chunks
    run.result.generation.finish_reason = "cancelled";
  }
  run.result.generation.prompt_tokens += run.prefilled_before;
  run.result.generation.prefill_seconds += run.early_prefill_seconds;
  slots_[run.slot].busy = false;
  end_job(*run.job, std::move(run.result));
}

void Engine::fail_running(Running& run, std::exception_ptr error) {
  // A failure mid-way leaves the slot's history unknown: drop it.
  slots_[run.slot].session->reset();
  slots_[run.slot].last_used = 0;
  slots_[run.slot].busy = false;
  end_job(*run.job, std::move(error));
}

void Engine::step_all() {
  // Cancellations first: a cancelled request stops before its next token.
  for (auto& run : running_) {
    if (!run->generation) continue;  // prefilling: advance_prefills() looks
    if (stop_requested(run->job->request)) run->generation->cancel();
  }
  std::vector<Running*> plain;
  for (auto& run : running_) {
    if (!run->generation) continue;
    Generation& g = *run->generation;
    if (g.finished()) continue;
    if (g.wants_plain_step()) {
      plain.push_back(run.get());
      continue;
    }
    try {
      g.step();  // a speculative step: its own verify call
    } catch (...) {
      g.cancel();
      fail_running(*run, std::current_exception());
      run->job.reset();
    }
  }
  if (!plain.empty()) {
    std::vector<Session*> sessions;
    std::vector<int32_t> ids;
    for (Running* run : plain) {
      sessions.push_back(&run->generation->session());
      ids.push_back(run->generation->next_input());
    }
    try {
      Session::decode_batch(sessions, ids);
      for (Running* run : plain) run->generation->after_plain_step();
    } catch (...) {
      const std::exception_ptr error = std::current_exception();
      for (Running* run : plain) {
        run->generation->cancel();
        fail_running(*run, error);
        run->job.reset();
      }
    }
  }
  for (auto& run : running_) tell_tokens(*run);
  for (auto it = running_.begin(); it != running_.end();) {
    Running& run = **it;
    if (!run.job) {
      it = running_.erase(it);
    } else if (run.generation && run.generation->finished()) {
      deliver(run);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

PromptWithImages Engine::prompt_of(const Request& request) const {
  if (request.images.empty()) {
    PromptWithImages p;
    p.ids = prompt_ids(request);
    p.keys = p.ids;
    return p;
  }
  if (!image_encoder_)
    fail("request", "images", "this model takes no images (its Hugging Face checkpoint directory, with a vision tower "
                              "Tessera supports, gives it an image encoder)");
  if (!request.prompt_ids.empty()) fail("request", "images", "need a text prompt or messages, not token ids");
  const tok::Tokenizer& tokenizer = model_->require_tokenizer();
  std::string text = request.messages ? chat_prompt_text(*model_, *request.messages, request.template_extra)
                                      : *request.prompt;
  PromptWithImages p = prompt_with_images(tokenizer, *image_encoder_, std::move(text), !request.messages,
                                          request.images, options_.max_images_per_request,
                                          slots_[0].session->context_length() - 1);
  if (p.ids.empty()) fail("request", "prompt", "the prompt has no tokens");
  return p;
}

std::vector<int32_t> Engine::prompt_ids(const Request& request) const {
  if (!request.prompt_ids.empty()) return request.prompt_ids;
  std::vector<int32_t> ids = request.messages ? chat_prompt_ids(*model_, *request.messages, request.template_extra)
                                              : model_->require_tokenizer().encode(*request.prompt, true);
  if (ids.empty()) fail("request", "prompt", "the prompt has no tokens");
  return ids;
}

namespace {

// A slot whose history runs at most this many tokens past the shared prefix
// is the same conversation going on (its last reply re-tokenized a little
// differently): it is cut, not kept.
constexpr int64_t kContinuationSlack = 16;
// Shorter shared prefixes are not worth a cache entry.
constexpr int64_t kMinCachedPrefix = 32;
// Interleaved prefill: chunks of this many tokens (a row block, so each
// chunk is one call of one block), and the generation's own prefill takes
// the last kPrefillTail or more (calls of 32+ tokens take the kernels a
// whole call would, kernels/qlinear_i16gemm.h and the AMX tiles).
constexpr int64_t kPrefillChunk = 128;
constexpr int64_t kPrefillTail = 32;

std::string cut_failed_note(int64_t shared, const char* where) {
  return fmt::format(
      "{} prompt tokens were in {}, but a sliding-window layer no longer holds what position {} needs, so "
      "they were prefilled again",
      shared, where, shared);
}

}  // namespace

Engine::ReusePlan Engine::place(const std::vector<int32_t>& ids) {
  // Only free slots are candidates: a running request's state is its own.
  std::vector<SlotView> views;
  std::vector<size_t> free;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (!slots_[i].busy) {
      views.push_back(SlotView{slots_[i].session->history(), slots_[i].last_used});
      free.push_back(i);
    }
  if (free.empty()) fail("engine", "slots", "no free slot for the request");
  SlotChoice best = choose_slot(views, ids);
  best.slot = free[best.slot];
  Session& best_session = *slots_[best.slot].session;
  const int64_t shared = best.reusable;
  const bool continuation =
      best_session.length() - shared <= kContinuationSlack && best_session.can_truncate(shared);
  PrefixCache::Match cached = prefix_cache_ ? prefix_cache_->find(ids) : PrefixCache::Match{};

  if (!prefix_cache_ || (continuation && shared >= cached.common)) {
    if (best_session.truncate(shared)) return {best.slot, shared, shared > 0 ? "slot" : "", ""};
    return {best.slot, 0, "", cut_failed_note(shared, "the slot's KV")};  // truncate() reset it
  }

  // The prompt leaves the best slot's conversation early: keep their shared
  // prefix in the cache, and leave that conversation where it is.
  if (shared >= kMinCachedPrefix && shared > cached.common) {
    Session::Snapshot s = best_session.snapshot();
    if (s.state.truncate(shared)) {
      s.history.resize(static_cast<size_t>(shared));
      prefix_cache_->insert(std::move(s));
      cached = prefix_cache_->find(ids);
    }
  }
  // The request's slot: an empty one, else the least recently used.
  size_t target = free[0];
  for (size_t i : free)
    if (slots_[i].last_used < slots_[target].last_used) target = i;
  Session& session = *slots_[target].session;
  std::string note;
  if (target == best.slot && shared >= cached.common) {
    if (session.truncate(shared)) return {target, shared, shared > 0 ? "slot" : "", ""};
    note = cut_failed_note(shared, "the slot's KV");
  }
  if (cached.common > 0) {
    session.restore(*cached.snapshot);
    if (session.truncate(cached.common))
      return {target, cached.common, cached.from_disk ? "disk" : "prefix cache", note};
    note = cut_failed_note(cached.common, "the prefix cache");  // find() checked: not expected
  }
  session.reset();
  if (note.empty() && shared > cached.common && shared > 0)
    note = fmt::format("{} prompt tokens were in another conversation's slot (shorter than the {} worth caching)",
                       shared, kMinCachedPrefix);
  return {target, 0, "", note};
}

int64_t Engine::system_prefix_to_cache(const Request& request, const std::vector<int32_t>& ids) const {
  if (!prefix_cache_ || !request.messages) return 0;
  nlohmann::ordered_json system = nlohmann::ordered_json::array();
  for (const auto& m : *request.messages) {
    const bool is_system = m.is_object() && m.contains("role") && m["role"].is_string() && m["role"] == "system";
    if (!is_system) break;
    system.push_back(m);
  }
  if (system.empty() || system.size() == request.messages->size()) return 0;
  // What the template renders before the first user message's text,
  // whatever that text is: the common prefix of two renders that differ only
  // there. (Templates such as Gemma's put the system text inside the first
  // user turn, so the system messages alone would not render a prefix.)
  std::vector<int32_t> a, b;
  try {
    nlohmann::ordered_json with_a = system, with_b = system;
    with_a.push_back({{"role", "user"}, {"content", "a"}});
    with_b.push_back({{"role", "user"}, {"content", "b"}});
    a = chat_prompt_ids(*model_, with_a, request.template_extra);
    b = chat_prompt_ids(*model_, with_b, request.template_extra);
  } catch (const Error&) {
    return 0;  // the template refuses such a conversation: nothing to cache
  }
  int64_t n = common_prefix_length(a, b);
  n = std::min(n, common_prefix_length(std::span<const int32_t>(a).first(static_cast<size_t>(n)), ids));
  if (n < kMinCachedPrefix || n >= static_cast<int64_t>(ids.size()) ||
      prefix_cache_->covers(std::span<const int32_t>(ids).first(static_cast<size_t>(n))))
    return 0;
  return n;
}

bool Engine::admit(Running& run) {
  Job& job = *run.job;
  Result& r = run.result;
  run.admitted_at = now_ms();
  r.queue_ms = run.admitted_at - job.submitted_at;
  if (stop_requested(job.request)) {
    r.generation.finish_reason = "cancelled";
    end_job(job, std::move(r));
    return false;
  }
  try {
    run.prompt = prompt_of(job.request);
    const std::vector<int32_t>& ids = run.prompt.ids;
    r.prompt_tokens = static_cast<int64_t>(ids.size());
    const int64_t context = slots_[0].session->context_length();
    if (r.prompt_tokens >= context)
      fail("request", "prompt", "{} prompt tokens leave no room to generate within the context length {}",
           r.prompt_tokens, context);
    for (int32_t id : ids)
      if (id < 0 || id >= model_->spec().vocab_size)
        fail("request", "prompt", "token id {} is outside the vocabulary (0..{})", id,
             model_->spec().vocab_size - 1);

    const int64_t system_end = system_prefix_to_cache(job.request, ids);
    const ReusePlan plan = place(run.prompt.keys);
    run.slot = plan.slot;
    Slot& slot = slots_[plan.slot];
    slot.busy = true;
    r.slot = plan.slot;
    r.reused_tokens = plan.reused;
    r.reused_from = plan.from;
    r.reuse_note = plan.note;
    slot.last_used = ++clock_;
    publish_cache_usage();
    if (job.request.on_started) job.request.on_started();

    // Copies of the flag and callback: the generation may outlive the job.
    run.on_text = [this, cancel = job.request.cancel, on_text = job.request.on_text](std::string_view text) {
      if ((cancel && cancel->load()) || cancel_running_.load()) return false;
      return on_text ? on_text(text) : true;
    };
    run.done = plan.reused;
    run.cache_at = system_end > run.done ? system_end : 0;
  } catch (...) {
    end_job(job, std::current_exception());
    return false;
  }
  // With other requests generating, a long prompt goes in chunks between
  // their steps (advance_prefills); else all at once.
  const int64_t left = static_cast<int64_t>(run.prompt.ids.size()) - run.done;
  if (!running_.empty() && (left > kPrefillChunk + kPrefillTail || run.cache_at > run.done)) return true;
  try {
    // Prefill to the end of the system messages first and cache that state
    // (the same bits as one call: results never depend on the call split).
    if (run.cache_at > run.done) prefill_part(run, run.cache_at - run.done);
  } catch (...) {
    fail_running(run, std::current_exception());
    return false;
  }
  return start_generation(run);
}

void Engine::prefill_part(Running& run, int64_t n) {
  Session& session = *slots_[run.slot].session;
  const double start = now_ms();
  std::vector<EmbeddedSpan> spans;
  if (image_encoder_ && !run.prompt.images.empty()) {  // never cutting an image; its features are computed now
    n = image_safe_end(run.prompt, *image_encoder_, run.done, run.done + n) - run.done;
    spans = image_spans(run.prompt, *image_encoder_, run.job->request.images, run.done, run.done + n);
  }
  session.forward(std::span<const int32_t>(run.prompt.ids).subspan(static_cast<size_t>(run.done), static_cast<size_t>(n)),
                  LogitsWanted::Last, run.job->options.max_tokens_per_call, spans);
  run.early_prefill_seconds += (now_ms() - start) / 1000.0;
  run.prefilled_before += n;
  run.done += n;
  if (run.done == run.cache_at) {  // the end of the system messages: cache that state
    prefix_cache_->insert(session.snapshot());
    publish_cache_usage();
  }
}

bool Engine::start_generation(Running& run) {
  try {
    run.generation_at = now_ms();
    GenerateOptions options = run.job->options;
    if (image_encoder_ && !run.prompt.images.empty())
      options.media = image_spans(run.prompt, *image_encoder_, run.job->request.images, run.done,
                                  static_cast<int64_t>(run.prompt.ids.size()));
    run.generation = std::make_unique<Generation>(
        *slots_[run.slot].session, std::span<const int32_t>(run.prompt.ids).subspan(static_cast<size_t>(run.done)),
        options, run.on_text);
    run.generation->start();
  } catch (...) {
    run.generation.reset();
    fail_running(run, std::current_exception());
    return false;
  }
  tell_tokens(run);
  if (run.generation->finished()) {
    deliver(run);
    return false;
  }
  return true;
}

void Engine::advance_prefills() {
  for (auto it = running_.begin(); it != running_.end();) {
    Running& run = **it;
    if (run.generation) {
      ++it;
      continue;
    }
    bool keep = true;
    if (stop_requested(run.job->request)) {
      deliver(run);  // "cancelled"; the slot keeps the prompt's prefilled part
      keep = false;
    } else {
      try {
        const int64_t left = static_cast<int64_t>(run.prompt.ids.size()) - run.done;
        if (run.done < run.cache_at) prefill_part(run, std::min(kPrefillChunk, run.cache_at - run.done));
        else if (left > kPrefillChunk + kPrefillTail) prefill_part(run, kPrefillChunk);
        else keep = start_generation(run);
      } catch (...) {
        fail_running(run, std::current_exception());
        keep = false;
      }
    }
    it = keep ? std::next(it) : running_.erase(it);
  }
}

}  // namespace tessera::engine
