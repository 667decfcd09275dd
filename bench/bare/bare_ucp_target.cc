#include "bench/bare/bare_ucp_target.h"

#include <poll.h>

#include <cstring>
#include <deque>
#include <functional>

#include "bench/bare/bare_ucp_node.h"
#include "bench/bare/data_pattern.h"
#include "bench/bare/process_cpu.h"
#include "bench/bare/request_loop.h"
#include "bench/bare/target_protocol.h"
#include "engine/transport/ucx/ucx_status.h"

namespace kvx::bench {
namespace {

using engine::ucx::fromUcs;

std::span<const std::uint8_t> noPayload() { return {}; }

ucs_status_t onNotify(void* arg, const void* header, std::size_t headerLength, void*, std::size_t,
                      const ucp_am_recv_param_t*) {
  const std::int64_t now = monotonicNs();
  auto* log = static_cast<std::vector<Notification>*>(arg);
  Notification n;
  n.receivedNs = now;
  if (headerLength == sizeof(n.requestId)) std::memcpy(&n.requestId, header, headerLength);
  log->push_back(n);
  return UCS_OK;
}

// How long the target waits, after kStop, for notifications still on their way.
constexpr auto kDrainGrace = std::chrono::seconds(2);

class Target {
 public:
  Target(const BareUcpOptions& options, PipeChannel& channel)
      : options_(options),
        channel_(channel),
        deadline_(deadlineIn(options.timeoutSeconds)),
        waitUntil_(deadline_) {}

  Status run() {
    KVX_RETURN_IF_ERROR(pinToCpu(options_.targetCpu));
    KVX_RETURN_IF_ERROR(setUp());
    // Measured part: until kStop, and until every notification the initiator sent is in (or
    // kDrainGrace has passed: the report then shows which are missing).
    KVX_RETURN_IF_ERROR(serve([this] {
      return stopped_ &&
             (notifications_.size() >= expected_ || std::chrono::steady_clock::now() >= waitUntil_);
    }));
    waitUntil_ = deadline_;
    const std::uint64_t cpuAtStop = processCpuNs();

    TargetReport report;
    report.cpuNs = cpuAtStop - cpuAtStart_;
    KVX_ASSIGN_OR_RETURN(report.checksum, node_->checksumBuffer());
    report.notifications = std::move(notifications_);
    KVX_RETURN_IF_ERROR(channel_.send(static_cast<std::uint32_t>(TargetMessage::kReport),
                                      encode(report), deadline_));
    // The initiator now closes its endpoint gracefully, which needs this side's progress.
    return serve([this] { return bye_; });
  }

 private:
  Status setUp() {
    KVX_ASSIGN_OR_RETURN(node_, BareUcpNode::create(options_));
    const std::uint64_t bytes = options_.effectiveBufferBytes();
    KVX_RETURN_IF_ERROR(node_->mapBuffer(bytes));
    KVX_RETURN_IF_ERROR(node_->fillBuffer(kTargetSeed));
    notifications_.reserve(1u << 16);

    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = kNotifyAmId;
    am.flags = UCP_AM_FLAG_WHOLE_MSG;
    am.cb = &onNotify;
    am.arg = &notifications_;
    KVX_RETURN_IF_ERROR(fromUcs(ucp_worker_set_am_recv_handler(node_->worker(), &am),
                                "ucp_worker_set_am_recv_handler"));

    TargetHello hello;
    hello.workerAddress = node_->workerAddress();
    KVX_ASSIGN_OR_RETURN(hello.packedKey, node_->packBufferKey());
    hello.bufferAddress = reinterpret_cast<std::uint64_t>(node_->buffer());
    hello.bufferBytes = bytes;
    return channel_.send(static_cast<std::uint32_t>(TargetMessage::kHello), encode(hello),
                         deadline_);
  }

  // Progresses until done() holds after a drain of the worker; sleeps on the event fd
  // whenever UCX has nothing to do (after spinning options.targetSpinUs).
  Status serve(const std::function<bool()>& done) {
    ucp_worker_h worker = node_->worker();
    const auto spinNs = static_cast<std::int64_t>(options_.targetSpinUs * 1e3);
    bool pipeReadable = false;
    while (true) {
      while (ucp_worker_progress(worker) != 0) {
      }
      if (options_.fixedOverhead) KVX_RETURN_IF_ERROR(acknowledgeNotifications());
      if (done()) return Status::ok();
      if (spinNs > 0 && !pipeReadable && !spinUntilIdle(worker, spinNs, pipeReadable)) {
        KVX_RETURN_IF_ERROR(checkDeadline());
        continue;
      }
      if (pipeReadable) {
        pipeReadable = false;
        KVX_RETURN_IF_ERROR(handlePipe());
        continue;
      }
      const ucs_status_t armed = ucp_worker_arm(worker);
      if (armed == UCS_ERR_BUSY) continue;
      if (armed != UCS_OK) return fromUcs(armed, "ucp_worker_arm");
      pollfd fds[2] = {{node_->eventFd(), POLLIN, 0}, {channel_.readFd(), POLLIN, 0}};
      if (::poll(fds, 2, pollTimeoutMs(std::min(waitUntil_, deadline_))) < 0 && errno != EINTR) {
        return internalError(std::string("poll on the worker's event fd: ") + std::strerror(errno));
      }
      pipeReadable = fds[1].revents != 0;
      KVX_RETURN_IF_ERROR(checkDeadline());
    }
  }

  // Polls the worker until it has been idle for `spinNs`: true then; false as soon as UCX
  // finds work or the pipe has data (checked every kPipeCheckNs).
  bool spinUntilIdle(ucp_worker_h worker, std::int64_t spinNs, bool& pipeReadable) {
    constexpr std::int64_t kPipeCheckNs = 100'000;
    std::int64_t now = monotonicNs();
    const std::int64_t until = now + spinNs;
    std::int64_t nextPipeCheck = now + kPipeCheckNs;
    while (now < until) {
      if (ucp_worker_progress(worker) != 0) return false;
      now = monotonicNs();
      if (now >= nextPipeCheck) {
        pollfd p{channel_.readFd(), POLLIN, 0};
        if (::poll(&p, 1, 0) > 0) {
          pipeReadable = true;
          return false;
        }
        nextPipeCheck = now + kPipeCheckNs;
      }
    }
    return true;
  }

  // --fixed-overhead: one kAckAmId message per notification not yet acknowledged.
  Status acknowledgeNotifications() {
    while (acknowledged_.size() < notifications_.size()) {
      // The header must stay valid until the send completes: a deque keeps its elements put.
      const std::uint64_t& id =
          acknowledged_.emplace_back(notifications_[acknowledged_.size()].requestId);
      ucp_request_param_t param{};
      const ucs_status_ptr_t sent =
          ucp_am_send_nbx(node_->endpoint(), kAckAmId, &id, sizeof(id), nullptr, 0, &param);
      if (engine::ucx::isError(sent)) {
        return fromUcs(
            engine::ucx::statusOf(sent),
            "target: ucp_am_send_nbx of the acknowledgement of request " + std::to_string(id));
      }
      if (engine::ucx::isRequest(sent)) ucp_request_free(sent);
    }
    return Status::ok();
  }

  Status checkDeadline() const {
    if (std::chrono::steady_clock::now() < deadline_) return Status::ok();
    return timedOut("target: the initiator did not finish within --timeout-s " +
                    std::to_string(options_.timeoutSeconds) + " (" + (stopped_ ? "stopped, " : "") +
                    std::to_string(notifications_.size()) + " of the notifications received)");
  }

  // Handles every message that has arrived.
  Status handlePipe() {
    while (true) {
      KVX_ASSIGN_OR_RETURN(std::optional<PipeMessage> message, channel_.tryReceive());
      if (!message) return Status::ok();
      switch (static_cast<TargetMessage>(message->type)) {
        case TargetMessage::kConnect:
          KVX_RETURN_IF_ERROR(node_->connect(message->payload, {}));
          KVX_RETURN_IF_ERROR(channel_.send(static_cast<std::uint32_t>(TargetMessage::kConnected),
                                            noPayload(), deadline_));
          break;
        case TargetMessage::kStart:
          cpuAtStart_ = processCpuNs();
          KVX_RETURN_IF_ERROR(channel_.send(static_cast<std::uint32_t>(TargetMessage::kStarted),
                                            noPayload(), deadline_));
          break;
        case TargetMessage::kStop: {
          KVX_ASSIGN_OR_RETURN(expected_, decodeStop(message->payload));
          stopped_ = true;
          waitUntil_ = std::chrono::steady_clock::now() + kDrainGrace;
          break;
        }
        case TargetMessage::kBye: bye_ = true; return Status::ok();  // EOF follows
        default:
          return protocolError("target: unexpected message type " + std::to_string(message->type) +
                               " from the initiator");
      }
    }
  }

  const BareUcpOptions& options_;
  PipeChannel& channel_;
  Deadline deadline_;
  Deadline waitUntil_;  // a sleep ends by then at the latest
  std::unique_ptr<BareUcpNode> node_;
  std::vector<Notification> notifications_;
  std::deque<std::uint64_t> acknowledged_;  // --fixed-overhead: request ids acknowledged
  std::uint64_t cpuAtStart_ = 0;
  bool stopped_ = false;
  std::uint64_t expected_ = 0;  // notifications the initiator sent, from kStop
  bool bye_ = false;
};

}  // namespace

Status runBareUcpTarget(const BareUcpOptions& options, PipeChannel& channel) {
  Status status = Target(options, channel).run();
  if (!status.isOk()) {
    const std::string text = status.toString();
    channel
        .send(static_cast<std::uint32_t>(TargetMessage::kError),
              std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()),
                                            text.size()),
              std::chrono::steady_clock::now() + std::chrono::seconds(1))
        .ignore();
  }
  return status;
}

}  // namespace kvx::bench
