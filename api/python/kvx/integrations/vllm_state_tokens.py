"""Which prompt tokens a model with Mamba layers moves, for kvx's vLLM connector (vllm.py).

vLLM always computes at least a prompt's last token on the decode instance, to sample from
it. Attention recomputes that token's KV in place, but a Mamba layer's state is a running
sum: applied to a state that already holds it, the last token would count twice. So, as
vLLM's NIXL connector does (nixl/scheduler.py @c8fac58, facts only), with a Mamba group:
  - the prefill instance computes all but the prompt's last token, and samples one token
    (dropped by the proxy): the state it hands on is that of the first N - 1 tokens;
  - the decode instance loads those N - 1 tokens' KV and state, and computes token N itself.
The prefill's request is shortened once (a flag in its kv_transfer_params,
`_p_side_truncated`, as NIXL names it), however often vLLM asks the connector about it
(a preempted request is asked again)."""

TRUNCATED = "_p_side_truncated"


def prompt_tokens_to_load(request, stateful):
    """The prompt tokens a decode loads from the prefill: every one, or with Mamba layers
    (`stateful`) all but the last."""
    count = len(getattr(request, "prompt_token_ids", None) or [])
    return count - 1 if stateful and count > 1 else count


def shorten_for_prefill(request):
    """A prefill request of a model with Mamba layers computes its prompt but the last
    token, and one token after it: vLLM's Request (vllm/v1/request.py) has its last prompt
    token dropped from prompt_token_ids (or prompt_embeds) and _all_token_ids,
    num_prompt_tokens one less, and max_tokens 1. Once per request."""
    params = getattr(request, "kv_transfer_params", None)
    if params is None or params.get(TRUNCATED) or request.num_prompt_tokens <= 1:
        return
    if request.prompt_token_ids is not None:
        request.prompt_token_ids.pop()
    elif getattr(request, "prompt_embeds", None) is not None:
        request.prompt_embeds = request.prompt_embeds[:-1]
    else:
        return
    request._all_token_ids.pop()
    request.num_prompt_tokens -= 1
    request.max_tokens = 1
    params[TRUNCATED] = True
