"""Stand-in for sglang.srt.managers.scheduler (see ../../../README.md): the scheduler process's
entry point, which SGLang's launcher starts with multiprocessing's spawn."""


def run_scheduler_process(server_args, pipe):
    from sglang.srt.disaggregation import prefill
    manager = prefill.init_kv_manager(server_args, prefill.buffers())
    pipe.send(type(manager).__module__ + "." + type(manager).__name__)
    pipe.recv()  # until the parent has asked the bootstrap server
    manager.close()
