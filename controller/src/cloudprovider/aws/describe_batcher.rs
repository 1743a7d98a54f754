//! Concurrent describe-by-id calls merged into one `DescribeInstances`
//! (aws:pkg/batcher/describeinstances.go): single-instance requests that arrive within a 100 ms
//! idle window (1 s at most, up to 500 of them) become one call naming every instance. An
//! instance the merged call did not return (EC2 fails a whole call with
//! `InvalidInstanceID.NotFound` when one id is unknown or not yet visible, and any other error
//! leaves every id unanswered) is described on its own, as upstream does after the merged call
//! (`execDescribeInstancesBatch`, "describe them individually"). A batch of one instance is
//! answered by its one call. Each caller gets its instance, `None` when EC2 says it does not
//! exist (or it is terminated), or the error of its own call.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_ec2::types::Instance;
use futures::future::BoxFuture;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::instances;

/// Quiet time after the last request before the batch is sent (upstream `IdleTimeout`).
pub const BATCH_IDLE: Duration = Duration::from_millis(100);
/// Longest a request waits for others (upstream `MaxTimeout`).
pub const BATCH_MAX: Duration = Duration::from_secs(1);
/// Largest batch (upstream `MaxItems`).
pub const BATCH_MAX_ITEMS: usize = 500;

type Answer = Result<Option<Instance>, CloudError>;
type Reply = oneshot::Sender<Answer>;
/// Describes the given instance ids in one call (`instances::describe` against EC2).
pub type Describe = Arc<dyn Fn(Vec<String>) -> BoxFuture<'static, Result<Vec<Instance>, CloudError>> + Send + Sync>;

struct Batch {
    generation: u64,
    waiters: Vec<(String, Reply)>,
    opened: Instant,
    last: Instant,
}

#[derive(Default)]
struct Open {
    batch: Option<Batch>,
    generation: u64,
}

/// Batches single-instance DescribeInstances calls; cheap to clone.
#[derive(Clone)]
pub struct DescribeBatcher {
    describe: Describe,
    open: Arc<Mutex<Open>>,
}

impl std::fmt::Debug for DescribeBatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DescribeBatcher").finish_non_exhaustive()
    }
}

impl DescribeBatcher {
    /// A batcher over `ec2`.
    pub fn new(ec2: aws_sdk_ec2::Client) -> Self {
        Self::with(Arc::new(move |ids: Vec<String>| {
            let ec2 = ec2.clone();
            Box::pin(async move { instances::describe(&ec2, &ids).await })
        }))
    }

    /// A batcher over any describe function (tests).
    pub fn with(describe: Describe) -> Self {
        Self { describe, open: Arc::default() }
    }

    /// The live instance `id`, `None` when EC2 does not know it (or it is terminated).
    ///
    /// # Errors
    /// The EC2 error of the call that described `id`.
    pub async fn get(&self, id: &str) -> Answer {
        let (reply, answer) = oneshot::channel();
        let now = Instant::now();
        let full = {
            let mut open = self.open.lock().expect("describe batches");
            if open.batch.is_none() {
                open.generation += 1;
                let generation = open.generation;
                open.batch = Some(Batch { generation, waiters: Vec::new(), opened: now, last: now });
                tokio::spawn(self.clone().send_when_quiet(generation));
            }
            let batch = open.batch.as_mut().expect("batch just opened");
            batch.waiters.push((id.to_owned(), reply));
            batch.last = now;
            // A full batch goes now; the next request opens another.
            if batch.waiters.len() >= BATCH_MAX_ITEMS { open.batch.take() } else { None }
        };
        if let Some(batch) = full {
            tokio::spawn(execute(self.describe.clone(), batch.waiters));
        }
        answer.await.unwrap_or_else(|_| Err(CloudError::other("DescribeInstancesFailed", "describe batch dropped")))
    }

    async fn send_when_quiet(self, generation: u64) {
        loop {
            let deadline = {
                let open = self.open.lock().expect("describe batches");
                let Some(batch) = open.batch.as_ref().filter(|b| b.generation == generation) else { return };
                (batch.last + BATCH_IDLE).min(batch.opened + BATCH_MAX)
            };
            if Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep_until(deadline).await;
        }
        let batch = {
            let mut open = self.open.lock().expect("describe batches");
            if open.batch.as_ref().is_none_or(|b| b.generation != generation) {
                return;
            }
            open.batch.take()
        };
        if let Some(batch) = batch {
            execute(self.describe.clone(), batch.waiters).await;
        }
    }
}

/// Describes every waiter's instance in one call, the ones it did not return one by one, and
/// answers each waiter.
async fn execute(describe: Describe, waiters: Vec<(String, Reply)>) {
    let mut ids: Vec<String> = waiters.iter().map(|(id, _)| id.clone()).collect();
    ids.sort();
    ids.dedup();
    if ids.len() > 1 {
        tracing::debug!(count = ids.len(), "merged DescribeInstances requests");
    }
    let merged = describe(ids.clone()).await;
    let mut answers: BTreeMap<String, Answer> = BTreeMap::new();
    if ids.len() == 1 {
        answers.insert(ids[0].clone(), merged.map(|found| found.into_iter().next()));
    } else {
        if let Ok(found) = merged {
            for instance in found {
                if let Some(id) = instance.instance_id() {
                    answers.insert(id.to_owned(), Ok(Some(instance.clone())));
                }
            }
        }
        let missing: Vec<String> = ids.iter().filter(|id| !answers.contains_key(*id)).cloned().collect();
        for id in missing {
            let alone = describe(vec![id.clone()]).await.map(|found| found.into_iter().next());
            answers.insert(id, alone);
        }
    }
    for (id, reply) in waiters {
        let answer = answers.get(&id).cloned().unwrap_or(Ok(None));
        let _ = reply.send(answer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake EC2 that knows `known`, fails calls naming an unknown id (as EC2 does), and
    /// records every call's ids.
    fn fake(known: &'static [&'static str], calls: Arc<Mutex<Vec<Vec<String>>>>) -> DescribeBatcher {
        DescribeBatcher::with(Arc::new(move |ids: Vec<String>| {
            calls.lock().expect("calls").push(ids.clone());
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                if ids.iter().any(|id| !known.contains(&id.as_str())) {
                    return Ok(Vec::new()); // InvalidInstanceID.NotFound reads as nothing found
                }
                Ok(ids.iter().map(|id| Instance::builder().instance_id(id).build()).collect())
            })
        }))
    }

    fn found(answer: &Answer) -> Option<String> {
        answer.as_ref().expect("no error").as_ref().and_then(|i| i.instance_id().map(str::to_owned))
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_gets_become_one_call() {
        let calls = Arc::default();
        let batcher = fake(&["i-1", "i-2", "i-3"], Arc::clone(&calls));
        let (a, b, c) = tokio::join!(batcher.get("i-1"), batcher.get("i-2"), batcher.get("i-1"));
        assert_eq!(found(&a).as_deref(), Some("i-1"));
        assert_eq!(found(&b).as_deref(), Some("i-2"));
        assert_eq!(found(&c).as_deref(), Some("i-1"));
        assert_eq!(*calls.lock().expect("calls"), vec![vec!["i-1".to_owned(), "i-2".to_owned()]]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unknown_id_is_described_alone_and_reads_as_gone() {
        let calls = Arc::default();
        let batcher = fake(&["i-1", "i-2"], Arc::clone(&calls));
        let (a, b, gone) = tokio::join!(batcher.get("i-1"), batcher.get("i-2"), batcher.get("i-9"));
        assert_eq!(found(&a).as_deref(), Some("i-1"));
        assert_eq!(found(&b).as_deref(), Some("i-2"));
        assert_eq!(found(&gone), None);
        let calls = calls.lock().expect("calls").clone();
        assert_eq!(calls.len(), 4, "one merged call, then each id alone: {calls:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn sequential_gets_are_one_call_each_after_the_idle_wait() {
        let calls = Arc::default();
        let batcher = fake(&["i-1"], Arc::clone(&calls));
        let start = Instant::now();
        assert_eq!(found(&batcher.get("i-1").await).as_deref(), Some("i-1"));
        assert_eq!(start.elapsed(), BATCH_IDLE + Duration::from_millis(5));
        assert_eq!(found(&batcher.get("i-1").await).as_deref(), Some("i-1"));
        assert_eq!(calls.lock().expect("calls").len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_steady_stream_is_sent_after_the_max_wait() {
        let calls: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
        let batcher = fake(&["i-1"], Arc::clone(&calls));
        let first = tokio::spawn({
            let batcher = batcher.clone();
            async move { batcher.get("i-1").await }
        });
        // A request every 50 ms keeps the batch from going quiet; it goes at 1 s anyway.
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let batcher = batcher.clone();
            tokio::spawn(async move { batcher.get("i-1").await });
        }
        assert!(found(&first.await.expect("joined")).is_some());
        let calls = calls.lock().expect("calls").clone();
        assert_eq!(calls[0], vec!["i-1".to_owned()], "deduplicated ids");
        assert!(calls.len() <= 3, "{calls:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_lone_get_keeps_its_error() {
        let batcher = DescribeBatcher::with(Arc::new(|_ids: Vec<String>| {
            Box::pin(async { Err(CloudError::other("RequestLimitExceeded", "slow down")) })
        }));
        assert_eq!(batcher.get("i-1").await, Err(CloudError::other("RequestLimitExceeded", "slow down")));
    }
}
