//! Headless Chromium for the web view's test: the browser process (found on `PATH`, started
//! with a fresh profile, killed by its process group id when dropped, also on a failed
//! assertion) and a small Chrome DevTools Protocol client over a hand-written WebSocket
//! (RFC 6455 client side: masked text frames out, fragmented frames and pings in).
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// How long one DevTools call may take before the test fails (a detector, not a measure).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The Chromium binary: `WF_CHROMIUM`, else the first of the usual names on `PATH`.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WF_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// A running headless Chromium. Dropping it kills the browser's process group and removes
/// its profile.
pub struct Browser {
    child: Child,
    profile: PathBuf,
    /// `ws://127.0.0.1:PORT/devtools/browser/ID`.
    pub ws_url: String,
}

impl Browser {
    /// Starts `binary` headless with a fresh profile and waits for its DevTools endpoint.
    pub fn launch(binary: &Path) -> Browser {
        use std::os::unix::process::CommandExt;
        let profile = std::env::temp_dir().join(format!(
            "wf-ui-chromium-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&profile).expect("create the browser profile directory");
        let child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--window-size=1280,900",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so that the renderer and helper processes go with it.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {}: {e}", binary.display()));
        let mut browser = Browser {
            child,
            profile,
            ws_url: String::new(),
        };
        // Chromium writes "PORT\n/devtools/browser/ID" once it listens.
        let file = browser.profile.join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(text) = std::fs::read_to_string(&file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    browser.ws_url = format!("ws://127.0.0.1:{}{}", port.trim(), path.trim());
                    return browser;
                }
            }
            if let Ok(Some(status)) = browser.child.try_wait() {
                panic!("chromium exited before listening: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "chromium did not open its DevTools port within 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The browser's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The group id is the browser's pid (process_group(0)): kill exactly that group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// A WebSocket client connection (text messages only, as DevTools speaks).
struct Ws {
    reader: BufReader<tokio::io::ReadHalf<TcpStream>>,
    writer: tokio::io::WriteHalf<TcpStream>,
    mask_seed: u32,
}

impl Ws {
    async fn connect(url: &str) -> Ws {
        let rest = url.strip_prefix("ws://").expect("a ws:// URL");
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let stream = TcpStream::connect(host)
            .await
            .unwrap_or_else(|e| panic!("connect to DevTools at {host}: {e}"));
        let (read, mut writer) = tokio::io::split(stream);
        let mut reader = BufReader::new(read);
        // No Origin header: DevTools refuses unknown origins, not origin-less clients.
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: d2YtdWktdGVzdC1rZXkhIQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        writer
            .write_all(request.as_bytes())
            .await
            .expect("send the WebSocket handshake");
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let b = reader
                .read_u8()
                .await
                .expect("read the WebSocket handshake");
            head.push(b);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(
            head.starts_with("HTTP/1.1 101"),
            "DevTools refused the WebSocket: {head}"
        );
        Ws {
            reader,
            writer,
            mask_seed: 0x9e37_79b9,
        }
    }

    async fn send_frame(&mut self, opcode: u8, payload: &[u8]) {
        let mut frame = vec![0x80 | opcode];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= 0xffff => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        self.mask_seed = self
            .mask_seed
            .wrapping_mul(1_664_525)
            .wrapping_add(1_013_904_223);
        let mask = self.mask_seed.to_be_bytes();
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.writer
            .write_all(&frame)
            .await
            .expect("write to DevTools");
    }

    async fn send_text(&mut self, text: &str) {
        self.send_frame(0x1, text.as_bytes()).await;
    }

    /// The next text message (answering pings on the way).
    async fn recv_text(&mut self) -> String {
        let mut message = Vec::new();
        loop {
            let b0 = self.reader.read_u8().await.expect("read from DevTools");
            let b1 = self.reader.read_u8().await.expect("read from DevTools");
            let mut len = u64::from(b1 & 0x7f);
            if len == 126 {
                len = u64::from(self.reader.read_u16().await.expect("frame length"));
            } else if len == 127 {
                len = self.reader.read_u64().await.expect("frame length");
            }
            let mask = if b1 & 0x80 != 0 {
                let mut m = [0u8; 4];
                self.reader.read_exact(&mut m).await.expect("frame mask");
                Some(m)
            } else {
                None
            };
            let mut payload = vec![0u8; usize::try_from(len).expect("frame fits in memory")];
            self.reader
                .read_exact(&mut payload)
                .await
                .expect("frame payload");
            if let Some(m) = mask {
                for (i, b) in payload.iter_mut().enumerate() {
                    *b ^= m[i % 4];
                }
            }
            match b0 & 0x0f {
                0x0..=0x2 => {
                    message.extend_from_slice(&payload);
                    if b0 & 0x80 != 0 {
                        return String::from_utf8(message).expect("DevTools sends UTF-8 text");
                    }
                }
                0x8 => panic!("DevTools closed the connection"),
                0x9 => self.send_frame(0xA, &payload).await,
                _ => {}
            }
        }
    }
}

/// A DevTools session on one page.
pub struct Page {
    ws: Ws,
    next_id: u64,
    session: String,
    /// Events received so far (method and params), in order.
    pub events: Vec<Value>,
}

impl Page {
    /// Opens a new page in the browser at `ws_url` and attaches to it.
    pub async fn open(ws_url: &str) -> Page {
        let mut page = Page {
            ws: Ws::connect(ws_url).await,
            next_id: 0,
            session: String::new(),
            events: Vec::new(),
        };
        let target = page
            .call("Target.createTarget", json!({ "url": "about:blank" }))
            .await;
        let target_id = target["targetId"]
            .as_str()
            .expect("a target id")
            .to_string();
        let attached = page
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await;
        page.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            page.call(domain, json!({})).await;
        }
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false }),
        )
        .await;
        page
    }

    /// Sends a command (on the page's session once attached) and returns its result.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        self.ws.send_text(&msg.to_string()).await;
        let answer = tokio::time::timeout(CALL_TIMEOUT, async {
            loop {
                let text = self.ws.recv_text().await;
                let v: Value = serde_json::from_str(&text).expect("DevTools sends JSON");
                if v["id"].as_u64() == Some(id) {
                    return v;
                }
                if v.get("method").is_some() {
                    self.events.push(v);
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("DevTools did not answer {method} within 60 s"));
        if let Some(err) = answer.get("error") {
            panic!("DevTools {method} failed: {err}");
        }
        answer["result"].clone()
    }

    /// Navigates to `url`.
    pub async fn navigate(&mut self, url: &str) {
        let r = self.call("Page.navigate", json!({ "url": url })).await;
        assert!(
            r.get("errorText").is_none(),
            "navigating to {url} failed: {r}"
        );
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "awaitPromise": true, "returnByValue": true }),
            )
            .await;
        if let Some(ex) = r.get("exceptionDetails") {
            panic!("the page threw evaluating {expression}: {ex}");
        }
        r["result"]["value"].clone()
    }

    /// Evaluates `expression` until it gives a truthy value (at most `within`), and returns it.
    /// On time out, saves a screenshot named `name` and fails with the page's text.
    pub async fn wait_for(&mut self, name: &str, expression: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let v = self.eval(expression).await;
            let truthy =
                !matches!(&v, Value::Null | Value::Bool(false)) && v != json!("") && v != json!(0);
            if truthy {
                return v;
            }
            if Instant::now() > deadline {
                let text = self.eval("document.body.innerText").await;
                let shot = self.screenshot(&format!("failed-{name}")).await;
                panic!(
                    "waited {within:?} for {name} ({expression}); screenshot {}; the page reads:\n{}",
                    shot.display(),
                    text.as_str().unwrap_or("")
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Saves a PNG of the whole page as `target/ui-screenshots/NAME.png` and returns its path.
    pub async fn screenshot(&mut self, name: &str) -> PathBuf {
        let r = self
            .call(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": true }),
            )
            .await;
        let png = base64_decode(r["data"].as_str().expect("screenshot data"));
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is a PNG");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("create target/ui-screenshots");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write the screenshot");
        path
    }

    /// Uncaught exceptions and Content-Security-Policy violations reported so far.
    pub fn problems(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e["method"].as_str() {
                Some("Runtime.exceptionThrown") => {
                    Some(e["params"]["exceptionDetails"].to_string())
                }
                Some("Log.entryAdded") => {
                    let text = e["params"]["entry"]["text"].as_str().unwrap_or("");
                    text.contains("Content Security Policy")
                        .then(|| text.to_string())
                }
                _ => None,
            })
            .collect()
    }
}

/// Checks that the page reported no script error or CSP violation, and stops everything.
pub async fn finish(page: Page, chromium: Browser, server: wf_http::Server) {
    let problems = page.problems();
    assert!(problems.is_empty(), "the page reported: {problems:#?}");
    drop(page);
    drop(chromium);
    server.shutdown().await.expect("shutdown");
}

/// `target/ui-screenshots` of this workspace (or of `CARGO_TARGET_DIR`).
pub fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("ui-screenshots")
}

/// Standard base64 (as DevTools encodes screenshots).
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {:?}", c as char),
        }
    };
    let clean: Vec<u8> = text.bytes().filter(|&c| c != b'=' && c != b'\n').collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c) << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decodes_what_devtools_sends() {
    assert_eq!(base64_decode("aGVsbG8="), b"hello");
    assert_eq!(base64_decode("aGVsbG8h"), b"hello!");
    assert_eq!(base64_decode("aGk="), b"hi");
}

/// The Chromium binary, or `None` after saying loudly that `test` is skipped (a panic with
/// `WF_REQUIRE_CHROMIUM=1`).
pub fn chromium_or_skip(test: &str) -> Option<std::path::PathBuf> {
    let found = find_chromium();
    if found.is_none() {
        let msg = "no Chromium found (looked for WF_CHROMIUM, chromium, chromium-browser, \
                   google-chrome on PATH); install it with `apt-get install -y chromium` \
                   to run the web view's browser test";
        if std::env::var("WF_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
            panic!("WF_REQUIRE_CHROMIUM=1: {msg}");
        }
        eprintln!("\n*** SKIPPED {test}: {msg} ***\n");
    }
    found
}
