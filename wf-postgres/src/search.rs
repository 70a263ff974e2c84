//! The `search_attributes` and `memos` tables of the PostgreSQL store, and the schema
//! migration that creates them.

use crate::rows::get;
use crate::tx::{owned, PostgresTx, Result};
use wf_core::store::{Payload, SearchTable};
use wf_core::{SearchAttributes, SearchValue};

/// v4: search attributes (one row per run and key: its kind and the canonical text of its
/// value, found by key and value) and memos.
pub(crate) const SCHEMA_V4: &str = r#"
CREATE TABLE search_attributes (
    run_id  TEXT COLLATE "C" NOT NULL,
    key     TEXT COLLATE "C" NOT NULL,
    kind    TEXT NOT NULL,
    value   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE INDEX search_attributes_by_value ON search_attributes (key, kind, value, run_id);
CREATE TABLE memos (
    run_id  TEXT COLLATE "C" PRIMARY KEY,
    data    BYTEA NOT NULL
);
"#;

/// The search part of a list filter as three parallel arrays (keys, kinds, canonical
/// values), or `None` when it has none.
pub(crate) fn search_filter(
    search: &[(String, SearchValue)],
) -> Option<(Vec<String>, Vec<String>, Vec<String>)> {
    if search.is_empty() {
        return None;
    }
    let keys = search.iter().map(|(k, _)| k.clone()).collect();
    let kinds = search.iter().map(|(_, v)| v.kind().to_string()).collect();
    let values = search.iter().map(|(_, v)| v.canonical()).collect();
    Some((keys, kinds, values))
}

impl SearchTable for PostgresTx {
    async fn put_search_attributes(
        &mut self,
        run_id: &str,
        attributes: &SearchAttributes,
    ) -> Result<()> {
        for (key, value) in attributes {
            self.later(
                "INSERT INTO search_attributes (run_id, key, kind, value) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (run_id, key) DO UPDATE SET kind = EXCLUDED.kind, value = EXCLUDED.value",
                owned![
                    run_id.to_string(),
                    key.clone(),
                    value.kind().to_string(),
                    value.canonical()
                ],
                "record search attributes",
            )
            .await?;
        }
        Ok(())
    }

    async fn search_attributes(&mut self, run_id: &str) -> Result<SearchAttributes> {
        let rows = self
            .query(
                "SELECT key, kind, value FROM search_attributes WHERE run_id = $1 ORDER BY key",
                &[&run_id],
                "read search attributes",
            )
            .await?;
        let mut attributes = SearchAttributes::new();
        for row in &rows {
            let (key, kind, text): (String, String, String) =
                (get(row, 0)?, get(row, 1)?, get(row, 2)?);
            if let Some(value) = SearchValue::from_stored(&kind, &text) {
                attributes.insert(key, value);
            }
        }
        Ok(attributes)
    }

    async fn put_memo(&mut self, run_id: &str, memo: &Payload) -> Result<()> {
        self.later(
            "INSERT INTO memos (run_id, data) VALUES ($1, $2) \
             ON CONFLICT (run_id) DO UPDATE SET data = EXCLUDED.data",
            owned![run_id.to_string(), memo.as_bytes().to_vec()],
            "record a memo",
        )
        .await?;
        Ok(())
    }

    async fn memo(&mut self, run_id: &str) -> Result<Option<Payload>> {
        let row = self
            .query_opt(
                "SELECT data FROM memos WHERE run_id = $1",
                &[&run_id],
                "read a memo",
            )
            .await?;
        row.map(|r| get::<Vec<u8>>(&r, 0).map(Payload::unchecked))
            .transpose()
    }

    async fn delete_runs_search(&mut self, run_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM search_attributes WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' search attributes",
        )
        .await?;
        self.execute(
            "DELETE FROM memos WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' memos",
        )
        .await?;
        Ok(())
    }
}
