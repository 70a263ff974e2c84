//! The `stream_entries` and `workflow_events` tables of the memory store.

use super::tables::{MemoryTx, Result};
use crate::data::payload::Payload;
use crate::data::stream::StreamEntry;
use crate::store::rules::tx::StreamTable;

/// The keys of one stream's entries from offset `from`.
fn keys(run_id: &str, stream: &str, from: u64) -> std::ops::RangeInclusive<(String, String, u64)> {
    (run_id.to_string(), stream.to_string(), from)
        ..=(run_id.to_string(), stream.to_string(), u64::MAX)
}

impl StreamTable for MemoryTx {
    async fn stream_tail(&mut self, run_id: &str, stream: &str) -> Result<Option<(u64, bool)>> {
        Ok(self
            .streams
            .range(keys(run_id, stream, 0))
            .next_back()
            .map(|((_, _, offset), (value, _))| (*offset, value.is_none())))
    }

    async fn insert_stream_entry(
        &mut self,
        run_id: &str,
        stream: &str,
        offset: u64,
        value: Option<&Payload>,
        entry_id: Option<&str>,
    ) -> Result<()> {
        self.streams.insert(
            (run_id.to_string(), stream.to_string(), offset),
            (value.cloned(), entry_id.map(str::to_string)),
        );
        Ok(())
    }

    async fn stream_entry_by_id(
        &mut self,
        run_id: &str,
        stream: &str,
        entry_id: &str,
    ) -> Result<Option<u64>> {
        Ok(self
            .streams
            .range(keys(run_id, stream, 0))
            .find(|(_, (_, id))| id.as_deref() == Some(entry_id))
            .map(|((_, _, offset), _)| *offset))
    }

    async fn stream_entries(
        &mut self,
        run_id: &str,
        stream: &str,
        from: u64,
        max: usize,
    ) -> Result<Vec<StreamEntry>> {
        Ok(self
            .streams
            .range(keys(run_id, stream, from))
            .take(max)
            .map(|((_, _, offset), (value, _))| StreamEntry {
                offset: *offset,
                value: value.clone(),
            })
            .collect())
    }

    async fn run_streams(&mut self, run_id: &str) -> Result<Vec<(String, u64, bool)>> {
        let mut out: Vec<(String, u64, bool)> = Vec::new();
        let from = (run_id.to_string(), String::new(), 0);
        for ((run, stream, offset), (value, _)) in self.streams.range(from..) {
            if run != run_id {
                break;
            }
            match out.last_mut() {
                Some(last) if last.0 == *stream => {
                    *last = (stream.clone(), *offset, value.is_none())
                }
                _ => out.push((stream.clone(), *offset, value.is_none())),
            }
        }
        Ok(out)
    }

    async fn put_event_value(
        &mut self,
        workflow_id: &str,
        key: &str,
        run_id: &str,
        value: &Payload,
    ) -> Result<()> {
        self.workflow_events.insert(
            (workflow_id.to_string(), key.to_string()),
            (run_id.to_string(), value.clone()),
        );
        Ok(())
    }

    async fn event_value(&mut self, workflow_id: &str, key: &str) -> Result<Option<Payload>> {
        Ok(self
            .workflow_events
            .get(&(workflow_id.to_string(), key.to_string()))
            .map(|(_, value)| value.clone()))
    }

    async fn delete_runs_streams(&mut self, run_ids: &[String]) -> Result<()> {
        for run_id in run_ids {
            let all = (run_id.clone(), String::new(), 0)..(run_id.clone() + "\0", String::new(), 0);
            self.streams.remove_range(all);
        }
        self.workflow_events
            .remove_where(|_, (run_id, _)| run_ids.contains(run_id));
        Ok(())
    }
}
