//! `GET /metrics`: scraped over real HTTP after running workflows on a SQLite engine; the
//! text is parsed strictly as the Prometheus text format, and the counters must have moved by
//! exactly what the workflows did.

#[macro_use]
mod common;

use common::{Http, TOKEN};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use wf_http::ServeOptions;
use wf_sdk::prelude::*;

/// Waits for `go`, calls a flaky activity (fails its first attempt), sleeps on a durable
/// timer, and returns the activity's value plus what the updates added.
#[derive(Default)]
pub struct Metered {
    go: bool,
    total: u32,
}

#[workflow(name = "metered")]
impl Metered {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, input: u32) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.go).await;
        let fast = RetryPolicy {
            initial_interval: Duration::from_millis(10),
            ..RetryPolicy::default()
        };
        let got = ctx.activity(Flaky::flaky, input).retry(fast).await?;
        ctx.sleep(Duration::from_millis(5)).await?;
        Ok(got + ctx.state(|s| s.total))
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }

    #[update]
    fn add(&mut self, n: u32) -> Result<u32, UpdateError> {
        if n == 13 {
            return Err(UpdateError::new("unlucky"));
        }
        self.total += n;
        Ok(self.total)
    }

    #[validator(add)]
    fn positive(&self, n: &u32) -> Result<(), Rejection> {
        if *n == 0 {
            return Err(Rejection::new("must be positive"));
        }
        Ok(())
    }

    #[query]
    fn total(&self) -> u32 {
        self.total
    }
}

#[derive(Default)]
pub struct Flaky {
    calls: AtomicU32,
}

#[activities]
impl Flaky {
    /// Fails the first attempt of every activity, then returns its input.
    #[activity]
    pub async fn flaky(&self, ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if ctx.attempt() == 1 {
            return Err(ActivityError::retryable("first attempts fail"));
        }
        Ok(n)
    }
}

/// Sorted label names and values.
type Labels = Vec<(String, String)>;
/// Series name and sorted labels -> value.
type Series = BTreeMap<(String, Labels), f64>;
/// A histogram's buckets per label set (without `le`): (bound, cumulative count).
type Buckets = HashMap<Labels, Vec<(f64, f64)>>;

/// Parses the Prometheus text format strictly: every sample belongs to the family of the last
/// `# TYPE` line (with `_bucket`/`_sum`/`_count` for a histogram), `# HELP` comes first, label
/// values are quoted with `\\`, `\"` and `\n` escapes, no series repeats, counters end in
/// `_total`, and a histogram's buckets rise in `le`, are cumulative and end at `+Inf` equal to
/// its `_count`.
fn parse(text: &str) -> Series {
    let mut series = Series::new();
    let mut family: Option<(String, String)> = None;
    let mut helped = None;
    let mut buckets = Buckets::new();
    assert!(text.ends_with('\n'), "the exposition ends with a line feed");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP name text");
            assert!(!help.is_empty(), "{name} has a help text");
            helped = Some(name.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert_eq!(helped.as_deref(), Some(name), "HELP before TYPE for {name}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "counter {name} ends in _total");
            }
            assert!(
                !series.keys().any(|(n, _)| n == name),
                "family {name} appears once"
            );
            check_histograms(&family, &mut buckets, &series);
            family = Some((name.to_string(), kind.to_string()));
            continue;
        }
        assert!(
            !line.starts_with('#') && !line.is_empty(),
            "stray line {line:?}"
        );
        let (fam, kind) = family.as_ref().expect("a sample after a TYPE line");
        let (name, labels, value) = sample(line);
        let suffix = name
            .strip_prefix(fam.as_str())
            .expect("sample of its family");
        let allowed: &[&str] = if kind == "histogram" {
            &["_bucket", "_sum", "_count"]
        } else {
            &[""]
        };
        assert!(allowed.contains(&suffix), "{name} in family {fam}");
        if suffix == "_bucket" {
            let le = labels.iter().find(|(k, _)| k == "le").expect("le label");
            let bound = parse_value(&le.1);
            let rest: Vec<_> = labels.iter().filter(|(k, _)| k != "le").cloned().collect();
            buckets.entry(rest).or_default().push((bound, value));
        }
        let key = (name.clone(), labels);
        assert!(
            series.insert(key, value).is_none(),
            "{line} repeats a series"
        );
    }
    check_histograms(&family, &mut buckets, &series);
    series
}

/// The buckets of the family just read: rising bounds, cumulative counts, `+Inf` = `_count`.
fn check_histograms(family: &Option<(String, String)>, buckets: &mut Buckets, series: &Series) {
    let Some((name, kind)) = family else { return };
    if kind != "histogram" {
        return;
    }
    assert!(!buckets.is_empty(), "histogram {name} has buckets");
    for (labels, bs) in buckets.drain() {
        assert!(
            bs.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{name}"
        );
        let (last, total) = *bs.last().expect("a bucket");
        assert_eq!(last, f64::INFINITY, "{name} ends at +Inf");
        let count = series[&(format!("{name}_count"), labels.clone())];
        assert_eq!(total, count, "{name}: +Inf bucket = _count");
        assert!(series.contains_key(&(format!("{name}_sum"), labels)));
    }
}

/// One sample line: name, sorted labels, value.
fn sample(line: &str) -> (String, Vec<(String, String)>, f64) {
    let name_end = line.find(['{', ' ']).expect("name");
    let name = &line[..name_end];
    assert!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
        "metric name {name:?}"
    );
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        loop {
            let (start, _) = *chars.peek().expect("label or }");
            if body[start..].starts_with('}') {
                rest = &body[start + 1..];
                break;
            }
            let eq = body[start..].find("=\"").expect("label=\"") + start;
            let key = body[start..eq].to_string();
            while chars.peek().is_some_and(|(i, _)| *i <= eq + 1) {
                chars.next();
            }
            let mut value = String::new();
            loop {
                match chars.next().expect("closing quote") {
                    (_, '\\') => match chars.next().expect("escape").1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        c => panic!("bad escape \\{c} in {line}"),
                    },
                    (_, '"') => break,
                    (_, c) => value.push(c),
                }
            }
            labels.push((key, value));
            if chars.peek().is_some_and(|(_, c)| *c == ',') {
                chars.next();
            }
        }
    }
    let value = rest.strip_prefix(' ').expect("space before the value");
    labels.sort();
    (name.to_string(), labels, parse_value(value))
}

fn parse_value(v: &str) -> f64 {
    match v {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().unwrap_or_else(|_| panic!("value {v:?}")),
    }
}

/// The value of a series (0 when absent: a label set not yet moved is still listed, so absent
/// means a wrong name, caught by the exact checks below).
fn get(series: &Series, name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    labels.sort();
    *series
        .get(&(name.to_string(), labels.clone()))
        .unwrap_or_else(|| panic!("no series {name} {labels:?}"))
}

async fn scrape(http: &Http) -> Series {
    let r = http.get("/metrics").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    parse(std::str::from_utf8(&r.raw).expect("UTF-8"))
}

both_ways!(
    #[tokio::test]
    metrics_count_what_the_workflows_did
);
async fn metrics_count_what_the_workflows_did(net: common::Net) {
    let dir = std::env::temp_dir().join(format!("wf-metrics-test-{}-{net:?}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("metrics.db");
    let _ = std::fs::remove_file(&db);
    let engine = Engine::builder()
        .sqlite(&db)
        .workflow::<Metered>()
        .activities(Flaky::default())
        // One cached run: the second start evicts the first, whose next task replays it.
        .cache_capacity(1)
        .build()
        .await
        .unwrap();
    let options = ServeOptions {
        token: Some(TOKEN.into()),
        ..ServeOptions::default()
    };
    let server = net.serve(&engine, options).await;
    let http = net.http(&server, Some(TOKEN));

    // Without the token: refused, like every route but /healthz.
    let anonymous = net.http(&server, None);
    assert_eq!(anonymous.get("/metrics").await.status, 401);

    let before = scrape(&http).await;
    let t = [("workflow_type", "metered")];
    assert_eq!(
        get(
            &before,
            "wf_workflow_tasks_total",
            &[t[0], ("outcome", "committed")]
        ),
        0.0
    );
    assert_eq!(get(&before, "wf_cache_capacity", &[]), 1.0);

    let client = engine.client();
    let a = client.start::<Metered>("metered-a", 1).await.unwrap();
    let b = client.start::<Metered>("metered-b", 2).await.unwrap();
    assert_eq!(a.add(5).await.unwrap(), 5);
    assert!(matches!(a.add(0).await, Err(WfError::Rejected(_))));
    assert!(matches!(a.add(13).await, Err(WfError::UpdateFailed(_))));
    assert_eq!(a.total().await.unwrap(), 5);
    a.go().await.unwrap();
    b.go().await.unwrap();
    let wait = Duration::from_secs(60);
    let ra = tokio::time::timeout(wait, a.result())
        .await
        .expect("a finishes");
    let rb = tokio::time::timeout(wait, b.result())
        .await
        .expect("b finishes");
    assert_eq!((ra.unwrap(), rb.unwrap()), (6, 2));

    let after = scrape(&http).await;
    if std::env::var_os("WF_PRINT_METRICS").is_some() {
        println!(
            "{}",
            String::from_utf8_lossy(&http.get("/metrics").await.raw)
        );
    }
    let moved = |name: &str, labels: &[(&str, &str)]| {
        get(&after, name, labels) - get(&before, name, labels)
    };
    let update = |outcome| moved("wf_updates_total", &[t[0], ("outcome", outcome)]);
    assert_eq!(update("accepted"), 2.0);
    assert_eq!(update("rejected"), 1.0);
    assert_eq!(update("completed"), 1.0);
    assert_eq!(update("failed"), 1.0);
    assert_eq!(moved("wf_signals_delivered_total", &t), 2.0);

    let act = ("activity", "flaky");
    assert_eq!(moved("wf_activity_attempts_total", &[act]), 4.0);
    let failures = |reason| {
        moved(
            "wf_activity_attempt_failures_total",
            &[act, ("reason", reason)],
        )
    };
    assert_eq!(
        (failures("error"), failures("panic"), failures("timeout")),
        (2.0, 0.0, 0.0)
    );
    assert_eq!(moved("wf_activity_retries_total", &[act]), 2.0);
    let resolved = |outcome| moved("wf_activities_resolved_total", &[act, ("outcome", outcome)]);
    assert_eq!((resolved("completed"), resolved("failed")), (2.0, 0.0));
    assert_eq!(moved("wf_activity_attempt_seconds_count", &[act]), 4.0);
    assert_eq!(moved("wf_timers_fired_total", &[]), 2.0);

    // Tasks: each run at least starts, takes its signal, its activity's result and its timer;
    // none failed; every task is in the latency histogram.
    let tasks = |outcome| moved("wf_workflow_tasks_total", &[t[0], ("outcome", outcome)]);
    assert!(tasks("committed") >= 8.0, "{}", tasks("committed"));
    assert_eq!(tasks("failed"), 0.0);
    let all = tasks("committed") + tasks("failed") + tasks("discarded");
    assert_eq!(moved("wf_workflow_task_seconds_count", &t), all);
    assert!(moved("wf_workflow_task_commit_seconds_count", &[]) >= tasks("committed"));

    // Two runs through a cache of one: evictions, misses and replays of the evicted run.
    assert!(moved("wf_cache_evictions_total", &[]) >= 1.0);
    assert!(moved("wf_cache_misses_total", &[("lookup", "task")]) >= 1.0);
    let replays = moved("wf_replays_total", &t);
    assert!(replays >= 1.0);
    assert!(moved("wf_replayed_events_total", &t) >= 2.0 * replays);
    assert!(get(&after, "wf_cache_runs", &[]) <= 1.0);
    assert_eq!(get(&after, "wf_worker_inbox_depth", &[]), 0.0);

    // The SQLite writer: durable transactions, each one in the batch-size histogram.
    let s = ("store", "sqlite");
    let tx = |d, r| {
        get(
            &after,
            "wf_store_transactions_total",
            &[s, ("durability", d), ("result", r)],
        )
    };
    let durable = tx("durable", "ok");
    assert!(durable >= tasks("committed") / 2.0, "{durable}");
    assert_eq!(tx("durable", "error") + tx("soft", "error"), 0.0);
    let transactions = durable + tx("soft", "ok");
    assert_eq!(
        get(&after, "wf_store_transaction_requests_count", &[s]),
        transactions
    );
    assert!(get(&after, "wf_store_transaction_requests_sum", &[s]) >= transactions);
    assert_eq!(get(&after, "wf_store_commit_seconds_count", &[s]), durable);

    // The engine's own snapshot says the same as the scrape.
    let snapshot = engine.metrics();
    assert_eq!(
        snapshot.value("wf_updates_total", &[t[0], ("outcome", "rejected")]),
        Some(get(
            &after,
            "wf_updates_total",
            &[t[0], ("outcome", "rejected")]
        ))
    );
    server.shutdown().await.unwrap();
    engine.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_parser_refuses_what_prometheus_refuses() {
    let ok = "# HELP x_total X.\n# TYPE x_total counter\nx_total{a=\"q\\\"\\n\"} 1\n";
    let series = parse(ok);
    assert_eq!(get(&series, "x_total", &[("a", "q\"\n")]), 1.0);
    for bad in [
        "# TYPE x_total counter\nx_total 1\n",                       // no HELP
        "# HELP x X.\n# TYPE x counter\nx 1\n",                      // counter without _total
        "# HELP x X.\n# TYPE x gauge\ny 1\n",                        // sample of another family
        "# HELP x X.\n# TYPE x gauge\nx 1\nx 2\n",                   // repeated series
        "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# HELP x X.\n# TYPE x gauge\nx{a=\"\\t\"} 1\n",              // bad escape
    ] {
        let refused = std::panic::catch_unwind(|| parse(bad)).is_err();
        assert!(refused, "accepted {bad:?}");
    }
}

both_ways!(
    #[tokio::test]
    a_service_over_a_remote_client_has_no_metrics
);
/// A client that is not an engine's has no metrics to serve.
async fn a_service_over_a_remote_client_has_no_metrics(net: common::Net) {
    let engine = common::engine().await;
    let upstream = net.serve(&engine, ServeOptions::default()).await;
    let remote = net.connect(&upstream).await.unwrap();
    assert!(remote.metrics().is_none());
    let api = wf_http::Api::new(remote, engine.workflow_types());
    let relay = net.serve(api, ServeOptions::default()).await;
    let http = net.http(&relay, None);
    let r = http.get("/metrics").await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (404, Some("not_found"))
    );
    relay.shutdown().await.unwrap();
    upstream.shutdown().await.unwrap();
}
