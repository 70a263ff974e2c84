"""Activity tasks per second through a Python worker (poll + complete over HTTP).

    cargo run --release --example serve -- --token T --db /tmp/bench.db &
    python3 bench.py --url http://127.0.0.1:8233 --token T --tasks 500

Starts `--tasks` summarize runs, then times one ActivityWorker (one task at a time, a new
connection per request, as urllib makes them) until it has run them all, then reads each
run's result. Prints figures; checks only that every run returned the worker's answer.
"""

import argparse
import time
import uuid

from wf_client import ActivityWorker, Client


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8233")
    p.add_argument("--token")
    p.add_argument("--tasks", type=int, default=500)
    args = p.parse_args()
    wf = Client(args.url, token=args.token)
    prefix = "bench-" + uuid.uuid4().hex[:8]
    t = time.perf_counter()
    for i in range(args.tasks):
        wf.start("summarize", "%s-%d" % (prefix, i), {"title": str(i), "text": "a b c"})
    started = time.perf_counter() - t

    def summarize(task):
        return {"title": task.input["title"], "words": 3, "headline": "a b c", "by": "bench"}

    worker = ActivityWorker(wf, "python", {"summarize": summarize})
    t = time.perf_counter()
    worker.run(max_tasks=args.tasks, wait_ms=1000)
    ran = time.perf_counter() - t
    for i in range(args.tasks):
        assert wf.result("summarize", "%s-%d" % (prefix, i), timeout=30)["by"] == "bench"
    print("started %d runs in %.2f s (%.0f/s)" % (args.tasks, started, args.tasks / started))
    print("one Python worker: %d tasks in %.2f s, %.0f tasks/s (%.2f ms per poll + complete)"
          % (args.tasks, ran, args.tasks / ran, ran * 1000 / args.tasks))


if __name__ == "__main__":
    main()
