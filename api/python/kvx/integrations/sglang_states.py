"""SGLang's poll states of a transfer (sglang.srt.disaggregation.base.conn.KVPoll)."""


class KVPoll:
    Failed = 0
    Bootstrapping = 1
    WaitingForInput = 2
    Transferring = 3
    Success = 4
