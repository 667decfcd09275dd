"""kvx among SGLang's transfer backends, without editing SGLang.

SGLang picks a backend by `--disaggregation-transfer-backend`, checked against a list of
choices (sglang.srt.server_args), turned into its closed TransferBackend enum and looked up by
get_kv_class (sglang.srt.disaggregation.utils), which raises for a backend it does not know.
install() adds "kvx" to all three, in this process. Run SGLang's server through

    python3 -m kvx.integrations.sglang_launch <sglang.launch_server's arguments> \\
        --disaggregation-transfer-backend kvx

which installs kvx before SGLang starts, and again in every process SGLang spawns (they
import the launching module anew)."""
import enum
import sys

KVX = "kvx"
_INSTALLED = "_kvx_installed"


def _classes():
    from sglang.srt.disaggregation.base.conn import KVArgs

    from kvx.integrations.sglang import (KvxKVBootstrapServer, KvxKVManager, KvxKVReceiver,
                                         KvxKVSender)
    return {"kvargs": KVArgs, "manager": KvxKVManager, "sender": KvxKVSender,
            "receiver": KvxKVReceiver, "bootstrap_server": KvxKVBootstrapServer}


def _add_member(enumeration, name, value):
    """A member of an existing Enum: found by value (TransferBackend("kvx")), by name and in
    iteration, as members defined in the class are."""
    if value in enumeration._value2member_map_:
        return enumeration._value2member_map_[value]
    base = next((t for t in enumeration.__mro__ if t not in (enumeration, enum.Enum, object)
                 and not issubclass(t, enum.Enum)), object)
    member = object.__new__(enumeration) if base is object else base.__new__(enumeration,
                                                                               value)
    member._name_, member._value_ = name, value
    enumeration._member_map_[name] = member
    enumeration._value2member_map_[value] = member
    enumeration._member_names_.append(name)
    type.__setattr__(enumeration, name, member)
    return member


def install():
    """Adds kvx to SGLang's backends in this process (once; later calls do nothing). Raises
    ImportError where SGLang is not installed."""
    from sglang.srt import server_args
    from sglang.srt.disaggregation import utils

    if getattr(utils, _INSTALLED, False):
        return
    member = _add_member(utils.TransferBackend, "KVX", KVX)
    original = utils.get_kv_class

    def get_kv_class(transfer_backend, class_type):
        if transfer_backend is member or getattr(transfer_backend, "value",
                                                 transfer_backend) == KVX:
            return _classes().get(getattr(class_type, "value", class_type))
        return original(transfer_backend, class_type)

    # Modules that imported get_kv_class by name before this (prefill.py, decode.py, ...).
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("sglang") and \
                getattr(module, "get_kv_class", None) is original:
            module.get_kv_class = get_kv_class
    if hasattr(server_args, "add_disagg_transfer_backend_choices"):
        server_args.add_disagg_transfer_backend_choices([KVX])
    else:
        choices = getattr(server_args, "DISAGG_TRANSFER_BACKEND_CHOICES", None)
        if isinstance(choices, list) and KVX not in choices:
            choices.append(KVX)
    setattr(utils, _INSTALLED, True)
