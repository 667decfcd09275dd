#include "tests/fault/netns/nfqueue_delay/raw_queue_rule.h"

#include <linux/netfilter/x_tables.h>
#include <linux/netfilter/xt_NFQUEUE.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

namespace kvx::test::netns {
namespace {

constexpr const char* kTable = "raw";

// The entries of a table being built: each an ipt_entry followed by its target.
class TableBlob {
 public:
  std::uint32_t size() const { return static_cast<std::uint32_t>(bytes_.size()); }
  const std::vector<unsigned char>& bytes() const { return bytes_; }

  // Appends an entry with a target of `targetSize` bytes (xt_entry_target included) and
  // returns the target, zeroed, for the caller to fill in; `iface` matches the input device.
  xt_entry_target* append(std::size_t targetSize, const std::string& iface = "") {
    const std::size_t at = bytes_.size();
    const std::size_t target = XT_ALIGN(targetSize);
    bytes_.resize(at + sizeof(ipt_entry) + target, 0);
    ipt_entry entry{};
    entry.target_offset = sizeof(ipt_entry);
    entry.next_offset = static_cast<std::uint16_t>(sizeof(ipt_entry) + target);
    if (!iface.empty()) {
      std::strncpy(entry.ip.iniface, iface.c_str(), IFNAMSIZ - 1);
      std::memset(entry.ip.iniface_mask, 0xff, std::min<std::size_t>(iface.size() + 1, IFNAMSIZ));
    }
    std::memcpy(bytes_.data() + at, &entry, sizeof entry);
    auto* t = reinterpret_cast<xt_entry_target*>(bytes_.data() + at + sizeof(ipt_entry));
    t->u.user.target_size = static_cast<std::uint16_t>(target);
    return t;
  }

  // A policy (or any unconditional verdict) entry: ACCEPT.
  std::uint32_t appendAccept() {
    const std::uint32_t at = size();
    auto* target = reinterpret_cast<xt_standard_target*>(append(sizeof(xt_standard_target)));
    target->verdict = -NF_ACCEPT - 1;
    return at;
  }

  std::uint32_t appendQueue(const std::string& iface, std::uint16_t queue) {
    const std::uint32_t at = size();
    xt_entry_target* target = append(sizeof(xt_entry_target) + sizeof(xt_NFQ_info_v3), iface);
    std::strncpy(target->u.user.name, "NFQUEUE", sizeof target->u.user.name - 1);
    target->u.user.revision = 3;
    xt_NFQ_info_v3 info{};
    info.queuenum = queue;
    info.queues_total = 1;
    info.flags = NFQ_FLAG_BYPASS;
    std::memcpy(target->data, &info, sizeof info);
    return at;
  }

  // The table's terminating entry.
  void appendEnd() {
    auto* target = reinterpret_cast<xt_error_target*>(append(sizeof(xt_error_target)));
    std::strncpy(target->target.u.user.name, XT_ERROR_TARGET,
                 sizeof target->target.u.user.name - 1);
    std::strncpy(target->errorname, "ERROR", sizeof target->errorname - 1);
  }

 private:
  std::vector<unsigned char> bytes_;
};

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

// Replaces the raw table by PREROUTING [queue rule], ACCEPT; OUTPUT ACCEPT. Empty on success.
std::string replaceRawTable(const std::optional<std::pair<std::string, std::uint16_t>>& rule) {
  const int sock = ::socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
  if (sock < 0) return errnoText("raw socket for iptables (root needed)");
  ipt_getinfo info{};
  std::strncpy(info.name, kTable, sizeof info.name - 1);
  socklen_t length = sizeof info;
  if (::getsockopt(sock, IPPROTO_IP, IPT_SO_GET_INFO, &info, &length) < 0) {
    const std::string error = errnoText("IPT_SO_GET_INFO on table raw (iptable_raw in kernel?)");
    ::close(sock);
    return error;
  }
  TableBlob blob;
  const std::uint32_t preRouting = blob.size();
  if (rule) blob.appendQueue(rule->first, rule->second);
  const std::uint32_t preRoutingPolicy = blob.appendAccept();
  const std::uint32_t output = blob.appendAccept();
  blob.appendEnd();

  std::vector<unsigned char> request(sizeof(ipt_replace) + blob.size(), 0);
  // Zeroed by memset, not `{}`: value-initialising a struct that ends in a zero-length array
  // is a GNU extension clang's -Wpedantic rejects.
  ipt_replace replace;
  std::memset(&replace, 0, sizeof replace);
  std::strncpy(replace.name, kTable, sizeof replace.name - 1);
  replace.valid_hooks = info.valid_hooks;
  replace.num_entries = rule ? 4 : 3;
  replace.size = blob.size();
  replace.hook_entry[NF_INET_PRE_ROUTING] = preRouting;
  replace.underflow[NF_INET_PRE_ROUTING] = preRoutingPolicy;
  replace.hook_entry[NF_INET_LOCAL_OUT] = output;
  replace.underflow[NF_INET_LOCAL_OUT] = output;
  std::vector<xt_counters> counters(info.num_entries);
  replace.num_counters = info.num_entries;
  replace.counters = counters.data();
  std::memcpy(request.data(), &replace, sizeof replace);
  std::memcpy(request.data() + sizeof replace, blob.bytes().data(), blob.size());
  std::string error;
  if (::setsockopt(sock, IPPROTO_IP, IPT_SO_SET_REPLACE, request.data(),
                   static_cast<socklen_t>(request.size())) < 0) {
    error = errnoText("IPT_SO_SET_REPLACE on table raw (hooks 0x" +
                      std::to_string(info.valid_hooks) + ")");
  }
  ::close(sock);
  return error;
}

}  // namespace

RawQueueRule::RawQueueRule(const std::string& iface, std::uint16_t queue) {
  if (iface.empty() || iface.size() >= IFNAMSIZ) {
    error_ = "interface name '" + iface + "' must have 1 to 15 characters";
    return;
  }
  error_ = replaceRawTable(std::make_pair(iface, queue));
}

RawQueueRule::~RawQueueRule() {
  if (installed()) (void)replaceRawTable(std::nullopt);
}

}  // namespace kvx::test::netns
