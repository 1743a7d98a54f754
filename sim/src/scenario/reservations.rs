//! `capacityReservations:` — the capacity reservations the fake cloud's account holds from
//! instant zero: on-demand capacity reservations (`type: default`) and capacity blocks
//! (`type: capacity-block`, which need `endsAt`).
//!
//! ```yaml
//! capacityReservations:
//!   - id: cr-0123456789abcdef0     # optional (cr- and 17 hex digits); drawn by the cloud when omitted
//!     instanceType: m5.large       # must exist in the region
//!     zone: us-east-1a             # one of the scenario's zones
//!     count: 3                     # instances reserved (1 or more)
//!     matchCriteria: targeted      # open (default) or targeted
//!     type: default                # default (ODCR, the default) or capacity-block
//!     ownerId: "123456789012"      # default: the cloud's account
//!     endsAt: 40m                  # simulated time it ends (required for capacity blocks)
//!     tags: {team: ml}             # what capacityReservationSelectorTerms[].tags select on
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::SimDuration;
use super::error::FieldError;
use dovetail_fakecloud::{Catalog, MatchCriteria, ReservationSpec, ReservationType, is_reservation_id};

/// One `capacityReservations[]` entry.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Reservation {
    /// `cr-…`; drawn by the cloud when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Instance type reserved.
    pub instance_type: String,
    /// Zone.
    pub zone: String,
    /// Instances reserved.
    pub count: u32,
    /// `open` (default) or `targeted`.
    #[serde(default)]
    pub match_criteria: Criteria,
    /// `default` (ODCR) or `capacity-block`.
    #[serde(default, rename = "type")]
    pub kind: Kind,
    /// Owning account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_id: Option<String>,
    /// When it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<SimDuration>,
    /// Tags.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

/// `matchCriteria`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Criteria {
    /// Any matching on-demand launch (EC2's default).
    #[default]
    Open,
    /// Only launches that name it.
    Targeted,
}

/// `type`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub enum Kind {
    /// An on-demand capacity reservation.
    #[default]
    #[serde(rename = "default")]
    Default,
    /// A capacity block for ML.
    #[serde(rename = "capacity-block")]
    CapacityBlock,
}

impl Reservation {
    /// Checks what the types cannot: the id's shape, the type and zone, the count, and a
    /// capacity block's end. Paths are relative to the entry.
    pub fn validate(&self, catalog: &Catalog, zones: &[String], duration: SimDuration) -> Result<(), FieldError> {
        if let Some(id) = &self.id
            && !is_reservation_id(id)
        {
            return Err(FieldError::new(
                "id",
                format!("`{id}` is not a reservation id (cr- and 17 lowercase hex digits)"),
            ));
        }
        if catalog.get(&self.instance_type).is_none() {
            return Err(FieldError::new("instanceType", format!("unknown instance type in {}", catalog.region())));
        }
        if !zones.contains(&self.zone) {
            return Err(FieldError::new(
                "zone",
                format!("`{}` is not one of the scenario's zones ({})", self.zone, zones.join(", ")),
            ));
        }
        if !catalog.is_offered(&self.instance_type, &self.zone) {
            return Err(FieldError::new("zone", format!("{} is not offered in {}", self.instance_type, self.zone)));
        }
        if self.count == 0 {
            return Err(FieldError::new("count", "a reservation holds 1 or more instances"));
        }
        match (self.kind, self.ends_at) {
            (Kind::CapacityBlock, None) => {
                return Err(FieldError::new("endsAt", "a capacity block needs an end time"));
            }
            (_, Some(end)) if end.0.is_zero() || end > duration => {
                return Err(FieldError::new(
                    "endsAt",
                    format!("{end} must be after 0s and no later than the scenario's duration {duration}"),
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// The fake cloud's form.
    pub fn spec(&self) -> ReservationSpec {
        ReservationSpec {
            id: self.id.clone(),
            instance_type: self.instance_type.clone(),
            zone: self.zone.clone(),
            count: self.count,
            match_criteria: match self.match_criteria {
                Criteria::Open => MatchCriteria::Open,
                Criteria::Targeted => MatchCriteria::Targeted,
            },
            owner_id: self.owner_id.clone(),
            end: self.ends_at.map(|d| d.0),
            reservation_type: match self.kind {
                Kind::Default => ReservationType::Default,
                Kind::CapacityBlock => ReservationType::CapacityBlock,
            },
            tags: self.tags.clone(),
        }
    }
}

/// Checks every entry (paths `capacityReservations[i].field`) and that ids are unique.
pub fn validate_all(
    reservations: &[Reservation],
    catalog: &Catalog,
    zones: &[String],
    duration: SimDuration,
) -> Result<(), FieldError> {
    let mut seen = BTreeMap::new();
    for (i, r) in reservations.iter().enumerate() {
        r.validate(catalog, zones, duration).map_err(|e| e.within(format!("capacityReservations[{i}]")))?;
        if let Some(id) = &r.id
            && let Some(first) = seen.insert(id.clone(), i)
        {
            return Err(FieldError::new(
                format!("capacityReservations[{i}].id"),
                format!("`{id}` is already the id of capacityReservations[{first}]"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::scenario::Loaded;

    const BASE: &str = "name: r\nduration: 40m\nzones: [us-east-1a, us-east-1b]\ncapacityReservations:\n";

    fn load(entries: &str) -> Result<Loaded, String> {
        Loaded::from_str(Path::new("r.yaml"), &format!("{BASE}{entries}")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_good_reservation_loads_into_the_clouds_form() {
        let loaded = load(
            "  - {instanceType: m5.large, zone: us-east-1a, count: 3, matchCriteria: targeted, tags: {team: web}}\n",
        )
        .expect("loads");
        let spec = loaded.scenario.capacity_reservations[0].spec();
        assert_eq!(spec.count, 3);
        assert_eq!(spec.match_criteria, dovetail_fakecloud::MatchCriteria::Targeted);
        assert_eq!(spec.reservation_type, dovetail_fakecloud::ReservationType::Default);
        assert_eq!(spec.end, None);
    }

    #[test]
    fn bad_entries_name_the_file_line_and_field() {
        let err = load("  - {instanceType: m5.large, zone: us-east-1a, count: 1}\n  - instanceType: m5.large\n    zone: us-east-1c\n    count: 1\n")
            .unwrap_err();
        assert!(err.starts_with("r.yaml: line 7: capacityReservations[1].zone: `us-east-1c` is not one of"), "{err}");
        let err = load("  - {instanceType: m5.large, zone: us-east-1a, count: 1, type: capacity-block}\n").unwrap_err();
        assert!(err.contains("capacityReservations[0].endsAt: a capacity block needs an end time"), "{err}");
        let err = load("  - {instanceType: m9.huge, zone: us-east-1a, count: 1}\n").unwrap_err();
        assert!(err.contains("capacityReservations[0].instanceType: unknown instance type in us-east-1"), "{err}");
        let err = load("  - {id: cr-1, instanceType: m5.large, zone: us-east-1a, count: 1}\n").unwrap_err();
        assert!(err.contains("capacityReservations[0].id: `cr-1` is not a reservation id"), "{err}");
        let err = load("  - {instanceType: m5.large, zone: us-east-1a, count: 0}\n").unwrap_err();
        assert!(err.contains("capacityReservations[0].count"), "{err}");
        let err = load("  - {instanceType: m5.large, zone: us-east-1a, count: 1, endsAt: 41m}\n").unwrap_err();
        assert!(err.contains("capacityReservations[0].endsAt: 41m"), "{err}");
        let err =
            load("  - {instanceType: m5.large, zone: us-east-1a, count: 1, matchCriteria: closed}\n").unwrap_err();
        assert!(err.contains("closed"), "serde names the bad value: {err}");
    }
}
