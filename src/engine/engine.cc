#include "engine/engine.h"

#include <chrono>

#include "convert/bundle_cache.h"
#include "engine/slot_choice.h"
#include "runtime/chat.h"

namespace tessera::engine {

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

QueueFull::QueueFull(size_t capacity)
    : Error("engine", "queue", fmt::format("{} requests are already waiting; try again later", capacity)) {}

std::unique_ptr<Engine> Engine::load(const std::string& name_or_path, const EngineOptions& options) {
  return std::make_unique<Engine>(load_model_for_running(name_or_path, options.load, options.reference), options);
}

Engine::Engine(std::unique_ptr<Model> model, const EngineOptions& options)
    : model_(std::move(model)), options_(options) {
  if (options_.slots < 1) fail("options", "slots", "must be at least 1, got {}", options_.slots);
  if (options_.queue_capacity < 1)
    fail("options", "queue_capacity", "must be at least 1, got {}", options_.queue_capacity);
  if (options_.context_length < 0)
    fail("options", "context_length", "must be >= 0 (0: the model's), got {}", options_.context_length);
  for (int i = 0; i < options_.slots; ++i)
    slots_.push_back(Slot{std::make_unique<Session>(*model_, options_.context_length), 0});
  scheduler_ = std::thread([this] { scheduler_loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  scheduler_.join();
}

std::future<Result> Engine::submit(Request request) {
  const int given = !request.prompt_ids.empty() + request.prompt.has_value() + request.messages.has_value();
  if (given != 1) fail("request", "prompt", "give exactly one of prompt_ids, prompt and messages (got {})", given);
  if (request.messages && (!request.messages->is_array() || request.messages->empty()))
    fail("request", "messages", "must be a non-empty array of messages");
  auto job = std::make_unique<Job>();
  job->options = make_generate_options(request.settings);
  job->request = std::move(request);
  job->submitted_at = now_ms();
  std::future<Result> result = job->promise.get_future();
  {
    std::lock_guard lock(queue_mutex_);
    if (stopping_) fail("engine", "queue", "the engine is stopping");
    if (queue_.size() >= static_cast<size_t>(options_.queue_capacity)) throw QueueFull(queue_.size());
    queue_.push_back(std::move(job));
  }
  queue_cv_.notify_one();
  return result;
}

Result Engine::run(Request request) { return submit(std::move(request)).get(); }

void Engine::reset() {
  std::lock_guard lock(run_mutex_);
  for (Slot& s : slots_) {
    s.session->reset();
    s.last_used = 0;
  }
}

size_t Engine::queued() const {
  std::lock_guard lock(queue_mutex_);
  return queue_.size();
}

void Engine::scheduler_loop() {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock lock(queue_mutex_);
      queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) {
        for (auto& waiting : queue_)
          waiting->promise.set_exception(std::make_exception_ptr(Error("engine", "queue", "the engine stopped")));
        queue_.clear();
        return;
      }
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    // One request at a time: a batched step over every running request would
    // take the jobs here instead, prefill each on its slot and then advance
    // them together one token per step.
    try {
      job->promise.set_value(execute(*job));
    } catch (...) {
      job->promise.set_exception(std::current_exception());
    }
  }
}

std::vector<int32_t> Engine::prompt_ids(const Request& request) const {
  if (!request.prompt_ids.empty()) return request.prompt_ids;
  std::vector<int32_t> ids = request.messages ? chat_prompt_ids(*model_, *request.messages)
                                              : model_->require_tokenizer().encode(*request.prompt, true);
  if (ids.empty()) fail("request", "prompt", "the prompt has no tokens");
  return ids;
}

Result Engine::execute(Job& job) {
  std::lock_guard lock(run_mutex_);
  Result r;
  r.queue_ms = now_ms() - job.submitted_at;
  const auto& cancel = job.request.cancel;
  if (cancel && cancel->load()) {
    r.generation.finish_reason = "cancelled";
    return r;
  }
  const std::vector<int32_t> ids = prompt_ids(job.request);
  r.prompt_tokens = static_cast<int64_t>(ids.size());
  const int64_t context = slots_[0].session->context_length();
  if (r.prompt_tokens >= context)
    fail("request", "prompt", "{} prompt tokens leave no room to generate within the context length {}",
         r.prompt_tokens, context);

  for (int32_t id : ids)
    if (id < 0 || id >= model_->spec().vocab_size)
      fail("request", "prompt", "token id {} is outside the vocabulary (0..{})", id, model_->spec().vocab_size - 1);

  std::vector<SlotView> views;
  for (const Slot& s : slots_) views.push_back(SlotView{s.session->history(), s.last_used});
  const SlotChoice choice = choose_slot(views, ids);
  Slot& slot = slots_[choice.slot];
  r.slot = choice.slot;
  r.reused_tokens = choice.reusable;
  if (!slot.session->truncate(choice.reusable)) {
    // The session reset itself: everything is prefilled again. Say so.
    r.reuse_note = fmt::format(
        "{} prompt tokens were in the slot's KV, but a sliding-window layer no longer holds what position {} "
        "needs, so the whole prompt was prefilled",
        choice.reusable, choice.reusable);
    r.reused_tokens = 0;
  }
  slot.last_used = ++clock_;
  if (job.request.on_started) job.request.on_started();

  const auto& on_text = job.request.on_text;
  auto forward_text = [&](std::string_view text) {
    if (cancel && cancel->load()) return false;
    return on_text ? on_text(text) : true;
  };
  try {
    r.generation = generate(*slot.session, std::span<const int32_t>(ids).subspan(r.reused_tokens), job.options,
                            forward_text);
  } catch (...) {
    // generate() changes nothing when it refuses the prompt, but a failure
    // mid-way leaves the slot's history unknown: drop it.
    slot.session->reset();
    slot.last_used = 0;
    throw;
  }
  return r;
}

}  // namespace tessera::engine
