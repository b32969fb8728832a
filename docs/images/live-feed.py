# Feeds the run of docs/images/screenshots.sh: rollouts and model calls each second (events-v1,
# the gym receiver), and Gym-like spans of rollouts in flight, four of them gone quiet (OTLP, the
# flight recorder). Loopback only.
import json, os, random, time, urllib.request
random.seed(7)
EV = os.environ.get("GYM_URL", "http://127.0.0.1:24390") + "/v1/events"
OTLP = os.environ.get("OTLP_URL", "http://127.0.0.1:24318") + "/v1/traces"
RUN = "r-20261130-demo"
def post(url, body, ctype):
    req = urllib.request.Request(url, data=body.encode(), headers={"Content-Type": ctype})
    urllib.request.urlopen(req, timeout=5).read()
drv = {"event": "resource", "attributes": {"service.name": "nemo-gym/rollout-driver", "service.instance.id": RUN + "-driver-0",
       "nemo.run.id": RUN, "nemo.gym.server.name": "rollout_collection", "nemo.gym.server.type": "orchestrator", "process.pid": 3900101, "host.name": "gym-node-1"}}
pol = {"event": "resource", "attributes": {"service.name": "nemo-gym/policy_model", "service.instance.id": RUN + "-policy_model-0",
       "nemo.run.id": RUN, "nemo.gym.server.name": "policy_model", "nemo.gym.server.type": "responses_api_models", "process.pid": 3900103, "host.name": "gym-node-2"}}
kinds = ["transport_timeout", "judge_unparseable", "provider_unavailable"]
def span(i, name, stage_ns):
    return {"traceId": "%032x" % (i + 1), "spanId": "%016x" % (i + 1), "name": name, "kind": 1,
            "startTimeUnixNano": str(stage_ns), "endTimeUnixNano": str(stage_ns + 1000000),
            "attributes": [{"key": "nemo.gym.rollout.id", "value": {"stringValue": "rollout-%d" % i}},
                           {"key": "nemo.gym.server.name", "value": {"stringValue": "simple_agent"}}]}
def traces(ids, name):
    now = time.time_ns()
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "nemo-gym/simple_agent"}},
        {"key": "nemo.run.id", "value": {"stringValue": RUN}}]},
        "scopeSpans": [{"scope": {"name": "nemo_gym.telemetry"}, "spans": [span(i, name, now) for i in ids]}]}]})
# Rollouts that go quiet (they stall after 20s), and ones that keep going.
post(OTLP, traces(range(0, 4), "gym.verify"), "application/json")
for step in range(int(os.environ.get("SECONDS_TO_FEED", "150"))):
    lines = [drv]
    for _ in range(random.randint(2, 6)):
        o = random.choices(["scored", "failed", "omitted"], [8, 2, 1])[0]
        e = {"event": "rollout.completed", "outcome": o, "dispatch_name": random.choice(["math_with_judge", "code_gen"])}
        if o == "scored":
            e["reward"] = random.choice([0.0, 0.5, 1.0, 1.0])
        else:
            e["failure_kind"] = random.choice(kinds)
        lines.append(e)
    lines.append(pol)
    for _ in range(random.randint(3, 8)):
        lines.append({"event": "model_call", "server_name": "policy_model", "dialect": "responses", "outcome": "ok",
                      "duration_ms": random.uniform(500, 4000), "ttft_ms": random.uniform(80, 400),
                      "tokens": {"input": random.randint(800, 3000), "output": random.randint(100, 900), "reasoning": random.randint(0, 400)}})
    post(EV, "\n".join(json.dumps(l) for l in lines) + "\n", "application/x-ndjson")
    post(OTLP, traces(range(10, 10 + random.randint(5, 12)), "gym.model.call"), "application/json")
    time.sleep(1)
