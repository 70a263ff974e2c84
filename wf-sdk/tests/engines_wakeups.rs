//! Wake-ups across engines that share a store: with a one-minute poll on every engine, work
//! and outcomes committed by one engine reach the others at once (each test's 10 s limit is a
//! failure detector, not a timing assertion). Engines on one SQLite file behave as separate
//! processes; engines sharing one in-memory store are separate "processes" too; and one test
//! runs the worker in a real child process.
//!
//! Unix only: elsewhere engines have no wake-up socket and poll (every 50 ms by default).
#![cfg(unix)]

mod common;
use common::*;
use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::time::Duration;
use wf_core::store::{EngineRecord, Store};
use wf_sdk::prelude::*;

/// Far longer than any test's limit: what arrives in time was woken, not polled.
const NO_POLL: Duration = Duration::from_secs(60);

/// The failure detector.
const LIMIT: Duration = Duration::from_secs(10);

#[derive(Default)]
pub struct Mailbox {
    count: u64,
    done: bool,
}

#[workflow]
impl Mailbox {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u64, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.count))
    }

    #[signal]
    fn bump(&mut self) {
        self.count += 1;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[update]
    fn add(&mut self, by: u64) -> Result<u64, UpdateError> {
        self.count += by;
        Ok(self.count)
    }

    #[query]
    fn count(&self) -> u64 {
        self.count
    }
}

/// Runs one activity, which another engine may be the one to run.
#[derive(Default)]
pub struct Delegate;

#[workflow]
impl Delegate {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        Ok(ctx.activity(Tools::add_one, n).await?)
    }
}

/// `fut`, which must finish within [`LIMIT`].
async fn within<T>(what: &str, fut: impl std::future::IntoFuture<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut.into_future())
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {LIMIT:?} though the poll is {NO_POLL:?}"))
}

/// Lets the engines go idle: the worker's own look at the store after a task, and a waiter's
/// first look, are over (else they, not a poke, could find what the test sends next).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// A worker engine and a client-only engine on one store, both polling once a minute.
async fn worker_and_client(shared: &Shared) -> (Engine, Engine) {
    let worker = shared.engine().workflow::<Mailbox>().build().await.unwrap();
    let client = shared
        .engine()
        .client_only()
        .workflow::<Mailbox>()
        .build()
        .await
        .unwrap();
    (worker, client)
}

async fn an_update_from_a_client_only_engine_completes_at_once(backend: Backend) {
    let (worker, client) = worker_and_client(&Shared::new(backend, "xp-update")).await;
    worker.client().start::<Mailbox>("m", ()).await.unwrap();
    settle().await;
    let h = client.client().handle::<Mailbox>("m");
    for i in 1..=5u64 {
        assert_eq!(within("an update", h.add(1)).await.unwrap(), i);
    }
    // With an id: through the store's dedupe on the worker's side too.
    let v = within("an update with an id", h.add(10).update_id("u-1"))
        .await
        .unwrap();
    assert_eq!(v, 15);
}

async fn a_signal_from_a_client_only_engine_is_handled_at_once(backend: Backend) {
    let (worker, client) = worker_and_client(&Shared::new(backend, "xp-signal")).await;
    let run = worker.client().start::<Mailbox>("m", ()).await.unwrap();
    settle().await;
    let h = client.client().handle::<Mailbox>("m");
    h.bump().await.unwrap();
    h.bump().signal_id("s-1").await.unwrap();
    h.finish().await.unwrap();
    // The worker's own client waits in its engine: only the poke tells the worker to look.
    assert_eq!(within("the signals", run.result()).await.unwrap(), 2);
}

async fn a_result_awaited_in_a_client_only_engine_returns_at_once(backend: Backend) {
    let (worker, client) = worker_and_client(&Shared::new(backend, "xp-result")).await;
    // Started by the client-only engine: the start itself is work it pokes the worker for.
    let h = client.client().start::<Mailbox>("m", ()).await.unwrap();
    let waiting = tokio::spawn({
        let h = h.clone();
        async move { h.result().await }
    });
    settle().await;
    within("the run's first task", async {
        // The query is answered once the worker holds the run.
        while worker
            .client()
            .handle::<Mailbox>("m")
            .count()
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let mine = worker.client().handle::<Mailbox>("m");
    mine.add(7).await.unwrap();
    mine.finish().await.unwrap();
    assert_eq!(within("the result", waiting).await.unwrap().unwrap(), 7);
}

async fn an_activity_made_ready_by_one_engine_runs_on_another(backend: Backend) {
    let shared = Shared::new(backend, "xp-activity");
    // Runs the workflow, not its activity.
    let workflows = shared
        .engine()
        .workflow::<Delegate>()
        .build()
        .await
        .unwrap();
    // Runs the activity, not the workflow.
    let tools = shared_tools();
    let activities = shared
        .engine()
        .shared_activities(tools.clone())
        .build()
        .await
        .unwrap();
    settle().await;
    let h = workflows.client().start::<Delegate>("d", 41).await.unwrap();
    assert_eq!(within("the activity", h.result()).await.unwrap(), 42);
    assert_eq!(tools.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    drop(activities);
}

/// A crashed peer (its row still live, its socket gone), a peer whose queue is never read,
/// and peers with addresses nobody can reach: the engines poke around them, unhindered.
async fn dead_and_stuck_peers_never_block_a_sender(backend: Backend) {
    let shared = Shared::new(backend, "xp-dead");
    let crashed = shared.engine().client_only().build().await.unwrap();
    drop(crashed); // like a crash: its registration stays live for seconds
    let (worker, client) = worker_and_client(&shared).await;
    let store = shared.store().await;
    let now = now_ms();
    let fake = |id: &str, address: Option<String>| EngineRecord {
        engine_id: id.to_string(),
        wake_address: address,
        task_queue: "default".into(),
        started_ms: now,
        lease_until_ms: now + 120_000,
    };
    // Bound but never read: its queue fills up and stays full.
    #[cfg(target_os = "linux")]
    let _stuck = {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixDatagram};
        let name = format!("wf-test-stuck-{}-{now}", std::process::id());
        let socket =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        store
            .admin()
            .register_engine(fake("stuck", Some(format!("unix-abstract:{name}"))))
            .await
            .unwrap();
        socket
    };
    for (id, address) in [
        ("nowhere", Some("unix:/nonexistent/dir/wf.sock".to_string())),
        ("unknown-scheme", Some("carrier-pigeon:42".to_string())),
        ("no-socket", None),
        ("too-long", Some(format!("unix:/{}", "x".repeat(4000)))),
    ] {
        store
            .admin()
            .register_engine(fake(id, address))
            .await
            .unwrap();
    }
    // A new engine announces itself: every engine reads the list of peers again.
    let announcer = shared.engine().client_only().build().await.unwrap();
    let h = client.client().handle::<Mailbox>("m");
    worker.client().start::<Mailbox>("m", ()).await.unwrap();
    // Far more pokes than a stuck peer's queue holds.
    for i in 1..=300u64 {
        assert_eq!(within("an update", h.add(1)).await.unwrap(), i);
    }
    drop(announcer);
}

/// Bytes any local process could send to an engine's wake-up address do no harm.
async fn garbage_pokes_do_no_harm(backend: Backend) {
    let shared = Shared::new(backend, "xp-garbage");
    let (worker, client) = worker_and_client(&shared).await;
    let store = shared.store().await;
    let addresses: Vec<String> = store
        .admin()
        .live_engines(now_ms())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.wake_address)
        .collect();
    assert_eq!(addresses.len(), 2, "both engines listen: {addresses:?}");
    let mut garbage: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"wf".to_vec(),
        b"wf\x01".to_vec(),
        b"wf\x01\xff".to_vec(),                 // every flag, PEERS included
        b"wf\x01\x08\xff\xff".to_vec(),         // an id longer than the datagram
        b"wf\x01\x08\x02\x00\xc3\x28".to_vec(), // invalid UTF-8
        vec![0xff; 70_000],                     // longer than the receive buffer
    ];
    let mut x: u32 = 12345;
    for len in 0..200 {
        garbage.push(
            (0..len)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    (x >> 16) as u8
                })
                .collect(),
        );
    }
    for address in &addresses {
        for bytes in &garbage {
            send_raw(address, bytes);
        }
    }
    worker.client().start::<Mailbox>("m", ()).await.unwrap();
    let h = client.client().handle::<Mailbox>("m");
    for i in 1..=3u64 {
        assert_eq!(within("an update", h.add(1)).await.unwrap(), i);
    }
    h.finish().await.unwrap();
    assert_eq!(within("the result", h.result()).await.unwrap(), 3);
}

/// A client-only engine registers (so that peers can poke it), holds no lease, and leaves the
/// store's list when it shuts down.
async fn a_client_only_engine_registers_and_leaves(backend: Backend) {
    let shared = Shared::new(backend, "xp-register");
    let store = shared.store().await;
    let client = shared.engine().client_only().build().await.unwrap();
    let live = store.admin().live_engines(now_ms()).await.unwrap();
    assert_eq!(live.len(), 1, "{live:?}");
    #[cfg(unix)]
    assert!(live[0].wake_address.is_some(), "{live:?}");
    client.shutdown().await;
    assert!(store
        .admin()
        .live_engines(now_ms())
        .await
        .unwrap()
        .is_empty());
}

both!(
    an_update_from_a_client_only_engine_completes_at_once,
    a_signal_from_a_client_only_engine_is_handled_at_once,
    a_result_awaited_in_a_client_only_engine_returns_at_once,
    an_activity_made_ready_by_one_engine_runs_on_another,
    dead_and_stuck_peers_never_block_a_sender,
    garbage_pokes_do_no_harm,
    a_client_only_engine_registers_and_leaves,
);

/// Sends `bytes` to a registered wake-up address, as any local process could.
fn send_raw(address: &str, bytes: &[u8]) {
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let addr = if let Some(path) = address.strip_prefix("unix:") {
        SocketAddr::from_pathname(path).unwrap()
    } else {
        #[cfg(target_os = "linux")]
        {
            use std::os::linux::net::SocketAddrExt;
            let name = address.strip_prefix("unix-abstract:").unwrap();
            SocketAddr::from_abstract_name(name.as_bytes()).unwrap()
        }
        #[cfg(not(target_os = "linux"))]
        panic!("unexpected wake-up address {address:?}")
    };
    let socket = UnixDatagram::unbound().unwrap();
    // Too long for the socket's buffer, for one: an error here is the sender's business.
    let _ = socket.send_to_addr(bytes, &addr);
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Engines on one store (one SQLite file, or one in-memory store), and the test's own handle
/// on that store.
struct Shared {
    backend: Backend,
    path: std::path::PathBuf,
    memory: Arc<wf_sdk::store::MemoryStore>,
    postgres: Option<(String, wf_sdk::postgres::PostgresOptions)>,
}

impl Shared {
    fn new(backend: Backend, tag: &str) -> Self {
        Shared {
            backend,
            path: temp_db(tag),
            memory: Arc::new(wf_sdk::store::MemoryStore::new()),
            postgres: (backend == Backend::Postgres).then(|| postgres_schema(tag)),
        }
    }

    /// A builder for one more engine on the store, polling once a minute (and with a liveness
    /// lease as long, so that its time keeper's renewal passes, which wake its workers too, do
    /// not stand in for the poll).
    fn engine(&self) -> wf_sdk::engine::EngineBuilder {
        let b = Engine::builder()
            .poll_interval(NO_POLL)
            .liveness_lease(NO_POLL);
        match (self.backend, &self.postgres) {
            (Backend::Postgres, Some((url, options))) => b.postgres_with(url, options.clone()),
            (Backend::Sqlite, _) => b.sqlite(&self.path),
            _ => b.store(self.memory.clone()),
        }
    }

    /// The test's handle on the store (a connection of its own to the file or database).
    async fn store(&self) -> Arc<dyn Store> {
        match (self.backend, &self.postgres) {
            (Backend::Postgres, Some((url, options))) => Arc::new(
                wf_sdk::postgres::PostgresStore::connect_with(url, options.clone())
                    .await
                    .unwrap(),
            ),
            (Backend::Sqlite, _) => Arc::new(wf_sdk::store::SqliteStore::open(&self.path).unwrap()),
            _ => self.memory.clone(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A real second process

/// The child: a worker on the file until killed.
#[test]
#[ignore = "runs only as the child process of the two-process test"]
fn cross_process_child() {
    let Ok(path) = std::env::var("WF_XP_DB") else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let _engine = Engine::builder()
            .sqlite(&path)
            .poll_interval(NO_POLL)
            .liveness_lease(NO_POLL)
            .workflow::<Mailbox>()
            .build()
            .await
            .unwrap();
        std::fs::write(format!("{path}.ready"), b"").unwrap();
        tokio::time::sleep(Duration::from_secs(120)).await;
    });
}

fn spawn_child(path: &Path) -> Child {
    spawn_test_child("cross_process_child", "WF_XP_DB", path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_in_another_process_is_woken_and_wakes_its_clients() {
    let path = temp_db("xp-process");
    let mut child = spawn_child(&path);
    let ready = format!("{}.ready", path.display());
    within("the child's engine", async {
        while !Path::new(&ready).exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let client = Engine::builder()
        .sqlite(&path)
        .poll_interval(NO_POLL)
        .liveness_lease(NO_POLL)
        .client_only()
        .workflow::<Mailbox>()
        .build()
        .await
        .unwrap();
    let h = client.client().start::<Mailbox>("m", ()).await.unwrap();
    for i in 1..=3u64 {
        assert_eq!(within("an update", h.add(1)).await.unwrap(), i);
    }
    h.bump().await.unwrap();
    h.finish().await.unwrap();
    let result = within("the result", h.result()).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_file(&ready);
    assert_eq!(result.unwrap(), 4);
}
