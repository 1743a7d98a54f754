//! Capacity reservations in the cloud: seeding them from the config, DescribeCapacityReservations,
//! taking and giving back a slot, and a capacity block's end (see [`crate::reservations`]).

use std::collections::BTreeSet;

use super::FakeCloud;
use crate::error::{ApiError, ApiResult};
use crate::events::CloudEvent;
use crate::instance::InstanceState;
use crate::ledger::ReservationBill;
use crate::reservations::{
    CAPACITY_BLOCK_RECLAIM_LEAD, CAPACITY_BLOCK_WARNING_LEAD, CapacityReservation, ReservationType, is_reservation_id,
};
use crate::tags::Filter;

impl FakeCloud {
    /// Adds the configured reservations, bills them from instant zero and schedules each
    /// capacity block's reclaim. Called once, from [`FakeCloud::new`]; draws ids only when
    /// there are reservations, so a cloud without them draws exactly what it did before.
    pub(super) fn seed_reservations(&mut self) {
        for spec in self.config.capacity_reservations.clone() {
            let id = spec.id.clone().unwrap_or_else(|| self.ids.long("cr"));
            let zone_id = self.catalog.zone(&spec.zone).map(|z| z.id.clone()).unwrap_or_default();
            let reservation = CapacityReservation {
                id: id.clone(),
                instance_type: spec.instance_type.clone(),
                zone: spec.zone.clone(),
                zone_id,
                total: spec.count,
                available: spec.count,
                match_criteria: spec.match_criteria,
                owner_id: spec.owner_id.clone().unwrap_or_else(|| self.config.account_id.clone()),
                start: self.now,
                end: spec.end,
                reservation_type: spec.reservation_type,
                tags: spec.tags.clone(),
                instances: BTreeSet::new(),
            };
            self.ledger.reservations.insert(
                id.clone(),
                ReservationBill {
                    instance_type: spec.instance_type.clone(),
                    zone: spec.zone.clone(),
                    count: spec.count,
                    start: self.now,
                    end: spec.end,
                },
            );
            match (spec.reservation_type, spec.end) {
                (ReservationType::CapacityBlock, Some(end)) => {
                    self.events.schedule(
                        end.saturating_sub(CAPACITY_BLOCK_WARNING_LEAD),
                        CloudEvent::BlockWarning(id.clone()),
                    );
                    self.events.schedule(
                        end.saturating_sub(CAPACITY_BLOCK_RECLAIM_LEAD),
                        CloudEvent::BlockReclaim(id.clone()),
                    );
                }
                (ReservationType::Default, Some(end)) => {
                    self.events.schedule(end, CloudEvent::ReservationEnd(id.clone()));
                }
                (_, None) => {}
            }
            self.reservations.insert(id, reservation);
        }
    }

    /// Every capacity reservation, by id (for oracles and tests).
    pub fn capacity_reservations(&self) -> impl Iterator<Item = &CapacityReservation> {
        self.reservations.values()
    }

    /// DescribeCapacityReservations by ids and filters. An unknown or malformed id fails the
    /// call as EC2 does (`InvalidCapacityReservationId.NotFound` / `.Malformed`); Karpenter's
    /// provider treats the first as "none" (aws `capacityreservation/provider.go` l. 83-87).
    ///
    /// # Errors
    /// The id errors above.
    pub fn describe_capacity_reservations(
        &self,
        ids: &[String],
        filters: &[Filter],
    ) -> ApiResult<Vec<CapacityReservation>> {
        for id in ids {
            if !is_reservation_id(id) {
                return Err(ApiError::client(
                    "InvalidCapacityReservationId.Malformed",
                    format!("Invalid id: \"{id}\" (expecting \"cr-...\")"),
                ));
            }
            if !self.reservations.contains_key(id) {
                return Err(ApiError::client(
                    "InvalidCapacityReservationId.NotFound",
                    format!("The capacity reservation ID '{id}' does not exist"),
                ));
            }
        }
        Ok(self
            .reservations
            .values()
            .filter(|r| (ids.is_empty() || ids.contains(&r.id)) && r.matches(filters, self.now))
            .cloned()
            .collect())
    }

    /// Checks that a launch of `instance_type` in `zone` may go into reservation `id`: it
    /// exists, is active, reserves that type in that zone and has a free slot. A full
    /// reservation answers `ReservationCapacityExceeded`, which Karpenter treats as
    /// insufficient capacity (aws `pkg/errors/errors.go` `unfulfillableCapacityErrorCodes`).
    pub(crate) fn check_reservation(&self, id: &str, instance_type: &str, zone: &str) -> ApiResult<()> {
        let Some(r) = self.reservations.get(id) else {
            return Err(ApiError::client(
                "InvalidCapacityReservationId.NotFound",
                format!("The capacity reservation ID '{id}' does not exist"),
            ));
        };
        if r.state(self.now) != "active" {
            return Err(ApiError::client(
                "InvalidCapacityReservationId.NotFound",
                format!("The capacity reservation '{id}' is not active"),
            ));
        }
        if r.instance_type != instance_type || r.zone != zone {
            return Err(ApiError::client(
                "InvalidParameterCombination",
                format!(
                    "The instance type ({instance_type}) and Availability Zone ({zone}) do not match capacity reservation {id} ({}, {}).",
                    r.instance_type, r.zone
                ),
            ));
        }
        if r.available == 0 {
            return Err(ApiError::client(
                "ReservationCapacityExceeded",
                format!("The requested capacity reservation {id} does not have sufficient capacity."),
            ));
        }
        Ok(())
    }

    /// Takes one slot of reservation `id` for `instance_id` (checked by [`Self::check_reservation`]).
    pub(crate) fn take_reservation(&mut self, id: &str, instance_id: &str) {
        if let Some(r) = self.reservations.get_mut(id) {
            r.available = r.available.saturating_sub(1);
            r.instances.insert(instance_id.to_string());
        }
    }

    /// Gives `instance_id`'s slot back to its reservation when it stops holding capacity.
    pub(crate) fn give_back_reservation(&mut self, instance_id: &str) {
        let Some(id) = self.instances.get(instance_id).and_then(|i| i.capacity_reservation_id.clone()) else {
            return;
        };
        if let Some(r) = self.reservations.get_mut(&id)
            && r.instances.remove(instance_id)
        {
            r.available = (r.available + 1).min(r.total);
        }
    }

    /// EC2 warns, 40 minutes before a capacity block's end, that it ends: from then on its
    /// running instances are known to be taken away at the reclaim (their `reclaim_at`), as a
    /// warned spot instance's is. The warning is an EventBridge event ("Capacity Block
    /// Reservation Expiration Warning") that Karpenter's interruption queue does not subscribe
    /// to (its rules: spot interruption, rebalance, scheduled change, state change, capacity
    /// reservation interruption), so nothing is published to the queue; Karpenter acts on the
    /// block's `expiring` state instead (aws `pkg/controllers/capacityreservation/expiration/
    /// controller.go` l. 47-49, v1.14.1).
    pub(super) fn warn_block(&mut self, id: &str) {
        let Some(r) = self.reservations.get(id) else {
            return;
        };
        let Some(reclaim) = r.end.map(|end| end.saturating_sub(CAPACITY_BLOCK_RECLAIM_LEAD)) else {
            return;
        };
        for instance_id in r.instances.clone() {
            if let Some(i) = self.instances.get_mut(&instance_id)
                && i.state.is_live()
                && i.reclaim_at.is_none()
            {
                i.reclaim_at = Some(reclaim);
            }
        }
    }

    /// EC2 reclaims a capacity block's instances 30 minutes before its end.
    pub(super) fn reclaim_block(&mut self, id: &str) {
        let Some(r) = self.reservations.get(id) else {
            return;
        };
        let victims: Vec<String> = r
            .instances
            .iter()
            .filter(|i| {
                self.instances
                    .get(*i)
                    .is_some_and(|i| matches!(i.state, InstanceState::Pending | InstanceState::Running))
            })
            .cloned()
            .collect();
        for instance in victims {
            self.begin_shutdown(&instance, Some(("Server.ScheduledStop", "Capacity Block reservation ending")));
        }
        if let Some(r) = self.reservations.get_mut(id) {
            r.available = 0;
        }
    }

    /// An on-demand capacity reservation reaches its end date. Its instances are not stopped:
    /// "the instances continue to run normally outside of the Capacity Reservation at standard
    /// On-Demand Instance rates" (EC2 user guide, *Cancel a Capacity Reservation*; an end date
    /// behaves the same). They stop naming it in DescribeInstances (no `capacityReservationId`),
    /// which is what Karpenter's `capacityreservation.capacitytype` controller reads to demote
    /// their NodeClaims to on-demand (aws `pkg/controllers/capacityreservation/capacitytype/
    /// suite_test.go` l. 134-136, v1.14.1, clears `CapacityReservationId` to model exactly this).
    /// Each now holds an ordinary on-demand slot and bills on its own.
    pub(super) fn end_reservation(&mut self, id: &str) {
        let now = self.now;
        let Some(r) = self.reservations.get_mut(id) else {
            return;
        };
        r.available = 0;
        let released = std::mem::take(&mut r.instances);
        for instance_id in released {
            let Some(instance) = self.instances.get_mut(&instance_id) else {
                continue;
            };
            instance.capacity_reservation_id = None;
            if !instance.state.is_live() {
                continue;
            }
            let vcpu = self.catalog.get(&instance.instance_type).map_or(0, |t| t.vcpu);
            let key = crate::capacity::PoolKey::new(&instance.instance_type, &instance.zone, instance.capacity_type);
            // Best effort: the instance keeps running even if the open pool is full.
            let _ = self.pools.take(&key, vcpu, now);
            self.ledger.release_reservation(&instance_id, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::catalog::tests::small;
    use crate::cloud::FakeCloud;
    use crate::config::{CloudConfig, EPOCH_2026};
    use crate::reservations::{MatchCriteria, ReservationSpec, ReservationType};
    use crate::tags::Filter;

    fn cloud(specs: Vec<ReservationSpec>) -> FakeCloud {
        let mut config = CloudConfig::new(7, std::time::UNIX_EPOCH + EPOCH_2026);
        config.capacity_reservations = specs;
        FakeCloud::new(config, small())
    }

    /// Runs one m5.large in us-west-2a through a template that targets reservation `id`.
    fn launch_into(c: &mut FakeCloud, id: &str) -> String {
        let ami = c
            .images
            .parameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
            .expect("ami")
            .to_string();
        c.create_launch_template(crate::cloud::launch_template::LaunchTemplateSpec {
            name: "reserved".into(),
            image_id: Some(ami),
            data: [(crate::cloud::launch::TARGET_KEY.to_string(), id.to_string())].into(),
            ..Default::default()
        })
        .expect("template");
        let out = c
            .run_instances(&crate::cloud::launch::RunInstancesRequest {
                instance_type: Some("m5.large".into()),
                min_count: 1,
                max_count: 1,
                availability_zone: Some("us-west-2a".into()),
                launch_template: Some(crate::cloud::launch_template::LaunchTemplateRef::Name("reserved".into())),
                ..Default::default()
            })
            .expect("launch");
        out.instance_ids[0].clone()
    }

    fn spec(count: u32, kind: ReservationType, end: Option<u64>) -> ReservationSpec {
        ReservationSpec {
            id: Some("cr-0123456789abcdef0".into()),
            instance_type: "m5.large".into(),
            zone: "us-west-2a".into(),
            count,
            match_criteria: MatchCriteria::Targeted,
            owner_id: None,
            end: end.map(Duration::from_secs),
            reservation_type: kind,
            tags: [("team".to_string(), "ml".to_string())].into(),
        }
    }

    #[test]
    fn a_cloud_without_reservations_draws_the_same_ids() {
        let mut a = cloud(Vec::new());
        let mut b = FakeCloud::new(CloudConfig::new(7, std::time::UNIX_EPOCH + EPOCH_2026), small());
        assert_eq!(a.ids.long("i"), b.ids.long("i"));
        assert_eq!(a.capacity_reservations().count(), 0);
    }

    #[test]
    fn describe_filters_and_ids() {
        let c = cloud(vec![spec(2, ReservationType::Default, None)]);
        let all = c.describe_capacity_reservations(&[], &[Filter::new("state", &["active"])]).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].owner_id, "123456789012");
        assert_eq!(all[0].zone_id, "usw2-az1");
        assert!(c.describe_capacity_reservations(&[], &[Filter::new("tag:team", &["web"])]).unwrap().is_empty());
        let err = c.describe_capacity_reservations(&["cr-0000000000000000f".into()], &[]).unwrap_err();
        assert_eq!(err.code, "InvalidCapacityReservationId.NotFound");
        let err = c.describe_capacity_reservations(&["nope".into()], &[]).unwrap_err();
        assert_eq!(err.code, "InvalidCapacityReservationId.Malformed");
    }

    #[test]
    fn a_full_reservation_refuses_and_a_mismatched_launch_is_invalid() {
        let mut c = cloud(vec![spec(1, ReservationType::Default, None)]);
        let id = "cr-0123456789abcdef0";
        assert!(c.check_reservation(id, "m5.large", "us-west-2a").is_ok());
        assert_eq!(c.check_reservation(id, "m5.xlarge", "us-west-2a").unwrap_err().code, "InvalidParameterCombination");
        c.take_reservation(id, "i-1");
        assert_eq!(c.check_reservation(id, "m5.large", "us-west-2a").unwrap_err().code, "ReservationCapacityExceeded");
    }

    #[test]
    fn an_odcrs_end_leaves_its_instances_running_on_demand() {
        let mut c = cloud(vec![spec(2, ReservationType::Default, Some(3600))]);
        assert_eq!(c.pending_events(), 1, "the reservation's end is scheduled");
        let id = "cr-0123456789abcdef0";
        let launched = launch_into(&mut c, id);
        c.advance_to(Duration::from_secs(600));
        assert_eq!(c.instances[&launched].capacity_reservation_id.as_deref(), Some(id));
        c.advance_to(Duration::from_secs(3600));
        let instance = &c.instances[&launched];
        assert!(instance.state.is_live(), "the instance keeps running");
        assert_eq!(instance.capacity_reservation_id, None, "it no longer names the reservation");
        assert!(c.capacity_reservations().next().unwrap().instances.is_empty());
        let record = &c.ledger.records[&launched];
        assert_eq!(record.reservation_released, Some(Duration::from_secs(3600)));
    }

    #[test]
    fn a_capacity_block_expires_and_is_billed_until_its_end() {
        let mut c = cloud(vec![spec(2, ReservationType::CapacityBlock, Some(7200))]);
        assert_eq!(c.pending_events(), 2, "the block's warning and reclaim are scheduled");
        let launched = launch_into(&mut c, "cr-0123456789abcdef0");
        c.advance_to(Duration::from_secs(4799));
        assert_eq!(c.instances[&launched].reclaim_at, None);
        c.advance_to(Duration::from_secs(4800));
        assert_eq!(c.instances[&launched].reclaim_at, Some(Duration::from_secs(5400)), "warned 40 min ahead");
        c.advance_to(Duration::from_secs(5400));
        assert!(!c.instances[&launched].state.is_live(), "reclaimed 30 min ahead");
        c.advance_to(Duration::from_secs(7200));
        let r = c.capacity_reservations().next().unwrap();
        assert_eq!(r.state(c.now()), "expired");
        assert_eq!(r.available, 0);
        assert!(c.describe_capacity_reservations(&[], &[Filter::new("state", &["active"])]).unwrap().is_empty());
        let report = c.cost_report();
        assert!((report.total_by_capacity_type["reserved"] - 2.0 * 2.0 * 0.096).abs() < 1e-9);
    }
}
