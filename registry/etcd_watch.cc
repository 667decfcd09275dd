#include "registry/etcd_watch.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "registry/etcd_http.h"

namespace kvx::registry {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr auto kAttemptWait = std::chrono::seconds(5);
constexpr auto kFirstBackoff = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::milliseconds(2000);
constexpr auto kPollSlice = std::chrono::milliseconds(100);  // how soon a stop is seen
constexpr std::size_t kMaxLineBytes = 16u << 20;

}  // namespace

EtcdWatch::EtcdWatch(EtcdClient& client, std::string prefix, Handlers handlers)
    : client_(client),
      prefix_(std::move(prefix)),
      handlers_(std::move(handlers)),
      thread_([this] { run(); }) {}

EtcdWatch::~EtcdWatch() {
  {
    sync::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool EtcdWatch::sleepUnlessStopped(std::chrono::milliseconds delay) {
  sync::UniqueLock lock(mutex_);
  return !wake_.wait_for(lock.native(), delay, [this] { return stopping_.load(); });
}

void EtcdWatch::run() {
  auto backoff = kFirstBackoff;
  while (!stopping_) {
    if (!listed_) {
      auto listing = client_.list(prefix_, Clock::now() + kAttemptWait);
      if (!listing.isOk()) {
        if (handlers_.onConnection) handlers_.onConnection(false, listing.status());
        if (!sleepUnlessStopped(backoff)) return;
        backoff = std::min(backoff * 2, kMaxBackoff);
        continue;
      }
      revision_ = listing->revision;
      listed_ = true;
      if (handlers_.onSnapshot) handlers_.onSnapshot(*listing);
    }
    const Status ended = stream();
    if (stopping_) return;
    if (handlers_.onConnection) handlers_.onConnection(false, ended);
    if (!sleepUnlessStopped(backoff)) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

Status EtcdWatch::stream() {
  KVX_ASSIGN_OR_RETURN(auto where, client_.streamTarget(Clock::now() + kAttemptWait));
  const auto& [endpoint, token] = where;
  boost::asio::io_context io;
  beast::tcp_stream socket(io);
  socket.expires_after(kAttemptWait);
  const nlohmann::json create = {{"create_request",
                                  {{"key", toBase64(prefix_)},
                                   {"range_end", toBase64(prefixEnd(prefix_))},
                                   {"start_revision", std::to_string(revision_.load() + 1)}}}};
  KVX_RETURN_IF_ERROR(connectAndPost(socket, endpoint, "/v3/watch", create, token, "etcd watch"));

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  std::string& body = parser.get().body();
  std::optional<Status> ended;
  bool reading = false;
  auto handleLines = [&]() -> std::optional<Status> {
    std::size_t start = 0;
    for (std::size_t end; (end = body.find('\n', start)) != std::string::npos; start = end + 1) {
      const nlohmann::json line =
          nlohmann::json::parse(body.substr(start, end - start), nullptr, false);
      if (line.is_discarded()) return protocolError("etcd watch: a line that is not JSON");
      if (line.contains("error")) {
        return peerFailed("etcd watch: " + line["error"].dump().substr(0, 300));
      }
      const nlohmann::json& result = line.value("result", nlohmann::json::object());
      if (jsonInt(result, "compact_revision").valueOr(0) > 0) {
        listed_ = false;  // the revision asked for is gone: list again
        return peerFailed("etcd watch: revision " + std::to_string(revision_.load() + 1) +
                          " was compacted; listing again");
      }
      if (result.value("canceled", false)) return peerFailed("etcd watch: cancelled by etcd");
      if (result.value("created", false) && handlers_.onConnection) {
        handlers_.onConnection(true, Status::ok());
      }
      for (const nlohmann::json& event : result.value("events", nlohmann::json::array())) {
        const nlohmann::json& kv = event.value("kv", nlohmann::json::object());
        EtcdEntry entry;
        auto key = fromBase64(kv.value("key", ""));
        auto value = fromBase64(kv.value("value", ""));
        if (!key.isOk() || !value.isOk()) continue;
        entry.key = std::move(key).value();
        entry.value = std::move(value).value();
        entry.modRevision = jsonInt(kv, "mod_revision").valueOr(0);
        if (entry.modRevision <= revision_.load()) continue;  // seen (a reopened stream)
        revision_ = entry.modRevision;
        if (handlers_.onEvent) handlers_.onEvent(event.value("type", "PUT") == "DELETE", entry);
      }
    }
    body.erase(0, start);
    if (body.size() > kMaxLineBytes) return protocolError("etcd watch: a line above 16 MiB");
    return std::nullopt;
  };
  std::function<void()> readMore = [&] {
    reading = true;
    socket.expires_never();
    http::async_read_some(socket, buffer, parser, [&](beast::error_code e, std::size_t) {
      reading = false;
      if (e) {
        ended = peerFailed("etcd watch: the stream broke: " + e.message());
        return;
      }
      if (parser.is_header_done() && parser.get().result_int() / 100 != 2) {
        ended = peerFailed("etcd watch: HTTP " + std::to_string(parser.get().result_int()));
        return;
      }
      if (auto stop = handleLines()) {
        ended = *stop;
        return;
      }
      if (parser.is_done()) {
        ended = peerFailed("etcd watch: etcd ended the stream");
        return;
      }
      readMore();
    });
  };
  readMore();
  while (!ended && !stopping_) io.run_for(kPollSlice);
  if (reading) {
    socket.cancel();
    io.run_for(kPollSlice);
  }
  return ended.value_or(Status::ok());
}

}  // namespace kvx::registry
