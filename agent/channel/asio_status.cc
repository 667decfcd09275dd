#include "agent/channel/asio_status.h"

#include <string>

namespace kvx::agent::channel {

Status asioStatus(StatusCode code, std::string_view what, const boost::system::error_code& error) {
  std::string message(what);
  message += ": ";
  message += error.message();
  message += " (";
  message += error.category().name();
  message += ' ';
  message += std::to_string(error.value());
  message += ')';
  return Status(code, std::move(message));
}

}  // namespace kvx::agent::channel
