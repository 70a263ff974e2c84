//! [`Conns`]: the remote client's keep-alive HTTP/1 connections to one server, over TCP or
//! TLS (the [`Stream`] of `client::tls`). A request
//! takes an idle connection (or opens one), and the task that sends it drives the connection
//! itself until the answer is read whole, then puts it back. No task runs per connection or
//! per request: hyper's pooled client hands each request to a connection task and back, which
//! cost a query about a quarter of its round trip on the 2-core VM (the bench's (c) over HTTP; see BENCHMARKS.md).
//! A call dropped half-way drops its connection with it, so a connection in the pool never
//! holds half an exchange.

use super::tls::{Refused, Stream, TlsConnect};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, Connection, SendRequest};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::Mutex;
use std::task::Poll;
use tokio::net::TcpStream;

/// Idle connections kept at most; more (after a burst of concurrent calls) are closed.
const MAX_IDLE: usize = 1024;

type Driver = Pin<Box<Connection<TokioIo<Stream>, Full<Bytes>>>>;

/// One connection: the handle requests go through, and the connection it drives (`None`
/// once it closed: such a connection is never reused).
struct Conn {
    send: SendRequest<Full<Bytes>>,
    driver: Option<Driver>,
}

/// The connections to one server (`host:port`).
pub(crate) struct Conns {
    authority: String,
    /// TLS for an `https://` server; `None` for plain HTTP.
    tls: Option<TlsConnect>,
    idle: Mutex<Vec<Conn>>,
}

/// Why an exchange failed.
#[derive(Debug)]
pub(crate) enum ExchangeError {
    /// No connection could be opened.
    Connect(String),
    /// The connection failed during the exchange (the request may have been applied).
    Io(String),
    /// TLS refused the connection (a certificate one side does not trust, a client
    /// certificate missing): trying again as is does not help.
    Tls(Refused),
}

impl std::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExchangeError::Connect(m) => write!(f, "could not connect: {m}"),
            ExchangeError::Io(m) => f.write_str(m),
            ExchangeError::Tls(Refused(m)) => f.write_str(m),
        }
    }
}

impl Conns {
    /// Connections to `authority` (`host:port`), over TLS with `tls`; none is opened yet.
    pub(crate) fn new(authority: String, tls: Option<TlsConnect>) -> Conns {
        Conns {
            authority,
            tls,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Sends `req` (origin-form URI; the `Host` header is set here) and reads the answer
    /// whole. A request that could not be written on a reused connection (the server had
    /// closed it) is sent again on a new one.
    pub(crate) async fn exchange(
        &self,
        mut req: Request<Full<Bytes>>,
    ) -> Result<(StatusCode, Bytes), ExchangeError> {
        self.set_host(&mut req);
        let mut conn = match self.take_idle().await {
            Some(conn) => conn,
            None => self.connect().await?,
        };
        let (status, body) = match exchange(&mut conn, req).await {
            Ok(answer) => answer,
            Err(Failed::NotSent(req, _)) => {
                conn = self.connect().await?;
                match exchange(&mut conn, *req).await {
                    Ok(answer) => answer,
                    Err(Failed::NotSent(_, e)) => {
                        return Err(ExchangeError::Io(format!(
                            "a new connection closed at once: {}",
                            self.explain(&e)
                        )))
                    }
                    Err(Failed::Io(e)) => return Err(self.io_error(e)),
                }
            }
            Err(Failed::Io(e)) => return Err(self.io_error(e)),
        };
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if conn.driver.is_some() && idle.len() < MAX_IDLE {
            idle.push(conn);
        }
        Ok((status, body))
    }

    /// Sets `req`'s `Host` header to the server's `host:port`.
    fn set_host(&self, req: &mut Request<Full<Bytes>>) {
        if let Ok(host) = hyper::header::HeaderValue::from_str(&self.authority) {
            req.headers_mut().insert(hyper::header::HOST, host);
        }
    }

    /// The most recently used idle connection that is still open and ready.
    async fn take_idle(&self) -> Option<Conn> {
        loop {
            let mut conn = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()?;
            // Driving the connection once reads a close the server sent while it was idle.
            let ready = conn.send.ready();
            if let Some(Ok(())) = drive(&mut conn.driver, ready).await {
                return Some(conn);
            }
        }
    }

    async fn connect(&self) -> Result<Conn, ExchangeError> {
        let tcp = TcpStream::connect(&self.authority)
            .await
            .map_err(|e| ExchangeError::Connect(e.to_string()))?;
        // Requests and answers are small and each is written at once: no Nagle delay.
        tcp.set_nodelay(true)
            .map_err(|e| ExchangeError::Connect(e.to_string()))?;
        let stream = match &self.tls {
            Some(tls) => tls.handshake(tcp).await.map_err(ExchangeError::Tls)?,
            None => Stream::Plain(tcp),
        };
        let (send, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ExchangeError::Connect(e.to_string()))?;
        Ok(Conn {
            send,
            driver: Some(Box::pin(conn)),
        })
    }
}

enum Failed {
    /// Not written: safe to send on another connection.
    NotSent(Box<Request<Full<Bytes>>>, hyper::Error),
    Io(Lost),
}

/// How an exchange was lost once its request may have been written.
enum Lost {
    Hyper(hyper::Error),
    Closed(&'static str),
}

impl Conns {
    /// A lost exchange as the caller's error: a TLS refusal in words, and a hint when a plain
    /// connection got no HTTP answer (the server may speak TLS).
    fn io_error(&self, lost: Lost) -> ExchangeError {
        match lost {
            Lost::Hyper(e) => match self.tls.as_ref().and_then(|t| t.refusal(&e)) {
                Some(refused) => ExchangeError::Tls(refused),
                None => ExchangeError::Io(self.explain(&e)),
            },
            Lost::Closed(what) => ExchangeError::Io(what.to_string()),
        }
    }

    fn explain(&self, e: &hyper::Error) -> String {
        if self.tls.is_none() && (e.is_parse() || e.is_incomplete_message()) {
            format!("{e}: the server sent no HTTP answer; if it serves HTTPS, use an https:// URL")
        } else {
            e.to_string()
        }
    }
}

/// One request and its whole answer on `conn`, driving the connection meanwhile.
async fn exchange(
    conn: &mut Conn,
    req: Request<Full<Bytes>>,
) -> Result<(StatusCode, Bytes), Failed> {
    let sent = conn.send.try_send_request(req);
    let res = match drive(&mut conn.driver, sent).await {
        Some(Ok(res)) => res,
        Some(Err(mut e)) => {
            return Err(match e.take_message() {
                Some(req) => Failed::NotSent(Box::new(req), e.into_error()),
                None => Failed::Io(Lost::Hyper(e.into_error())),
            })
        }
        None => return Err(Failed::Io(Lost::Closed("the connection closed"))),
    };
    let status = res.status();
    match drive(&mut conn.driver, res.into_body().collect()).await {
        Some(Ok(body)) => Ok((status, body.to_bytes())),
        Some(Err(e)) => Err(Failed::Io(Lost::Hyper(e))),
        None => Err(Failed::Io(Lost::Closed(
            "the connection closed in the answer",
        ))),
    }
}

/// Polls `f` to completion while driving the connection; `None` if the connection ended
/// and `f` still waits. A connection that ends is dropped at once: that hands the requests
/// it had not taken yet back to their senders, as not sent.
async fn drive<F: Future>(driver: &mut Option<Driver>, f: F) -> Option<F::Output> {
    let mut f = pin!(f);
    poll_fn(|cx| {
        // The connection first: what it reads completes `f` in the same poll.
        if driver
            .as_mut()
            .is_some_and(|d| d.as_mut().poll(cx).is_ready())
        {
            *driver = None;
        }
        match f.as_mut().poll(cx) {
            Poll::Ready(out) => Poll::Ready(Some(out)),
            Poll::Pending if driver.is_none() => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// An answer whose body is read as it comes (an event stream), on a connection of its own
/// that is dropped with it (never put back in the pool).
pub(crate) struct Streaming {
    conn: Conn,
    headers: hyper::HeaderMap,
    body: hyper::body::Incoming,
}

impl Streaming {
    /// The answer's header `name`, when it is there and text.
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        let value = self.headers.get(name)?.to_str().ok()?;
        Some(value.to_string())
    }
}

impl Conns {
    /// Sends `req` on a new connection and returns the answer's status with its body unread.
    pub(crate) async fn open(
        &self,
        mut req: Request<Full<Bytes>>,
    ) -> Result<(StatusCode, Streaming), ExchangeError> {
        self.set_host(&mut req);
        let mut conn = self.connect().await?;
        let sent = conn.send.try_send_request(req);
        let res = match drive(&mut conn.driver, sent).await {
            Some(Ok(res)) => res,
            Some(Err(e)) => return Err(self.io_error(Lost::Hyper(e.into_error()))),
            None => return Err(self.io_error(Lost::Closed("the connection closed"))),
        };
        let (head, body) = res.into_parts();
        let streaming = Streaming {
            conn,
            headers: head.headers,
            body,
        };
        Ok((head.status, streaming))
    }

    /// The next piece of `streaming`'s body; `None` at its end.
    pub(crate) async fn chunk(
        &self,
        streaming: &mut Streaming,
    ) -> Result<Option<Bytes>, ExchangeError> {
        loop {
            let frame = match drive(&mut streaming.conn.driver, streaming.body.frame()).await {
                Some(frame) => frame,
                None => {
                    return Err(self.io_error(Lost::Closed("the connection closed in the answer")))
                }
            };
            match frame {
                None => return Ok(None),
                Some(Err(e)) => return Err(self.io_error(Lost::Hyper(e))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }
}
