//! Queries: never written to history. A running run held in this engine's cache answers from
//! memory (no store read); another is answered by this worker's cache if it holds the run, or
//! rebuilt from its history on a blocking thread.

use super::{check_size, LocalTransport};
use crate::data::limits::Ident;
use crate::data::payload::Payload;
use crate::error::WfError;
use crate::replay::replay;
use crate::runtime::spin::answer_soon;
use crate::runtime::worker::QueryRequest;
use crate::workflow::Role;

impl LocalTransport {
    pub(super) async fn query(
        &self,
        workflow_id: &str,
        name: &str,
        args: Payload,
    ) -> Result<Payload, WfError> {
        Ident::QueryName.check(name)?;
        if let Some(answer) = self.query_hot(workflow_id, name, &args).await {
            return answer;
        }
        let core = &self.core;
        let run = self.latest(workflow_id).await?;
        let def = core.registry.definition(&run.workflow_type)?.clone();
        check_size("query", &args)?;
        def.check_message(Role::Query, name, &args)?;
        if core.config.run_workers {
            if let Some(answer) = self.ask_worker(&run.run_id, name, &args).await {
                return answer;
            }
        }
        // Not in memory here: rebuild the run from its history (never written to).
        let history = core.store.read_history(&run.run_id, 1).await?;
        let name = name.to_string();
        tokio::task::spawn_blocking(move || {
            let instance = replay(def.as_ref(), &run.workflow_id, &run.run_id, &history)
                .map_err(|e| e.into_query_error())?;
            instance.query(&name, &args)
        })
        .await
        .map_err(|e| WfError::QueryError(format!("query replay panicked: {e}")))?
    }

    /// A query answered by this engine's cache without reading the store, if the run is a
    /// running run held in memory here.
    async fn query_hot(
        &self,
        workflow_id: &str,
        name: &str,
        args: &Payload,
    ) -> Option<Result<Payload, WfError>> {
        let (run_id, def) = self.hot_run(workflow_id)?;
        if let Err(e) =
            check_size("query", args).and_then(|()| def.check_message(Role::Query, name, args))
        {
            return Some(Err(e));
        }
        self.ask_worker(&run_id, name, args).await
    }

    /// The worker's answer from its cache; `None` if it does not hold the run (or is gone).
    async fn ask_worker(
        &self,
        run_id: &str,
        name: &str,
        args: &Payload,
    ) -> Option<Result<Payload, WfError>> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let request = QueryRequest {
            run_id: run_id.to_string(),
            name: name.to_string(),
            args: args.clone(),
            reply,
        };
        if !self.core.worker.query(request) {
            return None;
        }
        answer_soon(rx).await.flatten()
    }
}
