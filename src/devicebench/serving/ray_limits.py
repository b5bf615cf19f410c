"""The uvicorn engine's connection limits and loopback binding, in a local Ray's own processes.

Ray Serve has no setting for either: its HTTP proxy builds a plain `uvicorn.Config` (headers of any
size, no header timeout: 64 KB and 1 MB headers were answered 200 and a slowloris connection was
never closed), and each replica's inter-deployment gRPC server binds "[::]:0", every interface
(ray/serve/_private/replica.py). `install` runs in every worker process of the local Ray the
server starts (ray.init's `worker_process_setup_hook`): uvicorn servers there get the guarded
protocol of http_limits.py, and the replica's gRPC server the loopback address. Not used with
`--ray-address`: a cluster's replicas must be reachable from its other nodes.
"""

from __future__ import annotations

HOOK = "devicebench.serving.ray_limits.install"


def install() -> None:
    """Patch this Ray worker process: uvicorn.Config defaults to the guarded protocol, and the
    Serve replica's gRPC server binds 127.0.0.1."""
    import uvicorn

    from devicebench.serving.http_limits import (
        DEFAULT_HEADER_TIMEOUT_S,
        DEFAULT_MAX_HEADER_BYTES,
        guarded_protocol,
    )

    if not getattr(uvicorn.Config, "devicebench_limited", False):
        base = uvicorn.Config
        protocol = guarded_protocol(DEFAULT_MAX_HEADER_BYTES, DEFAULT_HEADER_TIMEOUT_S)

        class LimitedConfig(base):
            devicebench_limited = True

            def __init__(self, *args, **kwargs) -> None:
                if kwargs.get("http", "auto") == "auto":
                    kwargs["http"] = protocol
                super().__init__(*args, **kwargs)

        uvicorn.Config = LimitedConfig  # Ray's proxy looks it up when it starts its server

    from ray.serve._private import replica

    add_port = replica.add_port_to_grpc_server
    if not getattr(add_port, "devicebench_loopback", False):

        def loopback_port(server, address: str):
            return add_port(server, address.replace("[::]:", "127.0.0.1:"))

        loopback_port.devicebench_loopback = True
        replica.add_port_to_grpc_server = loopback_port
