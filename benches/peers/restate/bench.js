// Runs (a)-(d) of benches/bench.rs against a Restate server on localhost (ingress :8080).
const base = process.env.RESTATE_INGRESS ?? "http://127.0.0.1:8080";
const run = `${Date.now()}`;

async function call(path, body, method = "POST") {
  const r = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function allOf(n, f, tasks = 64) {
  const workers = [];
  for (let t = 0; t < Math.min(tasks, n); t++) {
    workers.push((async () => { for (let i = t; i < n; i += tasks) await f(i); })());
  }
  await Promise.all(workers);
}

function pct(v, q) { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * q))]; }
const now = () => Number(process.hrtime.bigint()) / 1e6; // ms

async function waiters(n, prefix) {
  const t = now();
  await allOf(n, (i) => call(`/waiter/${prefix}-${i}/run/send`, null));
  await allOf(n, (i) => call(`/waiter/${prefix}-${i}/go`, null));
  await allOf(n, (i) => call(`/restate/workflow/waiter/${prefix}-${i}/attach`, undefined, "GET"));
  return n / ((now() - t) / 1000);
}

async function main() {
  const only = (process.argv.find((a) => a.startsWith("--only=")) ?? "--only=a,b,c,d").slice(7).split(",");
  const out = {};
  if (only.includes("a")) {
    await waiters(20, `warm-${run}`);
    out.a_wf_per_s = await waiters(200, `a-${run}`);
    out.a10k_wf_per_s = await waiters(10000, `a10k-${run}`);
  }
  if (only.includes("b")) {
    const key = `b-${run}`;
    await call(`/counter/${key}/increment`, 1);
    for (const phase of ["warm", "measured"]) {
      const lat = [];
      for (let i = 0; i < 200; i++) {
        const t = now();
        await call(`/counter/${key}/increment`, 1);
        lat.push(now() - t);
      }
      if (phase === "measured") { out.b_p50_ms = pct(lat, 0.5); out.b_p99_ms = pct(lat, 0.99); }
    }
  }
  if (only.includes("c")) {
    const key = `c-${run}`;
    await call(`/counter/${key}/increment`, 1);
    const lat = [];
    for (let i = 0; i < 200; i++) {
      const t = now();
      const v = await call(`/counter/${key}/value`, null);
      lat.push(now() - t);
      if (v !== 1) throw new Error(`value ${v}`);
    }
    out.c_p50_us = pct(lat, 0.5) * 1000; out.c_p99_us = pct(lat, 0.99) * 1000;
  }
  if (only.includes("d")) {
    await call(`/chain/d-warm-${run}/run`, 3);
    const t = now();
    const last = await call(`/chain/d-${run}/run`, 100);
    out.d_ms = now() - t;
    if (last !== 99) throw new Error(`last ${last}`);
  }
  console.log(JSON.stringify(out));
}
main().catch((e) => { console.error(e); process.exit(1); });
