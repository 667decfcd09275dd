// kvx/kvx.h: prepared lists, transfers and notifications.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/c/c_api_boundary.h"

using kvx::c_api::copyBytes;
using kvx::c_api::copyString;
using kvx::c_api::guarded;
using kvx::c_api::nullArgument;

namespace {

// A transfer names a list's ranges by 32-bit index: a longer list could not be used.
kvx::Status checkListCount(std::string_view function, size_t count) {
  if (count <= UINT32_MAX) return kvx::Status::ok();
  return kvx::invalidArgument(std::string(function) + ": count " + std::to_string(count) +
                              " is more ranges than a list can hold (" +
                              std::to_string(UINT32_MAX) + ": transfers index them in 32 bits)");
}

std::vector<kvx::MemoryRange> rangesFrom(const kvx_range* ranges, size_t count) {
  std::vector<kvx::MemoryRange> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    out.push_back({kvx::RegionId(ranges[i].region), ranges[i].offset, ranges[i].length});
  }
  return out;
}

std::chrono::milliseconds millis(uint32_t ms) { return std::chrono::milliseconds(ms); }

}  // namespace

extern "C" {

kvx_status kvx_prepare_local_list(kvx_agent* agent, const kvx_range* ranges, size_t count,
                                  kvx_list_id* list) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (ranges == nullptr && count != 0) return nullArgument(__func__, "ranges");
  if (list == nullptr) return nullArgument(__func__, "list");
  return guarded(__func__, [&]() -> kvx::Status {
    KVX_RETURN_IF_ERROR(checkListCount(__func__, count));
    KVX_ASSIGN_OR_RETURN(kvx::ListId id, agent->agent->prepareLocalList(rangesFrom(ranges, count)));
    *list = id.value;
    return kvx::Status::ok();
  });
}

kvx_status kvx_prepare_remote_list(kvx_agent* agent, const char* peer, const kvx_range* ranges,
                                   size_t count, kvx_list_id* list) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (peer == nullptr) return nullArgument(__func__, "peer");
  if (ranges == nullptr && count != 0) return nullArgument(__func__, "ranges");
  if (list == nullptr) return nullArgument(__func__, "list");
  return guarded(__func__, [&]() -> kvx::Status {
    KVX_RETURN_IF_ERROR(checkListCount(__func__, count));
    KVX_ASSIGN_OR_RETURN(kvx::ListId id,
                         agent->agent->prepareRemoteList(peer, rangesFrom(ranges, count)));
    *list = id.value;
    return kvx::Status::ok();
  });
}

kvx_status kvx_release_list(kvx_agent* agent, kvx_list_id list) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  return guarded(__func__, [&] { return agent->agent->releaseList(kvx::ListId(list)); });
}

kvx_status kvx_make_transfer(kvx_agent* agent, kvx_transfer_op op, kvx_list_id local_list,
                             const uint32_t* local_indices, kvx_list_id remote_list,
                             const uint32_t* remote_indices, size_t count, const void* notification,
                             size_t notification_length, kvx_transfer_id* transfer) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (local_indices == nullptr && count != 0) return nullArgument(__func__, "local_indices");
  if (remote_indices == nullptr && count != 0) return nullArgument(__func__, "remote_indices");
  if (notification == nullptr && notification_length != 0) {
    return nullArgument(__func__, "notification");
  }
  if (transfer == nullptr) return nullArgument(__func__, "transfer");
  const int rawOp = kvx::c_api::rawValue(op);
  if (rawOp != KVX_READ && rawOp != KVX_WRITE) {
    return kvx::c_api::report(kvx::invalidArgument(std::string(__func__) + ": operation " +
                                                   std::to_string(rawOp) +
                                                   " is neither KVX_READ nor KVX_WRITE"));
  }
  return guarded(__func__, [&]() -> kvx::Status {
    std::optional<std::string> note;
    if (notification != nullptr) {
      note.emplace(static_cast<const char*>(notification), notification_length);
    }
    KVX_ASSIGN_OR_RETURN(kvx::TransferId id,
                         agent->agent->makeTransfer(
                             rawOp == KVX_READ ? kvx::TransferOp::kRead : kvx::TransferOp::kWrite,
                             kvx::ListId(local_list), {local_indices, count},
                             kvx::ListId(remote_list), {remote_indices, count}, std::move(note)));
    *transfer = id.value;
    return kvx::Status::ok();
  });
}

kvx_status kvx_post(kvx_agent* agent, kvx_transfer_id transfer) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  return guarded(__func__, [&] { return agent->agent->post(kvx::TransferId(transfer)); });
}

kvx_status kvx_poll(const kvx_agent* agent, kvx_transfer_id transfer, kvx_transfer_state* state,
                    kvx_status* failure) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (state == nullptr) return nullArgument(__func__, "state");
  kvx::TransferStatus polled;
  const kvx_status called = guarded(__func__, [&] {
    polled = agent->agent->poll(kvx::TransferId(transfer));
    return kvx::Status::ok();
  });
  if (called != KVX_OK) return called;
  *state = static_cast<kvx_transfer_state>(polled.state);
  const kvx_status why = kvx::c_api::report(polled.status);
  if (failure != nullptr) *failure = why;
  return KVX_OK;
}

kvx_status kvx_wait(kvx_agent* agent, kvx_transfer_id transfer, uint32_t timeout_ms) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  return guarded(__func__, [&] {
    return agent->agent->wait(kvx::TransferId(transfer), kvx::deadlineIn(millis(timeout_ms)));
  });
}

kvx_status kvx_cancel(kvx_agent* agent, kvx_transfer_id transfer) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  return guarded(__func__, [&] { return agent->agent->cancel(kvx::TransferId(transfer)); });
}

kvx_status kvx_release_transfer(kvx_agent* agent, kvx_transfer_id transfer) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  return guarded(__func__, [&] { return agent->agent->release(kvx::TransferId(transfer)); });
}

kvx_status kvx_send_notification(kvx_agent* agent, const char* peer, const void* payload,
                                 size_t length) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (peer == nullptr) return nullArgument(__func__, "peer");
  if (payload == nullptr && length != 0) return nullArgument(__func__, "payload");
  return guarded(__func__, [&] {
    std::string bytes(length == 0 ? "" : std::string(static_cast<const char*>(payload), length));
    return agent->agent->sendNotification(peer, std::move(bytes));
  });
}

kvx_status kvx_take_notification(kvx_agent* agent, uint32_t timeout_ms, char** peer,
                                 uint8_t** payload, size_t* length) {
  if (agent == nullptr) return nullArgument(__func__, "agent");
  if (peer == nullptr) return nullArgument(__func__, "peer");
  if (payload == nullptr) return nullArgument(__func__, "payload");
  if (length == nullptr) return nullArgument(__func__, "length");
  return guarded(__func__, [&]() -> kvx::Status {
    KVX_ASSIGN_OR_RETURN(kvx::Notification note,
                         agent->agent->waitNotification(kvx::deadlineIn(millis(timeout_ms))));
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(note.payload.data());
    *peer = copyString(note.peer);
    *payload = copyBytes({bytes, note.payload.size()});
    *length = note.payload.size();
    return kvx::Status::ok();
  });
}

}  // extern "C"
