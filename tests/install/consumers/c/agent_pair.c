/* An installed-package consumer in C11: two kvx agents through the C API, the second loading
 * the first's metadata, move 1 MiB with a prepared-list transfer and a notification; every
 * byte is compared. Exits 0 and prints "kvx C consumer: OK" when all of it worked. */
#include <kvx/kvx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KBYTES (1u << 20)

static int failed(const char* what, kvx_status status) {
  fprintf(stderr, "kvx C consumer: %s: %s (%s)\n", what, kvx_last_error(), kvx_status_name(status));
  return 1;
}

static kvx_status make_agent(const char* name, kvx_agent** agent) {
  kvx_agent_config config;
  kvx_agent_config_init(&config);
  config.name = name;
  config.listen_address = "";
  config.data_path = "shm";
  return kvx_agent_create(&config, agent);
}

int main(void) {
  unsigned char* source = malloc(KBYTES);
  unsigned char* target = calloc(KBYTES, 1);
  kvx_agent* owner = NULL;
  kvx_agent* mover = NULL;
  kvx_region_id target_region = 0, source_region = 0, remote_region = 0;
  kvx_list_id local_list = 0, remote_list = 0;
  kvx_transfer_id transfer = 0;
  uint8_t* blob = NULL;
  size_t blob_length = 0;
  char* peer = NULL;
  const uint32_t index = 0;
  kvx_status s;
  if (source == NULL || target == NULL) return 1;
  for (size_t i = 0; i < KBYTES; ++i) source[i] = (unsigned char)(i * 13 + 1);

  if ((s = make_agent("c-owner", &owner)) != KVX_OK) return failed("create owner", s);
  if ((s = make_agent("c-mover", &mover)) != KVX_OK) return failed("create mover", s);
  if ((s = kvx_register_memory(owner, "target", target, KBYTES, KVX_MEMORY_HOST, -1, 1,
                               &target_region)) != KVX_OK) {
    return failed("register target", s);
  }
  if ((s = kvx_register_memory(mover, "source", source, KBYTES, KVX_MEMORY_HOST, -1, 0,
                               &source_region)) != KVX_OK) {
    return failed("register source", s);
  }
  if ((s = kvx_export_metadata(owner, &blob, &blob_length)) != KVX_OK) return failed("export", s);
  if ((s = kvx_load_peer_metadata(mover, blob, blob_length, &peer)) != KVX_OK) {
    return failed("load", s);
  }
  kvx_free(blob);
  if ((s = kvx_peer_region(mover, peer, "target", &remote_region)) != KVX_OK) {
    return failed("peer region", s);
  }
  {
    const kvx_range local = {source_region, 0, KBYTES};
    const kvx_range remote = {remote_region, 0, KBYTES};
    if ((s = kvx_prepare_local_list(mover, &local, 1, &local_list)) != KVX_OK) {
      return failed("local list", s);
    }
    if ((s = kvx_prepare_remote_list(mover, peer, &remote, 1, &remote_list)) != KVX_OK) {
      return failed("remote list", s);
    }
  }
  if ((s = kvx_make_transfer(mover, KVX_WRITE, local_list, &index, remote_list, &index, 1, NULL, 0,
                             &transfer)) != KVX_OK) {
    return failed("make transfer", s);
  }
  if ((s = kvx_post(mover, transfer)) != KVX_OK) return failed("post", s);
  if ((s = kvx_wait(mover, transfer, 10000)) != KVX_OK) return failed("wait", s);
  if (memcmp(source, target, KBYTES) != 0) {
    fprintf(stderr, "kvx C consumer: the bytes differ\n");
    return 1;
  }
  if ((s = kvx_post(mover, transfer + 100)) != KVX_NOT_FOUND) return failed("unknown id", s);
  kvx_free(peer);
  kvx_agent_destroy(&mover);
  kvx_agent_destroy(&owner);
  free(source);
  free(target);
  printf("kvx C consumer: OK\n");
  return 0;
}
