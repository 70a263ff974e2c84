//! The command line's grammar (clap derive): global options, commands and their arguments.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// wf: operate durable workflows stored in a SQLite file or PostgreSQL, or served over HTTP.
#[derive(Debug, Parser)]
#[command(name = "wf", version, about, after_help = crate::exit::EXIT_CODES_HELP)]
pub struct Cli {
    /// Where the runs are.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Print JSON for scripts instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `--db FILE`, `--postgres URL [--pg-schema S]` or `--url URL [--token T] [--ca FILE]
/// [--cert FILE --key FILE]`.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// The SQLite database file of an embedded engine (opened by a client-only engine: no
    /// workers run).
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "WF_DB",
        conflicts_with_all = ["url", "postgres"]
    )]
    pub db: Option<PathBuf>,
    /// The PostgreSQL database of the engines (opened by a client-only engine: no workers
    /// run): libpq's connection string, `postgres://user@host:port/db?sslmode=verify-full&sslrootcert=ca.pem`
    /// or `host=... sslmode=...`, TLS settings included.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "WF_POSTGRES",
        hide_env_values = true,
        conflicts_with = "url"
    )]
    pub postgres: Option<String>,
    /// The schema wf's tables are in, with --postgres (`PostgresOptions::schema`).
    #[arg(
        long,
        global = true,
        value_name = "SCHEMA",
        env = "WF_PG_SCHEMA",
        default_value = "wf"
    )]
    pub pg_schema: String,
    /// The URL of a wf-http server (`http://host:port` or `https://host:port`).
    #[arg(long, global = true, value_name = "URL", env = "WF_URL")]
    pub url: Option<String>,
    /// The server's bearer token (with --url).
    #[arg(
        long,
        global = true,
        value_name = "T",
        env = "WF_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// The CA certificates (PEM) that sign an `https://` server's certificate, instead of the
    /// system's.
    #[arg(long, global = true, value_name = "FILE", env = "WF_CA")]
    pub ca: Option<PathBuf>,
    /// A client certificate (PEM) for an `https://` server that requires one (mTLS); with
    /// --key.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "WF_CERT",
        requires = "key"
    )]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM); with --cert.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "WF_KEY",
        requires = "cert"
    )]
    pub key: Option<PathBuf>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List runs, newest first.
    List(ListArgs),
    /// Status, pending work and the last task failure of a workflow's latest run.
    Describe {
        /// The workflow id.
        id: String,
    },
    /// The events of a workflow's latest run, details decoded to JSON.
    History {
        /// The workflow id.
        id: String,
        /// Keep printing new events until the run closes.
        #[arg(long)]
        follow: bool,
    },
    /// Send a signal. ARGS_JSON is a JSON array of the handler's arguments (`[]`, `["x", 2]`).
    Signal {
        /// The workflow id.
        id: String,
        /// The signal's name.
        name: String,
        /// The arguments, as a JSON array.
        #[arg(default_value = "[]")]
        args_json: String,
        /// A dedupe id: sending again with it applies once.
        #[arg(long = "id", value_name = "X")]
        signal_id: Option<String>,
    },
    /// Send an update and wait for its result.
    Update {
        /// The workflow id.
        id: String,
        /// The update's name.
        name: String,
        /// The arguments, as a JSON array.
        #[arg(default_value = "[]")]
        args_json: String,
        /// A dedupe id: a retry with it returns the first outcome.
        #[arg(long = "id", value_name = "X")]
        update_id: Option<String>,
        /// How long to wait for the result (`500ms`, `30s`, `5m`, `1h`).
        #[arg(long, default_value = "30s", value_parser = crate::render::parse_duration)]
        timeout: std::time::Duration,
    },
    /// Run a query (needs --url: queries run the workflow's code, which only a serving process
    /// has).
    Query {
        /// The workflow id.
        id: String,
        /// The query's name.
        name: String,
        /// The arguments, as a JSON array.
        #[arg(default_value = "[]")]
        args_json: String,
        /// Answer as of this history event (an event id from `wf history`), by replay.
        #[arg(long, value_name = "N")]
        at_event: Option<u64>,
    },
    /// Request cancellation of a workflow's latest run (its code may clean up).
    Cancel {
        /// The workflow id.
        id: String,
        /// Why, for the history.
        #[arg(long, default_value = "cancelled with wf")]
        reason: String,
    },
    /// End a workflow's latest run at once, without running its code.
    Terminate {
        /// The workflow id.
        id: String,
        /// Why, for the history.
        #[arg(long, default_value = "terminated with wf")]
        reason: String,
    },
    /// Reset a workflow's latest run to a workflow task of its history: it ends as `reset`,
    /// and a new run goes on from there on today's code, the later signals and updates
    /// applied again (unless --drop-messages).
    Reset(ResetArgs),
    /// Start a new workflow id from a prefix of a workflow's latest run (up to --at-event),
    /// leaving that run untouched.
    Fork {
        /// The workflow id to fork.
        id: String,
        /// The new workflow id.
        new_id: String,
        /// The last event kept: 1, or a WorkflowTaskCompleted (see `wf history`).
        #[arg(long, value_name = "N")]
        at_event: u64,
        /// Why, for the history.
        #[arg(long, default_value = "forked with wf")]
        reason: String,
    },
    /// Resume a failed, timed-out, cancelled or terminated run from its last good workflow
    /// task; for a running run whose workflow task keeps failing, retry the task now.
    Resume {
        /// The workflow id.
        id: String,
        /// Why, for the history.
        #[arg(long, default_value = "resumed with wf")]
        reason: String,
    },
    /// Delete a workflow's latest run: its history, inbox and dedupe ids (a running run is
    /// terminated first).
    Delete {
        /// The workflow id.
        id: String,
        /// Why, for the logs.
        #[arg(long, default_value = "deleted with wf")]
        reason: String,
    },
    /// Start a run of workflow type TYPE under workflow id ID with input INPUT_JSON (the
    /// workflow's input as JSON; `null` for none).
    Start {
        /// The workflow type's name.
        #[arg(value_name = "TYPE")]
        workflow_type: String,
        /// The workflow id.
        id: String,
        /// The input, as JSON.
        #[arg(default_value = "null")]
        input_json: String,
        /// Wait this long (`30s`, `5m`, `1h`) before the run's first workflow task: the run
        /// exists at once, and describe shows when it starts.
        #[arg(long, value_parser = crate::render::parse_duration)]
        start_delay: Option<std::time::Duration>,
    },
    /// Print a workflow's result (following continue-as-new), waiting for it to close.
    Result {
        /// The workflow id.
        id: String,
        /// How long to wait (`500ms`, `30s`, `5m`, `1h`); exit 5 with a timeout after it.
        #[arg(long, default_value = "30s", value_parser = crate::render::parse_duration)]
        wait: std::time::Duration,
    },
    /// Print the entries of stream NAME of a workflow's latest run as they come (`OFFSET
    /// VALUE_JSON` a line; with --json, one `{"offset", "value"}` object a line), until the
    /// stream is closed or the run has closed and every entry was printed.
    Stream {
        /// The workflow id.
        id: String,
        /// The stream's name.
        name: String,
        /// The first offset to print (a reader that printed entry N resumes with N + 1).
        #[arg(long, value_name = "N", default_value_t = 0)]
        from: u64,
    },
    /// Print the feed of what runs do in feed order (`CURSOR TIME KIND TYPE ID DETAIL` a
    /// line; with --json, one feed event object a line): what the store keeps, then with
    /// --follow new events as they commit.
    Events {
        /// Only runs of this workflow type.
        #[arg(long = "type", value_name = "T")]
        workflow_type: Option<String>,
        /// Only runs of this workflow id.
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// Only events of this kind (`started`, `signal_received`, `completed`...); repeat it.
        #[arg(long, value_name = "K", value_parser = parse_feed_kind)]
        kind: Vec<wf_core::FeedKind>,
        /// Start after this cursor (an event's, printed first on its line): `0`, everything
        /// kept (the default), or `now`, only new events.
        #[arg(long, value_name = "CURSOR", default_value = "0", value_parser = parse_feed_cursor)]
        after: wf_core::FeedCursor,
        /// Keep printing new events as they commit, rather than exit once caught up.
        #[arg(long)]
        follow: bool,
    },
    /// Pause a workflow's latest run as an operator: it gets no workflow task and starts no
    /// activity; signals, updates and fired timers wait, in order, until `wf unpause`.
    Pause {
        /// The workflow id.
        id: String,
        /// Why, shown by describe.
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Unpause a workflow's latest run: what waited applies in arrival order.
    Unpause {
        /// The workflow id.
        id: String,
    },
    /// Count the runs that `wf list`'s filters select (all of them: --limit and --after do
    /// not apply), without listing them.
    Count(ListArgs),
    /// Print a run's history as a versioned JSON document (`wf export ID > run.json`), or
    /// write the runs matching a filter to a folder.
    Export(ExportArgs),
    /// Check exported histories: print what each holds, or run your replay test binary on
    /// them (see the guide's chapter "Versioning and patching").
    Replay {
        /// A folder of exported histories (`*.json`), or one file.
        #[arg(long, value_name = "DIR")]
        history: PathBuf,
        /// A program (your replay test binary) to run with `WF_REPLAY_HISTORY=DIR` set; its
        /// exit status becomes wf's.
        #[arg(long, value_name = "PROGRAM", num_args = 1.., allow_hyphen_values = true)]
        exec: Vec<String>,
    },
    /// Schedules: create, list, describe, pause, unpause, trigger, delete.
    #[command(subcommand)]
    Schedule(ScheduleCommand),
    /// Batches: signal, cancel, terminate, reset, pause, unpause or delete every run a filter selects
    /// (list's filters), as a durable job the engines on the store carry out; list, describe,
    /// cancel them.
    #[command(subcommand)]
    Batch(BatchCommand),
    /// Complete, fail or heartbeat an activity that completes asynchronously, by the task
    /// token its code handed out.
    #[command(subcommand)]
    Activity(ActivityCommand),
    /// Running runs by build id (pinned, auto-upgrade, not started) and the task queues each
    /// build is current for: watch an old build drain. `set-current` and `move` change them.
    Builds(BuildsArgs),
    /// Flow limits the store holds on activity attempts (per activity name, task queue or flow
    /// key): list them, set or remove one while the engines run.
    #[command(subcommand)]
    Queues(QueuesCommand),
    /// Delete the runs closed more than a given time ago (completed, failed, cancelled,
    /// terminated, continued as new) with their histories, updates and dedupe ids, in batches
    /// (each one transaction). Running runs are never deleted.
    Purge {
        /// How long ago the runs closed at the latest (`30d`, `12h`, `90m`).
        #[arg(long, value_name = "AGE", value_parser = crate::render::parse_duration)]
        closed_before: std::time::Duration,
        /// Only count the runs that would go.
        #[arg(long)]
        dry_run: bool,
        /// Runs per transaction.
        #[arg(long, default_value_t = wf_core::client::DEFAULT_PURGE_BATCH, value_name = "N")]
        batch: usize,
    },
}

/// `wf list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only runs of this workflow type.
    #[arg(long = "type", value_name = "T")]
    pub workflow_type: Option<String>,
    /// Only runs in this state (running, completed, failed, continued_as_new, terminated,
    /// cancelled).
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// Only runs whose search attribute KEY holds VALUE (repeatable: all must hold). VALUE
    /// reads as a bool, an int or a float when it looks like one, else as a keyword; force
    /// the kind with a prefix: `n=keyword:42`, `amount=float:3`, `due=datetime:<ms>`.
    #[arg(long = "search", value_name = "KEY=VALUE")]
    pub search: Vec<String>,
    /// Only runs started within this age (`1h`: in the last hour).
    #[arg(long, value_name = "AGE", value_parser = crate::render::parse_duration)]
    pub started_after: Option<std::time::Duration>,
    /// Only runs started longer ago than this age.
    #[arg(long, value_name = "AGE", value_parser = crate::render::parse_duration)]
    pub started_before: Option<std::time::Duration>,
    /// Only runs closed within this age.
    #[arg(long, value_name = "AGE", value_parser = crate::render::parse_duration)]
    pub closed_after: Option<std::time::Duration>,
    /// Only runs closed longer ago than this age.
    #[arg(long, value_name = "AGE", value_parser = crate::render::parse_duration)]
    pub closed_before: Option<std::time::Duration>,
    /// At most this many runs.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub limit: usize,
    /// The next page: runs after this run id (the last one the previous page printed).
    #[arg(long, value_name = "RUN_ID")]
    pub after: Option<String>,
    /// Every run of each workflow id, not only the latest.
    #[arg(long)]
    pub all_runs: bool,
    /// Only runs on this build (worker versioning: pinned to it, or following it as their
    /// task queue's current build).
    #[arg(long, value_name = "BUILD")]
    pub build_id: Option<String>,
}

/// The scope of `activity:NAME`, `task-queue:NAME` or `key:NAME`.
pub fn parse_scope(text: &str) -> Result<wf_core::FlowScope, String> {
    let forms = "give activity:NAME, task-queue:NAME or key:NAME";
    let (kind, name) = text
        .split_once(':')
        .ok_or_else(|| format!("{text:?} is not a scope: {forms}"))?;
    if name.is_empty() {
        return Err(format!("{text:?} names nothing: {forms}"));
    }
    match kind {
        "activity" => Ok(wf_core::FlowScope::activity(name)),
        "task-queue" | "task_queue" => Ok(wf_core::FlowScope::task_queue(name)),
        "key" => Ok(wf_core::FlowScope::key(name)),
        other => Err(format!("{other:?} is not a scope kind: {forms}")),
    }
}

/// What `wf queues` names: a flow limit's scope (`activity:NAME`, `task-queue:NAME`,
/// `key:NAME`), or a queue of workflow starts (`queue:NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueTarget {
    /// The flow limits of a scope of activity attempts.
    Flow(wf_core::FlowScope),
    /// A queue of workflow starts, by name.
    Workflow(String),
}

/// `queue:NAME`, or a scope as [`parse_scope`] reads it.
pub fn parse_target(text: &str) -> Result<QueueTarget, String> {
    match text.strip_prefix("queue:") {
        Some("") => Err(format!(
            "{text:?} names nothing: give queue:NAME, activity:NAME, task-queue:NAME or key:NAME"
        )),
        Some(name) => Ok(QueueTarget::Workflow(name.to_string())),
        None => parse_scope(text)
            .map(QueueTarget::Flow)
            .map_err(|e| format!("{e} (or queue:NAME for a queue of workflow starts)")),
    }
}

/// `wf queues ...`: flow limits, and queues of workflow starts.
#[derive(Debug, Subcommand)]
pub enum QueuesCommand {
    /// Every flow limit, by scope and kind; then every queue of workflow starts with settings
    /// or with runs on it, with its runs waiting and running.
    List,
    /// TARGET's limits with what they bind now: for a scope, the attempts they cover running
    /// and waiting and a rate limit's tokens; for `queue:NAME`, the queue's settings, its runs
    /// waiting (held) and running (admitted), and its rate's tokens.
    Describe {
        /// `activity:NAME`, `task-queue:NAME`, `key:NAME` or `queue:NAME`.
        #[arg(value_parser = parse_target)]
        target: QueueTarget,
    },
    /// Set a concurrency limit (`--concurrency N`) or a rate limit (`--rate M --per DURATION
    /// [--burst B]`) on TARGET, replacing its limit of that kind (a queue keeps its other
    /// limit; its rate takes no burst: it is the rate's M).
    SetLimit {
        /// `activity:NAME`, `task-queue:NAME`, `key:NAME` or `queue:NAME`.
        #[arg(value_parser = parse_target)]
        target: QueueTarget,
        /// At most N attempts running at once, over every engine.
        #[arg(long, value_name = "N", conflicts_with_all = ["rate", "per", "burst"], required_unless_present = "rate")]
        concurrency: Option<u32>,
        /// At most M attempts started per `--per`.
        #[arg(long, value_name = "M", requires = "per")]
        rate: Option<u32>,
        /// The rate's period (`1s`, `1m`, `500ms`).
        #[arg(long, value_name = "DURATION", value_parser = crate::render::parse_duration, requires = "rate")]
        per: Option<std::time::Duration>,
        /// The most attempts started at once after a quiet spell (M by default).
        #[arg(long, value_name = "B", requires = "rate")]
        burst: Option<u32>,
    },
    /// Remove TARGET's concurrency (`--concurrency`) or rate (`--rate`) limit (a queue left
    /// with neither loses its settings: it admits every start at once).
    RemoveLimit {
        /// `activity:NAME`, `task-queue:NAME`, `key:NAME` or `queue:NAME`.
        #[arg(value_parser = parse_target)]
        target: QueueTarget,
        /// Remove the concurrency limit.
        #[arg(long, conflicts_with = "rate", required_unless_present = "rate")]
        concurrency: bool,
        /// Remove the rate limit.
        #[arg(long)]
        rate: bool,
    },
}

/// `wf builds`: worker versioning.
#[derive(Debug, Args)]
pub struct BuildsArgs {
    /// Only this task queue (without a subcommand).
    #[arg(long, value_name = "Q")]
    pub queue: Option<String>,
    /// What to change (none: list the builds).
    #[command(subcommand)]
    pub command: Option<BuildsCommand>,
}

/// `wf builds ...`.
#[derive(Debug, Subcommand)]
pub enum BuildsCommand {
    /// Make BUILD the current build of task queue QUEUE: new runs start on it, auto-upgrade
    /// runs move to it, pinned runs stay where they are.
    SetCurrent {
        /// The task queue.
        queue: String,
        /// The build id.
        build: String,
    },
    /// Move a workflow's running run to BUILD (a pinned run whose build is gone).
    Move {
        /// The workflow id.
        id: String,
        /// The build id.
        build: String,
    },
}

/// `wf export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The workflow id (its latest run). Omit it with --out to export many runs.
    pub id: Option<String>,
    /// Write one file per run into this folder (`<workflow id>.<run id>.json`) instead of
    /// printing one run.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// With --out: only runs of this workflow type.
    #[arg(long = "type", value_name = "T")]
    pub workflow_type: Option<String>,
    /// With --out: only runs in this state.
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// With --out: at most this many runs (0: all).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub limit: usize,
}

/// `wf activity ...`.
#[derive(Debug, Subcommand)]
pub enum ActivityCommand {
    /// Complete the activity: the workflow gets RESULT_JSON as its result.
    Complete {
        /// The task token.
        token: String,
        /// The result, as JSON of the activity's output type (`'"approved"'`, `'{"id": 7}'`).
        #[arg(default_value = "null")]
        result_json: String,
    },
    /// Fail the activity: retried per its retry policy unless --non-retryable.
    Fail {
        /// The task token.
        token: String,
        /// What went wrong.
        message: String,
        /// An error kind the retry policy may name (default `retryable`).
        #[arg(long, value_name = "K")]
        kind: Option<String>,
        /// Never retry this failure.
        #[arg(long)]
        non_retryable: bool,
    },
    /// Record a heartbeat: the heartbeat timeout restarts; DETAILS_JSON is what a next attempt
    /// reads.
    Heartbeat {
        /// The task token.
        token: String,
        /// Progress details, as JSON.
        #[arg(default_value = "null")]
        details_json: String,
    },
}

/// `wf schedule ...`.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Create a schedule that starts a run of --type with --input at each fire time (`--every`
    /// intervals and `--calendar` matches, in UTC), under the workflow id `<prefix>-<fire time>`.
    Create(ScheduleCreateArgs),
    /// Every schedule.
    List,
    /// One schedule: spec, state, next fire times, recent actions.
    Describe {
        /// The schedule id.
        id: String,
    },
    /// Stop firing.
    Pause {
        /// The schedule id.
        id: String,
        /// A note for operators.
        #[arg(long, default_value = "paused with wf")]
        note: String,
    },
    /// Fire again, from now.
    Unpause {
        /// The schedule id.
        id: String,
        /// A note for operators.
        #[arg(long, default_value = "unpaused with wf")]
        note: String,
    },
    /// Take an action now (the overlap policy applies).
    Trigger {
        /// The schedule id.
        id: String,
    },
    /// Delete it (its running actions go on).
    Delete {
        /// The schedule id.
        id: String,
    },
}

/// `wf schedule create ID --type TYPE [--input JSON] (--every D | --calendar SPEC)...`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("when").required(true).multiple(true).args(["every", "calendar"])))]
pub struct ScheduleCreateArgs {
    /// The schedule id.
    pub id: String,
    /// The workflow type each action starts.
    #[arg(long = "type", value_name = "TYPE")]
    pub workflow_type: String,
    /// The input of each run, as JSON (`null` for none).
    #[arg(long, value_name = "JSON", default_value = "null")]
    pub input: String,
    /// Fire every DURATION (`30s`, `5m`, `1h`, `1d`), at multiples of it since the Unix epoch
    /// plus --offset (repeatable).
    #[arg(long, value_name = "DURATION", value_parser = crate::render::parse_duration)]
    pub every: Vec<std::time::Duration>,
    /// Shift of each --every fire within its period (`15m` with `--every 1h`: at :15).
    #[arg(long, value_name = "DURATION", value_parser = crate::render::parse_duration)]
    pub offset: Option<std::time::Duration>,
    /// Fire on a calendar match in UTC, cron's five fields `MINUTE HOUR DAY-OF-MONTH MONTH
    /// DAY-OF-WEEK` (`*`, a number, `a-b`, lists `1,15`; Sunday = 0): `'30 9 * * 1-5'` is
    /// 09:30 on weekdays (repeatable).
    #[arg(long, value_name = "SPEC")]
    pub calendar: Vec<String>,
    /// The prefix of each action's workflow id (default: the schedule id).
    #[arg(long, value_name = "PREFIX")]
    pub id_prefix: Option<String>,
    /// The task queue each action starts on (default: the scheduling engine's).
    #[arg(long, value_name = "Q")]
    pub task_queue: Option<String>,
    /// What an action due while the previous one runs does.
    #[arg(long, default_value = "skip", value_parser = ["skip", "buffer-one", "buffer-all", "allow-all", "cancel-other"])]
    pub overlap: String,
    /// Fire times missed for longer than this (an outage) are dropped, not caught up.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::render::parse_duration)]
    pub catchup_window: std::time::Duration,
}

/// `wf reset ID (--to first-task | --to last-good-task | --to-event N) [--drop-messages]
/// [--reason R]`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("point").required(true).args(["to", "to_event"])))]
pub struct ResetArgs {
    /// The workflow id.
    pub id: String,
    /// The point by name.
    #[arg(long, value_parser = ["first-task", "last-good-task"])]
    pub to: Option<String>,
    /// The point by event id: 1, or a WorkflowTaskCompleted (see `wf history`).
    #[arg(long, value_name = "N")]
    pub to_event: Option<u64>,
    /// Leave out the signals and updates received after the point.
    #[arg(long)]
    pub drop_messages: bool,
    /// Why, for the history.
    #[arg(long, default_value = "reset with wf")]
    pub reason: String,
}

/// `wf batch ...`.
#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// Send a signal to every selected run (once each: the batch's dedupe id).
    Signal {
        /// The signal's name.
        name: String,
        /// Its arguments, a JSON array (`'[]'` for none).
        args_json: String,
        /// Which runs, how fast, and confirmation.
        #[command(flatten)]
        start: BatchStartArgs,
    },
    /// `wf batch cancel ID`: cancel a running batch (what it did stays done).
    /// `wf batch cancel [filters]`: request cancellation of every selected run.
    Cancel {
        /// The batch to cancel; without it, a batch cancels the runs the filters select.
        #[arg(value_name = "ID")]
        batch: Option<String>,
        /// Which runs, how fast, and confirmation (without ID).
        #[command(flatten)]
        start: BatchStartArgs,
    },
    /// Terminate every selected run.
    Terminate(BatchStartArgs),
    /// Reset every selected run (as `wf reset` does) to --to: each closes as reset and goes
    /// on in a new run on today's code, its later signals and updates applied again (unless
    /// --drop-messages).
    Reset {
        /// The point of each run's history: first-task, or last-good-task (the last workflow
        /// task before its first failure).
        #[arg(long, value_parser = ["first-task", "last-good-task"])]
        to: String,
        /// Leave out the signals and updates each run received after the point.
        #[arg(long)]
        drop_messages: bool,
        /// Which runs, how fast, and confirmation.
        #[command(flatten)]
        start: BatchStartArgs,
    },
    /// Pause every selected run (as `wf pause` does).
    Pause(BatchStartArgs),
    /// Unpause every selected run.
    Unpause(BatchStartArgs),
    /// Delete every selected run: its history, inbox and dedupe ids (running ones are
    /// terminated first).
    Delete(BatchStartArgs),
    /// Every batch, newest first.
    List,
    /// One batch's action, filter, progress and status.
    Describe {
        /// The batch id.
        id: String,
    },
}

/// What `wf batch signal|cancel|terminate|reset|pause|unpause|delete` take besides the action.
#[derive(Debug, Args)]
pub struct BatchStartArgs {
    /// The runs: `wf list`'s filters (`--limit` and `--after` do not apply: a batch acts on
    /// every run the filter selects).
    #[command(flatten)]
    pub filter: ListArgs,
    /// At most this many runs per second.
    #[arg(long, value_name = "N")]
    pub rate: Option<u32>,
    /// Start without asking (needed when stdin is not a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Why, for the batch and each cancel, terminate, reset or pause.
    #[arg(long, default_value = "batch started with wf")]
    pub reason: String,
    /// The batch's id (default: a fresh one).
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// Start it and return, without waiting for it to finish.
    #[arg(long)]
    pub no_wait: bool,
}

/// A feed event kind by its wire name (`--kind`).
fn parse_feed_kind(text: &str) -> Result<wf_core::FeedKind, String> {
    text.parse()
}

/// A feed cursor (`--after`).
fn parse_feed_cursor(text: &str) -> Result<wf_core::FeedCursor, String> {
    text.parse()
}
