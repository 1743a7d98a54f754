//! Identical CreateFleet requests merged into one call (aws:pkg/batcher/createfleet.go):
//! requests with the same parameters that arrive within a 35 ms idle window (1 s at most, up
//! to 1,000 of them) become one fleet with `TotalTargetCapacity = N`, and the instances are
//! handed out one per caller. Callers left without an instance get the fleet's errors, or "too
//! few instances returned". A scale-up of 200 identical NodeClaims costs one EC2 call, not 200.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::instances::{self, FleetRequest, FleetResult};

/// Quiet time after the last identical request before the batch is sent.
pub const BATCH_IDLE: Duration = Duration::from_millis(35);
/// Longest a request waits for others.
pub const BATCH_MAX: Duration = Duration::from_secs(1);
/// Largest batch.
pub const BATCH_MAX_ITEMS: usize = 1000;

type Reply = oneshot::Sender<Result<FleetResult, CloudError>>;

struct Batch {
    request: FleetRequest,
    waiters: Vec<Reply>,
    last: Instant,
}

/// Batches CreateFleet calls; cheap to clone.
#[derive(Clone)]
pub struct FleetBatcher {
    ec2: aws_sdk_ec2::Client,
    open: Arc<Mutex<BTreeMap<String, Batch>>>,
}

impl std::fmt::Debug for FleetBatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetBatcher").finish_non_exhaustive()
    }
}

/// Hands out `output`'s instances one per waiter, in arrival order.
pub fn distribute(output: &instances::FleetOutput, waiters: usize) -> Vec<FleetResult> {
    (0..waiters)
        .map(|i| {
            let instance = output.instances.get(i).cloned();
            let mut errors = output.errors.clone();
            if instance.is_none() && errors.is_empty() {
                errors.push((
                    "FleetLaunchFailed".to_owned(),
                    format!("too few instances returned: {} for {waiters} requests", output.instances.len()),
                ));
            }
            FleetResult {
                instance,
                unavailable: output.unavailable.clone(),
                errors,
                iced_subnets: output.iced_subnets.clone(),
            }
        })
        .collect()
}

impl FleetBatcher {
    /// A batcher over `ec2`.
    pub fn new(ec2: aws_sdk_ec2::Client) -> Self {
        Self { ec2, open: Arc::default() }
    }

    /// Launches one instance for `request`, possibly together with identical requests.
    ///
    /// # Errors
    /// The request-level EC2 error of the merged call.
    pub async fn create(&self, request: FleetRequest) -> Result<FleetResult, CloudError> {
        let key = format!("{request:?}");
        let (reply, answer) = oneshot::channel();
        {
            let mut open = self.open.lock().expect("fleet batches");
            match open.get_mut(&key) {
                Some(batch) if batch.waiters.len() < BATCH_MAX_ITEMS => {
                    batch.waiters.push(reply);
                    batch.last = Instant::now();
                }
                full => {
                    // A full batch is sent as it is; this request opens the next one under a
                    // fresh key so the two never mix.
                    let key = if full.is_some() { format!("{key}#{}", open.len()) } else { key };
                    open.insert(key.clone(), Batch { request, waiters: vec![reply], last: Instant::now() });
                    tokio::spawn(self.clone().send_when_quiet(key));
                }
            }
        }
        answer.await.unwrap_or_else(|_| Err(CloudError::other("FleetLaunchFailed", "fleet batch dropped")))
    }

    async fn send_when_quiet(self, key: String) {
        let opened = Instant::now();
        loop {
            let deadline = {
                let open = self.open.lock().expect("fleet batches");
                let Some(batch) = open.get(&key) else { return };
                (batch.last + BATCH_IDLE).min(opened + BATCH_MAX)
            };
            if Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep_until(deadline).await;
        }
        let Some(batch) = self.open.lock().expect("fleet batches").remove(&key) else { return };
        let count = batch.waiters.len();
        if count > 1 {
            tracing::debug!(count, "merged identical CreateFleet requests");
        }
        match instances::create_fleet(&self.ec2, &batch.request, count).await {
            Ok(output) => {
                for (waiter, result) in batch.waiters.into_iter().zip(distribute(&output, count)) {
                    let _ = waiter.send(Ok(result));
                }
            }
            Err(error) => {
                for waiter in batch.waiters {
                    let _ = waiter.send(Err(error.clone()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloudprovider::aws::instances::FleetOutput;

    #[test]
    fn instances_go_one_per_caller_and_the_rest_get_the_errors() {
        let output = FleetOutput {
            instances: vec![("i-1".into(), "m5.large".into(), "us-east-1a".into(), "ami-1".into())],
            unavailable: Vec::new(),
            errors: vec![("InsufficientInstanceCapacity".into(), "no more".into())],
            iced_subnets: Vec::new(),
        };
        let results = distribute(&output, 2);
        assert_eq!(results[0].instance.as_ref().map(|i| i.0.as_str()), Some("i-1"));
        assert!(results[1].instance.is_none());
        assert!(matches!(results[1].failure(), CloudError::InsufficientCapacity(_)));
    }

    #[test]
    fn a_short_fleet_without_errors_says_too_few_instances() {
        let results = distribute(&FleetOutput::default(), 1);
        assert!(results[0].errors[0].1.contains("too few instances"), "{:?}", results[0]);
    }
}
