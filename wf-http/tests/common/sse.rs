//! A raw event-stream reader for the tests of the server-sent event routes (streams, the
//! feed): one request on its own connection, the body read as it comes.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::time::Duration;
use tokio::net::TcpStream;
use wf_http::Server;

/// One server-sent event as the raw reader saw it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Sse {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// A raw event-stream reader: one request on its own connection, the body read as it comes.
pub struct SseReader {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    body: Incoming,
    buffer: String,
}

impl SseReader {
    pub async fn open(
        server: &Server,
        path: &str,
        token: &str,
        last_event_id: Option<&str>,
    ) -> Self {
        let tcp = TcpStream::connect(server.local_addr())
            .await
            .expect("connect");
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .expect("handshake");
        tokio::spawn(conn);
        let mut req = hyper::Request::builder()
            .uri(path)
            .header("host", server.local_addr().to_string())
            .header("accept", "text/event-stream")
            .header("authorization", format!("Bearer {token}"));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        let res = send
            .send_request(req.body(Full::new(Bytes::new())).unwrap())
            .await
            .expect("answer");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        SseReader {
            status,
            headers,
            body: res.into_body(),
            buffer: String::new(),
        }
    }

    /// The next event (keep-alive comments skipped); `None` when the body ended.
    pub async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Sse::default();
                let mut any = false;
                for line in block.lines() {
                    let Some((field, value)) = line.split_once(": ") else {
                        continue;
                    };
                    match field {
                        "id" => event.id = Some(value.into()),
                        "event" => event.event = Some(value.into()),
                        "data" => event.data.push_str(value),
                        _ => continue,
                    }
                    any = true;
                }
                if any {
                    return Some(event);
                }
                continue;
            }
            let frame = tokio::time::timeout(Duration::from_secs(20), self.body.frame())
                .await
                .expect("an event within 20 s")?
                .expect("body");
            if let Ok(data) = frame.into_data() {
                self.buffer
                    .push_str(std::str::from_utf8(&data).expect("UTF-8"));
            }
        }
    }

    /// Every event left, until the body ends.
    pub async fn rest(mut self) -> Vec<Sse> {
        let mut events = Vec::new();
        while let Some(e) = self.next().await {
            events.push(e);
        }
        events
    }
}
