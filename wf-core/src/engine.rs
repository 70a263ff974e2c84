//! The embedded engine: a store, the registered workflow types and activities, and the
//! workers that run them in this process.

use crate::activity::{ActivityGroup, ActivityRegistry};
use crate::client::Client;
use crate::clock::{Clock, SystemClock, TestClock};
use crate::error::WfError;
use crate::replay::{Definition, ErasedDefinition};
use crate::store::{MemoryStore, SqliteOptions, SqliteStore, Store};
use crate::workflow::WorkflowDefinition;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// Tunables of an engine.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub cache_capacity: usize,
    pub workflow_task_lease: Duration,
    pub max_workflow_tasks: usize,
    pub max_activities: usize,
    /// How often idle workers look at the store for work from other processes.
    pub poll_interval: Duration,
    pub run_workers: bool,
    pub build_id: Option<String>,
    /// The task queue this engine's workflow worker serves (and its client starts runs on).
    pub task_queue: String,
    /// Whether a quiet worker polls a little before parking its thread (see
    /// `EngineBuilder::poll_when_quiet`).
    pub poll_when_quiet: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cache_capacity: 10_000,
            workflow_task_lease: Duration::from_secs(10),
            max_workflow_tasks: 256,
            max_activities: 64,
            poll_interval: Duration::from_millis(500),
            run_workers: true,
            build_id: None,
            task_queue: crate::data::run::DEFAULT_TASK_QUEUE.to_string(),
            poll_when_quiet: true,
        }
    }
}

/// Per-workflow-id wake-ups for clients waiting on a result or an update.
#[derive(Default)]
pub(crate) struct Waiters {
    map: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Waiters {
    pub fn subscribe(&self, workflow_id: &str) -> Arc<Notify> {
        let mut map = self
            .map
            .lock()
            .expect("waiters lock is never poisoned: no code panics under it");
        map.entry(workflow_id.to_string()).or_default().clone()
    }

    pub fn publish(&self, workflow_id: &str) {
        let mut map = self
            .map
            .lock()
            .expect("waiters lock is never poisoned: no code panics under it");
        if let Some(n) = map.get(workflow_id) {
            n.notify_waiters();
            if Arc::strong_count(n) == 1 {
                map.remove(workflow_id);
            }
        }
    }
}

/// What every worker and client of one engine shares.
pub(crate) struct Shared {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub definitions: HashMap<&'static str, Arc<dyn ErasedDefinition>>,
    pub activities: ActivityRegistry,
    pub worker_id: String,
    pub config: Config,
    pub workflow_wake: Notify,
    pub activity_wake: Notify,
    pub timer_wake: Notify,
    pub waiters: Waiters,
    pub shutdown: watch::Sender<bool>,
    /// Set when the engine is dropped rather than shut down: workers stop without releasing
    /// anything, as a crashed process would (leases expire instead).
    pub crashed: std::sync::atomic::AtomicBool,
    pub queries: tokio::sync::mpsc::UnboundedSender<crate::worker::QueryRequest>,
    /// Messages and activity results handed to this engine's workflow worker in memory.
    pub direct: tokio::sync::mpsc::UnboundedSender<crate::worker::Direct>,
    pub running_activities: Mutex<HashMap<(String, u32), tokio::task::AbortHandle>>,
    /// Running runs held in this engine's cache: workflow id -> (run id, workflow type). Lets
    /// a query go straight to the cached run without reading the store.
    pub hot: Mutex<HashMap<String, (String, String)>>,
    /// Slots for concurrent activity attempts (shared by the poller and the workflow worker,
    /// which starts the activities its own commits lease to it).
    pub activity_permits: Arc<tokio::sync::Semaphore>,
    /// The runtime activities run on (the one `build()` was called in).
    pub runtime: tokio::runtime::Handle,
}

impl Shared {
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn is_shutdown(&self) -> bool {
        *self.shutdown.borrow()
    }

    pub fn definition(&self, workflow_type: &str) -> Result<&Arc<dyn ErasedDefinition>, WfError> {
        self.definitions
            .get(workflow_type)
            .ok_or_else(|| WfError::Unknown {
                kind: "workflow type",
                name: workflow_type.to_string(),
                hint: "; register it with Engine::builder().workflow::<T>()".into(),
            })
    }
}

enum StoreChoice {
    Sqlite(PathBuf, SqliteOptions),
    Memory,
    Custom(Arc<dyn Store>),
}

/// Configures an [`Engine`]: where its store lives, which workflow types and activities it
/// runs, and its limits.
///
/// ```no_run
/// # async fn demo() -> Result<(), wf_core::WfError> {
/// let engine = wf_core::Engine::builder().sqlite("app.db").build().await?;
/// # Ok(()) }
/// ```
pub struct EngineBuilder {
    store: StoreChoice,
    definitions: HashMap<&'static str, Arc<dyn ErasedDefinition>>,
    activities: ActivityRegistry,
    clock: Arc<dyn Clock>,
    config: Config,
    errors: Vec<String>,
}

impl EngineBuilder {
    /// Uses the SQLite file at `path` (created if missing), durable on every commit.
    pub fn sqlite(mut self, path: impl Into<PathBuf>) -> Self {
        self.store = StoreChoice::Sqlite(path.into(), SqliteOptions::default());
        self
    }

    /// Uses the SQLite file at `path` with these options.
    pub fn sqlite_with(mut self, path: impl Into<PathBuf>, options: SqliteOptions) -> Self {
        self.store = StoreChoice::Sqlite(path.into(), options);
        self
    }

    /// Uses an in-memory store (the default): nothing survives the process.
    pub fn memory(mut self) -> Self {
        self.store = StoreChoice::Memory;
        self
    }

    /// Uses any [`Store`] implementation (several engines may share one).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = StoreChoice::Custom(store);
        self
    }

    /// Registers a workflow type: this engine runs it and its client checks messages for it.
    pub fn workflow<W: WorkflowDefinition>(mut self) -> Self {
        match Definition::<W>::new() {
            Ok(def) => {
                self.definitions.insert(W::NAME, Arc::new(def));
            }
            Err(e) => self.errors.push(e),
        }
        self
    }

    /// Registers the `#[activity]` methods of `group`.
    pub fn activities<G: ActivityGroup>(mut self, group: G) -> Self {
        Arc::new(group).register(&mut self.activities);
        self
    }

    /// Registers the `#[activity]` methods of a group the caller keeps a handle on.
    pub fn shared_activities<G: ActivityGroup>(mut self, group: Arc<G>) -> Self {
        group.register(&mut self.activities);
        self
    }

    /// Uses a controllable clock (tests: [`TestClock::advance`] fires timers at once).
    pub fn clock(mut self, clock: TestClock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How many runs stay in memory (default 10,000, as Temporal's Go SDK caches; a cached run
    /// waiting on a signal costs ~3-5 KB); the rest are rebuilt by replay on demand.
    pub fn cache_capacity(mut self, runs: usize) -> Self {
        self.config.cache_capacity = runs;
        self
    }

    /// How long a worker may hold a workflow task before another worker may take it over
    /// (default 10 s). Bounds how long a crashed process delays its runs.
    pub fn workflow_task_lease(mut self, lease: Duration) -> Self {
        self.config.workflow_task_lease = lease;
        self
    }

    /// Workflow tasks processed at once (default 256).
    pub fn max_concurrent_workflow_tasks(mut self, n: usize) -> Self {
        self.config.max_workflow_tasks = n.max(1);
        self
    }

    /// Activity attempts run at once (default 64).
    pub fn max_concurrent_activities(mut self, n: usize) -> Self {
        self.config.max_activities = n.max(1);
        self
    }

    /// How often idle workers check the store for work made by other processes (default
    /// 500 ms). Work from this process wakes them at once.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.config.poll_interval = every;
        self
    }

    /// The build id of this worker's code, recorded on every workflow task it runs (see which
    /// version of the code made which step; pair with `ctx.patched`).
    pub fn build_id(mut self, id: impl Into<String>) -> Self {
        self.config.build_id = Some(id.into());
        self
    }

    /// The task queue this engine's workflow worker serves, and the default queue its client
    /// starts runs on (default `"default"`). Engines on different queues share a store and
    /// each runs only its queue's runs; children and starts may name another queue.
    pub fn task_queue(mut self, name: impl Into<String>) -> Self {
        self.config.task_queue = name.into();
        self
    }

    /// Whether the engine's threads poll briefly instead of parking when the engine is quiet
    /// (default `true`): the workflow worker waits up to 1 ms for its commit's answer and
    /// 200 µs for the next message or query, and the SQLite store this engine opens looks for
    /// its next write for 200 µs (see [`SqliteOptions::poll_when_quiet`]). Waking a parked
    /// thread costs tens of microseconds on a virtual machine, more than a step often takes;
    /// `false` pays that wake-up on each step in exchange for no busy CPU between steps that
    /// come one at a time (under load the threads are busy anyway and nothing changes).
    pub fn poll_when_quiet(mut self, on: bool) -> Self {
        self.config.poll_when_quiet = on;
        self
    }

    /// Runs no workers: the engine is only a client of the store (other processes work).
    pub fn client_only(mut self) -> Self {
        self.config.run_workers = false;
        self
    }

    /// Opens the store and starts the workers. Must be called inside a tokio runtime.
    pub async fn build(self) -> Result<Engine, WfError> {
        if let Some(e) = self.errors.first() {
            return Err(WfError::InvalidConfig(e.clone()));
        }
        let store: Arc<dyn Store> = match self.store {
            StoreChoice::Sqlite(path, options) => {
                let options = SqliteOptions {
                    poll_when_quiet: options.poll_when_quiet && self.config.poll_when_quiet,
                    ..options
                };
                let open =
                    tokio::task::spawn_blocking(move || SqliteStore::open_with(&path, options))
                        .await
                        .map_err(|e| {
                            WfError::Store(crate::error::StoreError::bug(format!(
                                "opening the SQLite store panicked: {e}"
                            )))
                        })?;
                Arc::new(open.map_err(WfError::from)?)
            }
            StoreChoice::Memory => Arc::new(MemoryStore::new()),
            StoreChoice::Custom(store) => store,
        };
        let (shutdown, _) = watch::channel(false);
        let max_activities = self.config.max_activities;
        let (query_tx, query_rx) = tokio::sync::mpsc::unbounded_channel();
        let (direct_tx, direct_rx) = tokio::sync::mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            store,
            clock: self.clock,
            definitions: self.definitions,
            activities: self.activities,
            worker_id: uuid::Uuid::new_v4().to_string(),
            config: self.config,
            workflow_wake: Notify::new(),
            activity_wake: Notify::new(),
            timer_wake: Notify::new(),
            waiters: Waiters::default(),
            shutdown,
            crashed: std::sync::atomic::AtomicBool::new(false),
            queries: query_tx,
            direct: direct_tx,
            running_activities: Mutex::new(HashMap::new()),
            hot: Mutex::new(HashMap::new()),
            activity_permits: Arc::new(tokio::sync::Semaphore::new(max_activities)),
            runtime: tokio::runtime::Handle::current(),
        });
        let mut engine = Engine {
            shared: shared.clone(),
            thread: None,
            tasks: Vec::new(),
        };
        if shared.config.run_workers {
            engine.thread = Some(crate::worker::spawn(shared.clone(), query_rx, direct_rx)?);
            engine
                .tasks
                .push(tokio::spawn(crate::activity_worker::run(shared.clone())));
            engine
                .tasks
                .push(tokio::spawn(crate::timer::run(shared.clone())));
        }
        Ok(engine)
    }
}

/// A running wf engine: a store plus in-process workers. Get a [`Client`] with
/// [`client`](Engine::client). Dropping it stops the workers abruptly (like a crash: leases
/// expire, nothing durable is lost); [`shutdown`](Engine::shutdown) stops them cleanly.
pub struct Engine {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Engine {
    /// Starts configuring an engine (in-memory store, system clock, no workflow types).
    pub fn builder() -> EngineBuilder {
        EngineBuilder {
            store: StoreChoice::Memory,
            definitions: HashMap::new(),
            activities: ActivityRegistry::default(),
            clock: Arc::new(SystemClock),
            config: Config::default(),
            errors: Vec::new(),
        }
    }

    /// A client of this engine (cheap to clone).
    pub fn client(&self) -> Client {
        Client::new(self.shared.clone())
    }

    /// The store this engine uses.
    pub fn store(&self) -> Arc<dyn Store> {
        self.shared.store.clone()
    }

    /// Stops the workers cleanly: in-flight workflow tasks finish, running activity attempts
    /// are released for another worker (not counted as failures). If no [`Client`] of this
    /// engine (nor a handle, which holds one) is left, the store closes too: a SQLite database
    /// is then one self-contained file.
    pub async fn shutdown(mut self) {
        self.stop();
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        // Closing a SQLite store folds its WAL into the database file, which can take a while:
        // if this is the last reference, drop it on a blocking thread, not this runtime's.
        let store = self.shared.store.clone();
        drop(self);
        let _ = tokio::task::spawn_blocking(move || drop(store)).await;
    }

    fn stop(&self) {
        self.shared.shutdown.send_replace(true);
        self.shared.workflow_wake.notify_one();
        self.shared.activity_wake.notify_one();
        self.shared.timer_wake.notify_one();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.thread.is_some() {
            // Not shut down cleanly: behave like a crash.
            self.shared
                .crashed
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        self.stop();
        for t in &self.tasks {
            t.abort();
        }
        let running = self
            .shared
            .running_activities
            .lock()
            .map(|m| m.values().cloned().collect::<Vec<_>>());
        for handle in running.unwrap_or_default() {
            handle.abort();
        }
    }
}
