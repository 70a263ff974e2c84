//! [`HttpTransport`]: each [`Transport`] call as one request (or a few: long polls re-poll,
//! histories and lists come in pages) with MessagePack bodies, on pooled keep-alive
//! connections (plain, or TLS for `https://`).

use super::conns::{Conns, ExchangeError};
use super::tls::{ClientTls, TlsConnect};
use crate::errors::{from_http, transport_failure, ErrorBody};
use crate::wire::{
    millis, ActivityErrorBody, ActivityHeartbeatReply, ActivityPollBody, ActivityReportBody,
    ActivityTaskBody, BatchActionBody, BatchBody, BatchFilterBody, CountBody, CurrentBuildBody,
    DescriptionBody, FlowLimitBody, FlowRemovedBody, FlowUsageBody, HistoryPage, MoveToBuildBody,
    NewBatchBody, NewScheduleBody, NoteBody, PendingBody, PurgeBody, PurgeReply, QueryBody,
    ReasonBody, RetryBody, RunsPage, ScheduleBody, SignalBody, StartBody, StartedBody, UpdateBody,
    ValueBody, ANY_TYPE, HEARTBEAT_NOT_OPEN, MSGPACK,
};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Request};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wf_core::client::{
    ActivityResponse, ActivityTaskLease, ActivityTaskPoll, CallFuture, NewSchedule, ScheduleChange,
    SignalRequest, SignalStatus, StartRequest, Started, StreamRead, Transport, UpdateRequest,
};
use wf_core::{BatchDescription, BatchRequest, BuildIdStatus};
use wf_core::{
    Description, HistoryEvent, IdConflictPolicy, ListFilter, Payload, PurgeReport, PurgeRequest,
    RunInfo, ScheduleDescription, StreamPage, UpdateStage, WfError,
};
use wf_core::{FlowKind, FlowLimit, FlowScope, FlowUsage};

/// How long one long poll asks the server to wait (the client polls again after it).
const LONG_POLL_MS: u64 = 20_000;
/// History events and runs per page the client asks for.
const PAGE: usize = 1_000;

/// A [`Transport`] to a wf-http server. Build it with `Client::connect` ([`ConnectExt`]), or
/// with [`HttpTransport::new`] and `Client::from_transport`.
///
/// [`ConnectExt`]: crate::ConnectExt
pub struct HttpTransport {
    pub(super) base: String,
    /// The path the router is mounted under ("" at the root).
    pub(super) prefix: String,
    pub(super) auth: Option<HeaderValue>,
    pub(super) conns: Conns,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// A body-less request.
pub(super) const NO_BODY: Option<&()> = None;

impl HttpTransport {
    /// A transport to the server at `url` (`http://host:port[/prefix]`, or `https://` with
    /// `tls`: the CAs trusted and a client certificate, see [`ClientTls`]); no request is made
    /// yet. Fails with `InvalidArgument` on a URL of another scheme, a token that cannot be a
    /// header, or (for `https://`) a CA or client certificate file that cannot be read.
    pub fn new(url: &str, token: Option<&str>, tls: &ClientTls) -> Result<HttpTransport, WfError> {
        let base = url.trim_end_matches('/');
        let (rest, secure) = if let Some(rest) = base.strip_prefix("http://") {
            (rest, false)
        } else if let Some(rest) = base.strip_prefix("https://") {
            (rest, true)
        } else {
            return Err(WfError::InvalidArgument(format!(
                "the server URL must start with http:// or https://, not {url:?}"
            )));
        };
        let not_url = || {
            WfError::InvalidArgument(format!(
                "{url:?} is not a server URL like http://127.0.0.1:8233 or https://wf.example:8233"
            ))
        };
        let uri = base.parse::<hyper::Uri>().map_err(|_| not_url())?;
        let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(not_url)?;
        if rest.is_empty() || uri.query().is_some() {
            return Err(not_url());
        }
        let authority = format!(
            "{host}:{}",
            uri.port_u16().unwrap_or(if secure { 443 } else { 80 })
        );
        let prefix = uri.path().trim_end_matches('/').to_string();
        let auth = match token {
            Some(t) => Some(HeaderValue::from_str(&format!("Bearer {t}")).map_err(|_| {
                WfError::InvalidArgument("the token must be printable ASCII".into())
            })?),
            None => None,
        };
        let tls = match secure {
            true => Some(TlsConnect::new(host, tls)?),
            false => None,
        };
        Ok(HttpTransport {
            base: base.to_string(),
            prefix,
            auth,
            conns: Conns::new(authority, tls),
        })
    }

    /// Checks that the server answers and takes the token.
    pub(crate) async fn check(&self) -> Result<(), WfError> {
        let _: serde_json::Value = self.call(Method::GET, "/healthz", NO_BODY).await?;
        let _: RunsPage<Payload> = self.call(Method::GET, "/_/runs?limit=1", NO_BODY).await?;
        Ok(())
    }

    /// Sends one request and returns the status and body of a 2xx answer; any other answer is
    /// the error it stands for.
    pub(super) async fn send<B: Serialize>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<(u16, Bytes), WfError> {
        let bytes = match body {
            Some(b) => rmp_serde::to_vec_named(b).map_err(|e| {
                WfError::PayloadError(wf_core::PayloadError::Encode {
                    what: "request body".into(),
                    message: e.to_string(),
                })
            })?,
            None => Vec::new(),
        };
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.prefix))
            .header(ACCEPT, MSGPACK);
        if body.is_some() {
            req = req.header(CONTENT_TYPE, MSGPACK);
        }
        if let Some(auth) = &self.auth {
            req = req.header(AUTHORIZATION, auth.clone());
        }
        let req = req
            .body(Full::new(Bytes::from(bytes)))
            .map_err(|e| WfError::InvalidArgument(format!("bad request to {path}: {e}")))?;
        let (status, body) = self.conns.exchange(req).await.map_err(|e| match e {
            ExchangeError::Tls(refused) => refused.into_error(&format!("{}{path}", self.base)),
            e => transport_failure(0, &format!("{}{path}: {e}", self.base)),
        })?;
        let status = status.as_u16();
        if (200..300).contains(&status) {
            return Ok((status, body));
        }
        Err(refusal(status, &body))
    }

    /// [`send`](Self::send), decoding the answer.
    async fn call<B: Serialize, R: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<R, WfError> {
        let (_, bytes) = self.send(method, path, body).await?;
        decode(&bytes)
    }

    /// A long poll: asks again while the server answers 202 (still waiting).
    async fn poll(&self, path: &str) -> Result<Payload, WfError> {
        loop {
            let (status, bytes) = self.send(Method::GET, path, NO_BODY).await?;
            if status == 202 {
                let _: PendingBody = decode(&bytes)?;
                continue;
            }
            let body: ValueBody<Payload> = decode(&bytes)?;
            return Ok(body.value.unwrap_or_default());
        }
    }
}

/// The error a non-2xx answer stands for.
pub(super) fn refusal(status: u16, body: &[u8]) -> WfError {
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(err) => from_http(status, err),
        Err(_) => transport_failure(
            status,
            &String::from_utf8_lossy(&body[..body.len().min(200)]),
        ),
    }
}

pub(super) fn decode<R: DeserializeOwned>(bytes: &[u8]) -> Result<R, WfError> {
    wf_core::wire::decode_bytes(bytes)
        .map_err(|e| transport_failure(500, &format!("the server's answer does not decode: {e}")))
}

/// `/_/runs/{id}` with the id percent-encoded.
pub(super) fn run_path(workflow_id: &str, tail: &str) -> String {
    format!("/{ANY_TYPE}/runs/{}{tail}", segment(workflow_id))
}

/// One path segment, percent-encoded as query values are (everything but unreserved
/// characters).
pub(super) fn segment(s: &str) -> String {
    crate::list_query::escape(s)
}

impl Transport for HttpTransport {
    fn start(&self, request: StartRequest) -> CallFuture<'_, Started> {
        Box::pin(async move {
            let conflict = match request.options.id_conflict {
                IdConflictPolicy::Fail => "fail",
                IdConflictPolicy::UseExisting => "use_existing",
                IdConflictPolicy::TerminateExisting => "terminate_existing",
            };
            let body = StartBody {
                id: request.workflow_id,
                input: Some(request.input),
                conflict: Some(conflict.to_string()),
                task_queue: request.options.task_queue,
                id_reuse: Some(request.options.id_reuse.as_str().to_string()),
                request_id: request.options.request_id,
                messages: request.messages,
                memo: request.options.memo,
                execution_timeout_ms: request.options.execution_timeout.map(millis),
                run_timeout_ms: request.options.run_timeout.map(millis),
                retry_policy: request.options.retry_policy.as_ref().map(RetryBody::of),
                start_delay_ms: request.options.start_delay.map(millis),
                debounce_key: request.options.debounce.as_ref().map(|d| d.key.clone()),
                debounce_window_ms: request.options.debounce.as_ref().map(|d| millis(d.window)),
                debounce_max_ms: request
                    .options
                    .debounce
                    .as_ref()
                    .and_then(|d| d.max_wait.map(millis)),
                queue: request.options.queue,
                queue_priority: Some(request.options.queue_priority).filter(|&p| p != 0),
                dedupe_id: request.options.dedupe_id,
                fairness_key: request.options.fairness_key,
                fairness_weight: request.options.fairness_weight,
            };
            let path = format!("/{}/runs", segment(&request.workflow_type));
            let started: StartedBody = self.call(Method::POST, &path, Some(&body)).await?;
            Ok(Started {
                workflow_id: started.workflow_id,
                run_id: started.run_id,
                started: started.started,
            })
        })
    }

    fn signal<'a>(&'a self, request: SignalRequest<'a>) -> CallFuture<'a, SignalStatus> {
        Box::pin(async move {
            let body = SignalBody {
                name: request.name.to_string(),
                args: Some(request.args),
                signal_id: request.signal_id,
            };
            let path = run_path(request.workflow_id, "/signal");
            let answer: SignalStatusBody = self.call(Method::POST, &path, Some(&body)).await?;
            // A server that does not know the type answers "recorded": what this side knows
            // (a typed call) is better then.
            Ok(match answer.status.as_str() {
                "delivered" => SignalStatus::Delivered,
                "buffered" => SignalStatus::Buffered,
                _ => SignalStatus::from_handled(request.handled),
            })
        })
    }

    fn query<'a>(
        &'a self,
        workflow_id: &'a str,
        name: &'a str,
        args: Payload,
    ) -> CallFuture<'a, Payload> {
        Box::pin(async move {
            let body = QueryBody {
                name: name.to_string(),
                args: Some(args),
            };
            let path = run_path(workflow_id, "/query");
            let answer: ValueBody<Payload> = self.call(Method::POST, &path, Some(&body)).await?;
            Ok(answer.value.unwrap_or_default())
        })
    }

    fn query_at<'a>(
        &'a self,
        workflow_id: &'a str,
        name: &'a str,
        args: Payload,
        at_event: u64,
    ) -> CallFuture<'a, Payload> {
        Box::pin(async move {
            let body = QueryBody {
                name: name.to_string(),
                args: Some(args),
            };
            let path = run_path(workflow_id, &format!("/query?at_event={at_event}"));
            let answer: ValueBody<Payload> = self.call(Method::POST, &path, Some(&body)).await?;
            Ok(answer.value.unwrap_or_default())
        })
    }

    fn update<'a>(&'a self, request: UpdateRequest<'a>) -> CallFuture<'a, (String, Payload)> {
        Box::pin(async move {
            let body = UpdateBody {
                name: request.name.to_string(),
                args: Some(request.args),
                update_id: request.update_id,
                wait: Some(request.stage.as_str().to_string()),
                // None: the server's engine applies its own default.
                timeout_ms: request
                    .timeout
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            };
            let path = run_path(request.workflow_id, "/update");
            let answer: ValueBody<Payload> = self.call(Method::POST, &path, Some(&body)).await?;
            let update_id = answer.update_id.ok_or_else(|| {
                transport_failure(500, "the server's update answer has no update_id")
            })?;
            Ok((update_id, answer.value.unwrap_or_default()))
        })
    }

    fn wait_update<'a>(
        &'a self,
        workflow_id: &'a str,
        update_id: &'a str,
        stage: UpdateStage,
    ) -> CallFuture<'a, Payload> {
        Box::pin(async move {
            let tail = format!(
                "/updates/{}?wait={}&wait_ms={LONG_POLL_MS}",
                segment(update_id),
                stage.as_str()
            );
            self.poll(&run_path(workflow_id, &tail)).await
        })
    }

    fn result<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, Payload> {
        Box::pin(async move {
            let tail = format!("/result?wait_ms={LONG_POLL_MS}");
            self.poll(&run_path(workflow_id, &tail)).await
        })
    }

    fn history<'a>(
        &'a self,
        workflow_id: &'a str,
        run_id: Option<&'a str>,
    ) -> CallFuture<'a, Vec<HistoryEvent>> {
        Box::pin(async move {
            let run = run_id.map_or_else(String::new, |r| format!("&run_id={}", segment(r)));
            let mut events = Vec::new();
            let mut from = 1;
            loop {
                let tail = format!("/history?from={from}&limit={PAGE}{run}");
                let page: HistoryPage<HistoryEvent> = self
                    .call(Method::GET, &run_path(workflow_id, &tail), NO_BODY)
                    .await?;
                events.extend(page.events);
                match page.next {
                    Some(next) if next > from => from = next,
                    _ => return Ok(events),
                }
            }
        })
    }

    fn describe<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, Description> {
        Box::pin(async move {
            let body: DescriptionBody<Payload> = self
                .call(Method::GET, &run_path(workflow_id, ""), NO_BODY)
                .await?;
            Ok(body.into_description())
        })
    }

    fn list(&self, filter: ListFilter) -> CallFuture<'_, Vec<RunInfo>> {
        Box::pin(async move {
            let ty = filter.workflow_type.as_deref().unwrap_or(ANY_TYPE);
            let query = crate::list_query::encode(&filter);
            let mut runs = Vec::new();
            let mut cursor = filter.after_run_id.clone().unwrap_or_default();
            loop {
                let want = match filter.limit {
                    0 => PAGE,
                    n => (n - runs.len()).min(PAGE),
                };
                let path = format!(
                    "/{}/runs?{query}&limit={want}&cursor={}",
                    segment(ty),
                    crate::list_query::escape(&cursor)
                );
                let page: RunsPage<Payload> = self.call(Method::GET, &path, NO_BODY).await?;
                runs.extend(page.runs.into_iter().map(|r| r.into_info()));
                match page.next_cursor {
                    Some(next) if filter.limit == 0 || runs.len() < filter.limit => cursor = next,
                    _ => return Ok(runs),
                }
            }
        })
    }

    fn count(&self, filter: ListFilter) -> CallFuture<'_, u64> {
        Box::pin(async move {
            let mut query = crate::list_query::encode(&filter);
            if let Some(ty) = &filter.workflow_type {
                query.push_str(&format!("&type={}", crate::list_query::escape(ty)));
            }
            if filter.limit > 0 {
                query.push_str(&format!("&limit={}", filter.limit));
            }
            if let Some(cursor) = &filter.after_run_id {
                query.push_str(&format!("&cursor={}", crate::list_query::escape(cursor)));
            }
            let body: CountBody = self
                .call(Method::GET, &format!("/_count?{query}"), NO_BODY)
                .await?;
            Ok(body.count)
        })
    }

    fn pause<'a>(
        &'a self,
        workflow_id: &'a str,
        reason: &'a str,
        _by: &'a str,
    ) -> CallFuture<'a, ()> {
        // The server records the caller's token role, not what a client says of itself.
        Box::pin(async move {
            let body = ReasonBody {
                reason: Some(reason.to_string()),
            };
            self.send(Method::POST, &run_path(workflow_id, "/pause"), Some(&body))
                .await?;
            Ok(())
        })
    }

    fn unpause<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, ()> {
        Box::pin(async move {
            let body = ReasonBody::default();
            self.send(
                Method::POST,
                &run_path(workflow_id, "/unpause"),
                Some(&body),
            )
            .await?;
            Ok(())
        })
    }

    fn cancel<'a>(&'a self, workflow_id: &'a str, reason: &'a str) -> CallFuture<'a, ()> {
        Box::pin(async move {
            let body = ReasonBody {
                reason: Some(reason.to_string()),
            };
            self.send(Method::POST, &run_path(workflow_id, "/cancel"), Some(&body))
                .await?;
            Ok(())
        })
    }

    fn terminate<'a>(&'a self, workflow_id: &'a str, reason: &'a str) -> CallFuture<'a, ()> {
        Box::pin(async move {
            let body = ReasonBody {
                reason: Some(reason.to_string()),
            };
            self.send(
                Method::POST,
                &run_path(workflow_id, "/terminate"),
                Some(&body),
            )
            .await?;
            Ok(())
        })
    }

    fn create_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
        schedule: NewSchedule,
    ) -> CallFuture<'a, ()> {
        Box::pin(async move {
            let body = NewScheduleBody {
                spec: schedule.spec,
                action: schedule.action,
                policies: schedule.policies,
            };
            let path = format!("/_schedules/{}", segment(schedule_id));
            self.send(Method::POST, &path, Some(&body)).await?;
            Ok(())
        })
    }

    fn describe_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
    ) -> CallFuture<'a, ScheduleDescription> {
        Box::pin(async move {
            let path = format!("/_schedules/{}", segment(schedule_id));
            let body: ScheduleBody = self.call(Method::GET, &path, NO_BODY).await?;
            Ok(body.into_description())
        })
    }

    fn list_schedules(&self) -> CallFuture<'_, Vec<ScheduleDescription>> {
        Box::pin(async move {
            let bodies: Vec<ScheduleBody> = self.call(Method::GET, "/_schedules", NO_BODY).await?;
            Ok(bodies.into_iter().map(|b| b.into_description()).collect())
        })
    }

    fn change_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
        change: ScheduleChange,
    ) -> CallFuture<'a, ()> {
        Box::pin(async move {
            let (action, note) = match change {
                ScheduleChange::Pause(note) => ("pause", Some(note)),
                ScheduleChange::Unpause(note) => ("unpause", Some(note)),
                ScheduleChange::Trigger => ("trigger", None),
            };
            let path = format!("/_schedules/{}/{action}", segment(schedule_id));
            self.send(Method::POST, &path, Some(&NoteBody { note }))
                .await?;
            Ok(())
        })
    }

    fn delete_schedule<'a>(&'a self, schedule_id: &'a str) -> CallFuture<'a, ()> {
        Box::pin(async move {
            let path = format!("/_schedules/{}", segment(schedule_id));
            self.send(Method::DELETE, &path, NO_BODY).await?;
            Ok(())
        })
    }

    fn start_batch(&self, request: BatchRequest) -> CallFuture<'_, BatchDescription> {
        Box::pin(async move {
            let action = BatchActionBody::of(&request.action, |p| Ok::<_, WfError>(p.clone()))?;
            let body = NewBatchBody::<Payload> {
                batch_id: request.batch_id,
                filter: BatchFilterBody::of(&request.filter),
                action,
                reason: Some(request.reason),
                rate: request.rate_per_s,
            };
            let reply: BatchBody<Payload> =
                self.call(Method::POST, "/_batches", Some(&body)).await?;
            batch_of(reply)
        })
    }

    fn list_batches(&self) -> CallFuture<'_, Vec<BatchDescription>> {
        Box::pin(async move {
            let bodies: Vec<BatchBody<Payload>> =
                self.call(Method::GET, "/_batches", NO_BODY).await?;
            bodies.into_iter().map(batch_of).collect()
        })
    }

    fn describe_batch<'a>(&'a self, batch_id: &'a str) -> CallFuture<'a, BatchDescription> {
        Box::pin(async move {
            let path = format!("/_batches/{}", segment(batch_id));
            batch_of(self.call(Method::GET, &path, NO_BODY).await?)
        })
    }

    fn cancel_batch<'a>(&'a self, batch_id: &'a str) -> CallFuture<'a, BatchDescription> {
        Box::pin(async move {
            let path = format!("/_batches/{}/cancel", segment(batch_id));
            batch_of(self.call(Method::POST, &path, NO_BODY).await?)
        })
    }

    fn respond_activity<'a>(
        &'a self,
        token: &'a str,
        response: ActivityResponse,
    ) -> CallFuture<'a, ()> {
        Box::pin(async move {
            let mut body = ActivityReportBody::<Payload>::new(token);
            let action = match response {
                ActivityResponse::Complete(result) => {
                    body.result = Some(result);
                    "complete"
                }
                ActivityResponse::Heartbeat(details) => {
                    body.details = Some(details);
                    "heartbeat"
                }
                ActivityResponse::Fail(error) => {
                    body.error = Some(ActivityErrorBody::of(&error));
                    "fail"
                }
                // A report this client does not know how to send.
                other => {
                    return Err(WfError::InvalidArgument(format!(
                        "{other:?} cannot be sent over HTTP by this client"
                    )))
                }
            };
            let path = format!("/_activities/{action}");
            let (_, bytes) = self.send(Method::POST, &path, Some(&body)).await?;
            if action == "heartbeat" {
                // An attempt no longer open is a 200 for workers (stop, as if cancelled), an
                // error for this client, as in process.
                let reply: ActivityHeartbeatReply = decode(&bytes)?;
                if reply.status == HEARTBEAT_NOT_OPEN {
                    return Err(WfError::ActivityNotPending(
                        reply.message.unwrap_or_default(),
                    ));
                }
            }
            Ok(())
        })
    }

    fn poll_activity_task(
        &self,
        poll: ActivityTaskPoll,
    ) -> CallFuture<'_, Option<ActivityTaskLease>> {
        Box::pin(async move {
            let body = ActivityPollBody {
                task_queue: poll.task_queue,
                names: poll.names,
                wait_ms: Some(u64::try_from(poll.wait.as_millis()).unwrap_or(u64::MAX)),
                identity: Some(poll.identity),
            };
            let (status, bytes) = self
                .send(Method::POST, "/_activities/poll", Some(&body))
                .await?;
            if status == 204 {
                return Ok(None);
            }
            let task: ActivityTaskBody<Payload> = decode(&bytes)?;
            Ok(Some(task.into_lease()))
        })
    }

    fn set_current_build<'a>(
        &'a self,
        task_queue: &'a str,
        build_id: &'a str,
    ) -> CallFuture<'a, ()> {
        Box::pin(async move {
            let body = CurrentBuildBody {
                task_queue: task_queue.to_string(),
                build_id: build_id.to_string(),
            };
            let _: CurrentBuildBody = self
                .call(Method::POST, "/_builds/current", Some(&body))
                .await?;
            Ok(())
        })
    }

    fn build_ids<'a>(&'a self, task_queue: Option<&'a str>) -> CallFuture<'a, Vec<BuildIdStatus>> {
        Box::pin(async move {
            let path = match task_queue {
                Some(q) => format!("/_builds?task_queue={}", crate::list_query::escape(q)),
                None => "/_builds".to_string(),
            };
            self.call(Method::GET, &path, NO_BODY).await
        })
    }

    fn ready(&self) -> CallFuture<'_, ()> {
        // The server's own probe, with the server's deadline: 200 or an error body.
        Box::pin(async move { self.send(Method::GET, "/readyz", NO_BODY).await.map(|_| ()) })
    }

    fn move_to_build<'a>(&'a self, workflow_id: &'a str, build_id: &'a str) -> CallFuture<'a, ()> {
        Box::pin(async move {
            let body = MoveToBuildBody {
                build_id: build_id.to_string(),
            };
            let _: MoveToBuildBody = self
                .call(Method::POST, &run_path(workflow_id, "/move"), Some(&body))
                .await?;
            Ok(())
        })
    }

    fn repair(&self, request: wf_core::RepairRequest) -> CallFuture<'_, wf_core::RepairReport> {
        Box::pin(async move {
            use wf_core::{RepairAction, ResetPoint};
            let id = request.workflow_id.as_str();
            let mut body = crate::wire::RepairBody {
                reason: Some(request.reason.clone()),
                ..Default::default()
            };
            let (method, path) = match &request.action {
                RepairAction::Reset { to, drop_messages } => {
                    match to {
                        ResetPoint::FirstTask => body.to = Some("first-task".into()),
                        ResetPoint::LastGoodTask => body.to = Some("last-good-task".into()),
                        ResetPoint::Event(n) => body.to_event = Some(*n),
                    }
                    body.drop_messages = *drop_messages;
                    (Method::POST, run_path(id, "/reset"))
                }
                RepairAction::Fork {
                    new_workflow_id,
                    at_event,
                } => {
                    body.new_workflow_id = Some(new_workflow_id.clone());
                    body.at_event = Some(*at_event);
                    (Method::POST, run_path(id, "/fork"))
                }
                RepairAction::Resume => (Method::POST, run_path(id, "/resume")),
                RepairAction::Delete => (Method::DELETE, run_path(id, "")),
            };
            // (The server records the caller's token role as who did it.)
            let reply: crate::wire::RepairReply = self.call(method, &path, Some(&body)).await?;
            Ok(wf_core::RepairReport {
                workflow_id: reply.workflow_id,
                run_id: reply.run_id,
            })
        })
    }

    fn set_flow_limit(&self, limit: FlowLimit) -> CallFuture<'_, ()> {
        Box::pin(async move {
            let body = FlowLimitBody::of(&limit);
            let _: FlowLimitBody = self
                .call(Method::POST, "/_flow_limits", Some(&body))
                .await?;
            Ok(())
        })
    }

    fn flow_limits(&self) -> CallFuture<'_, Vec<FlowLimit>> {
        Box::pin(async move {
            let bodies: Vec<FlowLimitBody> =
                self.call(Method::GET, "/_flow_limits", NO_BODY).await?;
            bodies
                .iter()
                .map(|b| {
                    b.to_limit().map_err(|e| {
                        transport_failure(500, &format!("the server's flow limit: {e}"))
                    })
                })
                .collect()
        })
    }

    fn flow_usage(&self) -> CallFuture<'_, Vec<FlowUsage>> {
        Box::pin(async move {
            let bodies: Vec<FlowUsageBody> = self
                .call(Method::GET, "/_flow_limits/usage", NO_BODY)
                .await?;
            bodies
                .iter()
                .map(|b| {
                    b.to_usage().map_err(|e| {
                        transport_failure(500, &format!("the server's flow limit: {e}"))
                    })
                })
                .collect()
        })
    }

    fn remove_flow_limit(&self, scope: FlowScope, kind: FlowKind) -> CallFuture<'_, bool> {
        Box::pin(async move {
            let path = format!(
                "/_flow_limits/{}/{}/{}",
                scope.kind(),
                segment(scope.name()),
                kind.as_str()
            );
            let reply: FlowRemovedBody = self.call(Method::DELETE, &path, NO_BODY).await?;
            Ok(reply.removed)
        })
    }

    fn set_workflow_queue(&self, queue: wf_core::WorkflowQueue) -> CallFuture<'_, ()> {
        Box::pin(async move {
            let body = crate::wire::WorkflowQueueBody::of(&queue);
            let _: crate::wire::WorkflowQueueBody = self
                .call(Method::POST, "/_workflow_queues", Some(&body))
                .await?;
            Ok(())
        })
    }

    fn workflow_queues(&self) -> CallFuture<'_, Vec<wf_core::WorkflowQueue>> {
        Box::pin(async move {
            let bodies: Vec<crate::wire::WorkflowQueueBody> =
                self.call(Method::GET, "/_workflow_queues", NO_BODY).await?;
            Ok(bodies.iter().map(|b| b.to_queue()).collect())
        })
    }

    fn workflow_queue_usage(&self) -> CallFuture<'_, Vec<wf_core::QueueUsage>> {
        Box::pin(async move {
            let bodies: Vec<crate::wire::QueueUsageBody> = self
                .call(Method::GET, "/_workflow_queues/usage", NO_BODY)
                .await?;
            Ok(bodies.iter().map(|b| b.to_usage()).collect())
        })
    }

    fn remove_workflow_queue<'a>(&'a self, name: &'a str) -> CallFuture<'a, bool> {
        Box::pin(async move {
            let path = format!("/_workflow_queues/{}", segment(name));
            let reply: crate::wire::QueueRemovedBody =
                self.call(Method::DELETE, &path, NO_BODY).await?;
            Ok(reply.removed)
        })
    }

    fn read_stream(&self, read: StreamRead) -> CallFuture<'_, StreamPage> {
        Box::pin(self.read_stream_sse(read))
    }

    fn read_feed(&self, read: wf_core::FeedRead) -> CallFuture<'_, wf_core::FeedPage> {
        Box::pin(self.read_feed_sse(read))
    }

    fn get_event<'a>(
        &'a self,
        workflow_id: &'a str,
        key: &'a str,
        timeout: std::time::Duration,
    ) -> CallFuture<'a, Option<Payload>> {
        Box::pin(self.get_event_poll(workflow_id, key, timeout))
    }

    fn list_streams<'a>(
        &'a self,
        workflow_id: &'a str,
        run_id: Option<&'a str>,
    ) -> CallFuture<'a, wf_core::StreamList> {
        Box::pin(self.list_streams_get(workflow_id, run_id))
    }

    fn purge(&self, request: PurgeRequest) -> CallFuture<'_, PurgeReport> {
        Box::pin(async move {
            let body = PurgeBody::of(&request);
            let reply: PurgeReply = self.call(Method::POST, "/_purge", Some(&body)).await?;
            Ok(PurgeReport {
                runs: reply.runs,
                more: reply.more,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_one_path_segment_whatever_they_hold() {
        assert_eq!(segment("order-42_a.b~"), "order-42_a.b~");
        assert_eq!(segment("a/b?c#d e%"), "a%2Fb%3Fc%23d%20e%25");
        assert_eq!(segment("é"), "%C3%A9");
    }

    #[test]
    fn http_and_https_urls_only() {
        let tls = ClientTls::new().ca_pem(b"-----BEGIN CERTIFICATE-----\n".to_vec());
        let plain = ClientTls::new();
        assert!(HttpTransport::new("http://127.0.0.1:8233/", None, &plain).is_ok());
        for bad in ["127.0.0.1:8233", "http://", "https://", "ftp://x"] {
            assert!(HttpTransport::new(bad, None, &plain).is_err(), "{bad}");
        }
        assert!(HttpTransport::new("http://x", Some("bad\ntoken"), &plain).is_err());
        // TLS settings are read for https:// only: a bad CA fails there, naming it.
        assert!(HttpTransport::new("http://x", None, &tls).is_ok());
        let e = HttpTransport::new("https://x", None, &tls).unwrap_err();
        assert!(e.to_string().contains("CA certificates"), "{e}");
    }
}

/// The answer of the signal route.
#[derive(serde::Deserialize)]
struct SignalStatusBody {
    status: String,
}

/// The description a server's batch body carries.
fn batch_of(body: BatchBody<Payload>) -> Result<BatchDescription, WfError> {
    let what = format!("{:?} / {:?}", body.action, body.status);
    body.into_description().ok_or_else(|| {
        WfError::InvalidArgument(format!(
            "the server described a batch with an action or status this client does not know ({what}); upgrade the client"
        ))
    })
}
