//! Property: every placement the scheduler makes satisfies each pod's constraints, re-checked
//! by a small checker that works on concrete node labels (the cheapest option and offering of
//! each claim) rather than on the requirements algebra the scheduler uses.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::apis::labels;
use crate::scheduling::taints::Toleration;
use crate::scheduling::{HostPort, Results, schedule};

#[derive(Clone, Debug)]
enum Style {
    Generic,
    ZoneSpread,
    HostnameAntiAffinity,
    ZoneSelector(usize),
    CategoryNotIn(&'static str),
    HostPort,
    Arm64,
}

fn style() -> impl Strategy<Value = Style> {
    prop_oneof![
        Just(Style::Generic),
        Just(Style::ZoneSpread),
        Just(Style::HostnameAntiAffinity),
        (0..3usize).prop_map(Style::ZoneSelector),
        prop_oneof![Just("c"), Just("m"), Just("r")].prop_map(Style::CategoryNotIn),
        Just(Style::HostPort),
        Just(Style::Arm64),
    ]
}

fn build_pod(index: usize, cpu: i64, memory: i64, style: &Style, tolerates: bool) -> SchedulablePod {
    let mut p = pod(&format!("p{index}"), cpu, memory);
    match style {
        Style::Generic => {}
        Style::ZoneSpread => {
            p = labelled(p, &[("app", "spread")]);
            p.shape.spreads.push(spread(labels::TOPOLOGY_ZONE_LABEL, "spread"));
        }
        Style::HostnameAntiAffinity => {
            p = labelled(p, &[("app", "anti")]);
            p.shape.anti_affinity.push(term(labels::HOSTNAME_LABEL, "anti"));
        }
        Style::ZoneSelector(zone) => {
            p.shape.node_selector = Requirements::from_labels(&BTreeMap::from([(
                labels::TOPOLOGY_ZONE_LABEL.to_owned(),
                fake::ZONES[*zone].to_owned(),
            )]));
        }
        Style::CategoryNotIn(category) => {
            p.shape.node_selector = requirements(serde_json::json!([
                {"key": labels::INSTANCE_CATEGORY_LABEL, "operator": "NotIn", "values": [category]}
            ]));
        }
        Style::HostPort => {
            p.shape.host_ports.push(HostPort { ip: String::new(), protocol: "TCP".to_owned(), port: 80 })
        }
        Style::Arm64 => {
            p.shape.node_selector =
                Requirements::from_labels(&BTreeMap::from([(labels::ARCH_LABEL.to_owned(), "arm64".to_owned())]));
        }
    }
    if tolerates {
        p.shape.tolerations.push(Toleration {
            key: "dedicated".to_owned(),
            exists: true,
            value: String::new(),
            effect: None,
        });
    }
    p
}

/// The independent checker. Returns the first violation.
fn check(pods: &[(SchedulablePod, Style)], tainted: bool, results: &Results) -> Result<(), String> {
    let by_key: BTreeMap<&str, &(SchedulablePod, Style)> = pods.iter().map(|p| (p.0.key.as_str(), p)).collect();
    let mut placed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut spread_zones: BTreeMap<String, i64> = fake::ZONES.iter().map(|z| ((*z).to_owned(), 0)).collect();
    for (index, claim) in results.new_node_claims.iter().enumerate() {
        let cheapest = claim.instance_type_options.first().ok_or("claim without instance types")?;
        let offering = cheapest.cheapest_offering(&claim.requirements).ok_or("no offering")?;
        // Concrete node labels.
        let mut node: BTreeMap<String, String> = cheapest.requirements.single_valued_labels();
        node.insert(labels::TOPOLOGY_ZONE_LABEL.to_owned(), offering.zone.clone());
        node.insert(labels::CAPACITY_TYPE_LABEL.to_owned(), offering.capacity_type.clone());
        let mut cpu = 0;
        let mut memory = 0;
        let mut ports = 0;
        let mut anti = 0;
        for key in &claim.pods {
            *placed.entry(key.as_str()).or_default() += 1;
            let (pod, style) = by_key[key.as_str()];
            cpu += pod.shape.requests.cpu_milli;
            memory += pod.shape.requests.memory_bytes;
            if tainted && pod.shape.tolerations.is_empty() {
                return Err(format!("{key} on claim {index} without tolerating the pool taint"));
            }
            match style {
                Style::ZoneSpread => *spread_zones.get_mut(&offering.zone).ok_or("unknown zone")? += 1,
                Style::HostnameAntiAffinity => anti += 1,
                Style::HostPort => ports += 1,
                Style::ZoneSelector(zone) if offering.zone != fake::ZONES[*zone] => {
                    return Err(format!(
                        "{key} wants {} but claim {index} is in {}",
                        fake::ZONES[*zone],
                        offering.zone
                    ));
                }
                Style::CategoryNotIn(category) => {
                    for it in &claim.instance_type_options {
                        if it.requirements.get(labels::INSTANCE_CATEGORY_LABEL).and_then(|c| c.single_value())
                            == Some(category)
                        {
                            return Err(format!(
                                "{key} excludes category {category} but claim {index} offers {}",
                                it.name
                            ));
                        }
                    }
                }
                Style::Arm64 => return Err(format!("{key} needs arm64, which no type offers")),
                _ => {}
            }
            if node.get(labels::ARCH_LABEL).map(String::as_str) != Some("amd64") {
                return Err("node is not amd64".to_owned());
            }
        }
        if anti > 1 || ports > 1 {
            return Err(format!("claim {index} has {anti} anti-affinity pods and {ports} host-port pods"));
        }
        for it in &claim.instance_type_options {
            let allocatable = it.allocatable();
            if cpu > allocatable.cpu_milli
                || memory > allocatable.memory_bytes
                || claim.pods.len() as i64 > allocatable.pods
            {
                return Err(format!("claim {index} overflows {}", it.name));
            }
        }
    }
    let (min, max) = (spread_zones.values().min().unwrap(), spread_zones.values().max().unwrap());
    if max - min > 1 {
        return Err(format!("zone spread skew {spread_zones:?}"));
    }
    for (pod, _) in pods {
        let count = placed.get(pod.key.as_str()).copied().unwrap_or(0);
        let errored = results.pod_errors.contains_key(&pod.key);
        if count + usize::from(errored) != 1 {
            return Err(format!("{} placed {count} times, errored: {errored}", pod.key));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_placement_satisfies_its_pods_constraints(
        specs in prop::collection::vec(
            (prop_oneof![Just(100i64), Just(250), Just(500), Just(1000), Just(1500), Just(7000)],
             prop_oneof![Just(100i64), Just(512), Just(2048), Just(8192)],
             style(),
             any::<bool>()),
            1..60),
        tainted in any::<bool>(),
        type_count in 4usize..40,
    ) {
        let pods: Vec<(SchedulablePod, Style)> = specs
            .iter()
            .enumerate()
            .map(|(i, (cpu, memory, style, tolerates))| (build_pod(i, *cpu, *memory, style, *tolerates), style.clone()))
            .collect();
        let pool = if tainted {
            node_pool("default", serde_json::json!({"template": {"spec": {"taints": [
                {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
            ]}}}))
        } else {
            node_pool("default", serde_json::json!({}))
        };
        let mut snapshot = input(types(type_count), pods.iter().map(|(p, _)| p.clone()).collect());
        snapshot.node_pools = vec![pool_input(pool, types(type_count))];
        let results = schedule(&snapshot);
        prop_assert_eq!(check(&pods, tainted, &results), Ok(()));
        prop_assert_eq!(&results, &schedule(&snapshot), "deterministic");
    }
}
