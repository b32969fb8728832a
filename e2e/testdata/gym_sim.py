"""A simulated Gym deployment driving the otelcol_gym emitter (the e2e test TestPythonEmitter).

Run without arguments, it starts three Gym-shaped processes, one per transport, and waits
for them; each prints its emitter's stats() as one JSON line. The counts below are what the
e2e test expects, computed by hand:

- server (HTTP, GYM_HTTP): an asyncio loop observed as "server" (tasks counted), a request
  middleware over 13 requests (10 answered 200, 2 raising -> 500 and unhandled, 1 cancelled
  before its response on /run), 4 outbound calls, 4 pool connects to policy_model (3 ok,
  1 failed), 2 queued acquisitions, the connect counter at 4, 3 startup stages
  (120 + 30.5 + 250 ms), one full GC collection.
- driver (Unix socket, GYM_UNIX): an asyncio loop observed as "driver", 10 rollouts through
  MeteredAdmission (3 at a time) and count_resident: 6 scored (rewards 1, 1, 0, 0.5 masked,
  NaN, 2), 2 failed transport_timeout, 1 failed with an unregistered kind, 1 omitted; health
  of each; sizes, output writes (1.5 ms, 1000*(i+1) bytes), one materialize of 12.5 ms.
- sandbox (TCP, GYM_TCP): 3 docker sandboxes started (1500, 2500, 3500 ms), 2 released,
  5 commands of 100 ms, 2 create retries.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import os
import subprocess
import sys

INTERVAL = 0.2


def _emitter(endpoint: str, resource: dict) -> None:
    import otelcol_gym

    otelcol_gym.configure(endpoint=endpoint, resource=resource, interval=INTERVAL, count_tasks=True)


def _done() -> None:
    import otelcol_gym

    ok = otelcol_gym.flush(20)
    otelcol_gym.shutdown(5)
    s = otelcol_gym.stats()
    s["flushed"] = int(ok)
    s["pid"] = os.getpid()
    print(json.dumps(s), flush=True)


def server() -> None:
    _emitter(os.environ["GYM_HTTP"], {"nemo.gym.server.name": "math", "nemo.gym.server.type": "resources_servers"})
    from otelcol_gym import gym_metrics as gm
    from otelcol_gym import observer as ob

    for stage, ms in (("import", 120.0), ("config", 30.5), ("uvicorn", 250.0)):
        gm.record_server_startup_stage(ms, stage, "math", "resources_servers")
    connects = {"policy_model": 0}
    gm.register_http_connection_pool_connect_counter(lambda: dict(connects))

    async def handler(route: str, fail: bool) -> str:
        await asyncio.sleep(0.01)
        if fail:
            raise RuntimeError("boom")
        return "ok"

    async def middleware(route: str, fail: bool = False) -> None:
        # What Gym's outermost middleware does with the totals.
        rc = ob.request_counts()
        assert rc is not None
        rc.in_flight += 1
        try:
            await handler(route, fail)
            rc.count_response(200)
        except asyncio.CancelledError:
            rc.count_cancellation(route, False)
            raise
        except Exception:
            rc.unhandled_exceptions += 1
            rc.count_response(500)
        finally:
            rc.in_flight -= 1

    async def outbound(i: int) -> None:
        rc = ob.request_counts()
        assert rc is not None
        rc.outbound_in_flight += 1
        try:
            connects["policy_model"] += 1
            gm.record_http_connection_pool_connect_duration(1.25, "failed" if i == 3 else "ok", "policy_model")
            await asyncio.sleep(0.01)
        finally:
            rc.outbound_in_flight -= 1

    async def main() -> None:
        async with ob.observe_event_loop("server"):
            await asyncio.gather(*(middleware("/run") for _ in range(10)), middleware("/verify", True), middleware("/verify", True))
            slow = asyncio.ensure_future(middleware("/run"))
            await asyncio.sleep(0)
            slow.cancel()
            await asyncio.gather(slow, return_exceptions=True)
            await asyncio.gather(*(outbound(i) for i in range(4)))
            gm.record_http_connection_pool_queue_duration(0.5, "per_host", "ok", "policy_model")
            gm.record_http_connection_pool_queue_duration(3.0, "total", "abandoned", "policy_model")
            gc.collect()
            await asyncio.sleep(3 * INTERVAL)

    asyncio.run(main())
    _done()


def driver() -> None:
    _emitter(os.environ["GYM_UNIX"], {})
    from otelcol_gym import gym_metrics as gm
    from otelcol_gym import observer as ob

    rewards = [1.0, 1.0, 0.0, 0.5, math.nan, 2.0]

    async def run_one(i: int, obs: ob._ProcessObserver, admission: ob.MeteredAdmission) -> None:
        async with admission:
            await asyncio.sleep(0.02)
        if i < 6:
            gm.record_rollout_completed("scored", "math")
            gm.record_rollout_reward(rewards[i], "math", i == 3)
            if i < 4:
                gm.record_rollout_health("healthy", "scored", [])
            elif i == 4:
                gm.record_rollout_health("unhealthy", "scored", ["agent_turn_hollow", "model_call_failed"])
            else:
                gm.record_rollout_health("unhealthy", "scored", ["agent_turn_hollow", "agent_turn_hollow", "not_a_check"])
        elif i < 8:
            gm.record_rollout_completed("failed", "math", "agent_request_failed", "transport_timeout", "TimeoutError")
            gm.record_rollout_health("unobserved", "failed", [])
        elif i == 8:
            gm.record_rollout_completed("failed", "math", "agent_request_failed", "weird kind", "ValueError")
        else:
            gm.record_rollout_completed("omitted", "math")
        obs.input_items.record(i + 1)
        obs.output_items.record(2 * (i + 1))
        obs.turns.record(i % 4 + 1)
        obs.tool_calls.record(i)
        obs.write_duration.record(1.5)
        obs.write_bytes.record(1000 * (i + 1))

    async def main() -> None:
        async with ob.observe_event_loop("driver"):
            obs = ob.driver_metrics()
            assert obs is not None
            admission = ob.MeteredAdmission(asyncio.Semaphore(3), obs)
            tasks = []
            for i in range(10):
                obs.driver.offered += 1
                tasks.append(asyncio.ensure_future(ob.count_resident(run_one(i, obs, admission), obs)))
            await asyncio.gather(*tasks)
            obs.materialize.record(12.5)
            await asyncio.sleep(3 * INTERVAL)

    asyncio.run(main())
    _done()


def sandbox() -> None:
    _emitter(os.environ["GYM_TCP"], {})
    from otelcol_gym import gym_metrics as gm

    for ms in (1500.0, 2500.0, 3500.0):
        gm.record_sandbox_startup(ms, "docker")
        gm.record_sandbox_active(1, "docker")
    gm.record_sandbox_create_retry("docker")
    gm.record_sandbox_create_retry("docker")
    for _ in range(5):
        gm.record_sandbox_exec_duration(100.0, "docker")
    gm.record_sandbox_active(-1, "docker")
    gm.record_sandbox_active(-1, "docker")
    _done()


ROLES = {"server": ("nemo-gym/math", server), "driver": ("nemo-gym/driver", driver), "sandbox": ("nemo-gym/sandbox", sandbox)}


def main() -> int:
    if len(sys.argv) > 1:
        ROLES[sys.argv[1]][1]()
        return 0
    procs = []
    for role, (service, _) in ROLES.items():
        env = dict(os.environ, OTEL_SERVICE_NAME=service, NEMO_GYM_OTEL_RUN_ID="e2e-run")
        procs.append((role, subprocess.Popen([sys.executable, os.path.abspath(__file__), role], env=env, stdout=subprocess.PIPE, text=True)))
    code = 0
    for role, p in procs:
        out, _ = p.communicate(timeout=120)
        print("%s %s" % (role, out.strip()), flush=True)
        code = code or p.returncode
    return code


if __name__ == "__main__":
    sys.exit(main())
