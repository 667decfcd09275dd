#include "kv/handoff/held_blocks.h"

#include <algorithm>

#include "kv/handoff/messages/message_fields.h"

namespace kvx::kv::handoff {

void HeldBlocks::hold(std::string id, std::vector<kv::BlockExtent> extents, Clock::time_point until,
                      std::vector<LostWriter> writers) {
  held_.push_back(Entry{std::move(id), std::move(extents), until, std::move(writers)});
}

std::vector<HeldAbort> HeldBlocks::rejoined(const std::string& peer, std::uint64_t incarnation) {
  std::vector<HeldAbort> ask;
  for (Entry& e : held_) {
    for (LostWriter& w : e.writers) {
      if (w.peer != peer || w.writer.incarnation != incarnation || w.abortSent) continue;
      w.abortSent = true;
      ask.push_back({w.request, w.attempt});
    }
  }
  return ask;
}

void HeldBlocks::lost(const std::string& peer) {
  for (Entry& e : held_) {
    for (LostWriter& w : e.writers) {
      if (w.peer == peer) w.abortSent = false;
    }
  }
}

bool HeldBlocks::acknowledged(const std::string& peer, const std::string& request,
                              std::uint64_t attempt) {
  bool found = false;
  for (Entry& e : held_) {
    found = std::erase_if(e.writers,
                          [&](const LostWriter& w) {
                            return w.peer == peer && w.request == request && w.abortSent &&
                                   sameAttempt(w.attempt, attempt);
                          }) > 0 ||
            found;
  }
  return found;
}

bool HeldBlocks::superseded(const std::string& peer, const std::string& request,
                            std::uint64_t incarnation) {
  bool found = false;
  for (Entry& e : held_) {
    found = std::erase_if(e.writers,
                          [&](const LostWriter& w) {
                            return w.peer == peer && w.request == request &&
                                   w.writer.incarnation == incarnation;
                          }) > 0 ||
            found;
  }
  return found;
}

std::vector<HeldBlocks::Released> HeldBlocks::takeReleasable(Clock::time_point now) {
  const bool all = now == Clock::time_point::max();
  std::vector<Released> out;
  for (auto it = held_.begin(); it != held_.end();) {
    std::erase_if(it->writers, [](const LostWriter& w) {
      return w.writer.processEnded && w.writer.processEnded();
    });
    if (!all && (it->until > now || !it->writers.empty())) {
      ++it;
      continue;
    }
    out.push_back(Released{std::move(it->id), std::move(it->extents)});
    it = held_.erase(it);
  }
  return out;
}

std::uint64_t HeldBlocks::blocks() const {
  std::uint64_t n = 0;
  for (const Entry& e : held_) n += kv::totalBlocks(e.extents);
  return n;
}

std::vector<std::string> HeldBlocks::writers() const {
  std::vector<std::string> out;
  for (const Entry& e : held_) {
    for (const LostWriter& w : e.writers) {
      if (std::find(out.begin(), out.end(), w.peer) == out.end()) out.push_back(w.peer);
    }
  }
  return out;
}

std::uint64_t HeldBlocks::blocksOf(const std::string& peer) const {
  std::uint64_t count = 0;
  for (const Entry& e : held_) {
    if (std::any_of(e.writers.begin(), e.writers.end(),
                    [&](const LostWriter& w) { return w.peer == peer; })) {
      count += kv::totalBlocks(e.extents);
    }
  }
  return count;
}

std::uint64_t HeldBlocks::forgetWriter(const std::string& peer) {
  std::uint64_t count = 0;
  for (Entry& e : held_) {
    if (std::erase_if(e.writers, [&](const LostWriter& w) { return w.peer == peer; }) > 0) {
      count += kv::totalBlocks(e.extents);
    }
  }
  return count;
}

}  // namespace kvx::kv::handoff
