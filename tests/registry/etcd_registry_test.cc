// kvx-test-labels: multiprocess
// The registry's etcd calls against a real etcd (Debian's etcd-server, started here on free
// ports in a scratch directory): a put under a lease is listed; a watch started before sees
// the put and, when the lease is revoked, the delete; a lease left to expire is reported
// NOT_FOUND by keep-alive and its key is gone; an etcd that is killed and started again on
// the same data is watched on from the revision after the last one seen, missing no event.
// Without etcd: kvx-test-skipped.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "process/child_process.h"
#include "registry/etcd_client.h"
#include "registry/etcd_watch.h"
#include "tests/support/eventually.h"

using namespace kvx;
using namespace kvx::registry;
using namespace std::chrono_literals;
using kvx::test::eventually;

namespace {

std::uint16_t freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

struct Etcd {
  std::string dir;
  std::uint16_t client = freePort(), peer = freePort();
  std::unique_ptr<process::ChildProcess> process;

  void start() {
    const std::string url = "http://127.0.0.1:" + std::to_string(client);
    auto child = process::ChildProcess::spawn(
        "/usr/bin/etcd",
        {"--data-dir", dir, "--listen-client-urls", url, "--advertise-client-urls", url,
         "--listen-peer-urls", "http://127.0.0.1:" + std::to_string(peer), "--log-level", "error"});
    REQUIRE(child.isOk());
    process = std::make_unique<process::ChildProcess>(std::move(child).value());
  }
  EtcdTarget target() const {
    return *parseEtcdTarget("etcd://127.0.0.1:" + std::to_string(client) + "/test");
  }
};

struct Seen {
  std::mutex mutex;
  std::vector<std::pair<bool, std::string>> events;  // (deleted, key)
  std::size_t count() {
    std::lock_guard lock(mutex);
    return events.size();
  }
};

}  // namespace

TEST_CASE("the registry's etcd calls against a real etcd", "[registry]") {
  if (!std::filesystem::exists("/usr/bin/etcd")) {
    std::printf("kvx-test-skipped: no /usr/bin/etcd (Debian's etcd-server)\n");
    return;
  }
  Etcd etcd;
  etcd.dir = std::filesystem::temp_directory_path() / ("kvx-etcd-" + std::to_string(::getpid()));
  std::filesystem::remove_all(etcd.dir);
  etcd.start();
  EtcdClient client(etcd.target());
  const std::string prefix = etcd.target().agentsPrefix();
  REQUIRE(eventually([&] { return client.list(prefix, Clock::now() + 1s).isOk(); }, 20s));

  Seen seen;
  std::atomic<int> snapshots{0};
  EtcdWatch watch(client, prefix,
                  {[&](const EtcdListing&) { ++snapshots; },
                   [&](bool deleted, const EtcdEntry& entry) {
                     std::lock_guard lock(seen.mutex);
                     seen.events.emplace_back(deleted, entry.key);
                   },
                   {}});
  REQUIRE(eventually([&] { return snapshots.load() == 1; }, 10s));
  std::this_thread::sleep_for(300ms);  // the stream is open (a put before it is replayed anyway)

  auto lease = client.grantLease(30s, Clock::now() + 5s);
  REQUIRE(lease.isOk());
  REQUIRE(client.put(prefix + "a", "value-a", *lease, Clock::now() + 5s).isOk());
  REQUIRE(client.put("/elsewhere", "x", 0, Clock::now() + 5s).isOk());  // not watched
  auto listing = client.list(prefix, Clock::now() + 5s);
  REQUIRE(listing.isOk());
  REQUIRE(listing->entries.size() == 1);
  CHECK(listing->entries[0].value == "value-a");
  REQUIRE(client.keepAlive(*lease, Clock::now() + 5s).isOk());
  REQUIRE(eventually([&] { return seen.count() == 1; }, 10s));
  REQUIRE(client.revoke(*lease, Clock::now() + 5s).isOk());
  REQUIRE(eventually([&] { return seen.count() == 2; }, 10s));
  {
    std::lock_guard lock(seen.mutex);
    CHECK(seen.events[0] == std::make_pair(false, prefix + "a"));
    CHECK(seen.events[1] == std::make_pair(true, prefix + "a"));
  }

  // A lease left to expire: its key goes, and keep-alive says so.
  auto shortLease = client.grantLease(1s, Clock::now() + 5s);
  REQUIRE(shortLease.isOk());
  REQUIRE(client.put(prefix + "b", "value-b", *shortLease, Clock::now() + 5s).isOk());
  REQUIRE(eventually([&] { return seen.count() == 4; }, 15s));  // b put, then deleted
  CHECK(client.keepAlive(*shortLease, Clock::now() + 5s).code() == StatusCode::kNotFound);

  // etcd killed and started again: the watch resumes after the last revision seen.
  etcd.process->signal(SIGKILL);
  (void)etcd.process->waitExit(Clock::now() + 10s);
  CHECK(client.list(prefix, Clock::now() + 1s).status().code() != StatusCode::kOk);
  etcd.start();
  REQUIRE(eventually(
      [&] { return client.put(prefix + "c", "value-c", 0, Clock::now() + 1s).isOk(); }, 20s));
  REQUIRE(eventually([&] { return seen.count() == 5; }, 15s));
  {
    std::lock_guard lock(seen.mutex);
    CHECK(seen.events[4] == std::make_pair(false, prefix + "c"));
  }
  CHECK(snapshots.load() == 1);  // resumed, not listed again
  etcd.process.reset();
  std::filesystem::remove_all(etcd.dir);
}
