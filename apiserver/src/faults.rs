//! Injected API errors: what a loaded or flaky kube-apiserver does to its clients.
//!
//! Rates are probabilities per request, drawn from the server's own seeded stream, so a
//! seed replays the same failures. Reads and writes can fail with 429 (priority and
//! fairness throttling) or 5xx; writes can also lose optimistic-concurrency races (409).

use http::Method;
use rand::Rng;

use super::error::{ApiError, ApiResult};
use super::resources::ResourceType;
use dovetail_world::rng::SimRng;

/// Per-request fault probabilities.
#[derive(Clone, Debug)]
pub struct ApiFaults {
    /// P(429 TooManyRequests) per request.
    pub throttle_rate: f64,
    /// P(500/503) per request.
    pub error_rate: f64,
    /// P(409 Conflict) per write.
    pub conflict_rate: f64,
    /// Extra delay before each watch event is delivered (slow watches), on top of the
    /// server's configured delay. Read per event, so it can change while watches run.
    pub watch_delay: std::time::Duration,
    /// Paged lists come back in pages of at most this many items, whatever `limit` the
    /// client asked for (an etcd-backed list with a selector returns short pages), so
    /// clients must follow continue tokens. Lists without `limit` stay whole, as the
    /// watch cache serves them.
    pub list_page_size: Option<usize>,
    /// P(a continue token is refused with 410 Gone "too old") per continued list: etcd
    /// compacted between two pages, and the client must start the list again.
    pub continue_expiry_rate: f64,
    /// How late every list is answered (an API server whose etcd is loaded, or a list
    /// too big for the watch cache): the items are read when the request arrives and the
    /// answer leaves this much later, so the client acts on a list already stale by the
    /// time it has it. Watches and gets are not slowed.
    pub list_delay: std::time::Duration,
    rng: SimRng,
    /// How many faults were injected, by kind.
    pub injected: FaultCounts,
}

/// Counters of injected faults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// 429s.
    pub throttled: u64,
    /// 5xx.
    pub errors: u64,
    /// 409s.
    pub conflicts: u64,
    /// List pages cut short by [`ApiFaults::list_page_size`].
    pub short_pages: u64,
    /// Continue tokens refused with 410.
    pub expired_continues: u64,
    /// Lists answered late by [`ApiFaults::list_delay`].
    pub slow_lists: u64,
}

impl ApiFaults {
    /// No faults; `rng` is used once rates are raised.
    pub fn none(rng: SimRng) -> Self {
        Self {
            throttle_rate: 0.0,
            error_rate: 0.0,
            conflict_rate: 0.0,
            watch_delay: std::time::Duration::ZERO,
            list_page_size: None,
            continue_expiry_rate: 0.0,
            list_delay: std::time::Duration::ZERO,
            rng,
            injected: FaultCounts::default(),
        }
    }

    /// The page size to serve a list with (the client's `limit`, or less while lists are
    /// cut short), or 410 Gone when a continued list's token is declared too old.
    pub fn list_page(&mut self, limit: Option<usize>, continuing: bool) -> ApiResult<Option<usize>> {
        if continuing
            && self.continue_expiry_rate > 0.0
            && self.rng.random_bool(self.continue_expiry_rate.clamp(0.0, 1.0))
        {
            self.injected.expired_continues += 1;
            return Err(ApiError::gone(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
            ));
        }
        match (limit, self.list_page_size) {
            (Some(l), Some(cap)) if cap.max(1) < l => {
                self.injected.short_pages += 1;
                Ok(Some(cap.max(1)))
            }
            (l, _) => Ok(l),
        }
    }

    /// How late to answer a list now (`None`: on time), counting it as injected.
    pub fn slow_list(&mut self) -> Option<std::time::Duration> {
        if self.list_delay.is_zero() {
            return None;
        }
        self.injected.slow_lists += 1;
        Some(self.list_delay)
    }

    /// Decides whether this request fails.
    pub fn check(&mut self, method: &Method, rt: &ResourceType) -> ApiResult<()> {
        if self.throttle_rate <= 0.0 && self.error_rate <= 0.0 && self.conflict_rate <= 0.0 {
            return Ok(());
        }
        if self.rng.random_bool(self.throttle_rate.clamp(0.0, 1.0)) {
            self.injected.throttled += 1;
            let mut e = ApiError::too_many_requests(
                "the server has received too many requests and has asked us to try again later",
                serde_json::json!([]),
            );
            e.details = Some(serde_json::json!({"retryAfterSeconds": 1}));
            return Err(e);
        }
        if self.rng.random_bool(self.error_rate.clamp(0.0, 1.0)) {
            self.injected.errors += 1;
            return Err(ApiError::unavailable("the server is currently unable to handle the request"));
        }
        let write = matches!(*method, Method::PUT | Method::PATCH);
        if write && self.rng.random_bool(self.conflict_rate.clamp(0.0, 1.0)) {
            self.injected.conflicts += 1;
            return Err(ApiError::conflict(
                &rt.plural,
                &rt.group,
                "",
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paged_lists_are_cut_short_and_continues_expire() {
        let mut f = ApiFaults::none(dovetail_world::rng::derive_rng(1, "test"));
        assert_eq!(f.list_page(Some(500), false).ok(), Some(Some(500)));
        f.list_page_size = Some(2);
        assert_eq!(f.list_page(Some(500), false).ok(), Some(Some(2)));
        assert_eq!(f.list_page(None, false).ok(), Some(None), "an unpaged list stays whole");
        assert_eq!(f.list_page(Some(1), false).ok(), Some(Some(1)));
        f.continue_expiry_rate = 1.0;
        assert_eq!(f.list_page(Some(500), true).map_err(|e| e.code).err(), Some(410));
        assert_eq!(f.list_page(Some(500), false).ok(), Some(Some(2)), "a fresh list is never refused");
        assert_eq!((f.injected.short_pages, f.injected.expired_continues), (2, 1));
    }
}
