/* kvx's C API (C11): the agent of kvx/agent.h for any language with a C FFI (Rust, Go,
 * Python's ctypes, ...).
 *
 * Conventions:
 *   - Every call that can fail returns a kvx_status: KVX_OK (0) or the code of the failure.
 *     The failure's message ("NOT_FOUND: unknown peer 'decode-9'") is kept for the calling
 *     thread until its next failing call: kvx_last_error(). No call aborts the process or
 *     lets a C++ exception out.
 *   - An agent is an opaque pointer from kvx_agent_create, valid until kvx_agent_destroy.
 *     Regions, lists and transfers are 64-bit ids of that agent (never 0, never reused): an id
 *     the agent does not know, or one of another agent, gets KVX_NOT_FOUND, not undefined
 *     behaviour. A NULL agent or out-pointer gets KVX_INVALID_ARGUMENT.
 *   - Strings and blobs kvx returns are allocated by kvx and freed with kvx_free.
 *   - Every wait takes a timeout in milliseconds; KVX_TIMED_OUT when it passes.
 *   - Thread safety: every call may be made from any thread, on one agent concurrently,
 *     except kvx_agent_destroy, which must be the last call on its agent.
 */
#ifndef KVX_KVX_H
#define KVX_KVX_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define KVX_C_API __attribute__((visibility("default")))
#else
#define KVX_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The values of kvx::StatusCode (kvx/status.h). */
typedef enum kvx_status {
  KVX_OK = 0,
  KVX_INVALID_ARGUMENT = 1,
  KVX_NOT_FOUND = 2,
  KVX_ALREADY_EXISTS = 3,
  KVX_FAILED_PRECONDITION = 4,
  KVX_RESOURCE_EXHAUSTED = 5,
  KVX_TIMED_OUT = 6,
  KVX_CANCELLED = 7,
  KVX_PEER_FAILED = 8,
  KVX_PROTOCOL_ERROR = 9,
  KVX_UNAUTHENTICATED = 10,
  KVX_TRANSPORT_ERROR = 11,
  KVX_UNIMPLEMENTED = 12,
  KVX_INTERNAL = 13
} kvx_status;

typedef enum kvx_memory_kind { KVX_MEMORY_HOST = 0, KVX_MEMORY_CUDA = 1 } kvx_memory_kind;
typedef enum kvx_transfer_op { KVX_READ = 0, KVX_WRITE = 1 } kvx_transfer_op;
typedef enum kvx_transfer_state {
  KVX_TRANSFER_IDLE = 0,
  KVX_TRANSFER_PENDING = 1,
  KVX_TRANSFER_DONE = 2,
  KVX_TRANSFER_FAILED = 3
} kvx_transfer_state;

typedef struct kvx_agent kvx_agent;
typedef uint64_t kvx_region_id;
typedef uint64_t kvx_list_id;
typedef uint64_t kvx_transfer_id;

/* The message of the calling thread's last failed call ("" when none); valid until that
 * thread's next failing call. */
KVX_C_API const char* kvx_last_error(void);
/* "NOT_FOUND" for KVX_NOT_FOUND; "UNKNOWN" for a value that is no code. */
KVX_C_API const char* kvx_status_name(kvx_status code);
/* Frees a string or blob kvx returned; NULL is ignored. */
KVX_C_API void kvx_free(void* pointer);

/* ---- agents ---- */

/* What an agent is made with. Zero or NULL fields take kvx's defaults (kvx/agent_options.h):
 * fill one with kvx_agent_config_init, then set what differs. */
typedef struct kvx_agent_config {
  const char* name;           /* required: unique among the agents it talks to */
  const char* listen_address; /* control channel "host:port"; NULL: "127.0.0.1:0"; "": none */
  const char* data_path;      /* "shm", "tcp" (UCX), "socket" (kvx's TCP); NULL: UCX default */
  const char* net_devices;    /* UCX_NET_DEVICES-style, or "auto"; NULL: "auto" */
  const char* auth_token;     /* shared secret (>= 16 bytes); NULL: KVX_AUTH_TOKEN or none */
  int caller_progress;        /* nonzero: no progress thread; call kvx_agent_progress */
  uint32_t connect_timeout_ms;
  uint32_t peer_timeout_ms;
  uint32_t heartbeat_interval_ms;
} kvx_agent_config;

KVX_C_API void kvx_agent_config_init(kvx_agent_config* config);
/* Starts an agent (its control channel listening, its data path open). */
KVX_C_API kvx_status kvx_agent_create(const kvx_agent_config* config, kvx_agent** agent);
/* Stops the agent: pending transfers fail, peers are told, memory is deregistered (regions
 * it allocated are freed). Sets *agent to NULL; NULL or *agent NULL does nothing. */
KVX_C_API void kvx_agent_destroy(kvx_agent** agent);
/* The control channel's address ("127.0.0.1:40123"), for peers to connect to. */
KVX_C_API kvx_status kvx_agent_listen_address(const kvx_agent* agent, char** address);
/* Makes non-blocking progress (caller_progress agents); *moved: nonzero when something
 * happened (may be NULL). */
KVX_C_API kvx_status kvx_agent_progress(kvx_agent* agent, int* moved);

/* ---- memory ---- */

/* Registers caller-owned memory (kept valid by the caller until deregistered). `device`:
 * the CUDA ordinal for KVX_MEMORY_CUDA, -1 for host memory. `exposed`: nonzero to list it in
 * the metadata peers receive (remote side of transfers). */
KVX_C_API kvx_status kvx_register_memory(kvx_agent* agent, const char* name, void* address,
                                         uint64_t length, kvx_memory_kind kind, int device,
                                         int exposed, kvx_region_id* region);
KVX_C_API kvx_status kvx_deregister_memory(kvx_agent* agent, kvx_region_id region);

/* ---- peers ---- */

/* This agent's metadata (name, data-path address, exposed regions), for a peer's
 * kvx_load_peer_metadata: *blob (free with kvx_free) of *length bytes. */
KVX_C_API kvx_status kvx_export_metadata(const kvx_agent* agent, uint8_t** blob, size_t* length);
/* Loads a peer's metadata without a control channel; *peer: its name (free with kvx_free;
 * `peer` may be NULL). */
KVX_C_API kvx_status kvx_load_peer_metadata(kvx_agent* agent, const uint8_t* blob, size_t length,
                                            char** peer);
/* Connects over the control channel to `address`, exchanging metadata both ways; *peer as
 * above. 0 timeout_ms: the agent's connect timeout. */
KVX_C_API kvx_status kvx_connect(kvx_agent* agent, const char* address, uint32_t timeout_ms,
                                 char** peer);
/* Fails the peer's pending transfers with KVX_CANCELLED and forgets it. */
KVX_C_API kvx_status kvx_disconnect(kvx_agent* agent, const char* peer);

/* ---- prepared descriptor lists and transfers ---- */

/* A byte range in a region: local regions for a local list, the peer's region ids (from its
 * metadata, see kvx_peer_region) for a remote list. */
typedef struct kvx_range {
  kvx_region_id region;
  uint64_t offset;
  uint64_t length;
} kvx_range;

/* The id of the peer's exposed region named `name` (as the peer registered it). */
KVX_C_API kvx_status kvx_peer_region(const kvx_agent* agent, const char* peer, const char* name,
                                     kvx_region_id* region);
KVX_C_API kvx_status kvx_prepare_local_list(kvx_agent* agent, const kvx_range* ranges, size_t count,
                                            kvx_list_id* list);
KVX_C_API kvx_status kvx_prepare_remote_list(kvx_agent* agent, const char* peer,
                                             const kvx_range* ranges, size_t count,
                                             kvx_list_id* list);
KVX_C_API kvx_status kvx_release_list(kvx_agent* agent, kvx_list_id list);

/* A transfer of `count` pairs: entry local_indices[i] of the local list with entry
 * remote_indices[i] of the remote list (equal lengths). `notification` (NULL: none) of
 * `notification_length` bytes is delivered to the peer after all the data is in place.
 * Not posted yet. */
KVX_C_API kvx_status kvx_make_transfer(kvx_agent* agent, kvx_transfer_op op, kvx_list_id local_list,
                                       const uint32_t* local_indices, kvx_list_id remote_list,
                                       const uint32_t* remote_indices, size_t count,
                                       const void* notification, size_t notification_length,
                                       kvx_transfer_id* transfer);
/* Posts (or reposts, once finished) a transfer. */
KVX_C_API kvx_status kvx_post(kvx_agent* agent, kvx_transfer_id transfer);
/* The transfer's state; *failure (may be NULL): the code it failed with, KVX_OK otherwise,
 * its message in kvx_last_error() when not OK. An id the agent does not know polls as
 * KVX_TRANSFER_FAILED with KVX_NOT_FOUND. */
KVX_C_API kvx_status kvx_poll(const kvx_agent* agent, kvx_transfer_id transfer,
                              kvx_transfer_state* state, kvx_status* failure);
/* Waits until the transfer finished or timeout_ms passed (KVX_TIMED_OUT: it goes on);
 * returns how it finished. */
KVX_C_API kvx_status kvx_wait(kvx_agent* agent, kvx_transfer_id transfer, uint32_t timeout_ms);
/* Cancels a pending transfer: when it returns, no further byte of it lands. */
KVX_C_API kvx_status kvx_cancel(kvx_agent* agent, kvx_transfer_id transfer);
/* Forgets a transfer (a pending one is cancelled first). */
KVX_C_API kvx_status kvx_release_transfer(kvx_agent* agent, kvx_transfer_id transfer);

/* ---- notifications ---- */

/* Returns once the payload is handed to the data path: one still queued when the agent is
 * destroyed or the peer disconnects may be dropped (kvx::Agent::sendNotification). */
KVX_C_API kvx_status kvx_send_notification(kvx_agent* agent, const char* peer, const void* payload,
                                           size_t length);
/* Takes the oldest received notification, waiting up to timeout_ms (0: only one already
 * there): *peer (free with kvx_free), *payload of *length bytes (free with kvx_free).
 * KVX_TIMED_OUT when none came. */
KVX_C_API kvx_status kvx_take_notification(kvx_agent* agent, uint32_t timeout_ms, char** peer,
                                           uint8_t** payload, size_t* length);

#ifdef __cplusplus
}
#endif

#endif /* KVX_KVX_H */
