"""One worker process of a Gym server, as NeMo Gym's OpenTelemetry SDK names it: every worker
of a run has service.name nemo-gym/<server> and service.instance.id <run>-rank0, and only its
process.pid (this process's own) tells it apart. Standard library only.

    gym_worker_otlp.py URL RUN TOTAL ROUNDS

posts OTLP/HTTP JSON to URL (.../v1/metrics) ROUNDS times, 0.3 s apart, as an SDK's periodic
reader exports: the cumulative gym.rollout.completed_total TOTAL, and gym.server.memory.usage
of the server's process tree, whose data-point process.pid is the tree's root (this process's
parent), not this process. Prints this process's pid.
"""

import json
import os
import sys
import time
import urllib.request

url, run, total, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pid = os.getpid()


def s(k, v):
    return {"key": k, "value": {"stringValue": v}}


def i(k, v):
    return {"key": k, "value": {"intValue": str(v)}}


resource = {
    "attributes": [
        s("service.name", "nemo-gym/math_with_judge"),
        s("service.version", "0.2.0"),
        s("service.instance.id", run + "-rank0"),
        s("nemo.run.id", run),
        i("dl.rank", 0),
        i("dl.world_size", 1),
        s("nemo.gym.server.name", "math_with_judge"),
        s("nemo.gym.server.type", "resources_servers"),
        s("host.name", "node-w"),
        i("process.pid", pid),
        s("telemetry.sdk.name", "opentelemetry"),
        s("telemetry.sdk.language", "python"),
    ]
}
start = time.time_ns()
for r in range(rounds):
    now = time.time_ns()
    body = {
        "resourceMetrics": [
            {
                "resource": resource,
                "scopeMetrics": [
                    {
                        "scope": {"name": "nemo_gym.telemetry"},
                        "metrics": [
                            {
                                "name": "gym.rollout.completed_total",
                                "unit": "1",
                                "sum": {
                                    "aggregationTemporality": 2,
                                    "isMonotonic": True,
                                    "dataPoints": [
                                        {
                                            "attributes": [
                                                s("nemo.gym.rollout.outcome", "scored"),
                                                s("nemo.gym.rollout.dispatch.name", "math"),
                                            ],
                                            "startTimeUnixNano": str(start),
                                            "timeUnixNano": str(now),
                                            "asInt": str(total),
                                        }
                                    ],
                                },
                            },
                            {
                                "name": "gym.server.memory.usage",
                                "unit": "By",
                                "gauge": {
                                    "dataPoints": [
                                        {
                                            "attributes": [
                                                s("nemo.gym.server.name", "math_with_judge"),
                                                s("nemo.gym.server.type", "resources_servers"),
                                                i("process.pid", os.getppid()),
                                                s("memory.type", "rss"),
                                            ],
                                            "timeUnixNano": str(now),
                                            "asInt": str(total << 20),
                                        }
                                    ]
                                },
                            },
                        ],
                    }
                ],
            }
        ]
    }
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        if resp.status != 200:
            sys.exit("export: HTTP %d" % resp.status)
    if r + 1 < rounds:
        time.sleep(0.3)
print(pid)
