"""Stand-in for sglang.srt.server_args (see ../../README.md): the disaggregation flags."""
import argparse
import dataclasses

DISAGG_TRANSFER_BACKEND_CHOICES = ["mooncake", "nixl", "ascend", "fake", "mori", "mooncake_tcp"]


def add_disagg_transfer_backend_choices(choices):
    DISAGG_TRANSFER_BACKEND_CHOICES.extend(c for c in choices
                                           if c not in DISAGG_TRANSFER_BACKEND_CHOICES)


@dataclasses.dataclass
class ServerArgs:
    host: str = "127.0.0.1"
    tp_size: int = 1
    dp_size: int = 1
    pp_size: int = 1
    nnodes: int = 1
    dist_init_addr: str = None
    enable_dp_attention: bool = False
    kv_cache_dtype: str = "auto"
    disaggregation_mode: str = "null"
    disaggregation_transfer_backend: str = "mooncake"
    disaggregation_bootstrap_port: int = 8998


def parse(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--disaggregation-mode", default="null",
                        choices=["null", "prefill", "decode"])
    parser.add_argument("--disaggregation-transfer-backend", default="mooncake",
                        choices=DISAGG_TRANSFER_BACKEND_CHOICES)
    parser.add_argument("--disaggregation-bootstrap-port", type=int, default=8998)
    args = parser.parse_args(argv)
    return ServerArgs(host=args.host, disaggregation_mode=args.disaggregation_mode,
                      disaggregation_transfer_backend=args.disaggregation_transfer_backend,
                      disaggregation_bootstrap_port=args.disaggregation_bootstrap_port)
