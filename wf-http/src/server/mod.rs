//! The HTTP service: [`Api`] (a client plus the workflow types it serves), [`router`] for an
//! axum app of the user's, and [`serve`] running it alone with tokens by role, a body limit
//! and a per-request timeout. `routes.rs` is the table of every route and the role it needs;
//! `auth.rs` the roles, the tokens and their check.
//!
//! May import: `wire`, `json`, `errors`, `tls`. The remote client (`crate::client`) does not import
//! this module, nor this module it.

mod activities;
mod auth;
mod batches;
mod body;
mod builds;
mod feed;
mod flow;
mod health;
mod messages;
mod metrics;
mod purge;
mod queues;
mod repair;
mod routes;
mod runs;
mod schedules;
mod serve;
mod streams;
mod tls;
mod ui;

pub use auth::{Role, Tokens};
pub use serve::{serve, ServeOptions, Server};
pub use tls::TlsConfig;

use axum::Router;
use body::Failure;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use wf_core::{Client, Engine, WorkflowType};

pub use crate::wire::ANY_TYPE;

/// What the service serves: a client (an engine's, usually) and the workflow types whose
/// handlers it describes and whose JSON arguments it checks. Cheap to clone.
#[derive(Clone)]
pub struct Api {
    inner: Arc<Inner>,
    /// How long `GET /readyz` waits for the store.
    ready_timeout: Duration,
}

struct Inner {
    client: Client,
    types: HashMap<&'static str, WorkflowType>,
    /// The dynamic workflow type, which runs every type name not in `types`.
    dynamic: Option<WorkflowType>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.inner.types.keys().copied().collect();
        names.sort_unstable();
        f.debug_struct("Api").field("types", &names).finish()
    }
}

impl Api {
    /// Serves `types` through `client` (for an engine, `Api::from(&engine)` does this).
    /// A dynamic workflow type among them (`dynamic_workflow`) serves every other type name.
    pub fn new(client: Client, types: Vec<WorkflowType>) -> Api {
        let (dynamic, types): (Vec<_>, Vec<_>) =
            types.into_iter().partition(|t| t.dynamic_workflow);
        Api {
            inner: Arc::new(Inner {
                client,
                types: types.into_iter().map(|t| (t.name, t)).collect(),
                dynamic: dynamic.into_iter().next(),
            }),
            ready_timeout: health::DEFAULT_READY_TIMEOUT,
        }
    }

    /// How long `GET /readyz` waits for the store to answer before it says 503 (default
    /// 2 s). [`serve`] sets it from [`ServeOptions::ready_timeout`].
    pub fn ready_timeout(mut self, deadline: Duration) -> Api {
        self.ready_timeout = deadline;
        self
    }

    pub(crate) fn ready_deadline(&self) -> Duration {
        self.ready_timeout
    }

    pub(crate) fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The workflow types served.
    pub(crate) fn types(&self) -> impl Iterator<Item = &WorkflowType> {
        self.inner.types.values()
    }

    /// The type named in the path: `None` for [`ANY_TYPE`], the dynamic workflow type for a
    /// name no other type has (if one is served), 404 for a type not served.
    pub(crate) fn named_type(&self, name: &str) -> Result<Option<&WorkflowType>, Failure> {
        if name == ANY_TYPE {
            return Ok(None);
        }
        let served = self.inner.types.get(name).or(self.inner.dynamic.as_ref());
        served.map(Some).ok_or_else(|| {
            let mut served: Vec<&str> = self.inner.types.keys().copied().collect();
            served.sort_unstable();
            Failure::from(wf_core::WfError::Unknown {
                kind: "workflow type",
                name: name.to_string(),
                hint: crate::suggest::with_suggestion(
                    format!("this server serves: {}", served.join(", ")),
                    name,
                    served.iter().copied(),
                ),
            })
        })
    }

    /// The type of run `id`: the one named in the path, or for [`ANY_TYPE`] the run's own
    /// (looked up when JSON needs it).
    pub(crate) async fn run_type(&self, name: &str, id: &str) -> Result<&WorkflowType, Failure> {
        if let Some(t) = self.named_type(name)? {
            return Ok(t);
        }
        let described = self.client().describe(id).await?;
        self.named_type(&described.workflow_type)?
            .ok_or_else(|| Failure::not_found(format!("run {id:?} has no workflow type")))
    }
}

impl From<&Engine> for Api {
    fn from(engine: &Engine) -> Api {
        Api::new(engine.client(), engine.workflow_types())
    }
}

/// The routes, to mount in an axum app (`app.nest("/wf", wf_http::router(&engine))`). They
/// have no token check, body limit or timeout of their own: add the app's layers, or use
/// [`serve`], which adds them (and checks each route's [`Role`]: see [`Tokens`]).
///
/// | route | what |
/// |---|---|
/// | `GET /healthz` | liveness: `{"status": "ok"}` while the process answers |
/// | `GET /readyz` | readiness: `{"status": "ready"}` when the store answers a read within [`Api::ready_timeout`], else 503 `{"error": "unavailable"}` |
/// | `GET /_whoami` | the caller's role: `{"role": "read" \| "write" \| "admin"}` |
/// | `GET /metrics` | the engine's metrics, Prometheus text format (404 for a client that is not an engine's) |
/// | `GET /{type}` | the type's signals, queries and updates with their parameters |
/// | `POST /{type}/runs` | start: `{"id", "input", "conflict"}` -> 201 |
/// | `GET /{type}/runs` | list: `?status=&limit=&cursor=&latest=&build_id=` |
/// | `GET /{type}/runs/{id}` | describe |
/// | `GET /{type}/runs/{id}/history` | events as JSON: `?from=&limit=&run_id=` |
/// | `GET /{type}/runs/{id}/result` | long poll for the result: `?wait_ms=` (202 when it runs on) |
/// | `POST /{type}/runs/{id}/signal` | `{"name", "args", "signal_id"}` -> 202 |
/// | `POST /{type}/runs/{id}/update` | `{"name", "args", "update_id", "wait", "timeout_ms"}` |
/// | `GET /{type}/runs/{id}/updates/{update_id}` | long poll for an update: `?wait=&wait_ms=` |
/// | `POST /{type}/runs/{id}/query` | `{"name", "args"}` |
/// | `GET /{type}/runs/{id}/streams` | the run's streams that hold an entry, in name order: `{"run_id", "streams": [{"name", "entries", "closed"}]}`; `?run_id=` |
/// | `GET /{type}/runs/{id}/streams/{name}` | the stream's entries as server-sent events: `?from=&run_id=`, `Last-Event-ID`; `event: end` last |
/// | `GET /{type}/runs/{id}/published/{key}` | long poll for a published event's value: `?timeout_ms=` (202 when none was set in time) |
/// | `POST /{type}/runs/{id}/cancel`, `.../terminate` | `{"reason"}` (optional) |
/// | `POST /{type}/runs/{id}/pause`, `.../unpause` | `{"reason"}` (optional): an operator's pause |
/// | `GET /_events` | the feed of what runs do as server-sent events (`id:` the cursor, `data:` the event's JSON): `?type=&workflow_id=&kinds=a,b&after=CURSOR&follow=false`, `Last-Event-ID`; from `after=0` (everything kept) by default, `after=now` for new events only; follows forever unless `follow=false` (then `event: end`, `data: {"cursor"}`) |
/// | `GET /_count` | runs counted by list's filter (`?type=&status=&search=...`) -> `{"count"}` |
/// | `GET /_schedules`, `POST`/`GET`/`DELETE /_schedules/{id}` | schedules: list, create, describe, delete |
/// | `POST /_schedules/{id}/{pause,unpause,trigger}` | `{"note"}` (optional) |
/// | `GET /_builds` | running runs by build id: `?task_queue=` -> `[{"build_id", "current_for", "pinned", "auto_upgrade", "not_started"}]` |
/// | `POST /_builds/current` | `{"task_queue", "build_id"}`: make a build current (worker versioning) |
/// | `POST /{type}/runs/{id}/reset` | `{"to": "first-task" \| "last-good-task"}` or `{"to_event"}`, `"drop_messages"`, `"reason"` -> `{"status": "reset", "workflow_id", "run_id"}` |
/// | `POST /{type}/runs/{id}/fork` | `{"new_workflow_id", "at_event", "reason"}` -> `{"status": "forked", ..}` |
/// | `POST /{type}/runs/{id}/resume` | `{"reason"}` (optional) -> `{"status": "resumed", ..}` |
/// | `DELETE /{type}/runs/{id}` | `{"reason"}` (optional): delete the latest run -> `{"status": "deleted", ..}` |
/// | `POST /{type}/runs/{id}/move` | `{"build_id"}`: move the run to another build |
/// | `POST /_purge` | `{"closed_before_ms", "batch", "dry_run"}` -> `{"runs", "more"}` |
/// | `POST /_activities/poll` | `{"task_queue", "names", "wait_ms", "identity"}`: lease an activity task for a worker outside the engine -> 200 `{"token", "name", "input", "attempt", deadlines, "heartbeat_timeout_ms", "last_heartbeat"}`, or 204 when the wait ran out |
/// | `POST /_activities/{complete,fail,heartbeat}` | `{"token", "result" \| "message", "retryable" \| "details"}`: an attempt's outcome by task token (a polled task's, or asynchronous completion); `heartbeat` answers `{"cancel_requested"}` |
/// | `GET /ui/` | the web view (its static files need no token; its data routes do) |
///
/// `{id}` is a workflow id (its latest run). `{type}` may be `_` ([`ANY_TYPE`]) on the run
/// routes. Bodies are JSON, or MessagePack with `Content-Type: application/msgpack` (payloads
/// then travel as their bytes, untouched: what the remote client uses).
pub fn router(api: impl Into<Api>) -> Router {
    let api: Api = api.into();
    let mut router = Router::new();
    for r in routes::ROUTES {
        router = router.route(r.path, (r.handler)(r.verb.filter(), r.path));
    }
    router
        .fallback(runs::no_route)
        .method_not_allowed_fallback(runs::wrong_method)
        .with_state(api)
}
