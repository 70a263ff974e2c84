"""Runs (a) and (d) of benches/bench.rs on DBOS (Python) over a local PostgreSQL.

DBOS has no queries and no updates with validators, so (b) and (c) have no counterpart.
"""
import json, os, sys, time, uuid
from concurrent.futures import ThreadPoolExecutor
from dbos import DBOS, DBOSConfig, SetWorkflowID

config: DBOSConfig = {
    "name": "wfbench",
    "system_database_url": os.environ.get(
        "DBOS_SYSTEM_DATABASE_URL", "postgresql://postgres@127.0.0.1:5433/wfbench_sys"),
}
DBOS(config=config)


@DBOS.step()
def noop(i: int) -> int:
    return i


@DBOS.workflow()
def chain(n: int) -> int:
    last = -1
    for i in range(n):
        last = noop(i)
    return last


@DBOS.workflow()
def waiter() -> int:
    return DBOS.recv("go", timeout_seconds=600)


def all_of(n, f, tasks=64):
    with ThreadPoolExecutor(max_workers=tasks) as pool:
        list(pool.map(f, range(n)))


def waiters(n, prefix):
    t = time.perf_counter()
    def start(i):
        with SetWorkflowID(f"{prefix}-{i}"):
            DBOS.start_workflow(waiter)
    all_of(n, start)
    all_of(n, lambda i: DBOS.send(f"{prefix}-{i}", 1, "go"))
    all_of(n, lambda i: DBOS.retrieve_workflow(f"{prefix}-{i}").get_result())
    return n / (time.perf_counter() - t)


def main():
    only = next((a[7:] for a in sys.argv if a.startswith("--only=")), "a,d").split(",")
    DBOS.launch()
    run = uuid.uuid4().hex[:8]
    out = {}
    if "a" in only:
        waiters(20, f"warm-{run}")
        out["a_wf_per_s"] = waiters(200, f"a-{run}")
        out["a10k_wf_per_s"] = waiters(10000, f"a10k-{run}")
    if "d" in only:
        chain(3)
        t = time.perf_counter()
        assert chain(100) == 99
        out["d_ms"] = (time.perf_counter() - t) * 1000
    print(json.dumps(out))
    DBOS.destroy()


if __name__ == "__main__":
    main()
