//! The capacity reservation provider (aws `pkg/providers/capacityreservation/`, v1.14.1):
//! resolves `capacityReservationSelectorTerms` through DescribeCapacityReservations and keeps
//! the count of instances each reservation can still take, as EC2 last reported it and as
//! launches and terminations since have changed it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use aws_sdk_ec2::types::Filter;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::apis::ec2nodeclass::{
    CapacityReservation, CapacityReservationSelectorTerm, CapacityReservationState, CapacityReservationType,
    InstanceMatchCriteria,
};
use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::errors::classify;

/// A capacity block is `expiring` this long before its end (aws `apis/v1/ec2nodeclass_status.go`
/// l. 238 `capacityReservationExpirationPeriod`): Karpenter drains its nodes from then on, ten
/// minutes before EC2 begins reclaiming them.
pub const EXPIRATION_PERIOD: std::time::Duration = std::time::Duration::from_secs(40 * 60);

/// One DescribeCapacityReservations query (aws `capacityreservation/types.go` l. 34-58
/// `QueriesFromSelectorTerms`): an id term is a query by id; a term with tags or match
/// criteria is a filtered query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// By id.
    pub id: Option<String>,
    /// `owner-id`.
    pub owner_id: Option<String>,
    /// `tag:K` / `tag-key`.
    pub tags: BTreeMap<String, String>,
    /// `instance-match-criteria`.
    pub instance_match_criteria: Option<InstanceMatchCriteria>,
}

/// The queries of a class's terms, in term order.
pub fn queries(terms: &[CapacityReservationSelectorTerm]) -> Vec<Query> {
    let mut out = Vec::new();
    for term in terms {
        if let Some(id) = &term.id {
            out.push(Query {
                id: Some(id.clone()),
                owner_id: None,
                tags: BTreeMap::new(),
                instance_match_criteria: None,
            });
        }
        let tags = term.tags.clone().unwrap_or_default();
        if !tags.is_empty() || term.instance_match_criteria.is_some() {
            out.push(Query {
                id: None,
                owner_id: term.owner_id.clone(),
                tags,
                instance_match_criteria: term.instance_match_criteria,
            });
        }
    }
    out
}

impl Query {
    /// The filters of the query (aws `types.go` l. 67-107): always `state=active`, then owner,
    /// tags (`*` means any value) and match criteria.
    pub fn filters(&self) -> Vec<Filter> {
        let mut filters = vec![Filter::builder().name("state").values("active").build()];
        if self.id.is_some() {
            return filters;
        }
        if let Some(owner) = &self.owner_id {
            filters.push(Filter::builder().name("owner-id").values(owner).build());
        }
        for (key, value) in &self.tags {
            filters.push(if value == "*" {
                Filter::builder().name("tag-key").values(key).build()
            } else {
                Filter::builder().name(format!("tag:{key}")).values(value).build()
            });
        }
        if let Some(criteria) = self.instance_match_criteria {
            let name = match criteria {
                InstanceMatchCriteria::Open => "open",
                InstanceMatchCriteria::Targeted => "targeted",
            };
            filters.push(Filter::builder().name("instance-match-criteria").values(name).build());
        }
        filters
    }
}

/// A reservation as EC2 described it, turned into the status form (aws `ec2nodeclass_status.go`
/// l. 237-276 `CapacityReservationFromEC2`). `None` for match criteria or types Karpenter does not
/// know, which it skips.
pub fn from_ec2(
    r: &aws_sdk_ec2::types::CapacityReservation,
    now: std::time::SystemTime,
) -> Option<CapacityReservation> {
    let criteria = match r.instance_match_criteria()?.as_str() {
        "open" => InstanceMatchCriteria::Open,
        "targeted" => InstanceMatchCriteria::Targeted,
        _ => return None,
    };
    let reservation_type = match r.reservation_type().map_or("default", |t| t.as_str()) {
        "default" => CapacityReservationType::Default,
        "capacity-block" => CapacityReservationType::CapacityBlock,
        _ => return None,
    };
    let end = r.end_date().and_then(|d| std::time::SystemTime::try_from(*d).ok());
    let expiring = reservation_type == CapacityReservationType::CapacityBlock
        && end.is_some_and(|end| now + EXPIRATION_PERIOD >= end);
    Some(CapacityReservation {
        availability_zone: r.availability_zone()?.to_owned(),
        end_time: end.and_then(|e| jiff::Timestamp::try_from(e).ok()).map(Time),
        id: r.capacity_reservation_id()?.to_owned(),
        instance_match_criteria: criteria,
        instance_type: r.instance_type()?.to_owned(),
        interruptible: Some(r.interruptible().unwrap_or(false)),
        owner_id: r.owner_id()?.to_owned(),
        reservation_type: Some(reservation_type),
        state: Some(if expiring { CapacityReservationState::Expiring } else { CapacityReservationState::Active }),
    })
}

/// How many instances each reservation can still take (aws `capacityreservation/types.go`
/// l. 110-200 `availabilityCache`). Synced from DescribeCapacityReservations; a launch takes
/// one, a termination gives one back, an insufficient-capacity error empties it.
#[derive(Debug, Default)]
pub struct Availability {
    counts: Mutex<BTreeMap<String, u32>>,
}

impl Availability {
    /// Records EC2's counts (`syncAvailability`).
    pub fn sync(&self, counts: impl IntoIterator<Item = (String, u32)>) {
        self.counts.lock().expect("availability").extend(counts);
    }

    /// The count for `id` (0 when never synced).
    pub fn count(&self, id: &str) -> u32 {
        self.counts.lock().expect("availability").get(id).copied().unwrap_or(0)
    }

    /// One instance launched into `id` (`MarkLaunched`).
    pub fn mark_launched(&self, id: &str) {
        if let Some(c) = self.counts.lock().expect("availability").get_mut(id) {
            *c = c.saturating_sub(1);
        }
    }

    /// One instance of `id` terminated (`MarkTerminated`; overestimating is preferred).
    pub fn mark_terminated(&self, id: &str) {
        if let Some(c) = self.counts.lock().expect("availability").get_mut(id) {
            *c += 1;
        }
    }

    /// EC2 refused a launch into `id` (`MarkUnavailable`).
    pub fn mark_unavailable(&self, id: &str) {
        if let Some(c) = self.counts.lock().expect("availability").get_mut(id) {
            *c = 0;
        }
    }
}

/// Resolves `terms` (aws `provider.go` l. 62-98 `List`): every query, deduplicated by id, the
/// counts synced into `availability`, sorted by id so the status is stable. A query by an id
/// EC2 does not know yields nothing rather than an error.
///
/// # Errors
/// Any other EC2 error.
pub async fn resolve(
    ec2: &aws_sdk_ec2::Client,
    terms: &[CapacityReservationSelectorTerm],
    availability: &Availability,
    now: std::time::SystemTime,
) -> Result<Vec<CapacityReservation>, CloudError> {
    let mut found: BTreeMap<String, CapacityReservation> = BTreeMap::new();
    for query in queries(terms) {
        let mut request = ec2.describe_capacity_reservations().set_filters(Some(query.filters()));
        request = match &query.id {
            Some(id) => request.capacity_reservation_ids(id),
            None => request.max_results(1000),
        };
        let output = match request.send().await {
            Ok(output) => output,
            Err(e) => {
                let error = classify(&e);
                if matches!(error, CloudError::NotFound(_)) {
                    continue;
                }
                return Err(error);
            }
        };
        let described = output.capacity_reservations();
        availability.sync(described.iter().filter_map(|r| {
            Some((r.capacity_reservation_id()?.to_owned(), u32::try_from(r.available_instance_count()?).ok()?))
        }));
        for r in described {
            if let Some(reservation) = from_ec2(r, now) {
                found.insert(reservation.id.clone(), reservation);
            }
        }
    }
    // Expired reservations are dropped (aws `provider.go` l. 113-124 `filterReservations`).
    Ok(found
        .into_values()
        .filter(|r| r.end_time.as_ref().is_none_or(|t| std::time::SystemTime::from(t.0) > now))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_term_and_a_tag_term_are_separate_queries() {
        let terms = vec![
            CapacityReservationSelectorTerm { id: Some("cr-0123456789abcdef0".into()), ..Default::default() },
            CapacityReservationSelectorTerm {
                tags: Some([("team".to_string(), "*".to_string())].into()),
                owner_id: Some("123456789012".into()),
                ..Default::default()
            },
        ];
        let q = queries(&terms);
        assert_eq!(q.len(), 2);
        assert_eq!(q[0].filters().len(), 1, "an id query filters on state only");
        let names: Vec<String> = q[1].filters().iter().filter_map(|f| f.name().map(str::to_owned)).collect();
        assert_eq!(names, ["state", "owner-id", "tag-key"]);
    }

    #[test]
    fn availability_follows_launches_terminations_and_refusals() {
        let a = Availability::default();
        a.sync([("cr-1".to_string(), 2)]);
        a.mark_launched("cr-1");
        assert_eq!(a.count("cr-1"), 1);
        a.mark_terminated("cr-1");
        assert_eq!(a.count("cr-1"), 2);
        a.mark_unavailable("cr-1");
        assert_eq!(a.count("cr-1"), 0);
        a.mark_launched("cr-unknown");
        assert_eq!(a.count("cr-unknown"), 0);
    }

    #[test]
    fn a_capacity_block_is_expiring_forty_minutes_before_its_end() {
        let now = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let block = |end_in: u64| {
            aws_sdk_ec2::types::CapacityReservation::builder()
                .capacity_reservation_id("cr-0123456789abcdef0")
                .instance_type("m5.large")
                .availability_zone("us-east-1a")
                .owner_id("123456789012")
                .instance_match_criteria(aws_sdk_ec2::types::InstanceMatchCriteria::Targeted)
                .reservation_type(aws_sdk_ec2::types::CapacityReservationType::CapacityBlock)
                .end_date(aws_sdk_ec2::primitives::DateTime::from(now + std::time::Duration::from_secs(end_in)))
                .build()
        };
        assert_eq!(from_ec2(&block(2401), now).and_then(|r| r.state), Some(CapacityReservationState::Active));
        assert_eq!(from_ec2(&block(2400), now).and_then(|r| r.state), Some(CapacityReservationState::Expiring));
    }
}
