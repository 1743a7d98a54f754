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
}

impl ApiFaults {
    /// No faults; `rng` is used once rates are raised.
    pub fn none(rng: SimRng) -> Self {
        Self {
            throttle_rate: 0.0,
            error_rate: 0.0,
            conflict_rate: 0.0,
            watch_delay: std::time::Duration::ZERO,
            rng,
            injected: FaultCounts::default(),
        }
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
