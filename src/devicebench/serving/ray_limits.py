"""The uvicorn engine's connection limits and loopback binding, in a local Ray's own processes.

Ray Serve has no setting for these: its HTTP proxy builds a plain `uvicorn.Config` (headers of any
size, no header or body clock, no cap per client or in all: 64 KB and 1 MB headers were answered
200 and a slowloris connection was never closed), reads every request body into a queue for its
replica whatever the replica does with it (17.6 MB of a chunked body were taken before the
replica's 413), and each replica's inter-deployment gRPC server binds "[::]:0", every interface
(ray/serve/_private/replica.py). `install` runs in every worker process of the local Ray the
server starts (ray.init's `worker_process_setup_hook`, the limits in the `env_vars` beside it):
uvicorn servers there get the guarded protocol of http_limits.py with the server's own limits,
and the replica's gRPC server the loopback address. Not used with `--ray-address`: a cluster's
replicas must be reachable from its other nodes.
"""

from __future__ import annotations

import argparse
import json
import os

HOOK = "devicebench.serving.ray_limits.install"
LIMITS_VARIABLE = "DEVICEBENCH_HTTP_LIMITS"
BODY_MARGIN_BYTES = 64 * 1024  # the replica refuses a long body with its reason; the proxy, beyond


def limits_of(args: argparse.Namespace) -> dict[str, float | int]:
    """The proxy's limits from the server's options (http_limits.add_limit_arguments)."""
    return {
        "max_header_bytes": args.max_header_bytes,
        "header_timeout_s": args.header_timeout_s,
        "body_timeout_s": args.body_timeout_s,
        "max_per_client": args.max_connections_per_client,
        "max_body_bytes": args.max_body_bytes + BODY_MARGIN_BYTES,
        "limit_concurrency": args.max_concurrency,
    }


def runtime_env(args: argparse.Namespace) -> dict[str, object]:
    """ray.init's runtime_env: the hook, and the limits it reads."""
    return {
        "worker_process_setup_hook": HOOK,
        "env_vars": {LIMITS_VARIABLE: json.dumps(limits_of(args))},
    }


def install() -> None:
    """Patch this Ray worker process: uvicorn.Config defaults to the guarded protocol and a cap
    on connections, and the Serve replica's gRPC server binds 127.0.0.1."""
    import uvicorn

    from devicebench.serving.http_limits import (
        DEFAULT_HEADER_TIMEOUT_S,
        DEFAULT_MAX_HEADER_BYTES,
        guarded_protocol,
    )

    limits = {
        "max_header_bytes": DEFAULT_MAX_HEADER_BYTES,
        "header_timeout_s": DEFAULT_HEADER_TIMEOUT_S,
    }
    limits |= json.loads(os.environ.get(LIMITS_VARIABLE, "{}"))
    concurrency = limits.pop("limit_concurrency", None)
    if not getattr(uvicorn.Config, "devicebench_limited", False):
        base = uvicorn.Config
        protocol = guarded_protocol(**limits)

        class LimitedConfig(base):
            devicebench_limited = True

            def __init__(self, *args, **kwargs) -> None:
                if kwargs.get("http", "auto") == "auto":
                    kwargs["http"] = protocol
                    kwargs.setdefault("limit_concurrency", concurrency)
                super().__init__(*args, **kwargs)

        uvicorn.Config = LimitedConfig  # Ray's proxy looks it up when it starts its server

    from ray.serve._private import replica

    add_port = replica.add_port_to_grpc_server
    if not getattr(add_port, "devicebench_loopback", False):

        def loopback_port(server, address: str):
            return add_port(server, address.replace("[::]:", "127.0.0.1:"))

        loopback_port.devicebench_loopback = True
        replica.add_port_to_grpc_server = loopback_port
