"""What PyTorch itself prints when a collective hangs: lines any engine built on
``torch.distributed`` with NCCL (SGLang, vLLM, TGI's shards) may log while its process
lives on and serves nothing.

ProcessGroupNCCL's watchdog (``torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp``) prints,
across torch versions (1.13 to 2.9), in a glog prefix such as
``[rank1]:[E1003 18:37:01.833 ProcessGroupNCCL.cpp:632] [PG 0 (default_pg) Rank 1] ``::

    Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6463, OpType=ALLREDUCE,
      NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800017 milliseconds before timing out.
    Exception (either an error or timeout) detected by watchdog at work: 6463, last
      enqueued NCCL work: 6463, last completed NCCL work: 6462.        (2.2 to 2.4)
     failure detected by watchdog at work sequence id: 6463 PG status: ...   (2.5 on)
    Timeout at NCCL work: 6463, last enqueued NCCL work: 6463, ...
    Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA
      kernels, subsequent GPU operations might run on corrupted/incomplete data.
    ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in
      monitoring enqueued collectives.
"""

from __future__ import annotations

#: The stable parts of those lines, each enough to say a collective hung.
NCCL_HANGS: tuple[str, ...] = (
    "Watchdog caught collective operation timeout",
    # "Exception (either an error or timeout) detected by watchdog at work: N" and
    # " failure detected by watchdog at work sequence id: N"
    " detected by watchdog at work",
    "Timeout at NCCL work: ",
    "Some NCCL operations have failed or timed out",
    "ProcessGroupNCCL's watchdog got stuck for",
)
