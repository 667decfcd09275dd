// pair_transfer: two kvx agents, one buffer each, every byte moved and verified.
//   pair_transfer --bytes 1G --segment 32K --op write|read --transport shm|tcp
#include "examples/pair_transfer/initiator.h"
#include "examples/pair_transfer/options.h"
#include "examples/pair_transfer/target.h"

int main(int argc, char** argv) {
  const pair_transfer::Options options = pair_transfer::parseOptions(argc, argv);
  if (options.role == "target") return pair_transfer::runTarget(options);
  return pair_transfer::runInitiator(options);
}
