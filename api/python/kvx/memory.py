"""Where an object's bytes are: address, size, memory kind and device, taken from the object."""
from dataclasses import dataclass, field

from . import _kvx


@dataclass(frozen=True)
class Memory:
    address: int
    nbytes: int
    kind: str  # "host" or "cuda"
    device: int  # CUDA ordinal; -1 for host memory
    # A buffer export (memoryview) of the object while this is held: an object that would
    # move its bytes to grow (a bytearray) refuses to resize while an export exists.
    pin: object = field(default=None, compare=False, repr=False)


def _torch_like(obj):
    return all(hasattr(obj, a) for a in ("data_ptr", "element_size", "nelement", "is_contiguous",
                                         "device"))


def _contiguous_interface(iface, what):
    shape = tuple(iface["shape"])
    strides = iface.get("strides")
    itemsize = int(iface["typestr"][2:])
    if strides is not None:
        expected = itemsize
        for extent, stride in zip(reversed(shape), reversed(strides)):
            if extent > 1 and stride != expected:
                raise ValueError(f"the {what} is not C-contiguous: register a contiguous copy")
            expected *= extent
    count = 1
    for extent in shape:
        count *= extent
    return count * itemsize


def _device_of(obj):
    device = getattr(obj, "device", None)
    for attribute in ("id", "index"):
        if device is not None and hasattr(device, attribute):
            device = getattr(device, attribute)
    if isinstance(device, int):
        return device
    raise ValueError("an object with __cuda_array_interface__ must say its device (a `device` "
                     "attribute); or pass (address, nbytes, device)")


def describe_memory(obj):
    """The Memory of `obj`: a torch.Tensor, an object with __cuda_array_interface__ or
    __dlpack__, a numpy array or other writable buffer, or a tuple (address, nbytes, device)
    with device -1 (or None) for host memory. Raises ValueError for memory kvx cannot register
    as it is (not contiguous, read-only, on a device kvx does not move), TypeError for an
    object that is none of these."""
    if isinstance(obj, Memory):
        return obj
    if isinstance(obj, tuple):
        if len(obj) != 3:
            raise TypeError("memory as a tuple is (address, nbytes, device)")
        address, nbytes, device = obj
        device = -1 if device is None else int(device)
        return Memory(int(address), int(nbytes), "host" if device < 0 else "cuda", device)
    if _torch_like(obj):
        if not obj.is_contiguous():
            raise ValueError("the tensor is not contiguous: register tensor.contiguous() (and "
                             "keep that tensor)")
        device = obj.device
        if device.type == "cpu":
            kind, ordinal = "host", -1
        elif device.type == "cuda":
            kind, ordinal = "cuda", device.index if device.index is not None else 0
        else:
            raise ValueError(f"kvx registers CPU and CUDA tensors, not {device.type} ones")
        return Memory(obj.data_ptr(), obj.element_size() * obj.nelement(), kind, ordinal)
    if hasattr(obj, "__cuda_array_interface__"):
        iface = obj.__cuda_array_interface__
        nbytes = _contiguous_interface(iface, "array")
        return Memory(int(iface["data"][0]), nbytes, "cuda", _device_of(obj))
    if hasattr(obj, "__array_interface__"):
        iface = obj.__array_interface__
        if iface["data"][1]:
            raise ValueError("the array is read-only: kvx may write into registered memory")
        nbytes = _contiguous_interface(iface, "array")
        return Memory(int(iface["data"][0]), nbytes, "host", -1, _export(obj))
    if hasattr(obj, "__dlpack__"):
        address, nbytes, kind, device = _kvx.dlpack_memory(obj)
        return Memory(address, nbytes, kind, device)
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"kvx cannot register a {type(obj).__name__}: pass a tensor, an array, a "
                        "writable buffer or (address, nbytes, device)") from None
    if view.readonly:
        raise ValueError("the buffer is read-only: kvx may write into registered memory")
    if not view.c_contiguous:
        raise ValueError("the buffer is not C-contiguous")
    import ctypes
    address = ctypes.addressof(ctypes.c_char.from_buffer(view))
    return Memory(address, view.nbytes, "host", -1, view)


def moved_since(obj, memory):
    """Why `obj`'s bytes are no longer where `memory` (its Memory at registration) says, or
    None while they are: a torch tensor resized (resize_) or given new storage (set_) after
    registration. Objects held by a buffer export cannot move; for others nothing is known."""
    if not _torch_like(obj):
        return None
    address, nbytes = obj.data_ptr(), obj.element_size() * obj.nelement()
    if address == memory.address and nbytes >= memory.nbytes:
        return None
    return (f"its bytes were at {memory.address:#x} ({memory.nbytes} bytes) when registered, "
            f"and are now at {address:#x} ({nbytes} bytes): the tensor was resized or given "
            "other storage while registered, so peers' writes may have landed in freed memory")


def _export(obj):
    """A memoryview of `obj` (it then cannot resize while the view lives), or None."""
    try:
        return memoryview(obj)
    except TypeError:
        return None
