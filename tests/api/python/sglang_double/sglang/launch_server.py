"""Stand-in for `python3 -m sglang.launch_server` (see ../README.md): parses the flags, starts
the disaggregation service, runs the scheduler in a spawned process that builds the backend's
manager (it registers with the bootstrap server), and reports what it built."""
import json
import multiprocessing
import sys
import urllib.request

from sglang.srt.managers.disagg_service import start_disagg_service
from sglang.srt.managers.scheduler import run_scheduler_process
from sglang.srt.server_args import parse


def main(argv):
    server_args = parse(argv)
    server = start_disagg_service(server_args)
    print("BOOTSTRAP", type(server).__module__ + "." + type(server).__name__, flush=True)
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    scheduler = context.Process(target=run_scheduler_process, args=(server_args, child))
    scheduler.start()
    print("MANAGER", parent.recv(), flush=True)
    url = (f"http://127.0.0.1:{server.port}/route?prefill_dp_rank=0&prefill_cp_rank=0"
           "&target_tp_rank=0&target_pp_rank=0")
    with urllib.request.urlopen(url, timeout=10) as answer:
        print("RANK", json.dumps(json.loads(answer.read())), flush=True)
    parent.send("done")
    scheduler.join(30)
    server.close()
    return scheduler.exitcode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
