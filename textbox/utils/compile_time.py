"""How long torch.compile has worked in this process (``--compile=True`` logs it apart from training throughput)."""
from __future__ import annotations


def compilation_seconds() -> float:
    """Wall time torch.compile has spent in this process so far (TorchDynamo's own timer)."""
    from torch._dynamo.utils import calculate_time_spent

    return float(calculate_time_spent().get("total_wall_time", 0.0))
