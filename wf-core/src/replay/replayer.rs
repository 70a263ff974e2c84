//! [`Replayer`]: today's workflow code run over recorded histories, before a deploy. It uses
//! the very rebuild a worker does when it replays a run, so what passes here replays in
//! production, and what fails names the event and both commands.

use super::erased::{Definition, ErasedDefinition};
use super::rebuild::{rebuild, RebuildError};
use crate::data::export::{History, HistoryFormatError};
use crate::data::payload_codec::{PayloadCodec, PayloadCodecs};
use crate::workflow::WorkflowDefinition;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Replays exported histories through the registered workflow types and reports the first
/// place where the code departs from each history.
///
/// ```no_run
/// # use wf_core::{History, Replayer, WorkflowDefinition};
/// # fn check<MyWorkflow: WorkflowDefinition>() -> Result<(), Box<dyn std::error::Error>> {
/// let replayer = Replayer::new().workflow::<MyWorkflow>();
/// let history = History::from_json(&std::fs::read_to_string("run.json")?)?;
/// replayer.replay(&history)?;                       // Err names the event and both commands
/// for outcome in replayer.replay_dir("tests/histories")? {
///     assert!(outcome.result.is_ok(), "{outcome}");
/// }
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Replayer {
    types: HashMap<&'static str, Box<dyn ErasedDefinition>>,
    /// The dynamic workflow type (`#[workflow(dynamic)]`): histories of every other type.
    dynamic: Option<Box<dyn ErasedDefinition>>,
    /// A registration that failed (two handlers with one name); reported by every replay.
    broken: Option<String>,
    /// Decode payloads still encoded (a history exported from a database file without them).
    codecs: PayloadCodecs,
}

impl fmt::Debug for Replayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.types.keys().copied().collect();
        names.sort_unstable();
        f.debug_struct("Replayer")
            .field("types", &names)
            .finish_non_exhaustive()
    }
}

/// Where today's code departs from a recorded history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The run whose history it is.
    pub run_id: String,
    /// The recorded event the code disagrees with (or, when the history records nothing
    /// there, the `WorkflowTaskCompleted` event ending that workflow task).
    pub event_id: Option<u64>,
    /// The recorded command, as `name details` (`ActivityScheduled #1 charge(…)`).
    pub recorded: Option<String>,
    /// The command the code issues now, in the same form.
    pub issued: Option<String>,
    /// The whole explanation, as a worker would log it.
    pub message: String,
}

/// Why a history does not replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The code issues other commands than the history records: deploying it would break the
    /// runs that have this history.
    #[error("nondeterminism: {}", .0.message)]
    NonDeterminism(Divergence),
    /// The history's workflow type was not registered with `.workflow::<W>()`.
    #[error("workflow type {workflow_type:?} is not registered with this Replayer (registered: {registered})")]
    UnknownType {
        /// The history's workflow type.
        workflow_type: String,
        /// The registered types, comma-separated.
        registered: String,
    },
    /// The workflow code failed another way during replay (it panicked, its input no longer
    /// decodes, a busy loop).
    #[error("replay failed{}: {message}", event_id.map(|id| format!(" in the workflow task ending at event {id}")).unwrap_or_default())]
    Failed {
        /// The `WorkflowTaskCompleted` event of the failing task, when known.
        event_id: Option<u64>,
        /// What happened.
        message: String,
    },
    /// The file could not be read.
    #[error("{0}")]
    Io(String),
    /// The file is not an exported history this engine reads.
    #[error(transparent)]
    Format(#[from] HistoryFormatError),
    /// A registered workflow type is invalid (two handlers with one name).
    #[error("{0}")]
    Registration(String),
}

/// The result of replaying one file of a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOutcome {
    /// The file.
    pub path: PathBuf,
    /// Its workflow id and run id, once the file was read.
    pub run: Option<(String, String)>,
    /// `Ok` when today's code replays it.
    pub result: Result<(), ReplayError>,
}

impl fmt::Display for ReplayOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some((workflow_id, run_id)) = &self.run {
            write!(f, " ({workflow_id}, run {run_id})")?;
        }
        match &self.result {
            Ok(()) => write!(f, ": ok"),
            Err(e) => write!(f, ": {e}"),
        }
    }
}

impl Replayer {
    /// A replayer with no workflow types yet.
    pub fn new() -> Self {
        Replayer::default()
    }

    /// Registers workflow type `W` (today's code); histories of its wire name replay through
    /// it (a dynamic workflow type: histories of every type not registered otherwise).
    pub fn workflow<W: WorkflowDefinition>(mut self) -> Self {
        match Definition::<W>::new() {
            Ok(def) if W::DYNAMIC => self.dynamic = Some(Box::new(def)),
            Ok(def) => {
                self.types.insert(W::NAME, Box::new(def));
            }
            Err(e) => {
                self.broken.get_or_insert(e);
            }
        }
        self
    }

    /// Decodes the payloads of the histories it replays with `codec` (call it again for
    /// each codec of a chain, as on `EngineBuilder::payload_codec`): for histories exported
    /// from a database file by a reader without the codec (`wf export --db`), whose payloads
    /// are still encoded. Histories with clear payloads replay as they are.
    pub fn payload_codec(mut self, codec: impl PayloadCodec) -> Self {
        if let Err(e) = self.codecs.push(std::sync::Arc::new(codec)) {
            self.broken.get_or_insert(e);
        }
        self
    }

    /// Replays one history through today's code. `Ok` means the code issues exactly the
    /// commands the history records, so a worker running it can carry on with such runs.
    pub fn replay(&self, history: &History) -> Result<(), ReplayError> {
        if let Some(e) = &self.broken {
            return Err(ReplayError::Registration(e.clone()));
        }
        let decoded;
        let history = if self.codecs.is_empty() {
            history
        } else {
            let mut copy = history.clone();
            for event in &mut copy.events {
                self.codecs
                    .decode_all(event)
                    .map_err(|e| ReplayError::Failed {
                        event_id: None,
                        message: format!("event {} does not decode: {e}", event.event_id),
                    })?;
            }
            decoded = copy;
            &decoded
        };
        let def = self
            .types
            .get(history.workflow_type.as_str())
            .or(self.dynamic.as_ref())
            .ok_or_else(|| {
                let mut names: Vec<&str> = self.types.keys().copied().collect();
                names.sort_unstable();
                ReplayError::UnknownType {
                    workflow_type: history.workflow_type.clone(),
                    registered: if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    },
                }
            })?;
        match rebuild(
            def.as_ref(),
            &history.workflow_id,
            &history.run_id,
            &history.events,
        ) {
            Ok(_) => Ok(()),
            Err(RebuildError::Commands(m)) => Err(ReplayError::NonDeterminism(Divergence {
                message: m.message(),
                run_id: m.run_id,
                event_id: Some(m.event_id),
                recorded: m.recorded,
                issued: m.issued,
            })),
            Err(RebuildError::Task(super::TaskError::NonDeterminism(message), event_id)) => {
                Err(ReplayError::NonDeterminism(Divergence {
                    run_id: history.run_id.clone(),
                    event_id,
                    recorded: None,
                    issued: None,
                    message,
                }))
            }
            Err(RebuildError::Task(e, event_id)) => Err(ReplayError::Failed {
                event_id,
                message: e.message(),
            }),
        }
    }

    /// Reads an exported history file and replays it.
    pub fn replay_file(&self, path: impl AsRef<Path>) -> Result<(), ReplayError> {
        self.replay_file_outcome(path.as_ref()).result
    }

    /// Replays every `*.json` file of a folder (not its subfolders), in file name order: one
    /// outcome per file. Fails only when the folder cannot be read.
    pub fn replay_dir(&self, dir: impl AsRef<Path>) -> std::io::Result<Vec<ReplayOutcome>> {
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir.as_ref())? {
            let path = entry?.path();
            if path.is_file() && path.extension().is_some_and(|e| e == "json") {
                paths.push(path);
            }
        }
        paths.sort();
        Ok(paths.iter().map(|p| self.replay_file_outcome(p)).collect())
    }

    fn replay_file_outcome(&self, path: &Path) -> ReplayOutcome {
        let read = std::fs::read_to_string(path)
            .map_err(|e| ReplayError::Io(format!("could not read {}: {e}", path.display())))
            .and_then(|text| History::from_json(&text).map_err(ReplayError::from));
        match read {
            Ok(history) => ReplayOutcome {
                path: path.to_path_buf(),
                run: Some((history.workflow_id.clone(), history.run_id.clone())),
                result: self.replay(&history),
            },
            Err(e) => ReplayOutcome {
                path: path.to_path_buf(),
                run: None,
                result: Err(e),
            },
        }
    }
}
