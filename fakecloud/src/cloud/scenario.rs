//! Switches and scripts a scenario uses while the cloud runs: faults, admission control,
//! capacity, prices, storms, outages, maintenance, AMI releases, quotas.

use std::time::Duration;

use rand::Rng;

use super::FakeCloud;
use crate::capacity::PoolKey;
use crate::error::{ApiError, ApiResult, Error, Result};
use crate::events::CloudEvent;
use crate::faults::{Faults, SpotStorm};
use crate::ledger::ApiCall;
use crate::node_auth::NodeAuth;
use crate::sqs::{DEFAULT_VISIBILITY, INTERRUPTION_QUEUE_RETENTION};
use crate::status_checks::{EVENT_CODES, StatusCheck};
use crate::throttle::Throttle;

impl FakeCloud {
    // ---------------------------------------------------------------- faults

    /// The faults currently switched on.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Replaces the faults. Throttle buckets start full whenever throttling is (re)configured.
    pub fn set_faults(&mut self, faults: Faults) {
        if faults.throttling != self.faults.throttling {
            self.throttle = faults.throttling.clone().map(Throttle::new);
        }
        self.faults = faults;
    }

    /// Whether `instance_id`'s kubelet may register its Node now: its network reaches the
    /// cluster endpoint (its subnet has a route, its security groups the cluster's rules)
    /// and the IAM role of its launch template's instance profile has an access entry in
    /// the cluster (the fake cloud has no IAM; a profile carries the role it is named
    /// after, as the controller creates them). A refusal, with its cause, and a later join
    /// of a refused instance, are recorded in [`Self::node_auth`].
    pub fn authenticate_node(&mut self, instance_id: &str) -> bool {
        let Some(instance) = self.instances.get(instance_id) else {
            self.node_auth.joined(instance_id, self.now);
            return true;
        };
        let cause = if self.faults.unreachable_subnets.contains(&instance.subnet_id) {
            Some(format!("subnet {} ({}) has no route to the cluster endpoint", instance.subnet_id, instance.zone))
        } else if let Some(sg) =
            instance.security_group_ids.iter().find(|sg| self.faults.unreachable_security_groups.contains(*sg))
        {
            Some(format!("security group {sg} does not allow the cluster endpoint"))
        } else {
            instance
                .launch_template_id
                .as_ref()
                .and_then(|lt| self.launch_templates.values().find(|t| &t.id == lt))
                .and_then(|t| t.data.get("IamInstanceProfile.Name").or_else(|| t.data.get("IamInstanceProfile.Arn")))
                .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
                .filter(|role| self.faults.missing_access_entries.contains(role))
                .map(|role| format!("role {role} has no access entry in the cluster"))
        };
        match cause {
            Some(cause) => {
                self.node_auth.refuse(instance_id, &cause, self.now);
                false
            }
            None => {
                self.node_auth.joined(instance_id, self.now);
                true
            }
        }
    }

    /// The kubelets EKS refused, and which of them joined later.
    pub fn node_auth(&self) -> &NodeAuth {
        &self.node_auth
    }

    /// Admission control for a call to a service other than EC2, SQS and SSM (the Price List
    /// API): only scripted errors apply. `ec2Throttling` and `ec2Errors` model EC2's own
    /// limits and brownouts, and the Price List API is a separate regional service.
    pub fn admit_scripted(&mut self, action: &str) -> ApiResult<()> {
        if let Some(pos) = self.faults.scripted.iter().position(|s| s.count > 0 && s.action.as_deref() == Some(action))
        {
            let s = &mut self.faults.scripted[pos];
            s.count -= 1;
            let err = ApiError::server(&s.code, format!("Injected {} for {action}.", s.code), s.status);
            self.faults.scripted.retain(|s| s.count > 0);
            return Err(err);
        }
        Ok(())
    }

    /// Re-prices `instance_type` on demand from now on: billing, CreateFleet's
    /// lowest-price order and the Price List API all read the new price (an AWS price
    /// change; the catalog is otherwise fixed while the cloud runs).
    ///
    /// # Errors
    /// An unknown instance type.
    pub fn set_on_demand_price(&mut self, instance_type: &str, price: f64) -> crate::error::Result<()> {
        let spot = self.catalog.get(instance_type).and_then(|t| t.spot_price_estimate);
        self.catalog.set_prices(instance_type, Some(price), spot)
    }

    /// Admission control for one wire call of `action`: scripted errors, throttling, then
    /// random server errors. Direct Rust calls from the world skip this.
    pub fn admit(&mut self, action: &str) -> ApiResult<()> {
        if let Some(pos) =
            self.faults.scripted.iter().position(|s| s.count > 0 && s.action.as_deref().is_none_or(|a| a == action))
        {
            let s = &mut self.faults.scripted[pos];
            s.count -= 1;
            let err = ApiError::server(&s.code, format!("Injected {} for {action}.", s.code), s.status);
            self.faults.scripted.retain(|s| s.count > 0);
            return Err(err);
        }
        if let Some(throttle) = self.throttle.as_mut()
            && !throttle.admit(action, self.now)
        {
            return Err(ApiError::throttled(action));
        }
        if self.faults.server_error_rate > 0.0 && !action.starts_with("SQS.") {
            let u: f64 = self.rng_faults.random();
            if u < self.faults.server_error_rate {
                return Err(if u < self.faults.server_error_rate / 2.0 {
                    ApiError::server("InternalError", "An internal error has occurred", 500)
                } else {
                    ApiError::server("ServiceUnavailable", "Service Unavailable", 503)
                });
            }
        }
        Ok(())
    }

    /// Appends to the API call log.
    pub fn log_call(&mut self, action: &str, outcome: Option<&ApiError>) {
        self.ledger.calls.push(ApiCall {
            at: self.now,
            action: action.to_string(),
            outcome: outcome.map_or_else(|| "OK".to_string(), |e| e.code.clone()),
        });
    }

    // ---------------------------------------------------------------- scenario controls

    /// Sets one capacity pool (free slots, size, refill period; `None` = never refills).
    pub fn set_pool(&mut self, key: &PoolKey, free: u32, size: u32, refill_period: Option<Duration>) {
        self.pools.set(key, free, size, refill_period, self.now);
    }

    /// Free slots of a pool now.
    pub fn pool_free(&mut self, key: &PoolKey) -> u32 {
        let vcpu = self.catalog.get(&key.instance_type).map_or(2, |t| t.vcpu);
        self.pools.free(key, vcpu, self.now)
    }

    /// One pool's state now, so a scenario can restore it after an ICE fault.
    pub fn pool(&mut self, key: &PoolKey) -> crate::capacity::Pool {
        let vcpu = self.catalog.get(&key.instance_type).map_or(2, |t| t.vcpu);
        self.pools.snapshot(key, vcpu, self.now)
    }

    /// Pins a pool's spot price from `from` on.
    pub fn pin_spot_price(&mut self, instance_type: &str, zone: &str, from: Duration, price: f64) {
        self.market.pin_price(instance_type, zone, from, price);
    }

    /// The spot price of a pool at `at`.
    pub fn spot_price(&self, instance_type: &str, zone: &str, at: Duration) -> Option<f64> {
        self.market.price(self.catalog.get(instance_type)?, zone, at)
    }

    /// Free slots of an offering's capacity pool now, without changing the cloud (an
    /// observer's view: zero means the offering is out of capacity).
    pub fn peek_pool_free(&self, key: &PoolKey) -> u32 {
        let vcpu = self.catalog.get(&key.instance_type).map_or(2, |t| t.vcpu);
        self.pools.peek_free(key, vcpu, self.now)
    }

    /// Whether `zone` is in a zone outage now (nothing launches there).
    pub fn zone_in_outage(&self, zone: &str) -> bool {
        self.zone_outages.contains(zone)
    }

    /// Schedules a spot storm.
    pub fn schedule_spot_storm(&mut self, at: Duration, storm: SpotStorm) {
        self.events.schedule(at, CloudEvent::Storm(storm));
    }

    /// Issues the spot interruption warning for one instance at `at` (reclaimed `spot_notice` later),
    /// optionally preceded by a rebalance recommendation at the same instant.
    pub fn schedule_spot_interruption(&mut self, instance_id: &str, at: Duration, rebalance_first: bool) {
        if rebalance_first {
            self.events.schedule(at, CloudEvent::Rebalance(instance_id.to_string()));
        }
        self.events.schedule(at, CloudEvent::SpotWarning(instance_id.to_string()));
    }

    /// Schedules an AWS Health scheduled-change notice for an instance at `at`, announcing
    /// maintenance starting at `start`.
    pub fn schedule_maintenance(&mut self, instance_id: &str, at: Duration, start: Duration) {
        self.events.schedule(at, CloudEvent::ScheduledChange { instance_id: instance_id.to_string(), start });
    }

    /// Schedules an AZ outage: from `start`, running instances in the zone stop and launches
    /// there fail with `InsufficientInstanceCapacity`; from `end`, launches work again.
    pub fn schedule_zone_outage(&mut self, zone: &str, start: Duration, end: Option<Duration>) -> Result<()> {
        if self.catalog.zone(zone).is_none() {
            return Err(Error::Unknown { kind: "zone", name: zone.to_string() });
        }
        self.events.schedule(start, CloudEvent::ZoneOutageStart(zone.to_string()));
        if let Some(end) = end {
            self.events.schedule(end, CloudEvent::ZoneOutageEnd(zone.to_string()));
        }
        Ok(())
    }

    /// Ends a zone outage at `at` (for outages scheduled without an end).
    pub fn schedule_zone_outage_end(&mut self, zone: &str, at: Duration) {
        self.events.schedule(at, CloudEvent::ZoneOutageEnd(zone.to_string()));
    }

    /// Keeps the cluster's subnets to `zones`: subnets elsewhere lose their tags, so no
    /// subnet selector finds them (a cluster whose VPC spans fewer zones than the region).
    pub fn restrict_subnets_to_zones(&mut self, zones: &[String]) {
        for subnet in self.network.subnets.values_mut() {
            if !zones.contains(&subnet.zone) {
                subnet.tags = Default::default();
            }
        }
    }

    /// Creates the interruption queue (300 s retention, as Karpenter's CloudFormation does)
    /// and routes EventBridge messages to it. Returns its URL path (`/<account>/<name>`).
    pub fn create_interruption_queue(&mut self, name: &str) -> String {
        self.sqs.create_queue(name, INTERRUPTION_QUEUE_RETENTION, DEFAULT_VISIBILITY);
        self.interruption_queue = Some(name.to_string());
        format!("/{}/{name}", self.config.account_id)
    }

    /// Releases a new AMI version (drift): new images, `recommended` SSM parameters repointed.
    pub fn release_ami(&mut self, version: &str) -> Vec<String> {
        let now = self.now;
        self.images.release(&mut self.ids, version, now)
    }

    /// Sets a subnet's free IP count.
    pub fn set_subnet_free_ips(&mut self, subnet_id: &str, free: u32) -> Result<()> {
        let s = self
            .network
            .subnets
            .get_mut(subnet_id)
            .ok_or_else(|| Error::Unknown { kind: "subnet", name: subnet_id.to_string() })?;
        s.free_ips = free;
        Ok(())
    }

    /// Marks an instance as failing (or passing again) its instance and system status
    /// checks, as a hardware fault would; DescribeInstanceStatus then reports it `impaired`.
    pub fn set_instance_impaired(&mut self, instance_id: &str, impaired: bool) -> Result<()> {
        self.set_status_check(instance_id, StatusCheck::Instance, impaired)?;
        self.set_status_check(instance_id, StatusCheck::System, impaired)
    }

    /// Fails one status check of an instance from now (keeping an earlier failure's time), or
    /// passes it again.
    pub fn set_status_check(&mut self, instance_id: &str, check: StatusCheck, impaired: bool) -> Result<()> {
        let now = self.now;
        let i = self
            .instances
            .get_mut(instance_id)
            .ok_or_else(|| Error::Unknown { kind: "instance", name: instance_id.to_string() })?;
        i.status_checks.set(check, impaired, now);
        Ok(())
    }

    /// Lists a scheduled event on an instance in DescribeInstanceStatus, from now until
    /// `not_after`, without publishing anything to the interruption queue (an event whose
    /// EventBridge notification is not routed to it). Returns the event's id.
    pub fn add_scheduled_event(&mut self, instance_id: &str, code: &str, not_after: Duration) -> Result<String> {
        if !EVENT_CODES.contains(&code) {
            return Err(Error::Unknown { kind: "scheduled event code", name: code.to_string() });
        }
        if !self.instances.contains_key(instance_id) {
            return Err(Error::Unknown { kind: "instance", name: instance_id.to_string() });
        }
        let event = crate::instance::ScheduledEvent {
            id: self.ids.long("instance-event"),
            code: code.to_string(),
            not_before: self.now,
            not_after,
        };
        let id = event.id.clone();
        if let Some(i) = self.instances.get_mut(instance_id) {
            i.scheduled_events.push(event);
        }
        Ok(id)
    }

    /// Removes a scheduled event (the maintenance is done or cancelled); unknown ids are ignored.
    pub fn remove_scheduled_event(&mut self, instance_id: &str, event_id: &str) {
        if let Some(i) = self.instances.get_mut(instance_id) {
            i.scheduled_events.retain(|e| e.id != event_id);
        }
    }

    /// Sets the account's vCPU quotas.
    pub fn set_vcpu_quotas(&mut self, on_demand: u32, spot: u32) {
        self.config.vcpu_quota_on_demand = on_demand;
        self.config.vcpu_quota_spot = spot;
    }
}
