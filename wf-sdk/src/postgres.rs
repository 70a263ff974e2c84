use std::sync::Arc;
use wf_core::{EngineBuilder, Store};
pub use wf_postgres::{
    ClientCert, PostgresOptions, PostgresStore, PostgresTls, RootCerts, SslMode,
};

/// Opens the engine's store on PostgreSQL: `Engine::builder().postgres(url)`. In the prelude
/// with the `postgres` feature.
///
/// ```no_run
/// use wf_sdk::prelude::*;
/// # async fn demo() -> Result<(), WfError> {
/// let engine = Engine::builder()
///     .postgres("postgres://wf@db.internal/app")
///     .build()
///     .await?;
/// # let _ = engine; Ok(()) }
/// ```
pub trait PostgresExt: Sized {
    /// Uses the PostgreSQL database at `url` (schema `wf`), connected when the engine is
    /// built; a bad URL or an unreachable server fails `build`. `url` is libpq's connection
    /// string, as a URL or `key=value` pairs, TLS included (`sslmode=verify-full`,
    /// `sslrootcert`, `sslcert`, `sslkey`; see [`PostgresTls`]).
    fn postgres(self, url: impl Into<String>) -> Self {
        self.postgres_with(url, PostgresOptions::default())
    }

    /// Uses the PostgreSQL database at `url` with these options (e.g. another schema).
    fn postgres_with(self, url: impl Into<String>, options: PostgresOptions) -> Self;
}

impl PostgresExt for EngineBuilder {
    fn postgres_with(self, url: impl Into<String>, options: PostgresOptions) -> Self {
        let url = url.into();
        self.store_opener(Box::new(move || {
            Box::pin(async move {
                let store = PostgresStore::connect_with(&url, options).await?;
                Ok(Arc::new(store) as Arc<dyn Store>)
            })
        }))
    }
}
