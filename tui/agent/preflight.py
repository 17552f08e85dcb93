"""The preflight mode: is the port free, and who holds memory on the service's GPUs?"""

from .nvidia import gpu_apps, gpu_uuids
from .output import emit_line
from .protocol import ANSWER_PREFLIGHT
from .sockets import port_owners


def preflight(args):
    """Is the port free, and do other processes hold memory on the service's GPUs?"""
    port = args.get("port")
    emit_line(
        ANSWER_PREFLIGHT,
        port_owners=port_owners(port) if port else [],
        gpu_apps=gpu_apps(),
        gpus=gpu_uuids(args.get("gpus") or []),
    )
    return 0
