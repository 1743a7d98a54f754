//! API server faults: 429/5xx/409 rates, slow watches, slow lists, short list pages with
//! expiring continue tokens, and forced 410 relists.

use std::time::Duration;

use crate::apiserver::ApiServer;
use crate::scenario::drawn_fault::DrawnFault;

/// Sets the server's error rates and watch delay to the strongest active fault's (zero
/// when none is active).
pub fn apply(server: &ApiServer, active: &[&DrawnFault]) {
    let (mut throttle, mut error, mut conflict, mut delay) = (0.0f64, 0.0f64, 0.0f64, Duration::ZERO);
    let (mut page_size, mut expiry): (Option<usize>, f64) = (None, 0.0);
    let mut list_delay = Duration::ZERO;
    for f in active {
        match f {
            DrawnFault::ApiServerErrors { throttle_rate, error_rate, conflict_rate } => {
                throttle = throttle.max(*throttle_rate);
                error = error.max(*error_rate);
                conflict = conflict.max(*conflict_rate);
            }
            DrawnFault::WatchDelay { delay: d } => delay = delay.max(d.0),
            DrawnFault::SlowLists { delay: d } => list_delay = list_delay.max(d.0),
            DrawnFault::ListPaging { page_size: p, expiry_rate } => {
                let p = *p as usize;
                page_size = Some(page_size.map_or(p, |q| q.min(p)));
                expiry = expiry.max(*expiry_rate);
            }
            _ => {}
        }
    }
    let mut faults = server.faults.lock().unwrap_or_else(|e| e.into_inner());
    faults.throttle_rate = throttle;
    faults.error_rate = error;
    faults.conflict_rate = conflict;
    faults.watch_delay = delay;
    faults.list_page_size = page_size;
    faults.continue_expiry_rate = expiry;
    faults.list_delay = list_delay;
}

/// Compacts history and ends every watch with 410 Gone: every client relists.
pub fn expire_watches(server: &ApiServer) {
    server.store.lock().unwrap_or_else(|e| e.into_inner()).expire_watches();
}
