"""wf from Python, end to end against examples/serve.rs (standard library only).

    cargo run --release --example serve -- --token T &
    python3 demo.py --url http://127.0.0.1:8233 --token T

Drives an agent_run (start, signal, query, update, result), then a summarize run whose
activity this process runs (a first attempt that fails, a retry that completes), and prints
each answer. Exits non-zero if an answer is not the expected one.
"""

import argparse
import json
import sys
import time
import uuid

from wf_client import ActivityWorker, Client, WfError
from worker import summarize


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8233")
    p.add_argument("--token")
    p.add_argument("--cafile")
    args = p.parse_args()
    wf = Client(args.url, token=args.token, cafile=args.cafile)
    suffix = uuid.uuid4().hex[:8]

    agent = "agent-" + suffix
    started = wf.start("agent_run", agent, {"goal": "ship v1", "step": 0, "steps_per_run": 1000})
    print("started", json.dumps(started))
    wf.signal("agent_run", agent, "pause")
    # The pause holds the loop before its next step; the update plans a new goal meanwhile.
    previous = wf.update("agent_run", agent, "change_goal", ["ship v2"])
    print("change_goal answered", json.dumps(previous))
    assert previous == "ship v1", previous
    try:
        wf.update("agent_run", agent, "change_goal", ["  "])
        raise AssertionError("an empty goal was accepted")
    except WfError as e:
        print("an empty goal:", e.status, e.error)
        assert e.error == "rejected", e
    status = wf.query("agent_run", agent, "status")
    print("status", json.dumps(status))
    for _ in range(100):
        status = wf.query("agent_run", agent, "status")
        if status_field(status, "paused", 2):
            break
        time.sleep(0.05)
    assert status_field(status, "goal", 0) == "ship v2", status
    wf.signal("agent_run", agent, "resume")
    wf.signal("agent_run", agent, "cancel", signal_id="stop-" + suffix)
    result = wf.result("agent_run", agent, timeout=30)
    print("agent result", json.dumps(result))
    assert "ship v2" in result, result

    doc = "doc-" + suffix
    text = "wf runs durable workflows and this activity ran in Python " * 3
    wf.start("summarize", doc, {"title": "About wf", "text": text})
    worker = ActivityWorker(wf, "python", {"summarize": lambda t: summarize(t, fail_first=True)})
    for attempt in (1, 2):
        assert worker.run_one(wait_ms=10000), "no task for attempt %d" % attempt
    summary = wf.result("summarize", doc, timeout=30)
    print("summary", json.dumps(summary))
    assert summary["by"] == "python" and summary["words"] == len(text.split()), summary
    print("ok")
    return 0


def status_field(status, name, position):
    """A field of the status query's value: by name, or by position (structs from Rust code
    come as arrays on servers that do not name their fields)."""
    return status[name] if isinstance(status, dict) else status[position]


if __name__ == "__main__":
    sys.exit(main())
