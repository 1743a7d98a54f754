//! What the cloud does on its own at scheduled times: launches complete, spot instances
//! are warned and reclaimed, instances shut down and are purged, zones fail.

use std::time::Duration;

use rand::Rng;
use rand::seq::SliceRandom;

use super::{FakeCloud, draw_between};
use crate::capacity::{CapacityType, PoolKey};
use crate::eventbridge::{self, Envelope};
use crate::events::CloudEvent;
use crate::faults::SpotStorm;
use crate::instance::InstanceState;
use crate::ledger::NODEPOOL_TAG;
use crate::published::PublishedKind;

impl FakeCloud {
    pub(super) fn handle(&mut self, event: CloudEvent) {
        match event {
            CloudEvent::LaunchComplete(id) => self.complete_launch(&id),
            CloudEvent::ShutdownComplete(id) => {
                if self.set_state(&id, InstanceState::ShuttingDown, InstanceState::Terminated) {
                    let purge_at = self.now + self.config.terminated_visible_for;
                    self.events.schedule(purge_at, CloudEvent::Purge(id));
                }
            }
            CloudEvent::StopComplete(id) => {
                self.set_state(&id, InstanceState::Stopping, InstanceState::Stopped);
            }
            CloudEvent::Purge(id) => {
                if self.instances.get(&id).is_some_and(|i| i.state == InstanceState::Terminated) {
                    self.instances.remove(&id);
                }
            }
            CloudEvent::Rebalance(id) => {
                if self.instances.get(&id).is_some_and(|i| i.state.is_live() && i.reclaim_at.is_none()) {
                    self.publish(PublishedKind::Rebalance, &id, |env| eventbridge::rebalance(env, &id));
                }
            }
            CloudEvent::SpotWarning(id) => self.warn_spot(&id),
            CloudEvent::Reclaim(id) => {
                self.begin_shutdown(&id, Some(("Server.SpotInstanceTermination", "Spot instance termination")));
            }
            CloudEvent::Storm(storm) => self.run_storm(&storm),
            CloudEvent::BlockWarning(id) => self.warn_block(&id),
            CloudEvent::BlockReclaim(id) => self.reclaim_block(&id),
            CloudEvent::ReservationEnd(id) => self.end_reservation(&id),
            CloudEvent::ZoneOutageStart(zone) => self.start_outage(&zone),
            CloudEvent::ZoneOutageEnd(zone) => {
                self.zone_outages.remove(&zone);
            }
            CloudEvent::ScheduledChange { instance_id, start } => {
                if self.instances.get(&instance_id).is_some_and(|i| i.state.is_live()) {
                    let event = crate::instance::ScheduledEvent {
                        id: self.ids.long("instance-event"),
                        code: "system-maintenance".into(),
                        not_before: start,
                        not_after: start + Duration::from_secs(7200),
                    };
                    if let Some(i) = self.instances.get_mut(&instance_id) {
                        i.scheduled_events.push(event);
                    }
                    let epoch = self.config.epoch;
                    let s = crate::timefmt::iso8601_secs(epoch, start);
                    let e = crate::timefmt::iso8601_secs(epoch, start + Duration::from_secs(7200));
                    self.publish(PublishedKind::ScheduledChange, &instance_id, |env| {
                        eventbridge::scheduled_change(env, &instance_id, &s, &e)
                    });
                }
            }
        }
    }

    /// Moves `id` from `from` to `to`, publishing the state change. `false` if it was not in `from`.
    pub(crate) fn set_state(&mut self, id: &str, from: InstanceState, to: InstanceState) -> bool {
        let now = self.now;
        let Some(instance) = self.instances.get_mut(id) else {
            return false;
        };
        if instance.state != from {
            return false;
        }
        instance.state = to;
        instance.state_since = now;
        self.publish_state(id, to);
        true
    }

    pub(crate) fn publish_state(&mut self, id: &str, state: InstanceState) {
        if self.config.publish_state_changes {
            self.publish(PublishedKind::StateChange(state.name()), id, |env| {
                eventbridge::state_change(env, id, state.name())
            });
        }
    }

    /// Sends an EventBridge message to the interruption queue, if one is configured.
    /// Records it in [`FakeCloud::published`] with when it became receivable.
    fn publish(&mut self, kind: PublishedKind, instance_id: &str, body: impl FnOnce(&Envelope<'_>) -> String) {
        let Some(queue) = self.interruption_queue.clone() else {
            return;
        };
        let env = Envelope {
            id: self.message_ids.uuid(),
            time: crate::timefmt::iso8601_secs(self.config.epoch, self.now),
            account: &self.config.account_id,
            region: self.catalog.region(),
        };
        let body = body(&env);
        let sent = self.sqs.send(
            &queue,
            body,
            Duration::ZERO,
            self.now,
            &self.faults,
            &mut self.rng_sqs,
            &mut self.message_ids,
        );
        match sent {
            Ok(message_id) => {
                let receivable_at = self.sqs.queues[&queue]
                    .messages
                    .values()
                    .filter(|m| m.message_id == message_id)
                    .map(|m| m.visible_at)
                    .min();
                self.published.push(crate::published::Published {
                    kind,
                    instance_id: instance_id.to_string(),
                    sent_at: self.now,
                    receivable_at,
                });
            }
            Err(e) => tracing::warn!(%e, queue, "interruption queue missing; event dropped"),
        }
    }

    fn complete_launch(&mut self, id: &str) {
        let now = self.now;
        let Some(instance) = self.instances.get(id) else {
            return;
        };
        if instance.state != InstanceState::Pending || instance.stuck_pending {
            return;
        }
        self.set_state(id, InstanceState::Pending, InstanceState::Running);
        let instance = self.instances.get_mut(id).expect("present above");
        instance.running_at = Some(now);
        let record = crate::ledger::BillingRecord {
            instance_id: id.to_string(),
            instance_type: instance.instance_type.clone(),
            zone: instance.zone.clone(),
            capacity_type: instance.capacity_type,
            nodepool: instance.tags.get(NODEPOOL_TAG).cloned(),
            start: now,
            end: None,
            capacity_reservation_id: instance.capacity_reservation_id.clone(),
            reservation_released: None,
        };
        self.ledger.open(record);
    }

    fn warn_spot(&mut self, id: &str) {
        let now = self.now;
        let notice = self.config.spot_notice;
        let Some(instance) = self.instances.get_mut(id) else {
            return;
        };
        if instance.capacity_type != CapacityType::Spot || !instance.state.is_live() || instance.reclaim_at.is_some() {
            return;
        }
        instance.reclaim_at = Some(now + notice);
        self.publish(PublishedKind::SpotInterruption, id, |env| eventbridge::spot_interruption(env, id));
        self.events.schedule(now + notice, CloudEvent::Reclaim(id.to_string()));
    }

    /// Releases what a live instance holds: pool slot, vCPU quota and subnet address.
    fn release_resources(&mut self, id: &str) {
        let now = self.now;
        let Some(instance) = self.instances.get(id) else {
            return;
        };
        let vcpu = self.catalog.get(&instance.instance_type).map_or(0, |t| t.vcpu);
        let key = PoolKey::new(&instance.instance_type, &instance.zone, instance.capacity_type);
        let subnet = instance.subnet_id.clone();
        let ct = instance.capacity_type;
        if instance.capacity_reservation_id.is_none() {
            self.pools.give_back(&key, vcpu, now);
        }
        if let Some(used) = self.vcpu_in_use.get_mut(&ct) {
            *used = used.saturating_sub(vcpu);
        }
        if let Some(s) = self.network.subnets.get_mut(&subnet) {
            s.free_ips += 1;
        }
        self.give_back_reservation(id);
    }

    /// Starts terminating a live instance: billing stops, resources return, and it becomes
    /// `terminated` after the seeded shutdown delay. `false` if it was not live.
    pub(crate) fn begin_shutdown(&mut self, id: &str, reason: Option<(&str, &str)>) -> bool {
        let now = self.now;
        let state = match self.instances.get(id) {
            Some(i) => i.state,
            None => return false,
        };
        if !state.is_live() {
            return false;
        }
        if matches!(state, InstanceState::Pending | InstanceState::Running) {
            self.release_resources(id);
        }
        let (lo, hi) = self.config.shutdown_delay;
        let delay = draw_between(&mut self.rng_launch, lo, hi);
        let instance = self.instances.get_mut(id).expect("present above");
        instance.state = InstanceState::ShuttingDown;
        instance.state_since = now;
        instance.billing_end.get_or_insert(now);
        if let Some((code, message)) = reason {
            instance.state_reason = Some((code.to_string(), message.to_string()));
        }
        self.ledger.close(id, now);
        self.publish_state(id, InstanceState::ShuttingDown);
        self.events.schedule(now + delay, CloudEvent::ShutdownComplete(id.to_string()));
        true
    }

    fn run_storm(&mut self, storm: &SpotStorm) {
        let mut targets: Vec<String> = self
            .instances
            .values()
            .filter(|i| {
                i.capacity_type == CapacityType::Spot
                    && i.state.is_live()
                    && i.reclaim_at.is_none()
                    && storm.zone.as_ref().is_none_or(|z| *z == i.zone)
                    && (storm.instance_types.is_empty() || storm.instance_types.contains(&i.instance_type))
            })
            .map(|i| i.id.clone())
            .collect();
        targets.shuffle(&mut self.rng_spot);
        let count = (storm.fraction.clamp(0.0, 1.0) * targets.len() as f64).ceil() as usize;
        for id in targets.into_iter().take(count) {
            if self.rng_spot.random::<f64>() < self.config.rebalance_probability {
                self.publish(PublishedKind::Rebalance, &id, |env| eventbridge::rebalance(env, &id));
            }
            self.warn_spot(&id);
        }
    }

    fn start_outage(&mut self, zone: &str) {
        self.zone_outages.insert(zone.to_string());
        let now = self.now;
        let victims: Vec<String> = self
            .instances
            .values()
            .filter(|i| i.zone == zone && matches!(i.state, InstanceState::Pending | InstanceState::Running))
            .map(|i| i.id.clone())
            .collect();
        for id in victims {
            self.release_resources(&id);
            let (lo, hi) = self.config.stop_delay;
            let delay = draw_between(&mut self.rng_launch, lo, hi);
            if let Some(i) = self.instances.get_mut(&id) {
                i.state = InstanceState::Stopping;
                i.state_since = now;
                i.billing_end.get_or_insert(now);
                i.state_reason = Some(("Server.InternalError".into(), "Availability zone outage".into()));
            }
            self.ledger.close(&id, now);
            self.publish_state(&id, InstanceState::Stopping);
            self.events.schedule(now + delay, CloudEvent::StopComplete(id));
        }
    }
}
