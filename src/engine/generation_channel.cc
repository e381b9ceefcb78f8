#include "engine/generation_channel.h"

namespace tessera::engine {

namespace {
// How often a waiting HTTP thread looks at the future: it is set after the
// last piece of text, without a notification of its own.
constexpr auto kPollInterval = std::chrono::milliseconds(10);
}  // namespace

void GenerationChannel::attach(const std::shared_ptr<GenerationChannel>& channel, Request& request) {
  request.cancel = channel->cancel_;
  request.on_text = [channel](std::string_view text) {
    {
      std::lock_guard lock(channel->mutex_);
      channel->pieces_.emplace_back(text);
    }
    channel->cv_.notify_all();
    return !channel->cancel_->load();
  };
  request.on_started = [channel] {
    {
      std::lock_guard lock(channel->mutex_);
      channel->started_ = true;
    }
    channel->cv_.notify_all();
  };
}

void GenerationChannel::set_future(std::future<Result> result) {
  std::lock_guard lock(mutex_);
  future_ = std::move(result);
}

bool GenerationChannel::finished_locked() {
  return future_.valid() && future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

bool GenerationChannel::wait_started(const std::function<bool()>& client_gone) {
  std::unique_lock lock(mutex_);
  while (!started_ && !finished_locked()) {
    cv_.wait_for(lock, kPollInterval);
    if (client_gone && !started_ && client_gone()) {
      cancel();
      break;
    }
  }
  return started_;
}

std::optional<std::string> GenerationChannel::next_text() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!pieces_.empty()) {
      std::string text = std::move(pieces_.front());
      pieces_.pop_front();
      return text;
    }
    if (finished_locked()) return std::nullopt;
    cv_.wait_for(lock, kPollInterval);
  }
}

bool GenerationChannel::wait_finished_for(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mutex_);
  for (;;) {
    pieces_.clear();
    if (finished_locked()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    cv_.wait_for(lock, kPollInterval);
  }
}

Result GenerationChannel::result() {
  std::future<Result> f;
  {
    std::lock_guard lock(mutex_);
    f = std::move(future_);
  }
  return f.get();
}

}  // namespace tessera::engine
