//! [`SharedCloud`]: the one handle to a [`FakeCloud`] that the wire server, the simulated
//! world and fault injectors share, and the only thing that moves the cloud's time.
//!
//! The cloud is a pure state machine that moves only when told ([`FakeCloud::advance_to`]).
//! The handle owns its clock, so no caller passes a time in: whoever acts on the cloud
//! calls [`SharedCloud::advance`] and gets it brought up to the world's current instant
//! first; observers that must not move time use [`SharedCloud::lock`].
//!
//! Inside a turmoil simulation the current instant is the acting host's exact simulated
//! time, which moves *within* a step: a host runs a whole tick of tokio time, and timers
//! (an SQS long poll waking at a cloud deadline, a node agent requeued to one) fire at
//! their own instant in it. Advancing the cloud only at step boundaries would show such a
//! caller the cloud as it was at the tick's start. Code between steps is in no host; the
//! runner tells the handle where the world stepped to ([`SharedCloud::stepped_to`]), and
//! that is the time such code acts at.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::FakeCloud;
use super::clock::{CloudClock, TurmoilClock};

/// The cloud shared between the server, the world that inspects it and fault injectors.
/// Cloning shares the same cloud.
#[derive(Clone)]
pub struct SharedCloud {
    inner: Arc<Inner>,
}

struct Inner {
    cloud: Mutex<FakeCloud>,
    clock: Box<dyn CloudClock>,
    /// Where the world last stepped to, in nanoseconds: the time of callers outside the
    /// clock's world.
    stepped_nanos: AtomicU64,
}

impl std::fmt::Debug for SharedCloud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCloud").field("now", &self.now()).finish_non_exhaustive()
    }
}

impl SharedCloud {
    /// Shares `cloud`, whose time is read from `clock`.
    pub fn new(cloud: FakeCloud, clock: impl CloudClock) -> Self {
        Self {
            inner: Arc::new(Inner {
                cloud: Mutex::new(cloud),
                clock: Box::new(clock),
                stepped_nanos: AtomicU64::new(0),
            }),
        }
    }

    /// The world's current instant: the clock's, or where the world last stepped to for a
    /// caller outside the clock's world.
    pub fn now(&self) -> Duration {
        self.inner.clock.now().unwrap_or_else(|| Duration::from_nanos(self.inner.stepped_nanos.load(Ordering::Relaxed)))
    }

    /// Records that the world stepped to `elapsed`: code between steps (a fault injector)
    /// acts at this time. Call it once per world step, right after the step. It does not
    /// move the cloud: the next [`Self::advance`] does.
    pub fn stepped_to(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.inner.stepped_nanos.store(nanos, Ordering::Relaxed);
    }

    /// Brings the cloud up to [`Self::now`] (everything due by then has happened: launch
    /// completions, reclaims, queued interruption messages) and locks it, for a caller
    /// about to act on it or read what is true now.
    pub fn advance(&self) -> MutexGuard<'_, FakeCloud> {
        let now = self.now();
        let mut cloud = self.lock();
        cloud.advance_to(now);
        cloud
    }

    /// Locks the cloud as it was last advanced, without moving its time (observers,
    /// scenario setup, fault knobs). Recovers from a poisoned lock: a panicking test thread
    /// must not hide the state from the report.
    pub fn lock(&self) -> MutexGuard<'_, FakeCloud> {
        self.inner.cloud.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Shares `cloud` inside a turmoil simulation ([`TurmoilClock`]).
pub fn shared(cloud: FakeCloud) -> SharedCloud {
    SharedCloud::new(cloud, TurmoilClock)
}

/// [`SharedCloud::lock`].
pub fn lock(cloud: &SharedCloud) -> MutexGuard<'_, FakeCloud> {
    cloud.lock()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, UNIX_EPOCH};

    use super::SharedCloud;
    use crate::catalog::tests::small;
    use crate::cloud::clock::CloudClock;
    use crate::cloud::launch::RunInstancesRequest;
    use crate::config::{CloudConfig, EPOCH_2026};
    use crate::instance::InstanceState;
    use crate::{FakeCloud, LaunchTemplateRef, LaunchTemplateSpec};

    /// A clock a test sets by hand; zero nanoseconds stands for "outside the world".
    #[derive(Clone, Default)]
    struct HandClock(Arc<AtomicU64>);

    impl HandClock {
        fn set(&self, at: Duration) {
            self.0.store(at.as_nanos() as u64, Ordering::Relaxed);
        }
    }

    impl CloudClock for HandClock {
        fn now(&self) -> Option<Duration> {
            let nanos = self.0.load(Ordering::Relaxed);
            (nanos > 0).then(|| Duration::from_nanos(nanos))
        }
    }

    /// A cloud with one pending instance; returns its id and when its launch completes.
    fn with_pending_instance(clock: &HandClock) -> (SharedCloud, String, Duration) {
        let mut c = FakeCloud::new(CloudConfig::new(1, UNIX_EPOCH + EPOCH_2026), small());
        let ami = c
            .images()
            .parameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
            .expect("ami")
            .to_string();
        c.create_launch_template(LaunchTemplateSpec { name: "lt".into(), image_id: Some(ami), ..Default::default() })
            .expect("lt");
        let id = c
            .run_instances(&RunInstancesRequest {
                instance_type: Some("m5.large".into()),
                min_count: 1,
                max_count: 1,
                availability_zone: Some("us-west-2a".into()),
                launch_template: Some(LaunchTemplateRef::Name("lt".into())),
                ..Default::default()
            })
            .expect("launched")
            .instance_ids
            .remove(0);
        let due = c.next_deadline().expect("launch completion scheduled");
        (SharedCloud::new(c, clock.clone()), id, due)
    }

    fn state(cloud: &SharedCloud, id: &str) -> Option<InstanceState> {
        cloud.lock().instance(id).map(|i| i.state)
    }

    #[test]
    fn acting_brings_the_cloud_to_the_clock_and_looking_does_not() {
        let clock = HandClock::default();
        let (cloud, id, due) = with_pending_instance(&clock);
        clock.set(due);
        assert_eq!(state(&cloud, &id), Some(InstanceState::Pending), "lock() leaves time alone");
        assert_eq!(cloud.advance().now(), due);
        assert_eq!(state(&cloud, &id), Some(InstanceState::Running));
    }

    #[test]
    fn outside_the_world_the_cloud_acts_at_the_last_step() {
        let clock = HandClock::default();
        let (cloud, id, due) = with_pending_instance(&clock);
        assert_eq!(cloud.now(), Duration::ZERO);
        cloud.stepped_to(due - Duration::from_millis(1));
        assert_eq!(cloud.advance().now(), due - Duration::from_millis(1));
        assert_eq!(state(&cloud, &id), Some(InstanceState::Pending));
        cloud.stepped_to(due);
        assert_eq!(state(&cloud, &id), Some(InstanceState::Pending), "stepping alone moves nothing");
        drop(cloud.advance());
        assert_eq!(state(&cloud, &id), Some(InstanceState::Running));
    }
}
