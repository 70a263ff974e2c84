"""The `summarize` activity of examples/serve.rs's `summarize` workflow, in Python.

    python3 worker.py --url http://127.0.0.1:8233 --token T [--fail-first] [--max-tasks N]

It takes tasks of task queue `python` over HTTP, heartbeats while it reads the text, and
answers {"title", "words", "headline", "by"}. With --fail-first it fails every first attempt
(retryably), to show the workflow's retry policy at work: the second attempt reads the first
one's last heartbeat.
"""

import argparse
import sys

from wf_client import ActivityFailure, ActivityWorker, Client


def summarize(task, fail_first=False):
    doc = task.input
    words = doc["text"].split()
    done = (task.last_heartbeat or {}).get("read", 0)
    for i in range(done, len(words), 100):
        task.heartbeat({"read": i})
    if fail_first and task.attempt == 1:
        raise ActivityFailure("the first attempt always fails (--fail-first)",
                              retryable=True, details={"read": len(words)})
    return {
        "title": doc["title"],
        "words": len(words),
        "headline": " ".join(words[:5]),
        "by": "python",
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8233")
    p.add_argument("--token")
    p.add_argument("--cafile", help="CA file for an https URL")
    p.add_argument("--task-queue", default="python")
    p.add_argument("--fail-first", action="store_true")
    p.add_argument("--max-tasks", type=int, help="stop after this many tasks")
    args = p.parse_args()
    client = Client(args.url, token=args.token, cafile=args.cafile)
    worker = ActivityWorker(client, args.task_queue,
                            {"summarize": lambda t: summarize(t, args.fail_first)})
    print("taking %r tasks of task queue %r from %s as %s"
          % (sorted(worker.activities), args.task_queue, args.url, worker.identity), flush=True)
    try:
        worker.run(max_tasks=args.max_tasks)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
