"""Push with chunked prefill (vllm.py, mode "push"): a prefill request whose prompt vLLM
computes over several engine steps is planned for writing in the step that computes its last
chunk, with every block it has by then, so that each layer of that step is written once it is
computed and the blocks of the earlier chunks (computed in earlier steps, on the same stream)
go with it. What a step schedules comes from vLLM's SchedulerOutput
(vllm/v1/core/sched/output.py @a9b1694): num_scheduled_tokens by request, and
scheduled_cached_reqs' new_block_ids (appended to the request's blocks, or replacing them for
a request in resumed_req_ids); the connector's build_connector_meta runs before the scheduler
adds them to request.num_computed_tokens (vllm/v1/core/sched/scheduler.py @00024d3)."""
from kvx.integrations import vllm_groups as groups


class PromptChunks:
    """Push prefill requests scheduled, not yet at their last chunk. Thread: the scheduler's."""

    def __init__(self):
        self._requests = {}  # request id -> (the Request, its block ids: a list per group)

    def add(self, request, block_groups):
        self._requests[request.request_id] = (request, groups.as_groups(block_groups))

    def drop(self, request_id):
        self._requests.pop(request_id, None)

    def due(self, scheduler_output):
        """{request id: its blocks} of the requests whose prompt this step completes (every
        one where there is no SchedulerOutput to tell)."""
        if scheduler_output is None:
            due = {rid: blocks for rid, (_, blocks) in self._requests.items()}
            self._requests.clear()
            return due
        cached = getattr(scheduler_output, "scheduled_cached_reqs", None)
        resumed = set(getattr(cached, "resumed_req_ids", None) or ())
        for request_id, new in zip(getattr(cached, "req_ids", None) or (),
                                   getattr(cached, "new_block_ids", None) or ()):
            if request_id not in self._requests or new is None:
                continue
            request, blocks = self._requests[request_id]
            new = groups.as_groups(new)
            blocks = new if request_id in resumed else [
                mine + more for mine, more in zip(blocks, new)]
            self._requests[request_id] = (request, blocks)
        scheduled = getattr(scheduler_output, "num_scheduled_tokens", None) or {}
        due = {}
        for request_id, (request, blocks) in list(self._requests.items()):
            end = int(getattr(request, "num_computed_tokens", 0) or 0) + \
                int(scheduled.get(request_id, 0))
            if end >= len(request.prompt_token_ids):
                due[request_id] = blocks
                del self._requests[request_id]
        return due
