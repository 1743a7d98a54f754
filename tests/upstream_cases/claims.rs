//! Expectations about one planned NodeClaim (a provisioning claim or a consolidation
//! replacement), and the node core's fake cloud provider would launch for it
//! (`pkg/cloudprovider/fake/cloudprovider.go` `Create`: the compatible instance type with the
//! cheapest available offering, then the first compatible available offering in list order,
//! labels from the type's single-valued requirements, the offering and the claim).

use std::collections::{BTreeMap, BTreeSet};

use dovetail_controller::apis::labels::{CAPACITY_TYPE_LABEL, TOPOLOGY_ZONE_LABEL};
use dovetail_controller::scheduling::PlannedNodeClaim;
use serde::Deserialize;

use super::scene::Built;

/// What a planned claim must look like; every field set is checked.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimExpect {
    /// Selects the claim holding the first of these pods (provisioning only) and requires it
    /// holds all of them.
    #[serde(default)]
    pub pods: Option<Vec<String>>,
    /// Number of pods on it.
    #[serde(default)]
    pub pod_count: Option<usize>,
    /// Owning NodePool.
    #[serde(default)]
    pub pool: Option<String>,
    /// Exactly these instance-type options.
    #[serde(default)]
    pub instance_types: Option<Vec<String>>,
    /// These options among others.
    #[serde(default)]
    pub includes: Vec<String>,
    /// None of these options.
    #[serde(default)]
    pub excludes: Vec<String>,
    /// Number of options.
    #[serde(default)]
    pub instance_type_count: Option<usize>,
    /// Requirement key → exactly these allowed values (`In`).
    #[serde(default)]
    pub requirements: BTreeMap<String, Vec<String>>,
    /// Requirement key → at least this `minValues`.
    #[serde(default)]
    pub min_values: BTreeMap<String, usize>,
    /// Label → value on the node the fake cloud would launch.
    #[serde(default)]
    pub launched: BTreeMap<String, String>,
    /// Hourly price of the offering the fake cloud would launch.
    #[serde(default)]
    pub launched_price: Option<f64>,
    /// Label → value every instance-type option carries (core `ExpectInstancesWithLabel`).
    #[serde(default)]
    pub every_option: BTreeMap<String, String>,
}

impl ClaimExpect {
    /// The failed expectations.
    pub fn check(&self, claim: &PlannedNodeClaim, built: &Built) -> Result<Vec<String>, String> {
        let mut failures = Vec::new();
        let options: BTreeSet<&str> = claim.instance_type_options.iter().map(|it| it.name.as_str()).collect();
        if let Some(pods) = &self.pods {
            for pod in built.expand(pods)? {
                if !claim.pods.contains(&format!("default/{pod}")) {
                    failures.push(format!("{pod} not on it"));
                }
            }
        }
        if let Some(n) = self.pod_count
            && claim.pods.len() != n
        {
            failures.push(format!("{} pods, expected {n}", claim.pods.len()));
        }
        if let Some(pool) = &self.pool
            && claim.node_pool != *pool
        {
            failures.push(format!("pool {}, expected {pool}", claim.node_pool));
        }
        if let Some(types) = &self.instance_types {
            let wanted: BTreeSet<&str> = types.iter().map(String::as_str).collect();
            if wanted != options {
                failures.push(format!("instance types {options:?}, expected {wanted:?}"));
            }
        }
        for name in &self.includes {
            if !options.contains(name.as_str()) {
                failures.push(format!("options {options:?} lack {name}"));
            }
        }
        for name in &self.excludes {
            if options.contains(name.as_str()) {
                failures.push(format!("options include {name}"));
            }
        }
        if let Some(n) = self.instance_type_count
            && options.len() != n
        {
            failures.push(format!("{} instance types, expected {n}", options.len()));
        }
        let requirements = claim.node_claim_requirements();
        for (key, values) in &self.requirements {
            let wanted: BTreeSet<&str> = values.iter().map(String::as_str).collect();
            match requirements.get(key) {
                Some(r)
                    if !r.is_complement()
                        && r.values().iter().map(String::as_str).collect::<BTreeSet<_>>() == wanted => {}
                other => failures.push(format!("requirement {key} is {other:?}, expected In {wanted:?}")),
            }
        }
        for (key, min) in &self.min_values {
            let found = claim.requirements.get(key).and_then(|r| r.min_values);
            if found.is_none_or(|m| m < *min) {
                failures.push(format!("minValues of {key} is {found:?}, expected {min}"));
            }
        }
        let (launched, price) = launch(claim);
        if let Some(wanted) = self.launched_price
            && price.is_none_or(|p| (p - wanted).abs() > 1e-9)
        {
            failures.push(format!("launched price {price:?}, expected {wanted}"));
        }
        for (key, value) in &self.every_option {
            for it in &claim.instance_type_options {
                if it.requirements.get(key).is_none_or(|r| r.single_value() != Some(value.as_str())) {
                    failures.push(format!("option {} lacks {key}={value}", it.name));
                }
            }
        }
        for (key, value) in &self.launched {
            if launched.get(key) != Some(value) {
                failures.push(format!("launched {key}={:?}, expected {value}", launched.get(key)));
            }
        }
        Ok(failures)
    }
}

/// The labels of the node core's fake cloud provider would launch for `claim`.
pub fn launched_labels(claim: &PlannedNodeClaim) -> BTreeMap<String, String> {
    launch(claim).0
}

/// The labels and offering price of the node core's fake cloud provider would launch.
fn launch(claim: &PlannedNodeClaim) -> (BTreeMap<String, String>, Option<f64>) {
    let requirements = &claim.requirements;
    let cheapest = claim
        .instance_type_options
        .iter()
        .filter_map(|it| it.cheapest_offering(requirements).map(|o| (it, o.price)))
        .fold(None, |best: Option<(&std::sync::Arc<_>, f64)>, (it, price)| match best {
            Some((_, p)) if p <= price => best,
            _ => Some((it, price)),
        });
    let mut labels = BTreeMap::new();
    let Some((it, _)) = cheapest else { return (labels, None) };
    labels.extend(it.requirements.single_valued_labels());
    labels.extend(claim.requirements.single_valued_labels());
    let offering = it.offerings.iter().find(|o| o.available && o.is_compatible(requirements));
    if let Some(offering) = offering {
        labels.insert(TOPOLOGY_ZONE_LABEL.to_owned(), offering.zone.clone());
        labels.insert(CAPACITY_TYPE_LABEL.to_owned(), offering.capacity_type.clone());
    }
    (labels, offering.map(|o| o.price))
}
