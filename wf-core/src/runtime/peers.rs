//! Wake-ups across engines that share a store (other processes, or other engines of this one):
//! each engine listens on a unix datagram socket whose address it registers in the store
//! (`EngineRecord::wake_address`), and pokes every live peer when it commits something a peer
//! may be waiting for — a message, a timer, a task, an outcome — so that the peer looks at the
//! store at once instead of at its next poll.
//!
//! - A poke is one small datagram: the flags of the engine's outbox (`wakeups.rs`) and the
//!   workflow ids whose waiters should look again. Pokes gathered while one is being sent go
//!   out together in the next.
//! - Sends never block and never fail the sender: a full peer queue makes the peer owe a
//!   catch-up poke (every flag), retried shortly; a peer whose socket is gone (it crashed) is
//!   skipped until the store says again that it lives.
//! - A poke carries no data a receiver must trust: any local process may send one, so a bad
//!   datagram is dropped and a good one costs at most a spurious look at the store.
//! - The peer list comes from `StoreAdmin::live_engines`, read again at each liveness renewal and
//!   when a peer announces itself (a newly registered engine pokes everyone with `PEERS`). A
//!   peer found for the first time gets a catch-up poke: anything committed before it was
//!   known reaches it too.
//! - Linux uses the abstract socket namespace (no file, nothing to clean up after a SIGKILL);
//!   other unix systems a socket file in the temp dir, removed when the engine stops. Without
//!   a socket (another OS, or binding failed) the engine polls more often instead.

use super::core::Core;
use super::wakeups::{flag, MAX_POKE_IDS};
use std::sync::Arc;

/// The first bytes of every poke: "wf", then the format version.
const MAGIC: [u8; 3] = *b"wf\x01";

/// A poke names workflow ids up to this many bytes in all; past it, it says `ALL_WAITERS`.
const MAX_IDS_BYTES: usize = 16 * 1024;

/// How long a peer whose queue was full waits for its catch-up poke.
#[cfg(unix)]
const RETRY: std::time::Duration = std::time::Duration::from_millis(10);

/// How often the receiving thread checks whether its engine stopped, should the stop poke be
/// lost.
#[cfg(unix)]
const STOP_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// Announcements (`PEERS`) make the live engines be read again at most this often.
#[cfg(unix)]
const MIN_REFRESH_GAP: std::time::Duration = std::time::Duration::from_millis(10);

/// Wakes every loop and waiter of the engine whenever the store says that another process
/// committed something (`Store::changes`, e.g. PostgreSQL's `LISTEN/NOTIFY`): the store's own
/// channel between processes, for engines its peers' sockets cannot reach (other machines).
pub(crate) async fn follow_store(core: Arc<Core>, mut changes: tokio::sync::watch::Receiver<u64>) {
    let mut shutdown = core.wake.shutdown.subscribe();
    loop {
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = shutdown.wait_for(|stopped| *stopped) => return,
        }
        if core.is_shutdown() {
            return;
        }
        let all =
            flag::WORKFLOW | flag::ACTIVITY | flag::TIMER | flag::CANCELLED | flag::ALL_WAITERS;
        core.wake.apply_poke(all, &[]);
    }
}

/// Encodes a poke.
fn encode(bits: u8, ids: &[String]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(MAGIC.len() + 1 + ids.iter().map(|i| i.len() + 2).sum::<usize>());
    out.extend_from_slice(&MAGIC);
    out.push(bits);
    let fits = ids.len() <= MAX_POKE_IDS
        && ids.iter().map(|i| i.len() + 2).sum::<usize>() <= MAX_IDS_BYTES
        && ids.iter().all(|i| u16::try_from(i.len()).is_ok());
    if bits & flag::WAITERS != 0 && bits & flag::ALL_WAITERS == 0 {
        if fits {
            for id in ids {
                out.extend_from_slice(&(id.len() as u16).to_le_bytes());
                out.extend_from_slice(id.as_bytes());
            }
        } else {
            out[MAGIC.len()] |= flag::ALL_WAITERS;
        }
    }
    out
}

/// Decodes a poke: its flags (unknown bits dropped) and the workflow ids it names. `None` for
/// anything that is not a well-formed poke.
fn decode(bytes: &[u8]) -> Option<(u8, Vec<&str>)> {
    let rest = bytes.strip_prefix(&MAGIC[..])?;
    let (&bits, mut rest) = rest.split_first()?;
    let bits = bits & flag::ALL;
    let mut ids = Vec::new();
    while !rest.is_empty() {
        if ids.len() == MAX_POKE_IDS {
            return None;
        }
        let (len, tail) = rest.split_first_chunk::<2>()?;
        let len = usize::from(u16::from_le_bytes(*len));
        if len > tail.len() {
            return None;
        }
        let (id, tail) = tail.split_at(len);
        ids.push(std::str::from_utf8(id).ok()?);
        rest = tail;
    }
    Some((bits, ids))
}

/// This engine's listening socket, before its task takes it over.
pub(crate) struct Listener {
    #[cfg(unix)]
    socket: std::os::unix::net::UnixDatagram,
    /// The address peers poke (registered in the store).
    pub address: String,
    #[cfg(unix)]
    cleanup: Option<SocketFile>,
}

/// A socket file removed when dropped (the engine stopped or was dropped).
#[cfg(unix)]
struct SocketFile(std::path::PathBuf);

#[cfg(unix)]
impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Binds engine `engine_id`'s wake-up socket; `None` when this system offers none (the
/// engine then polls more often).
pub(crate) fn bind(engine_id: &str) -> Option<Listener> {
    #[cfg(unix)]
    {
        match unix::bind(engine_id) {
            Ok(listener) => Some(listener),
            Err(e) => {
                tracing::warn!(error = %e, "no wake-up socket: other engines' work is seen at the poll");
                None
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = engine_id;
        None
    }
}

/// Announces this engine to its live peers (so that they poke it from now on) and starts the
/// task that sends pokes, and receives them if `listener` is given, until `core.wake.outbox`
/// closes.
pub(crate) async fn start(
    core: Arc<Core>,
    listener: Option<Listener>,
) -> tokio::task::JoinHandle<()> {
    #[cfg(unix)]
    {
        unix::start(core, listener).await
    }
    #[cfg(not(unix))]
    {
        let _ = (core, listener);
        tokio::spawn(async {})
    }
}

/// Ends the receiving thread of a stopped engine now rather than at its next timeout.
pub(crate) fn stop_listening(core: &Core) {
    #[cfg(unix)]
    unix::stop_listening(core);
    #[cfg(not(unix))]
    let _ = core;
}

#[cfg(unix)]
mod unix {
    use super::{decode, encode, Listener, MIN_REFRESH_GAP, RETRY, STOP_CHECK};
    use crate::runtime::core::Core;
    use crate::runtime::wakeups::{flag, PokeSink, Wakeups};
    use crate::store::EngineRecord;
    use std::collections::HashSet;
    use std::io;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    #[cfg(target_os = "linux")]
    const ABSTRACT: &str = "unix-abstract:";
    const PATH: &str = "unix:";

    /// The socket address `address` names, if it is one this system can reach.
    fn parse(address: &str) -> Option<SocketAddr> {
        #[cfg(target_os = "linux")]
        if let Some(name) = address.strip_prefix(ABSTRACT) {
            use std::os::linux::net::SocketAddrExt;
            return SocketAddr::from_abstract_name(name.as_bytes()).ok();
        }
        let path = address.strip_prefix(PATH)?;
        SocketAddr::from_pathname(path).ok()
    }

    pub(super) fn bind(engine_id: &str) -> io::Result<Listener> {
        #[cfg(target_os = "linux")]
        {
            let address = format!("{ABSTRACT}wf-{engine_id}");
            let addr = parse(&address).ok_or_else(|| io::Error::other("bad abstract name"))?;
            let socket = UnixDatagram::bind_addr(&addr)?;
            Ok(Listener {
                socket,
                address,
                cleanup: None,
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            // A socket path must fit in ~104 bytes: fall back to /tmp when the temp dir is long.
            let name = format!("wf-{}.sock", &engine_id[..engine_id.len().min(36)]);
            let mut path = std::env::temp_dir().join(&name);
            if path.as_os_str().len() > 100 {
                path = std::path::Path::new("/tmp").join(&name);
            }
            let socket = UnixDatagram::bind(&path)?;
            let cleanup = super::SocketFile(path.clone());
            Ok(Listener {
                socket,
                address: format!("{PATH}{}", path.display()),
                cleanup: Some(cleanup),
            })
        }
    }

    /// A live peer engine this one pokes.
    struct Peer {
        engine_id: String,
        addr: SocketAddr,
        /// It missed a poke (its queue was full, or it was not known yet): its next poke
        /// carries every flag.
        owed: bool,
    }

    /// The peers, and what is owed to them.
    #[derive(Default)]
    struct PeerList {
        peers: Vec<Peer>,
        /// Engines whose socket is gone though the store still lists them (crashed, lease not
        /// yet expired): not poked again until they leave the store's list.
        gone: HashSet<String>,
    }

    /// The sending side, shared by the peer task and the threads that send pokes themselves.
    struct Link {
        socket: UnixDatagram,
        list: Mutex<PeerList>,
    }

    impl Link {
        fn list(&self) -> std::sync::MutexGuard<'_, PeerList> {
            self.list
                .lock()
                .expect("peer list lock is never poisoned: nothing panics under it")
        }

        /// Takes `live` (the store's live engines) as the peers; new ones are owed a catch-up
        /// poke. Whether there are any.
        fn replace(&self, live: Vec<EngineRecord>, me: &str) -> bool {
            let mut list = self.list();
            list.gone
                .retain(|id| live.iter().any(|e| &e.engine_id == id));
            let mut peers = Vec::with_capacity(live.len());
            for e in live {
                if e.engine_id == me || list.gone.contains(&e.engine_id) {
                    continue;
                }
                let Some(addr) = e.wake_address.as_deref().and_then(parse) else {
                    continue;
                };
                let known = list.peers.iter().find(|p| p.engine_id == e.engine_id);
                let owed = known.is_none_or(|p| p.owed);
                peers.push(Peer {
                    engine_id: e.engine_id,
                    addr,
                    owed,
                });
            }
            list.peers = peers;
            !list.peers.is_empty()
        }

        /// Sends `bits` and `ids` to every peer (every flag to those owed one). Whether any
        /// peer is left.
        fn send(&self, bits: u8, ids: &[String]) -> bool {
            let mut list = self.list();
            if list.peers.is_empty() {
                return false;
            }
            let normal = (bits != 0).then(|| encode(bits, ids));
            let mut catch_up = None;
            let mut gone = Vec::new();
            for peer in &mut list.peers {
                let poke = if peer.owed {
                    catch_up.get_or_insert_with(|| encode(flag::ALL & !flag::WAITERS, &[]))
                } else if let Some(poke) = &normal {
                    poke
                } else {
                    continue;
                };
                match self.socket.send_to_addr(poke, &peer.addr) {
                    Ok(_) => peer.owed = false,
                    Err(e) if is_transient(&e) => peer.owed = true,
                    Err(e) => {
                        tracing::debug!(peer = %peer.engine_id, error = %e, "a peer's wake-up socket is gone");
                        gone.push(peer.engine_id.clone());
                    }
                }
            }
            if !gone.is_empty() {
                list.peers.retain(|p| !gone.contains(&p.engine_id));
                list.gone.extend(gone);
            }
            !list.peers.is_empty()
        }

        fn owes(&self) -> bool {
            self.list().peers.iter().any(|p| p.owed)
        }
    }

    impl PokeSink for Link {
        fn poke(&self, bits: u8, ids: &[String]) -> bool {
            self.send(bits, ids)
        }
    }

    /// The peer task's state.
    struct Sender {
        core: Arc<Core>,
        link: Arc<Link>,
        last_refresh: Option<Instant>,
    }

    impl Sender {
        /// Reads the live engines again.
        async fn refresh(&mut self) {
            self.last_refresh = Some(Instant::now());
            let core = &self.core;
            match core.store.admin().live_engines(core.now_ms()).await {
                Ok(live) => {
                    let any = self.link.replace(live, &core.worker_id);
                    core.wake.outbox.set_active(any);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "listing the live engines for wake-ups failed")
                }
            }
        }
    }

    /// A send that may succeed later (the peer's queue is full, or the system is short of
    /// buffers); anything else means the peer's socket is gone.
    fn is_transient(e: &io::Error) -> bool {
        matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
        ) || e.raw_os_error() == Some(105) // ENOBUFS on Linux
    }

    pub(super) async fn start(
        core: Arc<Core>,
        listener: Option<Listener>,
    ) -> tokio::task::JoinHandle<()> {
        if let Some(listener) = listener {
            let wake = core.wake.clone();
            let spawned = std::thread::Builder::new()
                .name("wf-wakeups".into())
                .spawn(move || receive(&wake, listener));
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot listen for wake-ups: other engines' work is seen at the poll");
            }
        }
        let sender_socket = match UnixDatagram::unbound().and_then(|s| {
            s.set_nonblocking(true)?;
            Ok(s)
        }) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "no socket to poke other engines with");
                return tokio::spawn(async {});
            }
        };
        let link = Arc::new(Link {
            socket: sender_socket,
            list: Mutex::default(),
        });
        let mut sender = Sender {
            core: core.clone(),
            link: link.clone(),
            last_refresh: None,
        };
        // Before the engine is handed to its user: what it commits from its first call on
        // reaches the peers, and they learn of it at once.
        sender.refresh().await;
        link.send(flag::PEERS, &[]);
        core.wake.outbox.set_sink(link);
        // (The outbox holds the link, not the other way round: no cycle keeps them alive.)
        tokio::spawn(send_until_closed(sender))
    }

    /// Receives pokes until the engine stops (its thread: a blocking receive wakes sooner
    /// than a poll of the runtime's reactor, and needs no I/O driver in the user's runtime).
    fn receive(wake: &Wakeups, listener: Listener) {
        let Listener {
            socket,
            cleanup: _cleanup,
            ..
        } = listener;
        // Blocking, with a timeout so that a lost stop poke still ends the thread.
        let setup = socket
            .set_nonblocking(false)
            .and_then(|()| socket.set_read_timeout(Some(STOP_CHECK)));
        if let Err(e) = setup {
            tracing::warn!(error = %e, "cannot listen for wake-ups: other engines' work is seen at the poll");
            return;
        }
        let mut buf = vec![0u8; 64 * 1024];
        while !wake.is_shutdown() {
            match socket.recv(&mut buf) {
                Ok(n) => {
                    if let Some((bits, ids)) = decode(&buf[..n]) {
                        wake.apply_poke(bits, &ids);
                        if bits & flag::PEERS != 0 {
                            wake.outbox.request_refresh();
                        }
                    }
                }
                Err(e) if is_transient(&e) || e.kind() == io::ErrorKind::TimedOut => {}
                Err(e) => {
                    // Not expected on a datagram socket; never spin on it.
                    tracing::debug!(error = %e, "receiving a wake-up failed");
                    std::thread::sleep(RETRY);
                }
            }
        }
    }

    /// Ends the receiving thread of a stopped engine now rather than at its next timeout.
    pub(super) fn stop_listening(core: &Core) {
        let Some(addr) = core.wake_address.as_deref().and_then(parse) else {
            return;
        };
        if let Ok(s) = UnixDatagram::unbound() {
            let _ = s.set_nonblocking(true);
            let _ = s.send_to_addr(&[], &addr);
        }
    }

    /// Sends pokes until the outbox closes.
    async fn send_until_closed(mut sender: Sender) {
        let core = sender.core.clone();
        let outbox = core.wake.outbox.clone();
        let renewal = (core.config.liveness_lease / 3).max(std::time::Duration::from_millis(1));
        let mut refresh_at: Option<Instant> = None;
        loop {
            let periodic = sender
                .last_refresh
                .map_or_else(Instant::now, |t| t + renewal);
            let mut next = refresh_at.map_or(periodic, |t| t.min(periodic));
            if sender.link.owes() {
                next = next.min(Instant::now() + RETRY);
            }
            tokio::select! {
                () = outbox.kick.notified() => {}
                () = tokio::time::sleep_until(next.into()) => {}
            }
            if outbox.take_refresh() {
                // Announcements are looked up at most every MIN_REFRESH_GAP, whoever sends them.
                let gap = sender
                    .last_refresh
                    .map_or_else(Instant::now, |t| t + MIN_REFRESH_GAP);
                refresh_at = Some(refresh_at.map_or(gap, |t| t.min(gap)));
            }
            let now = Instant::now();
            if now >= periodic || refresh_at.is_some_and(|t| now >= t) {
                refresh_at = None;
                sender.refresh().await;
            }
            let (bits, ids) = outbox.take();
            if !sender.link.send(bits, &ids) {
                outbox.set_active(false);
            }
            if outbox.is_closed() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poke_round_trips() {
        let ids = vec!["a".to_string(), "workflow-β".to_string(), String::new()];
        let bytes = encode(flag::WORKFLOW | flag::WAITERS, &ids);
        let (bits, got) = decode(&bytes).unwrap();
        assert_eq!(bits, flag::WORKFLOW | flag::WAITERS);
        assert_eq!(got, vec!["a", "workflow-β", ""]);
    }

    #[test]
    fn too_many_id_bytes_say_all_waiters() {
        let ids = vec!["x".repeat(MAX_IDS_BYTES); 2];
        let bytes = encode(flag::WAITERS, &ids);
        let (bits, got) = decode(&bytes).unwrap();
        assert_eq!(bits, flag::WAITERS | flag::ALL_WAITERS);
        assert!(got.is_empty());
    }

    #[test]
    fn bad_datagrams_are_refused_without_panicking() {
        assert!(decode(b"").is_none());
        assert!(decode(b"wf").is_none());
        assert!(decode(b"xx\x01\x01").is_none());
        assert!(decode(b"wf\x02\x01").is_none());
        // Truncated length, truncated id, invalid UTF-8.
        assert!(decode(b"wf\x01\x08\x05").is_none());
        assert!(decode(b"wf\x01\x08\x05\x00abc").is_none());
        assert!(decode(b"wf\x01\x08\x02\x00\xff\xfe").is_none());
        // Unknown bits are dropped.
        assert_eq!(decode(b"wf\x01\xff").unwrap().0, flag::ALL);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A small deterministic generator: every length up to 64, many byte patterns.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..64usize {
            for _ in 0..200 {
                let mut bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                if len >= 3 && x % 2 == 0 {
                    bytes[..3].copy_from_slice(&MAGIC);
                }
                if let Some((bits, ids)) = decode(&bytes) {
                    assert_eq!(bits & !flag::ALL, 0);
                    assert!(ids.len() <= MAX_POKE_IDS);
                }
            }
        }
    }
}
