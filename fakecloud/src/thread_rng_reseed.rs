//! The thread-local `fastrand` generator, made independent of logging for the simulator's
//! AWS SDK clients.
//!
//! Every SDK operation draws a `sdk_invocation_id` from the thread-local `fastrand` inside a
//! `debug_span!` field (aws-sdk-ec2 `operation/*.rs` `orchestrate_with_stop_point`), which
//! tracing evaluates only when that span is enabled or no subscriber is installed. So how far
//! the generator had advanced depended on the log filter, and so did everything that reads it
//! afterwards: the SDK's retry jitter (aws-smithy-runtime `retries/strategy/standard.rs`,
//! `fastrand::f64()`), the identity cache's expiry jitter (`identity/cache/lazy.rs`), and the
//! generators libraries fork from it (`fastrand::Rng::new()`: idempotency tokens, invocation
//! ids, backon back-offs). apiserver-brownout seed 1 made 5 launches under `RUST_LOG=info`
//! and 8 under `RUST_LOG=debug`; crash-mid-drain seed 1 made one more CreateFleet under
//! `aws_sdk_ec2=debug` than under the default filter even with the retry jitter reseeded.
//!
//! [`ThreadRngReseed`] reseeds the thread-local generator from the client's own seeded
//! sequence at two points:
//! - `read_before_execution`, at the start of every operation: the span's draw happens in
//!   `orchestrate_with_stop_point` right before `invoke_with_stop_point` runs its
//!   interceptors' `read_before_execution` in `apply_configuration`, in the same poll, with no
//!   await point between (aws-smithy-runtime `client/orchestrator.rs`), so no other task can
//!   see the generator between the filter-dependent draw and the reseed;
//! - `read_after_attempt`, the last hook before `should_attempt_retry` in the same poll
//!   (`finally_attempt` has no await point), so the retry jitter depends on the client's seed
//!   and its own attempt count only.
//!
//! Every other draw from the generator happens at the same place in every run, so its state,
//! and whatever reads it, is the same whatever is logged. `tests/logging_independence.rs`
//! proves it on the retry-heavy scenarios and on crash-mid-drain.

use std::sync::Mutex;

use aws_sdk_ec2::config::interceptors::{BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef};
use aws_sdk_ec2::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_ec2::error::BoxError;

/// An interceptor that reseeds the thread-local `fastrand` from its own sequence at the
/// start of every operation and after every attempt (see the module doc).
#[derive(Debug)]
pub struct ThreadRngReseed {
    sequence: Mutex<fastrand::Rng>,
}

impl ThreadRngReseed {
    /// A sequence starting at `seed`.
    pub fn new(seed: u64) -> Self {
        Self { sequence: Mutex::new(fastrand::Rng::with_seed(seed)) }
    }

    /// The next seed of the sequence.
    fn next_seed(&self) -> u64 {
        self.sequence.lock().unwrap_or_else(std::sync::PoisonError::into_inner).u64(..)
    }
}

impl Intercept for ThreadRngReseed {
    fn name(&self) -> &'static str {
        "ThreadRngReseed"
    }

    fn read_before_execution(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        fastrand::seed(self.next_seed());
        Ok(())
    }

    fn read_after_attempt(
        &self,
        _context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        fastrand::seed(self.next_seed());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_depends_on_the_seed_only() {
        let a = ThreadRngReseed::new(7);
        let b = ThreadRngReseed::new(7);
        let c = ThreadRngReseed::new(8);
        let first: Vec<u64> = (0..4).map(|_| a.next_seed()).collect();
        assert_eq!(first, (0..4).map(|_| b.next_seed()).collect::<Vec<_>>());
        assert_ne!(first, (0..4).map(|_| c.next_seed()).collect::<Vec<_>>());
    }
}
