//! Seeded retry jitter for the simulator's AWS SDK clients, independent of logging.
//!
//! The SDK's standard retry strategy draws each back-off's jitter from the thread-local
//! `fastrand` generator (aws-smithy-runtime `client/retries/strategy/standard.rs`,
//! `fastrand::f64()` in `should_attempt_retry`). Every SDK operation also draws a
//! `sdk_invocation_id` from that generator, but inside a `debug_span!` field (aws-sdk-ec2
//! `operation/*.rs`), which is evaluated only when the span is enabled or no tracing
//! subscriber is installed. So the jitter a retry got, and everything after it, depended on
//! the log filter: apiserver-brownout seed 1 made 5 launches under `RUST_LOG=info` and 8
//! under `RUST_LOG=debug` or with no subscriber.
//!
//! [`SeededRetryJitter`] reseeds the thread-local generator from the client's own seeded
//! sequence right before the retry strategy draws: `read_after_attempt` is the last hook
//! before `should_attempt_retry`, in the same poll (aws-smithy-runtime
//! `client/orchestrator.rs`: `finally_attempt` has no await point), so no other task can
//! draw in between. The jitter then depends on the client's seed and its own retry count
//! only: the same seed and scenario give the same run whatever is logged.

use std::sync::Mutex;

use aws_sdk_ec2::config::interceptors::FinalizerInterceptorContextRef;
use aws_sdk_ec2::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_ec2::error::BoxError;

/// An interceptor that reseeds the thread-local `fastrand` from its own sequence after
/// every attempt (see the module doc).
#[derive(Debug)]
pub struct SeededRetryJitter {
    sequence: Mutex<fastrand::Rng>,
}

impl SeededRetryJitter {
    /// A sequence starting at `seed`.
    pub fn new(seed: u64) -> Self {
        Self { sequence: Mutex::new(fastrand::Rng::with_seed(seed)) }
    }

    /// The next seed of the sequence.
    fn next_seed(&self) -> u64 {
        self.sequence.lock().unwrap_or_else(std::sync::PoisonError::into_inner).u64(..)
    }
}

impl Intercept for SeededRetryJitter {
    fn name(&self) -> &'static str {
        "SeededRetryJitter"
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
        let a = SeededRetryJitter::new(7);
        let b = SeededRetryJitter::new(7);
        let c = SeededRetryJitter::new(8);
        let first: Vec<u64> = (0..4).map(|_| a.next_seed()).collect();
        assert_eq!(first, (0..4).map(|_| b.next_seed()).collect::<Vec<_>>());
        assert_ne!(first, (0..4).map(|_| c.next_seed()).collect::<Vec<_>>());
    }
}
