//! Lesson 9, PostgreSQL: with wf-sdk's `postgres` feature, engines on several machines share
//! one database. Each engine leases the work of the types it registered; a `client_only()`
//! engine (an API server, say) starts runs and waits for results without running any. The
//! workflow code is the same as on SQLite.
//!
//! Needs a PostgreSQL (15 or newer) and a role that may create a schema:
//!
//! ```sh
//! eval "$(.ci/postgres start)"      # a throwaway cluster; exports WF_POSTGRES_URL
//! cargo run --example postgres
//! .ci/postgres stop
//! ```

use wf_sdk::postgres::PostgresOptions;
use wf_sdk::prelude::*; // with `postgres`: `PostgresExt` gives the builder `.postgres(url)`

/// A nightly job: one activity.
#[derive(Default)]
pub struct Nightly;

#[workflow(name = "nightly")]
impl Nightly {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, day: String) -> Result<String, WorkflowError> {
        Ok(ctx.activity(Jobs::report, day).await?)
    }
}

/// The job's activity, run by whichever worker leases it.
pub struct Jobs;

#[activities]
impl Jobs {
    /// Writes a day's report.
    #[activity]
    async fn report(&self, _ctx: ActivityContext, day: String) -> Result<String, ActivityError> {
        Ok(format!("report for {day} written"))
    }
}

/// A worker engine and a client-only engine on the database `url`, in `schema`: the API
/// starts a run, the worker runs it, the API waits for its result.
pub async fn run(url: &str, schema: &str) -> Result<String, WfError> {
    // One schema per application; opening creates it and migrates it if needed.
    let options = PostgresOptions {
        schema: schema.to_string(),
        ..Default::default()
    };
    let worker = Engine::builder()
        .postgres_with(url, options.clone())
        .workflow::<Nightly>()
        .activities(Jobs)
        .build()
        .await?;
    // Registers the type it starts (its input is checked there) and runs none of it.
    let api = Engine::builder()
        .postgres_with(url, options)
        .workflow::<Nightly>()
        .client_only()
        .build()
        .await?;
    let run = api
        .client()
        .start::<Nightly>("nightly-2026-12-01", "2026-12-01".to_string())
        .await?;
    let outcome = run.result().await?;
    api.shutdown().await;
    worker.shutdown().await;
    Ok(outcome)
}

/// Runs the lesson on `WF_POSTGRES_URL`, or says how to get one.
pub fn main() -> Result<(), WfError> {
    let Ok(url) = std::env::var("WF_POSTGRES_URL") else {
        eprintln!(
            "WF_POSTGRES_URL is not set: this example needs a PostgreSQL database.\n\
             Start a throwaway one with `eval \"$(.ci/postgres start)\"` (it exports the URL),\n\
             or set WF_POSTGRES_URL=postgres://USER:PASSWORD@HOST/DB, then run\n\
             `cargo run --example postgres` again."
        );
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let outcome = runtime.block_on(run(&url, "wf_example_postgres"))?;
    println!("{outcome}");
    Ok(())
}
