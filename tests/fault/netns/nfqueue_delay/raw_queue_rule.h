#pragma once

// RawQueueRule: the rule "raw PREROUTING -i IFACE -j NFQUEUE --queue-num N --queue-bypass" in
// the calling thread's network namespace, for as long as the object lives.
//
// This kernel has no nft "queue" expression (CONFIG_NFT_QUEUE is off) and the image has no
// iptables binary, so the rule goes in through the legacy iptables socket interface
// (IPT_SO_SET_REPLACE), which the kernel keeps. It replaces the whole raw table: meant for
// the test namespaces, whose raw table holds nothing else. The destructor puts back an
// empty raw table (ACCEPT policies). With --queue-bypass, packets pass untouched whenever no
// program listens on the queue.

#include <cstdint>
#include <string>

namespace kvx::test::netns {

class RawQueueRule {
 public:
  // Installs the rule; on failure error() says why and nothing was changed.
  RawQueueRule(const std::string& iface, std::uint16_t queue);
  ~RawQueueRule();
  RawQueueRule(const RawQueueRule&) = delete;
  RawQueueRule& operator=(const RawQueueRule&) = delete;

  bool installed() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace kvx::test::netns
