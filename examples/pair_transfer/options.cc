#include "examples/pair_transfer/options.h"

#include <CLI/CLI.hpp>

namespace pair_transfer {

Options parseOptions(int argc, char** argv) {
  Options o;
  CLI::App app{
      "pair_transfer: moves N bytes between two kvx agents in segments of S, verifies every "
      "byte and prints GB/s. By default it starts its own target process."};
  app.add_option("--role", o.role, "initiator (default) or target")
      ->check(CLI::IsMember({"initiator", "target"}));
  app.add_option("--op", o.op, "write (push) or read (pull)")
      ->check(CLI::IsMember({"write", "read"}));
  app.add_option("--transport", o.transport, "UCX transport: shm or tcp")
      ->check(CLI::IsMember({"shm", "tcp"}));
  app.add_option("--bytes", o.bytes, "bytes to move, e.g. 1G")->transform(CLI::AsSizeValue(false));
  app.add_option("--segment", o.segment, "descriptor size, e.g. 32K")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--batch", o.batch, "bytes per transfer request, e.g. 64M")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--in-flight", o.inFlight, "transfer requests in flight")
      ->check(CLI::Range(1, 64));
  app.add_option("--order", o.order,
                 "segment order: shuffled (every segment its own operation) or sequential "
                 "(adjacent segments coalesce)")
      ->check(CLI::IsMember({"shuffled", "sequential"}));
  app.add_flag("--allocate", o.allocate,
               "let the agents allocate the buffers (UCX-allocated memory: one-sided on shm)");
  app.add_option("--connect", o.connect, "initiator: control address of a running target");
  app.add_option("--listen", o.listen, "target: control address to listen on");
  app.add_option("--timeout", o.timeoutSeconds, "deadline for the whole run, in seconds");
  app.add_option("--seed", o.seed, "seed of the verification pattern");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  if (o.segment == 0 || o.bytes == 0 || o.bytes % o.segment != 0) {
    std::fprintf(stderr, "--bytes (%llu) must be a non-zero multiple of --segment (%llu)\n",
                 static_cast<unsigned long long>(o.bytes),
                 static_cast<unsigned long long>(o.segment));
    std::exit(2);
  }
  if (o.batch < o.segment) o.batch = o.segment;
  return o;
}

}  // namespace pair_transfer
