#include "registry/etcd_http.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace kvx::registry {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

constexpr std::uint64_t kMaxAnswerBytes = 16ull << 20;

// A gateway error's gRPC code ("code" in its JSON) as kvx's.
Status gatewayError(const std::string& where, unsigned httpStatus, const nlohmann::json& answer) {
  const int code = answer.is_object() && answer.contains("code") && answer["code"].is_number()
                       ? answer["code"].get<int>()
                       : -1;
  const std::string message =
      answer.is_object() && answer.contains("message") && answer["message"].is_string()
          ? answer["message"].get<std::string>()
          : answer.dump().substr(0, 300);
  const std::string text = where + ": HTTP " + std::to_string(httpStatus) + ": " + message;
  switch (code) {
    case 5: return notFound(text);
    case 7:
    case 16: return unauthenticated(text);
    case 3: return invalidArgument(text);
    case 14: return peerFailed(text);
    default: return internalError(text);
  }
}

}  // namespace

Status connectAndPost(beast::tcp_stream& stream, const EtcdEndpoint& endpoint,
                      const std::string& path, const nlohmann::json& body, const std::string& token,
                      const std::string& where) {
  beast::error_code error;
  tcp::resolver resolver(stream.get_executor());
  // Literals and localhost only (parseEtcdTarget): no resolver query leaves the host.
  const auto found = resolver.resolve(endpoint.host, std::to_string(endpoint.port),
                                      tcp::resolver::numeric_service, error);
  if (error) return peerFailed(where + ": " + error.message());
  stream.connect(found, error);
  if (error) return peerFailed(where + ": cannot connect: " + error.message());
  http::request<http::string_body> request(http::verb::post, path, 11);
  request.set(http::field::host, endpoint.host);
  request.set(http::field::content_type, "application/json");
  if (!token.empty()) request.set(http::field::authorization, token);
  request.body() = body.dump();
  request.prepare_payload();
  http::write(stream, request, error);
  if (error) return peerFailed(where + ": cannot send: " + error.message());
  return Status::ok();
}

Result<nlohmann::json> postJson(const EtcdEndpoint& endpoint, const std::string& path,
                                const nlohmann::json& body, const std::string& token,
                                Deadline deadline) {
  const std::string where = "etcd " + endpoint.host + ":" + std::to_string(endpoint.port) + path;
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return timedOut(where + ": the deadline passed");
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::duration_cast<std::chrono::milliseconds>(left));
  KVX_RETURN_IF_ERROR(connectAndPost(stream, endpoint, path, body, token, where));
  beast::error_code error;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  http::read(stream, buffer, parser, error);
  if (error == beast::error::timeout) return timedOut(where + ": no answer by the deadline");
  if (error) return peerFailed(where + ": no answer: " + error.message());
  const auto& response = parser.get();
  nlohmann::json answer = nlohmann::json::parse(response.body(), nullptr, false);
  if (answer.is_discarded()) {
    return internalError(where + ": HTTP " + std::to_string(response.result_int()) +
                         ", an answer that is not JSON: " + response.body().substr(0, 200));
  }
  if (response.result_int() / 100 != 2) return gatewayError(where, response.result_int(), answer);
  // A streamed call (lease keep-alive) answers {"result": ...} or {"error": ...}.
  if (answer.is_object() && answer.contains("error")) {
    return gatewayError(where, response.result_int(), answer["error"]);
  }
  if (answer.is_object() && answer.contains("result")) return answer["result"];
  return answer;
}

}  // namespace kvx::registry
