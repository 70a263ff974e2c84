//! The bodies of `/_batches`: a batch's filter, a batch to start, a batch described, and the
//! action a body names.

use super::{from_ms, to_ms};
use serde::{Deserialize, Serialize};
use wf_core::RunStatus;

/// A batch's filter: which runs it acts on (times as ms since the Unix epoch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchFilterBody {
    /// Only runs of this workflow type.
    #[serde(default)]
    pub workflow_type: Option<String>,
    /// Only runs in this state, spelled as everywhere on the JSON surface (`"failed"`,
    /// `"timed_out"`); the Rust variant's name (`"Failed"`) is read too.
    #[serde(default, with = "status_name")]
    pub status: Option<RunStatus>,
    /// Only runs on this build.
    #[serde(default)]
    pub build_id: Option<String>,
    /// Only the latest run of each workflow id.
    #[serde(default)]
    pub latest_only: bool,
    /// Only runs whose search attributes hold each of these values.
    #[serde(default)]
    pub search: Vec<(String, wf_core::SearchValue)>,
    /// Only runs started at or after this time.
    #[serde(default)]
    pub started_after_ms: Option<u64>,
    /// Only runs started before this time.
    #[serde(default)]
    pub started_before_ms: Option<u64>,
    /// Only runs closed at or after this time.
    #[serde(default)]
    pub closed_after_ms: Option<u64>,
    /// Only runs closed before this time.
    #[serde(default)]
    pub closed_before_ms: Option<u64>,
}

/// A filter's status as its text form ([`RunStatus::as_str`]).
mod status_name {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use wf_core::RunStatus;

    pub fn serialize<S: Serializer>(status: &Option<RunStatus>, s: S) -> Result<S::Ok, S::Error> {
        match status {
            Some(st) => s.serialize_some(st.as_str()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RunStatus>, D::Error> {
        let Some(text) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        RunStatus::parse(&text)
            .or_else(|| {
                RunStatus::ALL
                    .into_iter()
                    .find(|st| format!("{st:?}") == text)
            })
            .map(Some)
            .ok_or_else(|| {
                let names: Vec<&str> = RunStatus::ALL.iter().map(|st| st.as_str()).collect();
                D::Error::custom(format!(
                    "unknown run status {text:?}: expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

impl BatchFilterBody {
    /// The body of `f` (its limit and cursor left out).
    pub fn of(f: &wf_core::ListFilter) -> Self {
        BatchFilterBody {
            workflow_type: f.workflow_type.clone(),
            status: f.status,
            build_id: f.build_id.clone(),
            latest_only: f.latest_only,
            search: f.search.clone(),
            started_after_ms: f.started_after.map(to_ms),
            started_before_ms: f.started_before.map(to_ms),
            closed_after_ms: f.closed_after.map(to_ms),
            closed_before_ms: f.closed_before.map(to_ms),
        }
    }

    /// The filter it stands for.
    pub fn into_filter(self) -> wf_core::ListFilter {
        wf_core::ListFilter {
            workflow_type: self.workflow_type,
            status: self.status,
            build_id: self.build_id,
            latest_only: self.latest_only,
            search: self.search,
            started_after: self.started_after_ms.map(from_ms),
            started_before: self.started_before_ms.map(from_ms),
            closed_after: self.closed_after_ms.map(from_ms),
            closed_before: self.closed_before_ms.map(from_ms),
            ..Default::default()
        }
    }
}

/// A batch's action as the wire spells it: its kind and the fields of that kind. Flattened
/// into the request and the description, so both carry the same fields.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(bound(deserialize = "V: Deserialize<'de>"))]
pub struct BatchActionBody<V> {
    /// `"signal"`, `"cancel"`, `"terminate"`, `"reset"`, `"pause"`, `"unpause"` or
    /// `"delete"`.
    pub action: String,
    /// The signal's name (action `signal`).
    #[serde(default)]
    pub signal: Option<String>,
    /// The signal's arguments (action `signal`): a positional array (JSON); the encoded tuple
    /// (MessagePack).
    #[serde(default)]
    pub args: Option<V>,
    /// A reset's point (action `reset`): `"first-task"` or `"last-good-task"`.
    #[serde(default)]
    pub to: Option<String>,
    /// Whether a reset leaves out the signals and updates each run received after the point
    /// (action `reset`).
    #[serde(default)]
    pub drop_messages: bool,
}

impl<V> BatchActionBody<V> {
    /// The body of `action`, its signal arguments turned into `V` by `value`.
    pub fn of<E>(
        action: &wf_core::BatchAction,
        value: impl Fn(&wf_core::Payload) -> Result<V, E>,
    ) -> Result<Self, E> {
        let (signal, args) = match action {
            wf_core::BatchAction::Signal { name, args } => (Some(name.clone()), Some(value(args)?)),
            _ => (None, None),
        };
        let (to, drop_messages) = match action {
            wf_core::BatchAction::Reset { to, drop_messages } => {
                let name = match to {
                    wf_core::ResetPoint::Event(_) => None,
                    named => Some(named.to_string()),
                };
                (name, *drop_messages)
            }
            _ => (None, false),
        };
        Ok(BatchActionBody {
            action: action.kind().to_string(),
            signal,
            args,
            to,
            drop_messages,
        })
    }

    /// The action it names, its signal arguments encoded as `args` (unit if `None`); the error
    /// says what is missing or unknown.
    pub fn into_action(
        self,
        args: Option<wf_core::Payload>,
    ) -> Result<wf_core::BatchAction, String> {
        match self.action.as_str() {
            "signal" => Ok(wf_core::BatchAction::Signal {
                name: self
                    .signal
                    .ok_or("a signal batch needs \"signal\": the signal's name")?,
                args: match args {
                    Some(a) => a,
                    None => wf_core::Payload::encode(&()).map_err(|e| e.to_string())?,
                },
            }),
            "reset" => {
                let to = self
                    .to
                    .ok_or("a reset batch needs \"to\": \"first-task\" or \"last-good-task\"")?;
                Ok(wf_core::BatchAction::Reset {
                    to: reset_point(&to).ok_or_else(|| {
                        format!("a reset batch's \"to\" is \"first-task\" or \"last-good-task\", not {to:?}")
                    })?,
                    drop_messages: self.drop_messages,
                })
            }
            other => wf_core::BatchAction::plain(other).ok_or_else(|| {
                format!(
                    "a batch's action is \"signal\", \"cancel\", \"terminate\", \"reset\", \"pause\", \
                     \"unpause\" or \"delete\", not {other:?}"
                )
            }),
        }
    }
}

impl BatchActionBody<wf_core::Payload> {
    /// The action it names, its arguments as they came.
    pub fn into_encoded_action(mut self) -> Result<wf_core::BatchAction, String> {
        let args = self.args.take();
        self.into_action(args)
    }
}

/// `POST /_batches`: a batch to start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewBatchBody<V> {
    /// Its id (default: a fresh one).
    #[serde(default)]
    pub batch_id: Option<String>,
    /// The runs it acts on.
    #[serde(default)]
    pub filter: BatchFilterBody,
    /// What it does to each run.
    #[serde(flatten)]
    pub action: BatchActionBody<V>,
    /// Why (the reason of each cancel, terminate, reset and pause).
    #[serde(default)]
    pub reason: Option<String>,
    /// At most this many runs per second.
    #[serde(default)]
    pub rate: Option<u32>,
}

/// `GET /_batches/{id}`: a batch described (times as ms since the Unix epoch).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchBody<V> {
    /// The batch id.
    pub batch_id: String,
    /// What it does to each run.
    #[serde(flatten)]
    pub action: BatchActionBody<V>,
    /// The runs it acts on.
    pub filter: BatchFilterBody,
    /// Why it was started.
    pub reason: String,
    /// Its rate limit (runs per second).
    pub rate: Option<u32>,
    /// `"running"`, `"completed"`, `"cancelled"` or `"failed"`.
    pub status: String,
    /// Runs the filter selected when it started.
    pub selected: u64,
    /// Runs acted on.
    pub done: u64,
    /// Runs whose action failed.
    pub failed: u64,
    /// The last failure: which run, what happened.
    pub last_error: Option<String>,
    /// When it started.
    pub created_ms: i64,
    /// When it finished.
    pub closed_ms: Option<i64>,
}

impl<V> BatchBody<V> {
    /// The body of `d`, its signal arguments turned into `V` by `value`.
    pub fn of<E>(
        d: &wf_core::BatchDescription,
        value: impl Fn(&wf_core::Payload) -> Result<V, E>,
    ) -> Result<Self, E> {
        Ok(BatchBody {
            batch_id: d.batch_id.clone(),
            action: BatchActionBody::of(&d.action, value)?,
            filter: BatchFilterBody::of(&d.filter),
            reason: d.reason.clone(),
            rate: d.rate_per_s,
            status: d.status.as_str().to_string(),
            selected: d.selected,
            done: d.done,
            failed: d.failed,
            last_error: d.last_error.clone(),
            created_ms: d.created_ms,
            closed_ms: d.closed_ms,
        })
    }
}

impl BatchBody<wf_core::Payload> {
    /// The description it carries; `None` for an action or status this client does not know.
    pub fn into_description(self) -> Option<wf_core::BatchDescription> {
        Some(wf_core::BatchDescription {
            action: self.action.into_encoded_action().ok()?,
            status: wf_core::BatchStatus::parse(&self.status)?,
            batch_id: self.batch_id,
            filter: self.filter.into_filter(),
            reason: self.reason,
            rate_per_s: self.rate,
            selected: self.selected,
            done: self.done,
            failed: self.failed,
            last_error: self.last_error,
            created_ms: self.created_ms,
            closed_ms: self.closed_ms,
        })
    }
}

/// A reset point by its name: `"first-task"` or `"last-good-task"`.
pub fn reset_point(name: &str) -> Option<wf_core::ResetPoint> {
    match name {
        "first-task" => Some(wf_core::ResetPoint::FirstTask),
        "last-good-task" => Some(wf_core::ResetPoint::LastGoodTask),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::BatchFilterBody;
    use wf_core::RunStatus;

    fn status_of(json: &str) -> Result<Option<RunStatus>, String> {
        serde_json::from_str::<BatchFilterBody>(json)
            .map(|b| b.status)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_filters_status_reads_as_the_json_surface_spells_it_and_as_rust_does() {
        assert_eq!(
            status_of(r#"{"status":"failed"}"#),
            Ok(Some(RunStatus::Failed))
        );
        assert_eq!(
            status_of(r#"{"status":"timed_out"}"#),
            Ok(Some(RunStatus::TimedOut))
        );
        assert_eq!(
            status_of(r#"{"status":"Failed"}"#),
            Ok(Some(RunStatus::Failed))
        );
        assert_eq!(status_of(r#"{"status":null}"#), Ok(None));
        assert_eq!(status_of("{}"), Ok(None));
        let err = status_of(r#"{"status":"broken"}"#).unwrap_err();
        assert!(err.contains("unknown run status \"broken\""), "{err}");
        assert!(err.contains("timed_out"), "{err}");
        let body = BatchFilterBody {
            status: Some(RunStatus::ContinuedAsNew),
            ..BatchFilterBody::default()
        };
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["status"], "continued_as_new");
    }
}
