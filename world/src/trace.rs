//! The run's trace: every API mutation and every fault, in order, with simulated time.
//!
//! Two runs of the same scenario and seed must produce byte-identical traces; the trace's
//! hash is the run's fingerprint, and a violation report points at a trace position.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// One line of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// Simulated time since the epoch.
    pub at: Duration,
    /// Who recorded it: `apiserver`, `fault`, `aws`, ...
    pub source: &'static str,
    /// What happened, e.g. `create` or `partition`.
    pub verb: String,
    /// What it happened to, e.g. `pods default/web-1 rv=12`.
    pub subject: String,
}

impl TraceEntry {
    /// The entry as one stable text line.
    pub fn line(&self) -> String {
        format!(
            "{:>10}.{:03} {:<9} {:<12} {}",
            self.at.as_secs(),
            self.at.subsec_millis(),
            self.source,
            self.verb,
            self.subject
        )
    }
}

/// A shared, append-only trace. Cloning shares the same trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    inner: Arc<Mutex<TraceInner>>,
}

#[derive(Debug, Default)]
struct TraceInner {
    entries: Vec<TraceEntry>,
    hasher: Sha256,
    /// Keep only the hash, not the entries (long sweeps).
    hash_only: bool,
    len: u64,
}

impl Trace {
    /// A trace that keeps every entry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A trace that only hashes entries: for long runs where memory matters.
    pub fn hash_only() -> Self {
        let t = Self::default();
        t.lock().hash_only = true;
        t
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TraceInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends an entry and returns its position.
    pub fn record(&self, entry: TraceEntry) -> u64 {
        let mut inner = self.lock();
        let line = entry.line();
        inner.hasher.update(line.as_bytes());
        inner.hasher.update(b"\n");
        if !inner.hash_only {
            inner.entries.push(entry);
        }
        inner.len += 1;
        inner.len - 1
    }

    /// Number of entries recorded so far (the next position).
    pub fn len(&self) -> u64 {
        self.lock().len
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the entries kept so far.
    pub fn entries(&self) -> Vec<TraceEntry> {
        self.lock().entries.clone()
    }

    /// The whole trace as text, one line per entry.
    pub fn render(&self) -> String {
        let inner = self.lock();
        let mut out = String::new();
        for e in &inner.entries {
            let _ = writeln!(out, "{}", e.line());
        }
        out
    }

    /// The run's fingerprint: SHA-256 over every line so far, in hex.
    pub fn fingerprint(&self) -> String {
        hex::encode(self.lock().hasher.clone().finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_covers_order_and_content() {
        let e = |s: &str| TraceEntry {
            at: Duration::from_millis(1500),
            source: "apiserver",
            verb: "create".into(),
            subject: s.into(),
        };
        let a = Trace::new();
        a.record(e("x"));
        a.record(e("y"));
        let b = Trace::hash_only();
        b.record(e("x"));
        b.record(e("y"));
        let c = Trace::new();
        c.record(e("y"));
        c.record(e("x"));
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_ne!(a.fingerprint(), c.fingerprint());
        assert_eq!(a.len(), 2);
        assert!(a.render().starts_with("         1.500 apiserver create"));
    }
}
