//! API server faults: 429/5xx/409 rates, slow watches and forced 410 relists.

use std::time::Duration;

use crate::apiserver::ApiServer;
use crate::scenario::drawn_fault::DrawnFault;

/// Sets the server's error rates and watch delay to the strongest active fault's (zero
/// when none is active).
pub fn apply(server: &ApiServer, active: &[&DrawnFault]) {
    let (mut throttle, mut error, mut conflict, mut delay) = (0.0f64, 0.0f64, 0.0f64, Duration::ZERO);
    for f in active {
        match f {
            DrawnFault::ApiServerErrors { throttle_rate, error_rate, conflict_rate } => {
                throttle = throttle.max(*throttle_rate);
                error = error.max(*error_rate);
                conflict = conflict.max(*conflict_rate);
            }
            DrawnFault::WatchDelay { delay: d } => delay = delay.max(d.0),
            _ => {}
        }
    }
    let mut faults = server.faults.lock().unwrap_or_else(|e| e.into_inner());
    faults.throttle_rate = throttle;
    faults.error_rate = error;
    faults.conflict_rate = conflict;
    faults.watch_delay = delay;
}

/// Compacts history and ends every watch with 410 Gone: every client relists.
pub fn expire_watches(server: &ApiServer) {
    server.store.lock().unwrap_or_else(|e| e.into_inner()).expire_watches();
}
