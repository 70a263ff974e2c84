//! The embedded engine: a store, the registered workflow types and activities, and the
//! workers that run them in this process.

use super::activity_worker::{self, ActivitySlots};
use super::catalog::Catalog;
use super::clock::{Clock, SystemClock, TestClock};
use super::config::Config;
use super::core::Core;
use super::flow;
use super::in_process::InProcessTransport;
use super::liveness::{self, Liveness};
use super::peers;
use super::retention;
use super::time_keeper;
use super::wakeups::Wakeups;
use super::worker::{self, WorkerHandle};
use crate::activity::ActivityGroup;
use crate::client::Client;
use crate::data::flow::FlowLimit;
use crate::data::limits::Ident;
use crate::data::payload_codec::{PayloadCodec, PayloadCodecs};
use crate::data::versioning::VersioningBehavior;
use crate::error::{StoreError, WfError};
use crate::metrics::{EngineMetrics, MetricsSnapshot};
use crate::replay::Definition;
use crate::store::{EncodedStore, MemoryStore, SqliteOptions, SqliteStore, Store};
use crate::workflow::{Role, WorkflowDefinition, WorkflowType};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

enum StoreChoice {
    Sqlite(PathBuf, SqliteOptions),
    Memory,
    Custom(Arc<dyn Store>),
    Opener(StoreOpener),
}

/// Opens a store when the engine is built: see [`EngineBuilder::store_opener`].
pub type StoreOpener = Box<
    dyn FnOnce() -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<Arc<dyn Store>, StoreError>> + Send>,
        > + Send,
>;

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
    catalog: Catalog,
    clock: Arc<dyn Clock>,
    config: Config,
    /// Whether the user chose the poll interval (else it depends on the wake-up channel).
    poll_set: bool,
    /// Payload codecs applied at the store boundary (none: the store is used as it is).
    codecs: PayloadCodecs,
    /// Flow limits to set in the store when the engine starts.
    flow_limits: Vec<FlowLimit>,
    workflow_queues: Vec<crate::data::queue::WorkflowQueue>,
    errors: Vec<String>,
}

/// The poll interval of an engine that cannot be poked by its peers (no wake-up socket) and
/// whose user did not choose one: work committed by other engines is seen this late at most.
const POLL_WITHOUT_WAKEUPS: Duration = Duration::from_millis(50);

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

    /// Uses the store that `open` opens when the engine is [built](Self::build): a store
    /// whose opening is asynchronous (a database connection). Its error fails `build`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wf_core::store::{MemoryStore, Store};
    /// let builder = wf_core::Engine::builder().store_opener(Box::new(|| {
    ///     Box::pin(async { Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>) })
    /// }));
    /// # let _ = builder;
    /// ```
    pub fn store_opener(mut self, open: StoreOpener) -> Self {
        self.store = StoreChoice::Opener(open);
        self
    }

    /// Registers a workflow type: this engine runs it and its client checks messages for it.
    /// A type or handler name out of the limits (`wf_core::data::limits`) makes
    /// [`build`](Self::build) fail.
    pub fn workflow<W: WorkflowDefinition>(mut self) -> Self {
        if let Err(e) = check_names::<W>() {
            self.errors.push(e);
            return self;
        }
        match Definition::<W>::new() {
            Ok(def) => {
                if let Err(e) = self.catalog.register(Arc::new(def)) {
                    self.errors.push(e);
                }
            }
            Err(e) => self.errors.push(e),
        }
        self
    }

    /// Registers the `#[activity]` methods of `group`.
    pub fn activities<G: ActivityGroup>(mut self, group: G) -> Self {
        Arc::new(group).register(&mut self.catalog.activities);
        self
    }

    /// Registers the `#[activity]` methods of a group the caller keeps a handle on.
    pub fn shared_activities<G: ActivityGroup>(mut self, group: Arc<G>) -> Self {
        group.register(&mut self.catalog.activities);
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

    /// How often idle workers, and clients waiting on a result or an update, look at the store
    /// for work or outcomes committed by other engines (default 500 ms). It is a safety net:
    /// work from this engine wakes them at once, and so does work committed by another engine
    /// on the same store (another process on the same host, or another engine of this one),
    /// which pokes this one through its wake-up socket (a unix datagram socket registered in
    /// the store). Where no socket can be had (not a unix system, or binding failed) and this
    /// is not set, the engine polls every 50 ms instead. Engines that cannot reach each other's
    /// sockets (other hosts, other network namespaces) see each other's work at the poll.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.config.poll_interval = every;
        self.poll_set = true;
        self
    }

    /// How often this engine's queue dispatcher looks at the queues of workflow starts while
    /// runs are held on one (default 50 ms). It is a safety net too: a start put on a queue,
    /// a queue's settings changed and a run closing (freeing its queue's slot) each make an
    /// admission pass at once, here and, through the wake-up socket, on the other engines.
    pub fn queue_recheck(mut self, every: Duration) -> Self {
        self.config.queue_recheck = every;
        self
    }

    /// The build id of this worker's code, recorded on every workflow task it runs (see which
    /// version of the code made which step; pair with `ctx.patched`), and the build its runs
    /// are versioned by: see [`versioning`](Self::versioning). An engine without one runs only
    /// runs that are on no build (unversioned runs, and auto-upgrade runs of a task queue
    /// without a current build).
    pub fn build_id(mut self, id: impl Into<String>) -> Self {
        self.config.build_id = Some(id.into());
        self
    }

    /// How runs of workflow type `W` follow new builds (worker versioning, for an engine with
    /// a [`build_id`](Self::build_id)): [`VersioningBehavior::Pinned`] keeps each run on the
    /// build that started it until it closes ("pin, then drain": deploy the new build beside
    /// the old one, make it current with `Client::set_current_build`, and stop the old one
    /// when `Client::build_ids` shows nothing pinned to it);
    /// [`VersioningBehavior::AutoUpgrade`] moves runs to the task queue's current build. Types
    /// that set none get [`default_versioning`](Self::default_versioning).
    ///
    /// ```no_run
    /// # use wf_core::VersioningBehavior;
    /// # async fn demo<Order: wf_core::WorkflowDefinition>() -> Result<(), wf_core::WfError> {
    /// let engine = wf_core::Engine::builder()
    ///     .sqlite("app.db")
    ///     .build_id("2026-12-01.1")
    ///     .workflow::<Order>()
    ///     .versioning::<Order>(VersioningBehavior::Pinned)
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn versioning<W: WorkflowDefinition>(mut self, behavior: VersioningBehavior) -> Self {
        self.config.versioning.insert(W::NAME, behavior);
        self
    }

    /// The versioning behaviour of the workflow types that set none with
    /// [`versioning`](Self::versioning) (default [`VersioningBehavior::AutoUpgrade`]: runs go
    /// to the current build of their task queue, and to any engine while it has none).
    pub fn default_versioning(mut self, behavior: VersioningBehavior) -> Self {
        self.config.default_versioning = behavior;
        self
    }

    /// Encodes every user payload this engine writes to its store with `codec`, and decodes
    /// what it reads (compression, encryption at rest; Temporal's `PayloadCodec`): workflow
    /// inputs and results, signal and update arguments, update results, activity inputs,
    /// results and heartbeat details, child and continue-as-new inputs, markers, memos and
    /// schedules. Search attributes, names, ids and failure messages stay clear (the store
    /// filters on search attributes). Call it again to chain codecs: each encodes what the
    /// previous one produced (compress, then encrypt).
    ///
    /// Each encoded payload carries its codec's [`id`](PayloadCodec::id), so payloads written
    /// before the codec was installed still read as they are, and a payload whose codec is
    /// missing (or whose key is wrong) fails the call with a store error of kind
    /// `Codec` naming the codec. Clients, queries, describe, history and the HTTP service of
    /// this engine see clear values. An id that is empty, over 255 bytes or installed twice
    /// makes [`build`](Self::build) fail.
    pub fn payload_codec(mut self, codec: impl PayloadCodec) -> Self {
        if let Err(e) = self.codecs.push(Arc::new(codec)) {
            self.errors.push(e);
        }
        self
    }

    /// The task queue this engine's workflow worker serves, and the default queue its client
    /// starts runs on (default `"default"`). Engines on different queues share a store and
    /// each runs only its queue's runs; children and starts may name another queue.
    pub fn task_queue(mut self, name: impl Into<String>) -> Self {
        self.config.task_queue = name.into();
        self
    }

    /// Also runs the activities sent to task queue `name` (`ctx.activity(..).task_queue(name)`),
    /// besides those of its own [`task_queue`](Self::task_queue); call it once per queue. An
    /// activity sent to a queue is leased only by engines that serve that queue and register the
    /// activity, whichever engine runs its workflow: a pool with GPUs serves `"gpu"`. Activities
    /// sent to no queue run on any engine that registers them.
    pub fn activity_task_queue(mut self, name: impl Into<String>) -> Self {
        self.config.activity_queues.push(name.into());
        self
    }

    /// How long the store keeps this engine's leases after its last sign of life (default
    /// 3 s; it renews every third of that). When the process dies, its workflow tasks and
    /// running activity attempts are taken over by other engines once this runs out, whatever
    /// the activities' own timeouts. Shorter recovers sooner; too short mistakes a stall for a
    /// death (work may then run twice, as activities may anyway).
    pub fn liveness_lease(mut self, lease: Duration) -> Self {
        self.config.liveness_lease = lease;
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

    /// How long an update call of this engine's client waits for its outcome (or, for
    /// `.start()` and `wait: accepted`, for its validator) when the call sets no
    /// [`timeout`](crate::UpdateCall::timeout) of its own (default 30 s,
    /// [`DEFAULT_UPDATE_TIMEOUT`](crate::DEFAULT_UPDATE_TIMEOUT)). When it runs out the caller gets `WfError::Timeout` naming the update id; the
    /// update stays queued, is applied when a worker takes the run, and the same call with that
    /// update id returns its outcome.
    pub fn update_timeout(mut self, timeout: Duration) -> Self {
        self.config.update_timeout = timeout;
        self
    }

    /// Keeps closed runs (completed, failed, cancelled, terminated, continued as new) for
    /// `period` after they closed, then purges them with their histories, updates and dedupe
    /// ids: a background task of this engine looks every tenth of the period (at least every
    /// second, at most every hour, by the engine clock) and deletes them in batches of
    /// [`DEFAULT_PURGE_BATCH`](crate::client::DEFAULT_PURGE_BATCH) runs, each one transaction,
    /// so that live runs' commits go on between batches. Default: kept forever. Running runs
    /// are never purged; schedules keep running. A purged run answers `NotFound`, and its
    /// workflow id may be started again.
    ///
    /// Dedupe ids (signal ids, update ids) live as long as their run is retained (across
    /// continue-as-new, as long as a run of the chain is): a client retrying a signal or an
    /// update after its run was purged is not deduplicated. Keep the period well above your
    /// clients' retry horizon. An engine that runs no workers ([`client_only`](Self::client_only))
    /// runs no retention task. A zero period makes [`build`](Self::build) fail.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), wf_core::WfError> {
    /// use std::time::Duration;
    /// let engine = wf_core::Engine::builder()
    ///     .sqlite("app.db")
    ///     .retention(Duration::from_secs(30 * 86_400))
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn retention(mut self, period: Duration) -> Self {
        self.config.retention = Some(period);
        self
    }

    /// Sets a flow limit in the store when the engine starts (see [`FlowLimit`]): a cap on
    /// the activity attempts of an activity name, a task queue or a flow key, held by the
    /// store and so binding every engine that shares it. It replaces the stored limit of the
    /// same scope and kind (an operator's change made with
    /// [`Client::flow_limits`](crate::Client::flow_limits) lasts until an engine that sets
    /// that limit starts again); limits set by others stay. Per-engine caps such as
    /// [`max_concurrent_activities`](Self::max_concurrent_activities) apply as well.
    /// [`build`](Self::build) fails with `InvalidConfig` for a limit that
    /// [`FlowLimit::check`] refuses.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), wf_core::WfError> {
    /// use std::time::Duration;
    /// use wf_core::{FlowLimit, FlowScope};
    /// let engine = wf_core::Engine::builder()
    ///     .sqlite("app.db")
    ///     .flow_limit(FlowLimit::concurrency(FlowScope::key("openai"), 4))
    ///     .flow_limit(FlowLimit::rate(FlowScope::key("openai"), 60, Duration::from_secs(60)))
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn flow_limit(mut self, limit: FlowLimit) -> Self {
        self.flow_limits.push(limit);
        self
    }

    /// Sets the settings of a queue of workflow starts
    /// ([`StartOptions::queue`](crate::StartOptions::queue)) when the engine starts, replacing
    /// the stored settings of that name (an operator's change through
    /// [`Client::workflow_queues`](crate::Client::workflow_queues) lasts until an engine that
    /// sets the queue in code starts again). Settings [`WorkflowQueue::check`] refuses are an
    /// `InvalidConfig` error from `build`.
    ///
    /// [`WorkflowQueue::check`]: crate::WorkflowQueue::check
    pub fn workflow_queue(mut self, queue: crate::data::queue::WorkflowQueue) -> Self {
        self.workflow_queues.push(queue);
        self
    }

    /// Runs no workers: the engine is only a client of the store (other engines, in this
    /// process or others, do the work). It still registers in the store, holding no lease,
    /// so that the engines that run its workflows poke it when an outcome it waits for (an
    /// update's result, a workflow's result) is committed: its calls return at once rather
    /// than at its next poll, and the messages it sends wake those engines at once too.
    pub fn client_only(mut self) -> Self {
        self.config.run_workers = false;
        self
    }

    /// Opens the store and starts the workers. Must be called inside a tokio runtime. Fails
    /// with `InvalidConfig` if a registration was refused, or an activity name, the task queue
    /// or the build id is out of its limits.
    pub async fn build(self) -> Result<Engine, WfError> {
        if let Some(e) = self.errors.first() {
            return Err(WfError::InvalidConfig(e.clone()));
        }
        self.check_config().map_err(WfError::InvalidConfig)?;
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
                            WfError::Store(StoreError::bug(format!(
                                "opening the SQLite store panicked: {e}"
                            )))
                        })?;
                Arc::new(open.map_err(WfError::from)?)
            }
            StoreChoice::Memory => Arc::new(MemoryStore::new()),
            StoreChoice::Custom(store) => store,
            StoreChoice::Opener(open) => open().await.map_err(WfError::from)?,
        };
        // Without a codec, no wrapper: the hot path pays nothing.
        let store: Arc<dyn Store> = if self.codecs.is_empty() {
            store
        } else {
            Arc::new(EncodedStore::new(store, self.codecs))
        };
        let (worker, inbox) = WorkerHandle::new();
        let worker_id = uuid::Uuid::new_v4().to_string();
        let listener = peers::bind(&worker_id);
        let mut config = self.config;
        if listener.is_none() && !self.poll_set {
            config.poll_interval = config.poll_interval.min(POLL_WITHOUT_WAKEUPS);
        }
        let metrics = EngineMetrics::new(
            self.catalog.workflows.keys().copied(),
            self.catalog.activities.names(),
            config.cache_capacity,
        );
        let core = Arc::new(Core {
            store,
            clock: self.clock,
            catalog: self.catalog,
            activities: ActivitySlots::new(config.max_activities),
            config,
            worker_id,
            wake: Arc::new(Wakeups::new()),
            worker,
            liveness: Liveness::default(),
            wake_address: listener.as_ref().map(|l| l.address.clone()),
            metrics,
            flow: Default::default(),
        });
        let mut engine = Engine {
            core: core.clone(),
            thread: None,
            tasks: Vec::new(),
            peers: None,
        };
        for queue in self.workflow_queues {
            let now = core.now_ms();
            core.store.admin().set_workflow_queue(queue, now).await?;
        }
        for limit in self.flow_limits {
            let now = core.now_ms();
            core.store.admin().set_flow_limit(limit, now).await?;
        }
        flow::refresh(&core).await;
        if core.config.run_workers {
            liveness::register(&core).await?;
        } else if let Err(e) = liveness::register(&core).await {
            // A client holds no lease: unregistered, it only misses its peers' pokes.
            tracing::warn!(error = %e, "registering the client-only engine failed: outcomes committed by other engines are seen at the poll");
        }
        engine.peers = Some(peers::start(core.clone(), listener).await);
        if let Some(changes) = core.store.changes() {
            engine
                .tasks
                .push(tokio::spawn(peers::follow_store(core.clone(), changes)));
        }
        if !core.config.run_workers {
            engine
                .tasks
                .push(tokio::spawn(liveness::keep_alive(core.clone())));
        } else {
            engine.thread = Some(worker::spawn(core.clone(), inbox)?);
            engine
                .tasks
                .push(tokio::spawn(activity_worker::run(core.clone())));
            engine
                .tasks
                .push(tokio::spawn(activity_worker::watch_cancellations(
                    core.clone(),
                )));
            engine
                .tasks
                .push(tokio::spawn(time_keeper::run(core.clone())));
            engine
                .tasks
                .push(tokio::spawn(super::queues::run(core.clone())));
            if let Some(period) = core.config.retention {
                engine
                    .tasks
                    .push(tokio::spawn(retention::run(core.clone(), period)));
            }
        }
        Ok(engine)
    }
}

impl EngineBuilder {
    /// The names registered and configured by other means than `workflow::<W>()`, against
    /// their limits.
    fn check_config(&self) -> Result<(), String> {
        let mut activities: Vec<&str> = self.catalog.activities.names().collect();
        activities.sort_unstable();
        for name in activities {
            Ident::ActivityName
                .check(name)
                .map_err(|e| format!("an activity: {e}"))?;
        }
        Ident::TaskQueue
            .check(&self.config.task_queue)
            .map_err(|e| e.to_string())?;
        for queue in &self.config.activity_queues {
            Ident::TaskQueue
                .check(queue)
                .map_err(|e| format!("an activity task queue: {e}"))?;
        }
        if let Some(id) = &self.config.build_id {
            Ident::BuildId.check(id).map_err(|e| e.to_string())?;
        }
        for limit in &self.flow_limits {
            limit.check()?;
        }
        for queue in &self.workflow_queues {
            queue.check()?;
        }
        if self.config.retention == Some(Duration::ZERO) {
            return Err(
                "the retention period must be longer than zero (a run would be purged \
                        as it closes, before anyone reads its result)"
                    .to_string(),
            );
        }
        Ok(())
    }
}

/// The names of workflow type `W` and of its handlers, against their limits.
fn check_names<W: WorkflowDefinition>() -> Result<(), String> {
    let rust_type = std::any::type_name::<W>();
    Ident::WorkflowType
        .check(W::NAME)
        .map_err(|e| format!("workflow type {rust_type}: {e}"))?;
    for handler in W::handlers() {
        let ident = match handler.kind.role() {
            Role::Signal => Ident::SignalName,
            Role::Query => Ident::QueryName,
            Role::Update => Ident::UpdateName,
        };
        ident
            .check(handler.name)
            .map_err(|e| format!("workflow type {}: {e}", W::NAME))?;
    }
    Ok(())
}

/// A running wf engine: a store plus in-process workers. Get a [`Client`] with
/// [`client`](Engine::client). Dropping it stops the workers abruptly (like a crash: leases
/// expire, nothing durable is lost); [`shutdown`](Engine::shutdown) stops them cleanly.
pub struct Engine {
    core: Arc<Core>,
    thread: Option<std::thread::JoinHandle<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The task that pokes the peers and listens to them (`peers.rs`).
    peers: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("worker_id", &self.core.worker_id)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Starts configuring an engine (in-memory store, system clock, no workflow types).
    pub fn builder() -> EngineBuilder {
        EngineBuilder {
            store: StoreChoice::Memory,
            catalog: Catalog::default(),
            clock: Arc::new(SystemClock),
            config: Config::default(),
            poll_set: false,
            codecs: PayloadCodecs::default(),
            flow_limits: Vec::new(),
            workflow_queues: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The workflow types this engine runs, by name: their input and result types and their
    /// handlers with parameter names and types (what `GET /{type}` of wf-http shows). A
    /// dynamic workflow type is among them, marked `dynamic_workflow`.
    pub fn workflow_types(&self) -> Vec<WorkflowType> {
        let mut types: Vec<WorkflowType> = self
            .core
            .catalog
            .workflows
            .values()
            .chain(&self.core.catalog.dynamic)
            .map(|d| d.shape())
            .collect();
        types.sort_by_key(|t| t.name);
        types
    }

    /// What this engine (and its store, if it records any) counted and timed so far: workflow
    /// tasks, replays, the cache, updates, signals, activities, timers, and the store's write
    /// transactions. [`MetricsSnapshot::to_prometheus_text`] renders it for Prometheus (what
    /// wf-http's `GET /metrics` serves); read values with [`MetricsSnapshot::value`] to
    /// export them some other way. Taking one reads a few hundred atomics.
    ///
    /// ```
    /// # async fn demo() -> Result<(), wf_core::WfError> {
    /// let engine = wf_core::Engine::builder().memory().build().await?;
    /// let tasks = engine.metrics().family("wf_workflow_tasks_total").map(|f| f.samples.len());
    /// assert_eq!(tasks, Some(3)); // no workflow type registered: the `_unregistered` ones
    /// # Ok(()) }
    /// ```
    pub fn metrics(&self) -> MetricsSnapshot {
        self.core.metrics_snapshot()
    }

    /// A client of this engine (cheap to clone).
    pub fn client(&self) -> Client {
        Client::from_transport(Arc::new(InProcessTransport::new(self.core.clone())))
    }

    /// Stops the workers cleanly: in-flight workflow tasks finish, running activity attempts
    /// are released for another worker (not counted as failures). If no [`Client`] of this
    /// engine (nor a handle, which holds one) is left, the store closes too: a SQLite database
    /// is then one self-contained file.
    ///
    /// If the store cannot close cleanly (on a full disk SQLite cannot fold its WAL into the
    /// database file), this logs a warning naming the file; [`close`](Self::close) returns
    /// that error instead. Nothing committed is lost either way.
    pub async fn shutdown(self) {
        if let Err(e) = self.close().await {
            tracing::warn!(error = %e, "the engine stopped, but its store did not close cleanly");
        }
    }

    /// Stops the engine as [`shutdown`](Self::shutdown) does, and says whether its store
    /// closed cleanly: `Err` (a retryable [`WfError::Store`]) when it could not, e.g. a SQLite
    /// database on a full disk whose WAL could not be folded into the database file (the
    /// `-wal` file keeps the last commits, and the next open folds them in). `Ok` too when a
    /// client of this engine still holds the store open (it closes when the last one goes).
    pub async fn close(mut self) -> Result<(), WfError> {
        self.core.wake.stop();
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        // After the last commits: their outcomes reach the peers.
        self.core.wake.outbox.close();
        if let Some(peers) = self.peers.take() {
            let _ = peers.await;
        }
        peers::stop_listening(&self.core);
        liveness::remove(&self.core).await;
        let store = self.core.store.clone();
        drop(self);
        let closed = if Arc::strong_count(&store) == 1 {
            store.close().await
        } else {
            Ok(())
        };
        // Dropping the last reference to a SQLite store joins its threads (and SQLite's own
        // close checks the WAL again): on a blocking thread, not this runtime's.
        let _ = tokio::task::spawn_blocking(move || drop(store)).await;
        closed.map_err(WfError::Store)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.thread.is_some() {
            // Not shut down cleanly: behave like a crash.
            self.core.wake.mark_crashed();
        }
        self.core.wake.stop();
        peers::stop_listening(&self.core);
        for t in self.tasks.iter().chain(&self.peers) {
            t.abort();
        }
        self.core.activities.abort_all();
    }
}
