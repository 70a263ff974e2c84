"""A small client of wf's HTTP service, standard library only (urllib, json).

Client: start a run, signal it, query it, update it, read its result, describe, cancel.
ActivityWorker: take activity tasks with POST /_activities/poll, heartbeat them, report
their outcome; the workflow cannot tell that its activity ran here rather than in Rust.

    from wf_client import Client, ActivityWorker, ActivityFailure

    wf = Client("http://127.0.0.1:8233", token="T")
    wf.start("agent_run", "agent-1", {"goal": "ship v1", "step": 0, "steps_per_run": 100})
    print(wf.query("agent_run", "agent-1", "status"))

    def summarize(task):
        task.heartbeat({"read": 0})          # raises Cancelled once the workflow gave up on it
        return {"words": len(task.input["text"].split())}

    ActivityWorker(wf, "python", {"summarize": summarize}).run()
"""

import json
import os
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Client", "ActivityWorker", "ActivityTask", "ActivityFailure", "Cancelled", "WfError"]


class WfError(Exception):
    """An answer that is not a success: `status` (HTTP), `error` (wf's code), `message`, `body`."""

    def __init__(self, status, body):
        self.status = status
        self.body = body if isinstance(body, dict) else {}
        self.error = self.body.get("error", "http_%d" % status)
        self.message = self.body.get("message", str(body))
        super().__init__("%d %s: %s" % (status, self.error, self.message))


class Client:
    """wf's HTTP routes, JSON in and out. `token` is a bearer token; `cafile` a CA for https."""

    def __init__(self, url, token=None, cafile=None, timeout=70.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=cafile) if cafile else None

    def call(self, method, path, body=None):
        """Sends one request; returns (status, JSON body or None). Raises WfError for >= 400."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as r:
                raw = r.read()
                return r.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                parsed = json.loads(raw) if raw else {}
            except ValueError:
                parsed = {"message": raw.decode(errors="replace")}
            raise WfError(e.code, parsed) from None

    @staticmethod
    def _run(workflow_type, workflow_id, action=""):
        path = "/%s/runs/%s" % (urllib.parse.quote(workflow_type, safe=""),
                                urllib.parse.quote(workflow_id, safe=""))
        return path + ("/" + action if action else "")

    def start(self, workflow_type, workflow_id, input=None, **options):
        """Starts a run; options are the route's (conflict, memo, task_queue, ...)."""
        body = dict(options, id=workflow_id, input=input)
        return self.call("POST", "/%s/runs" % urllib.parse.quote(workflow_type, safe=""), body)[1]

    def signal(self, workflow_type, workflow_id, name, args=None, signal_id=None):
        """Sends a signal; `args` a list (by position) or a dict (by parameter name)."""
        body = {"name": name, "args": args}
        if signal_id is not None:
            body["signal_id"] = signal_id
        return self.call("POST", self._run(workflow_type, workflow_id, "signal"), body)[1]

    def query(self, workflow_type, workflow_id, name, args=None):
        """Runs a query; returns its value."""
        body = {"name": name, "args": args}
        return self.call("POST", self._run(workflow_type, workflow_id, "query"), body)[1]["value"]

    def update(self, workflow_type, workflow_id, name, args=None, update_id=None):
        """Runs an update to completion; returns its value (WfError 'rejected' or
        'update_failed' otherwise)."""
        body = {"name": name, "args": args, "wait": "completed"}
        if update_id is not None:
            body["update_id"] = update_id
        return self.call("POST", self._run(workflow_type, workflow_id, "update"), body)[1]["value"]

    def result(self, workflow_type, workflow_id, timeout=None):
        """Waits for the run's result (long polls of 20 s); raises WfError if it failed,
        TimeoutError after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait_ms = 20000
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("run %r has no result yet" % workflow_id)
                wait_ms = max(1, min(wait_ms, int(left * 1000)))
            path = self._run(workflow_type, workflow_id, "result") + "?wait_ms=%d" % wait_ms
            status, body = self.call("GET", path)
            if status == 200:
                return body["value"]

    def describe(self, workflow_type, workflow_id):
        """The run's description (status, pending activities, ...)."""
        return self.call("GET", self._run(workflow_type, workflow_id))[1]

    def cancel(self, workflow_type, workflow_id, reason=None):
        """Requests the run's cancellation."""
        body = {} if reason is None else {"reason": reason}
        return self.call("POST", self._run(workflow_type, workflow_id, "cancel"), body)[1]


class ActivityFailure(Exception):
    """Raise it from an activity to fail the attempt: retried per the activity's retry policy
    when `retryable`, else the workflow's call fails. `details` are what the next attempt
    reads as `task.last_heartbeat`."""

    def __init__(self, message, retryable=True, kind=None, details=None):
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.kind = kind
        self.details = details


class Cancelled(Exception):
    """Raised by `task.heartbeat` when the attempt is not open any more (the workflow cancelled
    the activity, its run closed, or the attempt timed out): stop, a result would be refused."""


class ActivityTask:
    """One leased attempt: `name`, `input` (JSON), `attempt`, `last_heartbeat`,
    `last_failure`, `heartbeat_timeout_ms`, the deadlines, and `heartbeat()`."""

    def __init__(self, worker, body):
        self._worker = worker
        self.body = body
        self.token = body["token"]
        self.name = body["name"]
        self.input = body["input"]
        self.attempt = body["attempt"]
        self.workflow_id = body["workflow_id"]
        self.last_heartbeat = body.get("last_heartbeat")
        self.last_failure = body.get("last_failure")
        self.heartbeat_timeout_ms = body.get("heartbeat_timeout_ms")
        self.start_to_close_deadline_ms = body["start_to_close_deadline_ms"]

    def heartbeat(self, details=None):
        """Records progress (what a retry reads) and restarts the heartbeat timeout; raises
        Cancelled when the attempt should stop."""
        if self._worker.heartbeat(self.token, details):
            raise Cancelled("attempt %d of %s is not open any more" % (self.attempt, self.name))


class ActivityWorker:
    """Runs `activities` (name -> function taking an ActivityTask, returning a JSON value) for
    the tasks of `task_queue`, one at a time."""

    def __init__(self, client, task_queue, activities, identity=None):
        self.client = client
        self.task_queue = task_queue
        self.activities = dict(activities)
        self.identity = identity or "%s:%d" % (socket.gethostname(), os.getpid())

    def poll(self, wait_ms=20000):
        """One long poll: an ActivityTask, or None when the wait ran out."""
        body = {"task_queue": self.task_queue, "names": sorted(self.activities),
                "wait_ms": wait_ms, "identity": self.identity}
        status, task = self.client.call("POST", "/_activities/poll", body)
        return ActivityTask(self, task) if status == 200 else None

    def heartbeat(self, token, details=None):
        """Records a heartbeat; whether the activity should stop (cancel_requested)."""
        body = {"token": token, "details": details}
        return self.client.call("POST", "/_activities/heartbeat", body)[1]["cancel_requested"]

    def complete(self, token, result):
        self.client.call("POST", "/_activities/complete", {"token": token, "result": result})

    def fail(self, token, message, retryable=True, kind=None, details=None):
        body = {"token": token, "message": message, "retryable": retryable}
        if kind is not None:
            body["kind"] = kind
        if details is not None:
            body["details"] = details
        self.client.call("POST", "/_activities/fail", body)

    def run_one(self, wait_ms=20000):
        """Polls once and runs the task, if one came; whether one did."""
        task = self.poll(wait_ms)
        if task is None:
            return False
        try:
            result = self.activities[task.name](task)
        except Cancelled:
            return True
        except ActivityFailure as f:
            self._report(self.fail, task.token, f.message, f.retryable, f.kind, f.details)
            return True
        except Exception as e:  # the activity's own bug: retried, as a Rust panic is
            self._report(self.fail, task.token, "%s: %s" % (type(e).__name__, e), True,
                         type(e).__name__)
            return True
        self._report(self.complete, task.token, result)
        return True

    @staticmethod
    def _report(send, token, *args):
        try:
            send(token, *args)
        except WfError as e:
            if e.error != "activity_not_pending":
                raise
            # The attempt ended meanwhile (timed out, cancelled): its retry runs elsewhere.

    def run(self, max_tasks=None, wait_ms=20000):
        """Runs tasks until `max_tasks` have run (forever if None)."""
        done = 0
        while max_tasks is None or done < max_tasks:
            if self.run_one(wait_ms):
                done += 1
