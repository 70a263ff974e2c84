//! Flow limits: which activity attempts a poll may lease under the limits the store holds
//! (at most N running at once, at most M started per period), counted over every engine in
//! the transaction that leases them; and an operator's changes to the limits.
//!
//! A concurrency limit's room is its `max` less the live leased attempts it covers, counted
//! from the `activities` rows themselves: an attempt frees its slot as its row stops being
//! leased (it ended, was retried or released) or its lease stops being live (it expired, or
//! its engine's liveness lease did), so a crashed engine's slots come back with no bookkeeping
//! to repair. A rate limit's room is the whole tokens of its bucket, refilled at its rate up
//! to its burst; the tokens spent are written back in the same transaction. On a store whose
//! writers run at once, the limits' rows are locked first ([`FlowTable::flow_limits`] with
//! `lock`), so that two polls take turns to count and lease.

use super::tx::{FlowBlocked, TaskQuery, Tx};
use crate::data::activity::activity_lease;
use crate::data::flow::{whole, FlowCount, FlowLimit, FlowRow, FlowRule, FlowScope, FlowUsage};
use crate::error::{BackendErrorKind, StoreError};
use crate::store::records::{ActivityLeases, ActivityTask, NewActivityTask};

/// One limit during a poll: its row and the attempts it still lets start.
struct Gate {
    row: FlowRow,
    /// Attempts it still admits in this poll.
    room: u64,
    /// A rate limit's tokens at the poll's time, before this poll spent any.
    tokens: f64,
    /// Attempts admitted in this poll.
    spent: u64,
    /// Attempts this limit refused in this poll, out of room.
    refused: u64,
}

/// The limits a poll leases under.
struct Admission {
    gates: Vec<Gate>,
}

impl Admission {
    /// The limits the store holds (locked), with their room at `now_ms`; `None` when it holds
    /// none.
    async fn open<X: Tx>(
        tx: &mut X,
        now_ms: i64,
        poller: &str,
    ) -> Result<Option<Admission>, StoreError> {
        let rows = tx.flow_limits(true).await?;
        if rows.is_empty() {
            return Ok(None);
        }
        Self::count(tx, rows, now_ms, poller, |_| true)
            .await
            .map(Some)
    }

    /// The limits of `rows` with their room at `now_ms`, counting the running attempts only
    /// of the limits `counted` picks (the others are left without room: they must cover
    /// nothing the caller admits).
    async fn count<X: Tx>(
        tx: &mut X,
        rows: Vec<FlowRow>,
        now_ms: i64,
        poller: &str,
        counted: impl Fn(&FlowScope) -> bool,
    ) -> Result<Admission, StoreError> {
        let mut gates = Vec::with_capacity(rows.len());
        for row in rows {
            let (room, tokens) = match &row.limit.rule {
                FlowRule::Concurrency { .. } if !counted(&row.limit.scope) => (0, 0.0),
                FlowRule::Concurrency { max } => {
                    let running = tx
                        .running_attempts(&row.limit.scope, now_ms, poller)
                        .await?;
                    (u64::from(*max).saturating_sub(running), 0.0)
                }
                FlowRule::Rate { .. } => {
                    let tokens = row.tokens_at(now_ms);
                    (whole(tokens), tokens)
                }
            };
            gates.push(Gate {
                row,
                room,
                tokens,
                spent: 0,
                refused: 0,
            });
        }
        Ok(Admission { gates })
    }

    /// What the poll must leave out: the scopes of the limits without room.
    fn blocked(&self) -> FlowBlocked {
        let mut blocked = FlowBlocked::default();
        for gate in self.gates.iter().filter(|g| g.room == 0) {
            let into = match &gate.row.limit.scope {
                FlowScope::Activity(_) => &mut blocked.names,
                FlowScope::TaskQueue(_) => &mut blocked.queues,
                FlowScope::Key(_) => &mut blocked.keys,
            };
            into.push(gate.row.limit.scope.name().to_string());
        }
        blocked
    }

    /// Whether `task` may start: every limit that covers it has room; if so it takes one
    /// from each.
    fn admit(&mut self, task: &ActivityTask) -> bool {
        let key = task.options.flow_key.as_deref();
        self.admit_one(&task.name, &task.task_queue, key)
    }

    /// [`admit`](Self::admit) for an attempt of activity `name` on `queue` with flow key `key`.
    fn admit_one(&mut self, name: &str, queue: &str, key: Option<&str>) -> bool {
        let covers = |g: &Gate| g.row.limit.scope.covers(name, queue, key);
        if self.gates.iter().filter(|g| covers(g)).any(|g| g.room == 0) {
            for gate in self.gates.iter_mut().filter(|g| covers(g) && g.room == 0) {
                gate.refused += 1;
            }
            return false;
        }
        for gate in self.gates.iter_mut().filter(|g| covers(g)) {
            gate.room -= 1;
            gate.spent += 1;
        }
        true
    }

    /// Whether a limit is without room now (so attempts it covers may be waiting for it).
    fn any_full(&self) -> bool {
        self.gates.iter().any(|g| g.room == 0)
    }

    /// Whether a limit that covers an attempt of activity `name` on `queue` with flow key
    /// `key` is without room now.
    fn full_for(&self, name: &str, queue: &str, key: Option<&str>) -> bool {
        self.gates
            .iter()
            .any(|g| g.room == 0 && g.row.limit.scope.covers(name, queue, key))
    }

    /// What each limit started and refused in this poll (those that did either).
    fn counts(&self) -> Vec<FlowCount> {
        self.gates
            .iter()
            .filter(|g| g.spent > 0 || g.refused > 0)
            .map(|g| FlowCount {
                scope: g.row.limit.scope.clone(),
                kind: g.row.limit.rule.kind(),
                started: g.spent,
                throttled: g.refused,
            })
            .collect()
    }

    /// Writes back the tokens the poll spent from rate limits.
    async fn close<X: Tx>(self, tx: &mut X, now_ms: i64) -> Result<(), StoreError> {
        for gate in self.gates {
            if matches!(gate.row.limit.rule, FlowRule::Rate { .. }) && gate.spent > 0 {
                let left = (gate.tokens - gate.spent as f64).max(0.0);
                // Never back in time: a transaction whose clock reading is older than the
                // bucket's last refill (it waited on the limit's lock while another process
                // refilled it) would otherwise hand the next one that interval's tokens again.
                let refilled = now_ms.max(gate.row.refilled_ms);
                tx.set_flow_tokens(&gate.row.limit.scope, left, refilled)
                    .await?;
            }
        }
        Ok(())
    }
}

/// The activities a poll leases under the store's flow limits: at most `max` of the query's
/// names, leased to `worker_id` at `now_ms`. Without limits, the visible ones in order; with
/// them, in order too, skipping those a limit without room covers (a round per limit that
/// runs out, each asking only for activities no full limit covers). With what each limit
/// started and refused ([`FlowCount`]); held back when a limit refused an attempt or is
/// without room after the poll.
pub(crate) async fn lease_under_limits<X: Tx>(
    tx: &mut X,
    query: TaskQuery<'_>,
) -> Result<ActivityLeases, StoreError> {
    let (now_ms, worker_id) = (query.now_ms, query.poller);
    let Some(mut admission) = Admission::open(tx, now_ms, worker_id).await? else {
        let due = tx.visible_activities(&query).await?;
        let mut leased = Vec::with_capacity(due.len());
        for task in due {
            leased.push(lease(tx, task, worker_id, now_ms).await?);
        }
        return Ok(ActivityLeases {
            tasks: leased,
            flow: Vec::new(),
            held_back: false,
        });
    };
    let mut held_back = false;
    let mut leased = Vec::new();
    // Each round that refuses a task ran a limit out, and the next asks around it: at most
    // one round per limit, plus the first.
    for _ in 0..=admission.gates.len() {
        let want = query.max - leased.len();
        if want == 0 {
            break;
        }
        let blocked = admission.blocked();
        let round = TaskQuery {
            max: want,
            blocked: Some(&blocked),
            ..query.clone()
        };
        let due = tx.visible_activities(&round).await?;
        let found = due.len();
        let mut refused = false;
        for task in due {
            if admission.admit(&task) {
                leased.push(lease(tx, task, worker_id, now_ms).await?);
            } else {
                refused = true;
            }
        }
        held_back |= refused;
        if !refused || found < want {
            break;
        }
    }
    held_back |= admission.any_full();
    let flow = admission.counts();
    admission.close(tx, now_ms).await?;
    Ok(ActivityLeases {
        tasks: leased,
        flow,
        held_back,
    })
}

/// What [`admit_new`] decided: per new activity whether it is leased now, what each limit
/// started and refused, and whether the limits may be holding attempts back (see
/// [`Committed::held_back`](crate::store::Committed)).
pub(crate) struct NewAdmission {
    /// Per new activity, in order: leased now.
    pub admitted: Vec<bool>,
    /// Per flow limit that started or refused one of them.
    pub counts: Vec<FlowCount>,
    /// An attempt waits for a limit that covers one of them, or one of those limits is full.
    pub held_back: bool,
}

/// Which of `activities`, scheduled by a commit of a run on `run_queue` at `now_ms` and leased
/// at once to `owner`, the store's flow limits admit now, counted and spent as a poll's; the
/// others wait for a poll. All of them when the store holds no limit. With what each limit
/// started and refused ([`FlowCount`]).
pub(crate) async fn admit_new<X: Tx>(
    tx: &mut X,
    now_ms: i64,
    owner: &str,
    run_queue: &str,
    activities: &[NewActivityTask],
) -> Result<NewAdmission, StoreError> {
    let rows = tx.flow_limits(true).await?;
    let covers = |scope: &FlowScope| {
        activities.iter().any(|a| {
            let key = a.options.flow_key.as_deref();
            scope.covers(&a.name, a.options.queue_or(run_queue), key)
        })
    };
    let covered: Vec<bool> = activities
        .iter()
        .map(|a| {
            let key = a.options.flow_key.as_deref();
            let queue = a.options.queue_or(run_queue);
            rows.iter()
                .any(|r| r.limit.scope.covers(&a.name, queue, key))
        })
        .collect();
    if !covered.iter().any(|c| *c) {
        return Ok(NewAdmission {
            admitted: vec![true; activities.len()],
            counts: Vec::new(),
            held_back: false,
        });
    }
    // Attempts waiting in the store go first (in their order, priority and turns): while any
    // waits, a covered one leases nothing at once. (Any, not only those its limits cover: the
    // check is one indexed read.) Checked before the running attempts are counted, which it
    // then spares.
    let waiting = TaskQuery {
        now_ms,
        max: 1,
        names: None,
        queues: None,
        poller: owner,
        build_id: None,
        blocked: None,
    };
    if !tx.visible_activities(&waiting).await?.is_empty() {
        return Ok(NewAdmission {
            admitted: covered.iter().map(|c| !c).collect(),
            counts: Vec::new(),
            held_back: true,
        });
    }
    // Only the limits that cover a new activity are counted: the others decide nothing here.
    let mut admission = Admission::count(tx, rows, now_ms, owner, covers).await?;
    let admitted: Vec<bool> = activities
        .iter()
        .map(|a| {
            let key = a.options.flow_key.as_deref();
            admission.admit_one(&a.name, a.options.queue_or(run_queue), key)
        })
        .collect();
    let held_back = admitted.iter().any(|a| !a)
        || activities.iter().any(|a| {
            let key = a.options.flow_key.as_deref();
            admission.full_for(&a.name, a.options.queue_or(run_queue), key)
        });
    let counts = admission.counts();
    admission.close(tx, now_ms).await?;
    Ok(NewAdmission {
        admitted,
        counts,
        held_back,
    })
}

/// Leases `task`'s current attempt to `worker_id` at `now_ms`.
async fn lease<X: Tx>(
    tx: &mut X,
    mut task: ActivityTask,
    worker_id: &str,
    now_ms: i64,
) -> Result<ActivityTask, StoreError> {
    let (deadline, lease) = activity_lease(&task.options, task.scheduled_ms, now_ms);
    task.started_ms = Some(now_ms);
    task.attempt_deadline_ms = Some(deadline);
    task.lease_until_ms = Some(lease);
    tx.lease_activity(&task, worker_id).await?;
    Ok(task)
}

/// [`StoreAdmin::set_flow_limit`](crate::store::StoreAdmin::set_flow_limit): a rate limit set
/// again keeps its bucket's tokens (capped at the new burst), so that changing a limit does not
/// grant a fresh burst.
pub(crate) async fn set_flow_limit<X: Tx>(
    tx: &mut X,
    limit: FlowLimit,
    now_ms: i64,
) -> Result<(), StoreError> {
    limit
        .check()
        .map_err(|e| StoreError::backend(BackendErrorKind::Invalid, e))?;
    let kind = limit.rule.kind();
    let old = tx
        .flow_limits(true)
        .await?
        .into_iter()
        .find(|r| r.limit.scope == limit.scope && r.limit.rule.kind() == kind);
    let mut row = FlowRow::new(limit, now_ms);
    if let (Some(old), FlowRule::Rate { burst, .. }) = (old, &row.limit.rule) {
        row.tokens = old.tokens_at(now_ms).min(f64::from(*burst));
        // As a poll's: never back in time.
        row.refilled_ms = now_ms.max(old.refilled_ms);
    }
    tx.put_flow_limit(&row).await
}

/// [`StoreAdmin::flow_usage`](crate::store::StoreAdmin::flow_usage): each limit with the
/// attempts it covers running and waiting at `now_ms`, and a rate limit's whole tokens.
pub(crate) async fn flow_usage<X: Tx>(
    tx: &mut X,
    now_ms: i64,
) -> Result<Vec<FlowUsage>, StoreError> {
    let rows = tx.flow_limits(false).await?;
    let mut usage = Vec::with_capacity(rows.len());
    for row in rows {
        let scope = &row.limit.scope;
        // No poller: every lease of an engine whose liveness ran out counts as lost.
        let running = tx.running_attempts(scope, now_ms, "").await?;
        let waiting = tx.waiting_attempts(scope, now_ms).await?;
        let tokens = match row.limit.rule {
            FlowRule::Rate { .. } => Some(row.whole_tokens_at(now_ms)),
            FlowRule::Concurrency { .. } => None,
        };
        usage.push(FlowUsage {
            limit: row.limit,
            running,
            waiting,
            tokens,
        });
    }
    Ok(usage)
}

/// [`StoreAdmin::flow_limits`](crate::store::StoreAdmin::flow_limits).
pub(crate) async fn flow_limits<X: Tx>(tx: &mut X) -> Result<Vec<FlowLimit>, StoreError> {
    Ok(tx
        .flow_limits(false)
        .await?
        .into_iter()
        .map(|r| r.limit)
        .collect())
}
