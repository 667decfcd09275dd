"""Connectors that put kvx under inference servers: vllm (vLLM's v1 KV connector)."""
