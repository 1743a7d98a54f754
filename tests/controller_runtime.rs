//! The controller's production runtime seams against the simulated API server: the Event
//! writer's client-go style dedupe, and leader election on a Lease across crashes, partitions
//! and hand-overs, all in simulated time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dovetail_controller::runtime::leader::{LEASE_DURATION, LeaderElection, LeaderElectionConfig, RENEW_DEADLINE};
use dovetail_controller::runtime::{Event, EventRecorder, EventType, EventWriter};
use dovetail_sim::controller_host::SimClock;
use dovetail_tests::{apiserver_world, client};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event as CoreEvent, Node, Pod};
use kube::api::{Api, ListParams};
use serde_json::json;

/// Lets the API server host bind before clients dial it.
const STARTUP: Duration = Duration::from_millis(100);

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")}
    }))
    .unwrap()
}

async fn events_about(name: &str) -> Vec<CoreEvent> {
    let events: Api<CoreEvent> = Api::namespaced(client(), "default");
    let mut list: Vec<CoreEvent> = events
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .collect();
    list.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    list
}

fn span(event: &CoreEvent) -> Duration {
    let first = event.first_timestamp.as_ref().expect("firstTimestamp").0;
    let last = event.last_timestamp.as_ref().expect("lastTimestamp").0;
    dovetail_controller::runtime::clock::elapsed(first, last)
}

#[test]
fn repeated_events_bump_one_object_within_five_minutes() {
    let (mut sim, _server, _trace) = apiserver_world(11);
    sim.client("test", async {
        tokio::time::sleep(STARTUP).await;
        let recorder = EventRecorder::new();
        tokio::spawn(EventWriter::new(client(), Arc::new(SimClock), "dovetail-0_test").run(recorder.clone()));
        let web = pod("web-1");
        // Nominations are published undeduped (as the provisioner does), so the writer's
        // correlator sees every repeat.
        let nominated =
            Event::about(&web, EventType::Normal, "Nominated", "Pod should schedule on: nodeclaim/default-x")
                .never_deduped();
        recorder.publish(nominated.clone());
        recorder.publish(nominated.clone());
        recorder.publish(Event::about(&web, EventType::Warning, "FailedScheduling", "no NodePool matches"));
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "ip-10-0-0-1", "uid": "uid-node"}}))?;
        recorder.publish(Event::about(&node, EventType::Normal, "DisruptionBlocked", "Node is nominated"));
        tokio::time::sleep(Duration::from_secs(2)).await;

        let events = events_about("web-1").await;
        assert_eq!(events.len(), 2, "the repeat bumps the first object: {events:#?}");
        let by_reason = |events: &[CoreEvent], reason: &str| {
            events.iter().find(|e| e.reason.as_deref() == Some(reason)).cloned().expect(reason)
        };
        let first = by_reason(&events, "Nominated");
        assert_eq!(first.count, Some(2));
        assert_eq!(first.type_.as_deref(), Some("Normal"));
        assert_eq!(first.reporting_component.as_deref(), Some("karpenter"));
        assert_eq!(first.reporting_instance.as_deref(), Some("dovetail-0_test"));
        assert_eq!(first.involved_object.uid.as_deref(), Some("uid-web-1"));
        assert_eq!(by_reason(&events, "FailedScheduling").count, Some(1));
        // Cluster-scoped objects' events go to `default`, as client-go puts them.
        assert_eq!(events_about("ip-10-0-0-1").await.len(), 1);

        // A minute later: still the same object, count and lastTimestamp move.
        tokio::time::sleep(Duration::from_secs(60)).await;
        recorder.publish(nominated.clone());
        tokio::time::sleep(Duration::from_secs(1)).await;
        let events = events_about("web-1").await;
        assert_eq!(events.len(), 2);
        let bumped = by_reason(&events, "Nominated");
        assert_eq!(bumped.metadata.name, first.metadata.name);
        assert_eq!(bumped.count, Some(3));
        let moved = span(&bumped);
        assert!((Duration::from_secs(60)..=Duration::from_secs(62)).contains(&moved), "lastTimestamp moved {moved:?}");

        // Quiet for more than five minutes: the next occurrence is a new object.
        tokio::time::sleep(Duration::from_secs(5 * 60 + 1)).await;
        recorder.publish(nominated);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let events = events_about("web-1").await;
        let nominated: Vec<_> = events.iter().filter(|e| e.reason.as_deref() == Some("Nominated")).collect();
        assert_eq!(nominated.len(), 2, "{events:#?}");
        assert_eq!(nominated.iter().filter_map(|e| e.count).collect::<Vec<_>>().iter().sum::<i32>(), 4);
        Ok(())
    });
    sim.run().unwrap();
}

/// Karpenter's recorder (core `pkg/events/recorder.go`) drops an event whose reason and dedupe
/// values went out within its timeout, in simulated time: a node reported unconsolidatable on
/// every 10 s poll for 20 minutes yields two Events, not 120 count bumps.
#[test]
fn published_repeats_are_dropped_within_the_dedupe_timeout() {
    let (mut sim, _server, _trace) = apiserver_world(12);
    sim.client("test", async {
        tokio::time::sleep(STARTUP).await;
        let recorder = EventRecorder::new();
        tokio::spawn(EventWriter::new(client(), Arc::new(SimClock), "dovetail-0_test").run(recorder.clone()));
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "ip-10-0-0-2", "uid": "uid-node-2"}}))?;
        for poll in 0..120 {
            let message = format!("can't remove without creating 1 candidates (poll {poll})");
            recorder.publish(
                Event::about(&node, EventType::Normal, "Unconsolidatable", message)
                    .deduped_for(Duration::from_secs(15 * 60)),
            );
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        let events = events_about("ip-10-0-0-2").await;
        let mut messages: Vec<_> = events.iter().filter_map(|e| e.message.clone()).collect();
        messages.sort();
        assert_eq!(
            messages,
            [
                "can't remove without creating 1 candidates (poll 0)",
                "can't remove without creating 1 candidates (poll 90)"
            ],
            "{events:#?}"
        );
        assert!(events.iter().all(|e| e.count == Some(1)));
        Ok(())
    });
    sim.run().unwrap();
}

/// (candidate, what happened, simulated time).
type Timeline = Arc<Mutex<Vec<(String, &'static str, Duration)>>>;

fn note(timeline: &Timeline, who: &str, what: &'static str) {
    let at = turmoil::sim_elapsed().unwrap_or_default();
    timeline.lock().unwrap().push((who.to_string(), what, at));
}

fn when(timeline: &Timeline, what: &'static str) -> Vec<(String, Duration)> {
    timeline.lock().unwrap().iter().filter(|(_, w, _)| *w == what).map(|(who, _, at)| (who.clone(), *at)).collect()
}

/// Adds two candidate hosts. Each becomes leader, notes it, and then either waits for
/// leadership to be lost (noting that) or, with `release_after`, hands it over after that long.
fn add_candidates(sim: &mut turmoil::Sim<'_>, timeline: &Timeline, release_after: Option<Duration>) {
    for name in ["candidate-a", "candidate-b"] {
        let timeline = timeline.clone();
        sim.host(name, move || {
            let timeline = timeline.clone();
            async move {
                tokio::time::sleep(STARTUP).await;
                let config = LeaderElectionConfig::new("default", name);
                let mut leadership = LeaderElection::new(client(), Arc::new(SimClock), config).acquire().await;
                note(&timeline, name, "acquired");
                match release_after {
                    Some(after) => {
                        tokio::time::sleep(after).await;
                        leadership.release().await;
                        note(&timeline, name, "released");
                    }
                    None => {
                        leadership.lost().await;
                        note(&timeline, name, "lost");
                    }
                }
                std::future::pending::<()>().await;
                Ok(())
            }
        });
    }
}

/// Steps the simulation until `done` holds, failing after `limit` of simulated time.
fn step_until(sim: &mut turmoil::Sim<'_>, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = sim.elapsed() + limit;
    while !done() {
        assert!(sim.elapsed() < deadline, "condition not reached within {limit:?}");
        sim.step().unwrap();
    }
}

fn steps_for(sim: &mut turmoil::Sim<'_>, span: Duration) {
    let until = sim.elapsed() + span;
    while sim.elapsed() < until {
        sim.step().unwrap();
    }
}

async fn read_lease() -> Lease {
    let leases: Api<Lease> = Api::namespaced(client(), "default");
    leases.get("karpenter-leader-election").await.expect("the lease exists")
}

#[test]
fn one_candidate_leads_and_the_other_takes_over_after_a_crash() {
    let (mut sim, _server, _trace) = apiserver_world(21);
    let timeline = Timeline::default();
    add_candidates(&mut sim, &timeline, None);
    step_until(&mut sim, Duration::from_secs(10), || !when(&timeline, "acquired").is_empty());
    // Two lease durations with both running: the follower never gets in.
    steps_for(&mut sim, LEASE_DURATION * 2);
    let acquired = when(&timeline, "acquired");
    assert_eq!(acquired.len(), 1, "{acquired:?}");
    let leader = acquired[0].0.clone();
    let follower = if leader == "candidate-a" { "candidate-b" } else { "candidate-a" };

    sim.crash(leader.as_str());
    let crashed_at = sim.elapsed();
    step_until(&mut sim, LEASE_DURATION * 3, || when(&timeline, "acquired").len() == 2);
    let (new_leader, at) = when(&timeline, "acquired")[1].clone();
    assert_eq!(new_leader, follower);
    let gap = at - crashed_at;
    // The crashed leader renewed at most one retry period (2 s) before the crash; the follower
    // waits a full lease duration from when it saw that renewal, polling every 2 s.
    assert!(
        gap >= LEASE_DURATION - Duration::from_secs(2) && gap <= LEASE_DURATION + Duration::from_secs(5),
        "takeover {gap:?} after the crash"
    );

    let lease = Arc::new(Mutex::new(None));
    let read = lease.clone();
    sim.client("reader", async move {
        *read.lock().unwrap() = Some(read_lease().await);
        Ok(())
    });
    step_until(&mut sim, Duration::from_secs(5), || lease.lock().unwrap().is_some());
    let spec = lease.lock().unwrap().clone().unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(follower));
    assert_eq!(spec.lease_transitions, Some(1));
    assert_eq!(spec.lease_duration_seconds, Some(15));
}

#[test]
fn a_partitioned_leader_steps_down_before_anyone_takes_over() {
    let (mut sim, _server, _trace) = apiserver_world(22);
    let timeline = Timeline::default();
    add_candidates(&mut sim, &timeline, None);
    step_until(&mut sim, Duration::from_secs(10), || !when(&timeline, "acquired").is_empty());
    steps_for(&mut sim, Duration::from_secs(5));
    let leader = when(&timeline, "acquired")[0].0.clone();

    sim.partition(leader.as_str(), "apiserver");
    let partitioned_at = sim.elapsed();
    step_until(&mut sim, LEASE_DURATION * 3, || when(&timeline, "acquired").len() == 2);
    let lost = when(&timeline, "lost");
    assert_eq!(lost.len(), 1, "the partitioned leader must notice: {lost:?}");
    assert_eq!(lost[0].0, leader);
    let taken_over = when(&timeline, "acquired")[1].1;
    assert!(lost[0].1 < taken_over, "two leaders at once: lost at {:?}, taken over at {taken_over:?}", lost[0].1);
    assert!(lost[0].1 - partitioned_at <= RENEW_DEADLINE + Duration::from_secs(2), "stepped down late: {lost:?}");
}

#[test]
fn a_released_lease_is_taken_over_without_waiting_for_expiry() {
    let (mut sim, _server, _trace) = apiserver_world(23);
    let timeline = Timeline::default();
    add_candidates(&mut sim, &timeline, Some(Duration::from_secs(5)));
    step_until(&mut sim, Duration::from_secs(20), || !when(&timeline, "released").is_empty());
    let released_at = when(&timeline, "released")[0].1;
    step_until(&mut sim, LEASE_DURATION, || when(&timeline, "acquired").len() == 2);
    let gap = when(&timeline, "acquired")[1].1 - released_at;
    // The follower only has to notice: its next 2 s poll plus the 1 s lease left by release.
    assert!(gap <= Duration::from_secs(4), "takeover {gap:?} after release");
}
