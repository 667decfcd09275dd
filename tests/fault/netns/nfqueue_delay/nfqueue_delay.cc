// kvx_nfqueue_delay: holds every packet of an NFQUEUE queue for a fixed time, then accepts it.
// The fault tests use it for delay, which this kernel cannot add with tc netem:
//
//   kvx_nfqueue_delay --queue 0 --delay-ms 50 --iface veth0
//
// With --iface it also installs, while it runs, the rule that feeds the queue: raw
// PREROUTING, packets coming in on that interface (see raw_queue_rule.h). Run it on the
// receiver's side: queued on the sender's OUTPUT, the packets' skbs stay charged to the
// socket and TCP small queues throttle the sender to a trickle.
// Packets keep their order (one queue, one delay). Prints "READY" once the queue (and rule)
// are in place; on SIGTERM or SIGINT it removes the rule, accepts every packet it still
// holds, prints "HELD <count>" (packets delayed in all) and exits 0. Exit 2: bad arguments;
// 1: netlink, queue or rule errors.
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "tests/fault/netns/nfqueue_delay/raw_queue_rule.h"

namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t stopRequested = 0;

void onSignal(int) { stopRequested = 1; }

struct Held {
  std::uint32_t id;
  Clock::time_point due;
};

struct Queue {
  std::chrono::milliseconds delay{0};
  std::deque<Held> held;
  std::uint64_t total = 0;
};

int onPacket(nfq_q_handle*, nfgenmsg*, nfq_data* data, void* context) {
  auto* queue = static_cast<Queue*>(context);
  const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(data);
  if (header == nullptr) return 0;
  queue->held.push_back({ntohl(header->packet_id), Clock::now() + queue->delay});
  ++queue->total;
  return 0;
}

// Reads every queued-packet message there is, without blocking. False on a socket error;
// ENOBUFS (the kernel dropped messages, whose packets then pass: the queue is fail-open) is
// not one.
bool drain(nfq_handle* netlink, int fd, std::vector<char>& buffer) {
  for (;;) {
    const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ENOBUFS) {
        return true;
      }
      std::fprintf(stderr, "nfqueue_delay: recv failed: %s\n", std::strerror(errno));
      return false;
    }
    nfq_handle_packet(netlink, buffer.data(), static_cast<int>(n));
  }
}

// Accepts every held packet that is due (all of them with `all`). False on a netlink error.
bool release(nfq_q_handle* handle, Queue& queue, bool all) {
  const auto now = Clock::now();
  while (!queue.held.empty() && (all || queue.held.front().due <= now)) {
    if (nfq_set_verdict(handle, queue.held.front().id, NF_ACCEPT, 0, nullptr) < 0) {
      std::fprintf(stderr, "nfqueue_delay: verdict for packet %u failed: %s\n",
                   queue.held.front().id, std::strerror(errno));
      return false;
    }
    queue.held.pop_front();
  }
  return true;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "nfqueue_delay: %s\nusage: kvx_nfqueue_delay --queue N --delay-ms D [--iface IF]\n"
               "Holds every packet of NFQUEUE queue N for D ms, then accepts it. With --iface,\n"
               "queues what comes in on IF (raw PREROUTING) while it runs.\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  long queueNumber = -1;
  long delayMs = -1;
  std::string iface;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--iface") {
      iface = argv[i + 1];
      continue;
    }
    char* end = nullptr;
    const long value = std::strtol(argv[i + 1], &end, 10);
    if (end == argv[i + 1] || *end != '\0' || value < 0) return usage("bad value");
    if (flag == "--queue") {
      queueNumber = value;
    } else if (flag == "--delay-ms") {
      delayMs = value;
    } else {
      return usage(("unknown option " + flag).c_str());
    }
  }
  if (argc % 2 == 0 || queueNumber < 0 || queueNumber > 65535 || delayMs < 0) {
    return usage("--queue (0-65535) and --delay-ms (>= 0) are required");
  }

  struct sigaction action = {};
  action.sa_handler = onSignal;
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);

  Queue queue;
  queue.delay = std::chrono::milliseconds(delayMs);
  nfq_handle* netlink = nfq_open();
  if (netlink == nullptr) {
    std::fprintf(stderr, "nfqueue_delay: nfq_open failed: %s (root? nfnetlink_queue?)\n",
                 std::strerror(errno));
    return 1;
  }
  nfq_q_handle* handle =
      nfq_create_queue(netlink, static_cast<std::uint16_t>(queueNumber), &onPacket, &queue);
  if (handle == nullptr) {
    std::fprintf(stderr, "nfqueue_delay: cannot bind queue %ld: %s (another program on it?)\n",
                 queueNumber, std::strerror(errno));
    nfq_close(netlink);
    return 1;
  }
  // Metadata only: the verdict needs the packet id, not the payload. A full queue lets
  // packets through rather than dropping them, so that delay never turns into loss.
  if (nfq_set_mode(handle, NFQNL_COPY_META, 0) < 0 || nfq_set_queue_maxlen(handle, 65536) < 0 ||
      nfq_set_queue_flags(handle, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN) < 0) {
    std::fprintf(stderr, "nfqueue_delay: configuring queue %ld failed: %s\n", queueNumber,
                 std::strerror(errno));
    nfq_destroy_queue(handle);
    nfq_close(netlink);
    return 1;
  }
  const int fd = nfq_fd(netlink);
  int bufferBytes = 8 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufferBytes, sizeof bufferBytes);
  std::unique_ptr<kvx::test::netns::RawQueueRule> rule;
  if (!iface.empty()) {
    rule = std::make_unique<kvx::test::netns::RawQueueRule>(
        iface, static_cast<std::uint16_t>(queueNumber));
    if (!rule->installed()) {
      std::fprintf(stderr, "nfqueue_delay: cannot queue packets from %s: %s\n", iface.c_str(),
                   rule->error().c_str());
      nfq_destroy_queue(handle);
      nfq_close(netlink);
      return 1;
    }
  }
  std::printf("READY\n");
  std::fflush(stdout);

  std::vector<char> buffer(1 << 16);
  bool ok = true;
  while (ok && stopRequested == 0) {
    int timeoutMs = 100;
    if (!queue.held.empty()) {
      const auto wait =
          std::chrono::ceil<std::chrono::milliseconds>(queue.held.front().due - Clock::now());
      timeoutMs = static_cast<int>(std::clamp<std::int64_t>(wait.count(), 0, 100));
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, timeoutMs);
    if (ready < 0 && errno != EINTR) {
      std::fprintf(stderr, "nfqueue_delay: poll failed: %s\n", std::strerror(errno));
      ok = false;
    }
    if (ready > 0) ok = drain(netlink, fd, buffer);
    ok = ok && release(handle, queue, false);
  }
  // No new packets once the rule is gone; those already queued are let through now (a
  // queue destroyed with packets in it would drop them).
  rule.reset();
  (void)drain(netlink, fd, buffer);
  (void)release(handle, queue, true);
  std::printf("HELD %llu\n", static_cast<unsigned long long>(queue.total));
  std::fflush(stdout);
  nfq_destroy_queue(handle);
  nfq_close(netlink);
  return ok ? 0 : 1;
}
