"""A Gym model server driving the recorders of Gym's newer releases (the e2e test
TestPythonEmitterGymToday). It prints its emitter's stats() as one JSON line. What the test
expects, computed by hand:

- model calls: 3 ok calls of the "policy" server over the responses dialect (latency 300, 700
  and 1500 ms; TTFT 50 and 150 ms for the two streamed ones; tokens in 100/200/300, out
  10/20/30, reasoning 5 for the first only; finish reasons stop, stop, length), 1 failed call
  (rate_limited, 40 ms, tokens and finish reason passed but never recorded), 1 call with no
  server name and no dialect (unknown/unknown, 20 ms, ok, no tokens).
- a MeteredSemaphore(2) of component "model_server", limit "max_requests", server "policy",
  with an admission timeout of 0.05 s: 2 holders, 1 waiter that times out, 1 waiter cancelled;
  at the end both slots released: limit 2, active 0, available 2, queue depth 0, 1 timeout,
  1 cancellation.
- nemo-lens: rollout durations 1000 and 4000 ms; verifications 100 ms completed, 300 ms
  failed, one completed without a duration (success rate 2/3); servers active 3, then 2.
- memory: the tree of a child process (a sleeping python3) registered as server "math" of type
  resources_servers, sampled each interval (values depend on the machine: checked for bounds).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

INTERVAL = 0.2


def main() -> None:
    import otelcol_gym
    from otelcol_gym import concurrency, gym_metrics, lens, memory

    otelcol_gym.configure(endpoint=os.environ["GYM_HTTP"], resource={"service.name": "nemo-gym/policy", "service.instance.id": "policy-0"}, interval=INTERVAL)

    def call(**kw):
        args = dict(server_name="policy", dialect="responses", latency_ms=None, ttft_ms=None, error_category=None,
                    finish_reason=None, tokens_in=None, tokens_out=None, tokens_reasoning=None)
        args.update(kw)
        gym_metrics.record_model_call(**args)

    call(latency_ms=300, ttft_ms=50, tokens_in=100, tokens_out=10, tokens_reasoning=5, finish_reason="stop")
    call(latency_ms=700, ttft_ms=150, tokens_in=200, tokens_out=20, finish_reason="stop")
    call(latency_ms=1500, tokens_in=300, tokens_out=30, finish_reason="length")
    call(latency_ms=40, error_category="rate_limited", tokens_in=999, finish_reason="stop")
    call(server_name=None, dialect=None, latency_ms=20)

    lens.record_rollout_duration(1000)
    lens.record_rollout_duration(4000)
    lens.record_verify(100, completed=True)
    lens.record_verify(300, completed=False)
    lens.record_verify(None, completed=True)
    lens.set_servers_active(3)
    lens.set_servers_active(2)

    # A server process that holds 8 MiB, registered once it does (the sampler reads at least a
    # second apart: its first sample must see the memory).
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; b = bytearray(8 << 20); b[::4096] = b'x' * len(b[::4096]); print('ready', flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        registered = memory.register_server("math", "resources_servers", child.pid)

        # Kept alive to the end: the limit of a semaphore that is gone counts 0.
        sem = concurrency.MeteredSemaphore(2, component="model_server", limit_name="max_requests", server_name="policy", admission_timeout=0.05)

        async def limits() -> None:
            await sem.acquire()
            await sem.acquire()
            timed_out = False
            try:
                async with sem:  # the admission timeout: no slot frees in time
                    pass
            except (asyncio.TimeoutError, TimeoutError):
                timed_out = True
            waiter = asyncio.ensure_future(sem.acquire())
            await asyncio.sleep(0.01)
            waiter.cancel()
            await asyncio.gather(waiter, return_exceptions=True)
            sem.release()
            sem.release()
            assert timed_out, "the third acquisition timed out"
            await asyncio.sleep(5 * INTERVAL)  # a few samples and snapshots

        asyncio.run(limits())
        ok = otelcol_gym.flush(20)
    finally:
        child.kill()
        child.wait()
    otelcol_gym.shutdown(5)
    s = otelcol_gym.stats()
    s["flushed"] = int(ok)
    s["memory_registered"] = int(registered)
    s["child_pid"] = child.pid
    print(json.dumps(s), flush=True)


if __name__ == "__main__":
    main()
