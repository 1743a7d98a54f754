//! EC2 instance status checks end to end, on the library's `instance-status` story: the
//! controller's instance status poller (aws/karpenter-provider-aws v1.14.1
//! `pkg/controllers/interruption/instancestatus_controller.go`, `utils.go`,
//! `pkg/providers/instancestatus/instancestatus.go`) against the fake cloud's
//! DescribeInstanceStatus, with nothing on the interruption queue.
//!
//! The test watches the cloud and the store from outside the controller, once a simulated
//! second: when each instance's system, instance and attached-EBS checks started failing and
//! when it got a scheduled event (the cloud's record), when each NodeClaim got its
//! deletionTimestamp and what `karpenter.sh/nodeclaim-termination-timestamp` it carried, and
//! the `InstanceUnhealthy` events. Upstream's rules, checked here:
//! - a failed system check is acted on once it has failed for 2 minutes
//!   (`UnhealthyThreshold`, instancestatus.go l. 45), within one poll (1 minute, l. 51), as a
//!   ForcefulTermination: the termination timestamp is set before the delete (utils.go
//!   l. 117–124);
//! - a scheduled event is acted on at the next poll, as a CordonAndDrain: a delete with no
//!   termination timestamp (utils.go l. 125–126);
//! - a failed attached-EBS check is ignored (instancestatus.go l. 40), and so is an instance
//!   check that passes again within the 2 minutes.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use dovetail_fakecloud::cloud::{SharedCloud, lock};
use dovetail_fakecloud::{NODEPOOL_TAG, StatusCheck};
use dovetail_sim::apiserver::ApiServer;
use dovetail_sim::oracle::view::key;
use dovetail_sim::run::{Outcome, RunOptions, run_world};
use dovetail_sim::scenario::Loaded;
use dovetail_sim::world::ScenarioWorld;
use dovetail_sim::world::clock::SIM_EPOCH_UNIX_SECS;

const THRESHOLD: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_secs(60);
/// A watch and a tick of slack between the controller's write and this test's look.
const SLACK: Duration = Duration::from_secs(5);

/// One instance as the cloud reported it.
#[derive(Clone, Debug, Default)]
struct Seen {
    pool: String,
    /// When each check was first seen failing (the cloud's own impairedSince).
    impaired: BTreeMap<StatusCheck, Duration>,
    /// Longest any check was seen failing in one stretch.
    longest: BTreeMap<StatusCheck, Duration>,
    /// When a scheduled event was first seen listed.
    event: Option<Duration>,
}

/// One NodeClaim's deletion as first seen.
#[derive(Clone, Debug)]
struct Deleted {
    deletion_timestamp: String,
    termination_timestamp: Option<String>,
}

#[derive(Default)]
struct Watch {
    server: Option<ApiServer>,
    cloud: Option<SharedCloud>,
    next_second: u64,
    instances: BTreeMap<String, Seen>,
    /// Claims by instance id: (name, pool).
    claims: BTreeMap<String, (String, String)>,
    deleted: BTreeMap<String, Deleted>,
    unhealthy_events: BTreeSet<String>,
    /// Every `web` pod seen, and the ones seen deleting.
    web_pods: BTreeSet<String>,
    web_deleted: BTreeSet<String>,
}

impl Watch {
    fn observe(&mut self, now: Duration) {
        if let Some(cloud) = &self.cloud {
            let c = lock(cloud);
            for i in c.instances() {
                let seen = self.instances.entry(i.id.clone()).or_default();
                seen.pool = i.tags.get(NODEPOOL_TAG).cloned().unwrap_or_default();
                for check in StatusCheck::ALL {
                    if let Some(since) = i.status_checks.impaired_since(check) {
                        seen.impaired.entry(check).or_insert(since);
                        let stretch = now.saturating_sub(since);
                        let longest = seen.longest.entry(check).or_default();
                        *longest = (*longest).max(stretch);
                    }
                }
                if !i.scheduled_events.is_empty() && seen.event.is_none() {
                    seen.event = Some(now);
                }
            }
        }
        let Some(server) = self.server.as_ref() else { return };
        let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        for claim in store.iter(&key("karpenter.sh", "nodeclaims"), None) {
            let name = claim["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            if let Some(instance) = claim["status"]["providerID"].as_str().and_then(|p| p.rsplit('/').next()) {
                let pool = claim["metadata"]["labels"]["karpenter.sh/nodepool"].as_str().unwrap_or_default();
                self.claims.insert(instance.to_owned(), (name.clone(), pool.to_owned()));
            }
            if let Some(ts) = claim["metadata"]["deletionTimestamp"].as_str()
                && !self.deleted.contains_key(&name)
            {
                let annotation = claim["metadata"]["annotations"]["karpenter.sh/nodeclaim-termination-timestamp"]
                    .as_str()
                    .map(str::to_owned);
                self.deleted
                    .insert(name, Deleted { deletion_timestamp: ts.to_owned(), termination_timestamp: annotation });
            }
        }
        for pod in store.iter(&key("", "pods"), None) {
            if pod["metadata"]["labels"]["app"] == "web" {
                let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                if pod["metadata"]["deletionTimestamp"].is_string() {
                    self.web_deleted.insert(name.clone());
                }
                self.web_pods.insert(name);
            }
        }
        for event in store.iter(&key("", "events"), None) {
            if event["reason"] == "InstanceUnhealthy" && event["involvedObject"]["kind"] == "NodeClaim" {
                self.unhealthy_events.insert(event["involvedObject"]["name"].as_str().unwrap_or_default().to_owned());
            }
        }
    }

    /// Simulated time of an RFC 3339 stamp.
    fn at(stamp: &str) -> Duration {
        let t: jiff::Timestamp = stamp.parse().expect("rfc3339");
        let epoch = jiff::Timestamp::from_second(SIM_EPOCH_UNIX_SECS.try_into().expect("epoch")).expect("epoch");
        Duration::try_from(t.duration_since(epoch)).unwrap_or(Duration::ZERO)
    }

    /// The instances of `pool` for which `pick` says when they turned unhealthy.
    fn unhealthy(&self, pool: &str, pick: impl Fn(&Seen) -> Option<Duration>) -> Vec<(String, Duration)> {
        self.instances
            .iter()
            .filter(|(_, s)| s.pool == pool)
            .filter_map(|(id, s)| Some((id.clone(), pick(s)?)))
            .collect()
    }

    fn claim_of(&self, instance: &str) -> String {
        self.claims.get(instance).map(|(n, _)| n.clone()).unwrap_or_else(|| panic!("no claim for {instance}"))
    }
}

fn run() -> (Watch, Outcome) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/instance-status.yaml");
    let loaded = Loaded::from_file(&path).expect("library scenario loads");
    let world = ScenarioWorld::build(&loaded, 1).expect("world builds");
    let watch = Rc::new(RefCell::new(Watch { cloud: world.world.cloud.clone(), ..Watch::default() }));
    let on_start = {
        let watch = watch.clone();
        move |s: &ApiServer| watch.borrow_mut().server = Some(s.clone())
    };
    let before_step = {
        let watch = watch.clone();
        move |now: Duration| {
            let mut w = watch.borrow_mut();
            if now.as_secs() >= w.next_second {
                w.next_second = now.as_secs() + 1;
                w.observe(now);
            }
        }
    };
    let mut options = RunOptions {
        on_start: Some(Box::new(on_start)),
        before_step: Some(Box::new(before_step)),
        ..RunOptions::default()
    };
    let outcome = run_world(world, &mut options).expect("run");
    drop(options);
    let watch = Rc::try_unwrap(watch).ok().expect("hooks dropped").into_inner();
    (watch, outcome)
}

#[test]
fn failed_checks_and_scheduled_events_are_acted_on_as_upstream_does() {
    let (w, outcome) = run();

    // web: a failed system check → forceful termination 2 min after it failed, within a poll.
    let web = w.unhealthy("web", |s| s.impaired.get(&StatusCheck::System).copied());
    assert_eq!(web.len(), 1, "one web instance fails its system check: {:?}", w.instances);
    let (instance, failed) = &web[0];
    let claim = w.claim_of(instance);
    let deleted = w.deleted.get(&claim).unwrap_or_else(|| panic!("{claim} ({instance}) was never deleted"));
    let deleted_at = Watch::at(&deleted.deletion_timestamp);
    assert!(deleted_at >= *failed + THRESHOLD, "{claim} deleted at {deleted_at:?}, before the 2-minute threshold");
    assert!(
        deleted_at <= *failed + THRESHOLD + POLL + SLACK,
        "{claim} deleted at {deleted_at:?}, later than a poll after the threshold"
    );
    let stamp =
        deleted.termination_timestamp.as_deref().expect("forceful: the termination timestamp is set before the delete");
    let stamped = Watch::at(stamp);
    assert!(
        stamped <= deleted_at && deleted_at <= stamped + Duration::from_secs(1),
        "stamp {stamp} is not the delete's now"
    );
    assert!(w.unhealthy_events.contains(&claim), "InstanceUnhealthy on {claim}: {:?}", w.unhealthy_events);
    // The forceful drain deleted the web pod though its PDB (maxUnavailable: 0) allowed no
    // disruption, as upstream's does; `pdb` excuses it for the failed check alone (below: no
    // violation), so the excuse was exercised, not vacuous.
    assert_eq!(w.web_deleted.len(), 1, "the broken node's web pod was deleted: {:?}", w.web_deleted);
    assert_eq!(w.web_pods.len(), 5, "four web pods and one replacement: {:?}", w.web_pods);

    // batch: a scheduled event → a graceful delete at the next poll, no termination timestamp.
    let batch = w.unhealthy("batch", |s| s.event);
    assert_eq!(batch.len(), 1, "one batch instance gets an event: {:?}", w.instances);
    let (instance, listed) = &batch[0];
    let claim = w.claim_of(instance);
    let deleted = w.deleted.get(&claim).unwrap_or_else(|| panic!("{claim} ({instance}) was never deleted"));
    let deleted_at = Watch::at(&deleted.deletion_timestamp);
    assert!(
        deleted_at + SLACK >= *listed && deleted_at <= *listed + POLL + SLACK,
        "{claim} deleted at {deleted_at:?}, event listed at {listed:?}"
    );
    assert_eq!(deleted.termination_timestamp, None, "a scheduled event is a graceful CordonAndDrain");
    assert!(w.unhealthy_events.contains(&claim), "InstanceUnhealthy on {claim}: {:?}", w.unhealthy_events);

    // api: an EBS-only failure and a 90 s instance check failure are left alone.
    let ebs = w.unhealthy("api", |s| s.impaired.get(&StatusCheck::AttachedEbs).copied());
    assert_eq!(ebs.len(), 1, "one api instance fails its EBS check: {:?}", w.instances);
    let short = w.unhealthy("api", |s| s.longest.get(&StatusCheck::Instance).copied());
    assert_eq!(short.len(), 3, "every api instance fails its instance check for a while: {:?}", w.instances);
    assert!(short.iter().all(|(id, _)| w.instances[id].longest[&StatusCheck::Instance] < THRESHOLD));
    for (instance, (claim, pool)) in &w.claims {
        if pool == "api" {
            assert!(!w.deleted.contains_key(claim), "api claim {claim} ({instance}) deleted: {:?}", w.deleted[claim]);
            assert!(!w.unhealthy_events.contains(claim), "InstanceUnhealthy on api claim {claim}");
        }
    }
    let violations = &outcome.report.invariants.violations;
    assert!(violations.is_empty(), "invariants: {violations:?}");
}
