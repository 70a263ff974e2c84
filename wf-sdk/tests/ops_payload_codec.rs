//! Payload codecs (`EngineBuilder::payload_codec`): encryption and compression at rest. What
//! the store holds is encoded (the database file and its WAL, PostgreSQL's tables, the memory
//! store's rows); what the engine's users see (results, queries, describe, history, export,
//! HTTP) is clear. A wrong key or a missing codec is a clear error; a store written without a
//! codec keeps working once one is installed.

mod common;
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use common::*;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::StartOptions,
    history::{EventKind, History, HistoryEvent, ReplayError, Replayer},
    payload::{CodecError, Payload, PayloadCodec},
    store::Store,
};

/// The string no byte of the store may hold in clear.
const SECRET: &str = "launch-code-7f3a9c-swordfish";

/// AES-256-GCM (the `aes-gcm` crate): a 12-byte nonce, then the ciphertext and its tag. Nonces
/// come from a counter started at a random value: unique per key within this process.
struct AesGcm {
    cipher: Aes256Gcm,
    next_nonce: AtomicU64,
}

impl AesGcm {
    fn new(key: [u8; 32]) -> Self {
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        AesGcm {
            cipher: Aes256Gcm::new(&Key::<Aes256Gcm>::from(key)),
            next_nonce: AtomicU64::new(start),
        }
    }
}

impl PayloadCodec for AesGcm {
    fn id(&self) -> &str {
        "aes256gcm"
    }

    fn encode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
        let mut nonce = [0u8; 12];
        nonce[4..].copy_from_slice(&self.next_nonce.fetch_add(1, Ordering::SeqCst).to_le_bytes());
        let sealed = self
            .cipher
            .encrypt(&Nonce::from(nonce), bytes)
            .map_err(|e| CodecError::new(format!("encryption failed: {e}")))?;
        Ok([&nonce[..], &sealed].concat())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
        if bytes.len() < 12 {
            return Err(CodecError::new("shorter than a nonce"));
        }
        let (nonce, sealed) = bytes.split_at(12);
        let nonce: [u8; 12] = nonce.try_into().expect("split at 12");
        self.cipher
            .decrypt(&Nonce::from(nonce), sealed)
            .map_err(|_| CodecError::new("authentication failed: wrong key or damaged data"))
    }
}

/// LZ4 (the `lz4_flex` crate), with the clear size in front.
struct Lz4;

impl PayloadCodec for Lz4 {
    fn id(&self) -> &str {
        "lz4"
    }

    fn encode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(lz4_flex::compress_prepend_size(bytes))
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
        lz4_flex::decompress_size_prepended(bytes).map_err(|e| CodecError::new(e.to_string()))
    }
}

const KEY: [u8; 32] = [7; 32];
const OTHER_KEY: [u8; 32] = [8; 32];

/// Takes a secret input, sends it through an activity, waits for a signal and an update that
/// carry secrets too, and returns them all.
#[derive(Default)]
pub struct Vault {
    notes: Vec<String>,
}

#[workflow(name = "vault")]
impl Vault {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, input: String) -> Result<String, WorkflowError> {
        let echoed = ctx
            .activity(Tools::echo, format!("{input}-to-activity"))
            .await?;
        ctx.wait_condition(|s| s.notes.len() >= 2).await;
        let notes = ctx.state(|s| s.notes.join(","));
        Ok(format!("{echoed}|{notes}"))
    }

    #[signal]
    fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    #[update]
    fn add(&mut self, note: String) -> Result<String, UpdateError> {
        self.notes.push(note.clone());
        Ok(format!("{note}-accepted"))
    }

    #[query]
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

fn expected_result() -> String {
    format!("{SECRET}-to-activity|{SECRET}-signal,{SECRET}-update")
}

/// Runs a vault to its end through `engine`, checking the clear values users see.
async fn run_vault(engine: &Engine, id: &str) -> WorkflowHandle<Vault> {
    let client = engine.client();
    let options = StartOptions::new()
        .with_memo("owner", &format!("{SECRET}-memo"))
        .unwrap();
    let h = client
        .start_with::<Vault>(id, SECRET.to_string(), options)
        .await
        .unwrap();
    h.note(format!("{SECRET}-signal")).await.unwrap();
    let accepted = h.add(format!("{SECRET}-update")).await.unwrap();
    assert_eq!(accepted, format!("{SECRET}-update-accepted"));
    assert_eq!(h.result().await.unwrap(), expected_result());
    assert_eq!(
        h.notes().await.unwrap(),
        vec![format!("{SECRET}-signal"), format!("{SECRET}-update")]
    );
    let d = h.describe().await.unwrap();
    assert_eq!(
        d.memo["owner"].decode::<String>().unwrap(),
        format!("{SECRET}-memo")
    );
    let history = h.history().await.unwrap();
    match &history[0].kind {
        EventKind::WorkflowStarted { input, .. } => {
            assert_eq!(input.decode::<String>().unwrap(), SECRET)
        }
        other => panic!("expected WorkflowStarted, got {other:?}"),
    }
    let exported = h.export().await.unwrap().to_json().unwrap();
    assert!(exported.contains(&expected_result()), "{exported}");
    assert!(!exported.contains("encoded"), "{exported}");
    h
}

/// Whether `haystack` holds `needle` anywhere.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Every user payload of a stored history, as the store holds it.
fn stored_payloads(events: &[HistoryEvent]) -> Vec<Payload> {
    let mut out = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::WorkflowStarted { input, .. }
            | EventKind::ActivityScheduled { input, .. } => out.push(input.clone()),
            EventKind::ActivityCompleted { result, .. }
            | EventKind::WorkflowCompleted { result } => out.push(result.clone()),
            EventKind::SignalReceived { args, .. } | EventKind::UpdateAccepted { args, .. } => {
                out.push(args.clone())
            }
            EventKind::UpdateCompleted {
                outcome: wf_sdk::client::UpdateOutcome::Completed(v),
                ..
            } => out.push(v.clone()),
            _ => {}
        }
    }
    out
}

/// What the store itself holds of run `id` (read around the engine): every payload encoded
/// with `codec`, no secret anywhere.
async fn assert_stored_encoded(store: &Arc<dyn Store>, id: &str, codec: &str) {
    let run = store.get_run(id, None).await.unwrap().unwrap();
    let result = run.result.expect("a completed run has a result");
    assert!(!holds(result.as_bytes(), SECRET.as_bytes()));
    assert_eq!(
        result.display(),
        format!("<encoded (codec {codec}), {} bytes>", result.len())
    );
    let events = store.read_history(&run.run_id, 1).await.unwrap();
    let payloads = stored_payloads(&events);
    assert_eq!(payloads.len(), 7, "input, activity, signal, update, result");
    for p in &payloads {
        assert!(!holds(p.as_bytes(), SECRET.as_bytes()), "{p:?}");
        assert!(
            p.display().contains(&format!("codec {codec}")),
            "{}",
            p.display()
        );
    }
    let memo = &store.admin().run_search(vec![run.run_id]).await.unwrap()[0].memo;
    assert!(!holds(memo["owner"].as_bytes(), SECRET.as_bytes()));
    // A reader without the codec gets an error naming it, not garbage.
    let err = result.decode::<String>().unwrap_err();
    assert!(
        matches!(&err, wf_sdk::payload::PayloadError::Codec { codec: c, .. } if c == codec),
        "{err}"
    );
}

/// The SQLite file and its WAL, as bytes.
fn file_bytes(path: &std::path::Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
        if let Ok(b) = std::fs::read(&file) {
            bytes.extend(b);
        }
    }
    bytes
}

/// A plain HTTP/1.1 GET on the server, answering the body.
fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    write!(
        tcp,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_sqlite_file_holds_no_clear_payload_and_users_see_clear_values() {
    let path = temp_db("codec-sqlite");
    let engine = Engine::builder()
        .sqlite(&path)
        .payload_codec(AesGcm::new(KEY))
        .workflow::<Vault>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = run_vault(&engine, "vault-1").await;

    // The HTTP service decodes too (JSON out).
    let server = wf_sdk::http::serve(&engine, "127.0.0.1:0", Default::default())
        .await
        .unwrap();
    let result = http_get(server.local_addr(), "/vault/runs/vault-1/result");
    assert!(result.contains(&expected_result()), "{result}");
    let history = http_get(server.local_addr(), "/vault/runs/vault-1/history");
    assert!(history.contains(&format!("{SECRET}-signal")), "{history}");
    assert!(!history.contains("encoded"), "{history}");
    server.shutdown().await.unwrap();

    // While the engine runs (the WAL holds the commits) and after it closed.
    assert!(!holds(&file_bytes(&path), SECRET.as_bytes()));
    drop(h);
    engine.shutdown().await;
    let bytes = file_bytes(&path);
    assert!(bytes.len() > 4096, "the database was written");
    assert!(!holds(&bytes, SECRET.as_bytes()));

    let store: Arc<dyn Store> = Arc::new(wf_sdk::store::SqliteStore::open(&path).unwrap());
    assert_stored_encoded(&store, "vault-1", "aes256gcm").await;

    // A history exported without the codec (as `wf export --db` does) replays with it.
    let run = store.get_run("vault-1", None).await.unwrap().unwrap();
    let encoded = History {
        workflow_type: "vault".into(),
        workflow_id: "vault-1".into(),
        run_id: run.run_id.clone(),
        events: store.read_history(&run.run_id, 1).await.unwrap(),
    };
    let replayed = Replayer::new().workflow::<Vault>().replay(&encoded);
    assert!(
        matches!(replayed, Err(ReplayError::Failed { .. })),
        "{replayed:?}"
    );
    Replayer::new()
        .workflow::<Vault>()
        .payload_codec(AesGcm::new(KEY))
        .replay(&encoded)
        .unwrap();
    let _ = std::fs::remove_file(&path);
}

async fn an_encrypted_store_holds_no_clear_payload(backend: Backend) {
    let store = open_store(backend, "codec-store").await;
    let engine = Engine::builder()
        .store(store.clone())
        .payload_codec(AesGcm::new(KEY))
        .workflow::<Vault>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    run_vault(&engine, "vault-2").await;
    assert_stored_encoded(&store, "vault-2", "aes256gcm").await;
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypted_postgres_tables_hold_no_clear_payload() {
    if !postgres_available() {
        return;
    }
    let (url, options) = postgres_schema("codec_pg");
    let engine = Engine::builder()
        .postgres_with(url.clone(), options.clone())
        .payload_codec(AesGcm::new(KEY))
        .workflow::<Vault>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    run_vault(&engine, "vault-3").await;
    engine.shutdown().await;

    let db = wf_postgres::connect_raw(&url).await.unwrap();
    let tables = db
        .query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
            &[&options.schema],
        )
        .await
        .unwrap();
    assert!(tables.len() > 3, "the schema has the store's tables");
    let hex: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
    let mut rows_seen = 0;
    for table in tables {
        let name: String = table.get(0);
        // Every row as text: bytea columns read as hex, text columns as they are.
        let sql = format!("SELECT t::text FROM {}.{name} t", options.schema);
        for row in db.query(sql.as_str(), &[]).await.unwrap() {
            let text: String = row.get(0);
            rows_seen += 1;
            assert!(!text.contains(SECRET), "{name}: {text}");
            assert!(!text.contains(&hex), "{name}: {text}");
        }
    }
    assert!(rows_seen > 3, "the run was stored");
}

async fn compressed_payloads_shrink_and_chain_with_encryption(backend: Backend) {
    let store = open_store(backend, "codec-lz4").await;
    let engine = Engine::builder()
        .store(store.clone())
        .payload_codec(Lz4)
        .payload_codec(AesGcm::new(KEY))
        .workflow::<Vault>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let input = format!("{SECRET} ").repeat(2_000);
    let h = engine
        .client()
        .start::<Vault>("vault-4", input.clone())
        .await
        .unwrap();
    h.note("a".into()).await.unwrap();
    h.note("b".into()).await.unwrap();
    assert_eq!(
        h.result().await.unwrap(),
        format!("{input}-to-activity|a,b")
    );
    let run = store.get_run("vault-4", None).await.unwrap().unwrap();
    let events = store.read_history(&run.run_id, 1).await.unwrap();
    let EventKind::WorkflowStarted { input: stored, .. } = &events[0].kind else {
        panic!("expected WorkflowStarted first");
    };
    let clear = Payload::encode(&input).unwrap();
    assert!(
        stored.len() * 10 < clear.len(),
        "{} bytes stored for {} clear",
        stored.len(),
        clear.len()
    );
    // The outer envelope is the last codec of the chain.
    assert!(stored.display().contains("codec aes256gcm"), "{stored:?}");
    engine.shutdown().await;
}

async fn a_wrong_key_or_a_missing_codec_is_a_clear_error(backend: Backend) {
    let store = open_store(backend, "codec-wrong-key").await;
    let engine = Engine::builder()
        .store(store.clone())
        .payload_codec(AesGcm::new(KEY))
        .workflow::<Vault>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    run_vault(&engine, "vault-5").await;
    engine.shutdown().await;

    let wrong = Engine::builder()
        .store(store.clone())
        .payload_codec(AesGcm::new(OTHER_KEY))
        .workflow::<Vault>()
        .activities(tools())
        .client_only()
        .build()
        .await
        .unwrap();
    let h = wrong.client().handle::<Vault>("vault-5");
    let err = h.result().await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("aes256gcm") && text.contains("wrong key"),
        "{text}"
    );
    // A store error of kind `Codec`: retrying does not help until the codec is fixed.
    let debug = format!("{err:?}");
    assert!(
        matches!(err, WfError::Store(_)) && debug.contains("kind: Codec"),
        "{debug}"
    );
    let err = h.history().await.unwrap_err().to_string();
    assert!(err.contains("aes256gcm"), "{err}");
    wrong.shutdown().await;

    // No codec at all: the result is still encoded, and decoding it names the codec.
    let bare = Engine::builder()
        .store(store.clone())
        .workflow::<Vault>()
        .client_only()
        .build()
        .await
        .unwrap();
    let err = bare
        .client()
        .handle::<Vault>("vault-5")
        .result()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("aes256gcm") && err.contains("EngineBuilder::payload_codec"),
        "{err}"
    );
    bare.shutdown().await;
}

async fn a_store_written_without_a_codec_works_once_one_is_installed(backend: Backend) {
    let store = open_store(backend, "codec-late").await;
    let plain = Engine::builder()
        .store(store.clone())
        .workflow::<Vault>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = plain
        .client()
        .start::<Vault>("vault-6", SECRET.to_string())
        .await
        .unwrap();
    h.note(format!("{SECRET}-signal")).await.unwrap();
    until_recorded(&h, "the signal", |k| {
        matches!(k, EventKind::SignalReceived { .. })
    })
    .await;
    plain.shutdown().await;

    let coded = Engine::builder()
        .store(store.clone())
        .payload_codec(AesGcm::new(KEY))
        .workflow::<Vault>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = coded.client().handle::<Vault>("vault-6");
    h.add(format!("{SECRET}-update")).await.unwrap();
    assert_eq!(h.result().await.unwrap(), expected_result());
    let history = h.history().await.unwrap();
    assert!(history.len() > 6);
    coded.shutdown().await;

    // The old events stayed clear, the new ones are encoded.
    let run = store.get_run("vault-6", None).await.unwrap().unwrap();
    let events = store.read_history(&run.run_id, 1).await.unwrap();
    let EventKind::WorkflowStarted { input, .. } = &events[0].kind else {
        panic!("expected WorkflowStarted first");
    };
    assert_eq!(input.decode::<String>().unwrap(), SECRET);
    let result = run.result.unwrap();
    assert!(result.display().contains("codec aes256gcm"), "{result:?}");
}

#[tokio::test]
async fn a_codec_id_out_of_bounds_or_installed_twice_fails_the_build() {
    let Err(err) = Engine::builder()
        .payload_codec(Lz4)
        .payload_codec(Lz4)
        .build()
        .await
    else {
        panic!("two codecs with one id were accepted");
    };
    assert!(err.to_string().contains("installed twice"), "{err}");
}

both!(
    an_encrypted_store_holds_no_clear_payload,
    compressed_payloads_shrink_and_chain_with_encryption,
    a_wrong_key_or_a_missing_codec_is_a_clear_error,
    a_store_written_without_a_codec_works_once_one_is_installed,
);
