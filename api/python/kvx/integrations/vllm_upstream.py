"""What kvx's vLLM connector (vllm.py) takes from vLLM itself when it is importable: the v1
connector base classes (vllm/distributed/kv_transfer/kv_connector/v1/base.py), with stand-ins
of the same names and the members the connector uses where vLLM is not installed, or is a
release without SupportsHMA (the hybrid allocator) or KVConnectorWorkerMetadata. Each name is
taken from vLLM on its own, so that an older vLLM's classes are never shadowed by a
stand-in (tests/api/python/vllm_base_test.py)."""

try:  # vLLM's own base classes, when vLLM is installed
    from vllm.distributed.kv_transfer.kv_connector.v1.base import (
        KVConnectorBase_V1, KVConnectorHandshakeMetadata, KVConnectorMetadata, KVConnectorRole)
except ImportError:  # stand-ins with the same names and the members this module uses
    import enum

    class KVConnectorRole(enum.Enum):
        SCHEDULER = 0
        WORKER = 1

    class KVConnectorMetadata:
        pass

    class KVConnectorHandshakeMetadata:
        pass

    class KVConnectorBase_V1:
        def __init__(self, vllm_config, role, kv_cache_config=None):
            self._connector_metadata = None
            self._vllm_config = vllm_config
            self._kv_transfer_config = vllm_config.kv_transfer_config
            self._role = role

        @property
        def role(self):
            return self._role

        def bind_connector_metadata(self, connector_metadata):
            self._connector_metadata = connector_metadata

        def clear_connector_metadata(self):
            self._connector_metadata = None

        def _get_connector_metadata(self):
            assert self._connector_metadata is not None
            return self._connector_metadata

try:  # vLLM with the hybrid allocator: a connector that moves several KV cache groups
    from vllm.distributed.kv_transfer.kv_connector.v1.base import SupportsHMA
except ImportError:
    class SupportsHMA:
        pass

try:  # newer vLLM: what workers tell the scheduler each step
    from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorWorkerMetadata
except ImportError:
    class KVConnectorWorkerMetadata:
        pass
