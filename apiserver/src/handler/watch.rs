//! Watch: a chunked stream of events, with initial events or a resume point, bookmarks,
//! the request's timeout and an optional delivery delay (a fault hook), all in simulated
//! time. A too-old resourceVersion is answered in the stream with 410, as the real server
//! does.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::StreamBody;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Frame;
use serde_json::json;

use super::matcher::matcher;
use super::request::ResourceRequest;
use super::response::{Body, bytes_response, watch_line};
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceType;
use crate::store::{Store, WatchMsg, WatchStart, WatchStream};
use crate::table::table;
use crate::{ApiFaults, ApiServer};

impl ApiServer {
    /// GET of a collection with `watch=true`: starts the stream and a task that feeds it.
    pub(super) fn serve_watch(&self, req: &ResourceRequest<'_>) -> ApiResult<Response<Body>> {
        let (rt, q) = (&req.rt, &req.query);
        let matcher = matcher(rt, q)?;
        let start = match (q.send_initial_events, q.resource_version.as_deref()) {
            (true, _) | (false, None | Some("0")) => WatchStart::Current,
            (false, Some(rv)) => WatchStart::After(
                rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?,
            ),
        };
        let stream = {
            let mut s = self.store.lock().unwrap_or_else(|e| e.into_inner());
            match s.watch(rt, req.scope(), matcher, start) {
                Ok(w) => w,
                // A too-old resourceVersion is reported in the stream, as the real server does.
                Err(e) if e.code == 410 => {
                    let line = watch_line("ERROR", &e.to_status());
                    return Ok(bytes_response(StatusCode::OK, "application/json", Bytes::from(line)));
                }
                Err(e) => return Err(e),
            }
        };
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Frame<Bytes>, Infallible>>();
        let task = WatchTask {
            store: self.store.clone(),
            rt: req.rt.clone(),
            timeout: Duration::from_secs(q.timeout_seconds.unwrap_or(1800).min(3600)),
            bookmarks: q.allow_bookmarks,
            initial_end_bookmark: q.send_initial_events,
            delay: self.config.watch_delay,
            faults: self.faults.clone(),
            bookmark_interval: self.config.bookmark_interval,
            table: req.table,
        };
        tokio::spawn(task.run(stream, tx));
        let body = StreamBody::new(rx);
        let mut resp = Response::new(UnsyncBoxBody::new(body));
        resp.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        resp.headers_mut().insert(header::TRANSFER_ENCODING, http::HeaderValue::from_static("chunked"));
        Ok(resp)
    }
}

/// Feeds one watch connection: initial events, then live ones, with bookmarks, an
/// optional delivery delay (a fault hook) and the request's timeout, all in simulated
/// time.
struct WatchTask {
    store: Arc<Mutex<Store>>,
    rt: Arc<ResourceType>,
    timeout: Duration,
    bookmarks: bool,
    initial_end_bookmark: bool,
    delay: Duration,
    faults: Arc<Mutex<ApiFaults>>,
    bookmark_interval: Duration,
    table: bool,
}

/// The sending half of a watch response body.
type FrameTx = futures::channel::mpsc::UnboundedSender<Result<Frame<Bytes>, Infallible>>;

impl WatchTask {
    /// Runs until the client goes away, the watch expires or the timeout passes.
    async fn run(self, mut stream: WatchStream, tx: FrameTx) {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut last_rv = stream.rv;
        if !self.send_initial(&mut stream, &tx, &mut last_rv) {
            return;
        }
        let mut next_bookmark = tokio::time::Instant::now() + self.bookmark_interval;
        loop {
            let wake = deadline.min(next_bookmark);
            tokio::select! {
                biased;
                msg = stream.rx.recv() => {
                    let Some(msg) = msg else { return };
                    let delay = self.delay.max(self.faults.lock().unwrap_or_else(|e| e.into_inner()).watch_delay);
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    let expired = matches!(msg, WatchMsg::Expired(_));
                    if !self.send(&tx, msg, &mut last_rv) || expired {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(wake) => {
                    if tokio::time::Instant::now() >= deadline {
                        return;
                    }
                    if self.bookmarks && !self.send_bookmark(&stream, &tx, last_rv) {
                        return;
                    }
                    next_bookmark = tokio::time::Instant::now() + self.bookmark_interval;
                }
            }
        }
    }

    /// Sends the initial or replayed events and, when asked, the bookmark that ends them.
    /// False when the client has gone.
    fn send_initial(&self, stream: &mut WatchStream, tx: &FrameTx, last_rv: &mut u64) -> bool {
        for msg in std::mem::take(&mut stream.initial) {
            if !self.send(tx, msg, last_rv) {
                return false;
            }
        }
        if self.initial_end_bookmark {
            let bm = self.bookmark(stream.rv, true);
            if tx.unbounded_send(Ok(Frame::data(Bytes::from(bm)))).is_err() {
                return false;
            }
        }
        true
    }

    /// Sends a periodic bookmark. Everything up to the store's version has been delivered
    /// once the channel is empty, so the bookmark may name it. False when the client has
    /// gone.
    fn send_bookmark(&self, stream: &WatchStream, tx: &FrameTx, last_rv: u64) -> bool {
        let rv = {
            let s = self.store.lock().unwrap_or_else(|e| e.into_inner());
            if stream.rx.is_empty() { s.resource_version() } else { last_rv }
        };
        tx.unbounded_send(Ok(Frame::data(Bytes::from(self.bookmark(rv, false))))).is_ok()
    }

    /// Sends one event (or the 410 that ends an expired watch). False when the client has
    /// gone.
    fn send(&self, tx: &FrameTx, msg: WatchMsg, last_rv: &mut u64) -> bool {
        let line = match msg {
            WatchMsg::Event(kind, obj, rv) => {
                *last_rv = rv;
                if self.table {
                    let now = self.store.lock().unwrap_or_else(|e| e.into_inner()).elapsed();
                    watch_line(kind.as_str(), &table(&self.rt, &[obj], now))
                } else {
                    let mut line = Vec::with_capacity(512);
                    line.extend_from_slice(format!("{{\"type\":\"{}\",\"object\":", kind.as_str()).as_bytes());
                    let _ = serde_json::to_writer(&mut line, obj.as_ref());
                    line.extend_from_slice(b"}\n");
                    line
                }
            }
            WatchMsg::Expired(m) => watch_line("ERROR", &ApiError::gone(m).to_status()),
        };
        tx.unbounded_send(Ok(Frame::data(Bytes::from(line)))).is_ok()
    }

    /// A BOOKMARK event naming `rv`; `initial_end` marks the end of the initial events.
    fn bookmark(&self, rv: u64, initial_end: bool) -> Vec<u8> {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        watch_line("BOOKMARK", &json!({"apiVersion": self.rt.api_version(), "kind": self.rt.kind, "metadata": meta}))
    }
}
