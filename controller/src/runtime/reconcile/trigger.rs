//! A reconciler's own wake-up, for work it started outside a reconcile.

use std::sync::Arc;

use tokio::sync::Notify;

/// Wakes one reconciler's driver as a watched change would. A reconciler that spawns work of
/// its own (a launch that backs off) keeps a clone and fires it when that work ends, so the
/// outcome is looked at without waking every other controller.
///
/// A fire while the reconciler is busy is kept (one permit), like a state change.
#[derive(Clone, Debug, Default)]
pub struct Trigger(Arc<Notify>);

impl Trigger {
    /// A trigger nobody has fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for a reconcile.
    pub fn fire(&self) {
        self.0.notify_one();
    }

    /// Returns once fired (at once when fired since the last return).
    pub async fn fired(&self) {
        self.0.notified().await;
    }
}
