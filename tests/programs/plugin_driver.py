"""Records NCCL collectives from Python through the plugin face of a preloaded
libcommtrace.so, calling its ncclProfiler_v5 table as NCCL would (the layouts are those of
nccl-plugin/profiler_abi.h). For the process-life tests: without the preload there is no
table and record() records nothing, so a script behaves the same either way."""

import ctypes

_Init = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64,
                         ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                         ctypes.c_int, ctypes.c_void_p)
_StartEvent = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
_StopEvent = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class _ProfilerV5(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("init", _Init), ("start_event", _StartEvent),
                ("stop_event", _StopEvent), ("record_event_state", ctypes.c_void_p),
                ("finalize", ctypes.c_void_p)]


class _CollDescrV5(ctypes.Structure):
    """EventDescrV5 holding a Coll: the 24-byte header, then CollV5."""
    _fields_ = [("type", ctypes.c_uint64), ("parent_obj", ctypes.c_void_p), ("rank", ctypes.c_int),
                ("seq_number", ctypes.c_uint64), ("func", ctypes.c_char_p), ("send_buff", ctypes.c_void_p),
                ("recv_buff", ctypes.c_void_p), ("count", ctypes.c_size_t), ("root", ctypes.c_int),
                ("datatype", ctypes.c_char_p), ("n_channels", ctypes.c_uint8), ("n_warps", ctypes.c_uint8),
                ("algo", ctypes.c_char_p), ("proto", ctypes.c_char_p), ("parent_group", ctypes.c_void_p)]


assert ctypes.sizeof(_ProfilerV5) == 48 and ctypes.sizeof(_CollDescrV5) == 112

_COLL = 1 << 1
_mask = ctypes.c_int(0)  # NCCL's one process-wide activation mask


def record(comm_id, first_seq, n):
    """Records n AllReduce collectives on a new communicator comm_id, seq numbers from
    first_seq. False when no plugin face is loaded."""
    try:
        table = _ProfilerV5.in_dll(ctypes.CDLL(None), "ncclProfiler_v5")
    except ValueError:
        return False
    context = ctypes.c_void_p()
    if table.init(ctypes.byref(context), comm_id, ctypes.byref(_mask), b"python", 1, 1, 0, None) != 0:
        return False
    for seq in range(first_seq, first_seq + n):
        # No API parent and no channels: the Coll's record is written at its stop.
        descr = _CollDescrV5(type=_COLL, seq_number=seq, func=b"AllReduce", count=1024, datatype=b"ncclFloat32",
                             n_warps=8, algo=b"RING", proto=b"SIMPLE")
        handle = ctypes.c_void_p()
        table.start_event(context, ctypes.byref(handle), ctypes.byref(descr))
        table.stop_event(handle)
    return True
