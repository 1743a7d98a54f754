//! The instance-type catalog: what exists, where it is offered, and what it costs.
//!
//! Loaded at runtime from `../shared/data/ec2` (see its README for the source of every
//! column), or narrowed and re-priced by a scenario. While the cloud runs only an on-demand
//! re-price changes it (`FakeCloud::set_on_demand_price`, an AWS price change); everything
//! else that changes over time (capacity, spot prices) lives elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The Spot Instance Advisor's interruption-frequency bucket for a type.
///
/// The bucket is the share of instances interrupted in a month on average; the fake turns it
/// into a hazard rate (see [`InterruptionBucket::monthly_fraction`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum InterruptionBucket {
    /// `<5%`
    Under5,
    /// `5-10%`
    From5To10,
    /// `10-15%`
    From10To15,
    /// `15-20%`
    From15To20,
    /// `>20%`
    Over20,
}

impl InterruptionBucket {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "<5%" => Self::Under5,
            "5-10%" => Self::From5To10,
            "10-15%" => Self::From10To15,
            "15-20%" => Self::From15To20,
            ">20%" => Self::Over20,
            _ => return None,
        })
    }

    /// The midpoint of the bucket as a fraction interrupted per 30 days (`>20%` counts as 25%).
    pub fn monthly_fraction(self) -> f64 {
        match self {
            Self::Under5 => 0.025,
            Self::From5To10 => 0.075,
            Self::From10To15 => 0.125,
            Self::From15To20 => 0.175,
            Self::Over20 => 0.25,
        }
    }
}

/// Share of the on-demand price a spot instance costs when the catalog has no estimate.
/// Spot Advisor's median saving across the catalog is about 65%.
pub const DEFAULT_SPOT_PRICE_RATIO: f64 = 0.35;

/// The facts about one instance type that DescribeInstanceTypes reports and billing needs.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceTypeInfo {
    /// e.g. `m5.large`.
    pub name: String,
    /// e.g. `m5`.
    pub family: String,
    /// Default vCPUs.
    pub vcpu: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// Kubernetes architecture name: `amd64` or `arm64`.
    pub arch: String,
    /// EC2 architecture names, e.g. `["i386", "x86_64"]`.
    pub ec2_architectures: Vec<String>,
    /// `Intel`, `AMD`, `AWS`, `Apple`.
    pub cpu_manufacturer: String,
    /// `nitro` or `xen`; `None` for some bare-metal types.
    pub hypervisor: Option<String>,
    /// Whether this is a `.metal` type.
    pub bare_metal: bool,
    /// EC2's `CurrentGeneration` flag.
    pub current_generation: bool,
    /// Burstable (T family).
    pub burstable: bool,
    /// `on-demand`, `spot`, `capacity-block`.
    pub usage_classes: Vec<String>,
    /// Number of GPUs (0 if none).
    pub gpu_count: u32,
    /// GPU model, e.g. `T4`.
    pub gpu_name: Option<String>,
    /// GPU manufacturer, e.g. `NVIDIA`.
    pub gpu_manufacturer: Option<String>,
    /// Total GPU memory in MiB.
    pub gpu_memory_mib: u64,
    /// Inferentia/Trainium devices.
    pub accelerator_count: u32,
    /// Accelerator name.
    pub accelerator_name: Option<String>,
    /// Local NVMe storage in GB, if any.
    pub local_nvme_gb: Option<u64>,
    /// ENIs on the default network card (what the VPC CNI counts).
    pub max_enis: u32,
    /// ENIs across all network cards.
    pub max_enis_all_cards: u32,
    /// IPv4 addresses per ENI.
    pub ipv4_per_eni: u32,
    /// e.g. `Up to 10 Gigabit`.
    pub network_performance: String,
    /// Sum of baseline bandwidth over network cards.
    pub network_baseline_gbps: f64,
    /// EBS bandwidth when EBS-optimised by default.
    pub ebs_max_bandwidth_mbps: Option<u64>,
    /// On-demand Linux price in USD per hour; `None` when unknown (Karpenter then has no price).
    pub on_demand_price: Option<f64>,
    /// Spot price estimate in USD per hour around which the spot market moves.
    pub spot_price_estimate: Option<f64>,
    /// Spot Advisor interruption bucket.
    pub interruption: Option<InterruptionBucket>,
}

impl InstanceTypeInfo {
    /// Whether the type can be launched with the given usage class (`spot` / `on-demand`).
    pub fn supports(&self, usage_class: &str) -> bool {
        self.usage_classes.iter().any(|c| c == usage_class)
    }

    /// The spot price the market centres on: the estimate, or a default ratio of on-demand.
    pub fn spot_reference_price(&self) -> Option<f64> {
        self.spot_price_estimate.or_else(|| self.on_demand_price.map(|p| p * DEFAULT_SPOT_PRICE_RATIO))
    }
}

/// An availability zone: its name and the zone id it maps to in this fake account.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Zone {
    /// e.g. `us-west-2a`.
    pub name: String,
    /// e.g. `usw2-az1`. Real accounts shuffle this mapping; the fake fixes it.
    pub id: String,
}

/// Instance types, the zones of one region and which type is offered in which zone.
#[derive(Debug, Clone)]
pub struct Catalog {
    region: String,
    types: BTreeMap<String, InstanceTypeInfo>,
    zones: Vec<Zone>,
    offerings: BTreeSet<(String, String)>,
}

/// The fixed zone-name → zone-id map the fake uses for the regions with data files.
fn zone_id(zone: &str) -> String {
    const MAP: &[(&str, &str)] = &[
        ("us-east-1a", "use1-az4"),
        ("us-east-1b", "use1-az6"),
        ("us-east-1c", "use1-az1"),
        ("us-east-1d", "use1-az2"),
        ("us-east-1e", "use1-az3"),
        ("us-east-1f", "use1-az5"),
        ("us-west-2a", "usw2-az1"),
        ("us-west-2b", "usw2-az2"),
        ("us-west-2c", "usw2-az3"),
        ("us-west-2d", "usw2-az4"),
    ];
    MAP.iter().find(|(name, _)| *name == zone).map(|(_, id)| (*id).to_string()).unwrap_or_else(|| {
        // Unknown regions: a stable id derived from the name ("xx-yyy-9z" -> "xy9-azN").
        let letter = zone.chars().last().unwrap_or('a');
        let n = (letter as u32).saturating_sub('a' as u32) + 1;
        let prefix: String = zone.split('-').filter_map(|p| p.chars().next()).collect();
        format!("{prefix}-az{n}")
    })
}

/// Finds `shared/data/ec2`: `$DOVETAIL_EC2_DATA`, else `../shared/data/ec2` beside the
/// workspace (CI checks `shared/` out next to the clone), else `shared/data/ec2` inside it.
pub fn data_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("DOVETAIL_EC2_DATA") {
        return Ok(PathBuf::from(dir));
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut tried = Vec::new();
    for ancestor in manifest.ancestors().take(4) {
        for rel in ["../shared/data/ec2", "shared/data/ec2"] {
            let candidate = ancestor.join(rel);
            if candidate.join("instance-types.csv").is_file() {
                return Ok(candidate);
            }
            tried.push(candidate);
        }
    }
    Err(Error::DataDirNotFound(tried))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Read { path: path.to_path_buf(), source })
}

impl Catalog {
    /// Loads the full catalog for `region` (`us-east-1` or `us-west-2`) from [`data_dir`].
    pub fn load(region: &str) -> Result<Self> {
        Self::load_from(&data_dir()?, region)
    }

    /// Loads the catalog for `region` from a directory holding `instance-types.csv` and
    /// `offerings-<region>.csv`.
    pub fn load_from(dir: &Path, region: &str) -> Result<Self> {
        let types = read(&dir.join("instance-types.csv"))?;
        let offerings = read(&dir.join(format!("offerings-{region}.csv")))?;
        Self::from_csv(region, &types, &offerings)
    }

    /// Parses the two CSV files' contents. Prices in the data are us-east-1's; they are used
    /// for every region (the README lists no other region's prices).
    pub fn from_csv(region: &str, types_csv: &str, offerings_csv: &str) -> Result<Self> {
        let mut types = BTreeMap::new();
        for (index, line) in types_csv.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let info = parse_type_line(line).map_err(|message| Error::Csv {
                file: "instance-types.csv".into(),
                line: index + 1,
                message,
            })?;
            types.insert(info.name.clone(), info);
        }
        let mut offerings = BTreeSet::new();
        let mut zone_names = BTreeSet::new();
        for (index, line) in offerings_csv.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let (ty, zone) = line.split_once(',').ok_or_else(|| Error::Csv {
                file: format!("offerings-{region}.csv"),
                line: index + 1,
                message: "expected instance_type,zone".into(),
            })?;
            if types.contains_key(ty) {
                zone_names.insert(zone.to_string());
                offerings.insert((ty.to_string(), zone.to_string()));
            }
        }
        let zones = zone_names.into_iter().map(|name| Zone { id: zone_id(&name), name }).collect();
        Ok(Self { region: region.to_string(), types, zones, offerings })
    }

    /// The region this catalog describes.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// All instance types, by name.
    pub fn types(&self) -> impl Iterator<Item = &InstanceTypeInfo> {
        self.types.values()
    }

    /// One instance type.
    pub fn get(&self, name: &str) -> Option<&InstanceTypeInfo> {
        self.types.get(name)
    }

    /// The zones, sorted by name.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// A zone by name.
    pub fn zone(&self, name: &str) -> Option<&Zone> {
        self.zones.iter().find(|z| z.name == name)
    }

    /// Whether `instance_type` is offered in `zone`.
    pub fn is_offered(&self, instance_type: &str, zone: &str) -> bool {
        self.offerings.contains(&(instance_type.to_string(), zone.to_string()))
    }

    /// Every (instance type, zone) offering, sorted.
    pub fn offerings(&self) -> impl Iterator<Item = (&str, &str)> {
        self.offerings.iter().map(|(t, z)| (t.as_str(), z.as_str()))
    }

    /// Scenario override: keep only the named types (a smaller, faster catalog).
    pub fn retain_types(&mut self, names: &[&str]) -> Result<()> {
        for name in names {
            if !self.types.contains_key(*name) {
                return Err(Error::Unknown { kind: "instance type", name: (*name).to_string() });
            }
        }
        self.types.retain(|name, _| names.contains(&name.as_str()));
        self.offerings.retain(|(t, _)| names.contains(&t.as_str()));
        Ok(())
    }

    /// Scenario override: keep only the named zones.
    pub fn retain_zones(&mut self, names: &[&str]) -> Result<()> {
        for name in names {
            if self.zone(name).is_none() {
                return Err(Error::Unknown { kind: "zone", name: (*name).to_string() });
            }
        }
        self.zones.retain(|z| names.contains(&z.name.as_str()));
        self.offerings.retain(|(_, z)| names.contains(&z.as_str()));
        Ok(())
    }

    /// Scenario override: set a type's on-demand price and (optionally) its spot estimate.
    pub fn set_prices(
        &mut self,
        instance_type: &str,
        on_demand: Option<f64>,
        spot_estimate: Option<f64>,
    ) -> Result<()> {
        let info = self
            .types
            .get_mut(instance_type)
            .ok_or_else(|| Error::Unknown { kind: "instance type", name: instance_type.to_string() })?;
        info.on_demand_price = on_demand;
        info.spot_price_estimate = spot_estimate;
        Ok(())
    }

    /// Scenario override: add or replace a type and offer it in `zones`.
    pub fn insert_type(&mut self, info: InstanceTypeInfo, zones: &[&str]) {
        for zone in zones {
            if self.zone(zone).is_none() {
                self.zones.push(Zone { name: (*zone).to_string(), id: zone_id(zone) });
                self.zones.sort();
            }
            self.offerings.insert((info.name.clone(), (*zone).to_string()));
        }
        self.types.insert(info.name.clone(), info);
    }
}

fn parse_type_line(line: &str) -> std::result::Result<InstanceTypeInfo, String> {
    let f: Vec<&str> = line.split(',').collect();
    if f.len() != 33 {
        return Err(format!("expected 33 columns, found {}", f.len()));
    }
    let num = |i: usize| -> std::result::Result<u64, String> {
        f[i].parse::<u64>().map_err(|e| format!("column {}: {e}", i + 1))
    };
    let opt_num = |i: usize| -> std::result::Result<Option<u64>, String> {
        if f[i].is_empty() { Ok(None) } else { num(i).map(Some) }
    };
    let opt_f64 = |i: usize| -> std::result::Result<Option<f64>, String> {
        if f[i].is_empty() {
            Ok(None)
        } else {
            f[i].parse::<f64>().map(Some).map_err(|e| format!("column {}: {e}", i + 1))
        }
    };
    let opt_str = |i: usize| {
        if f[i].is_empty() { None } else { Some(f[i].to_string()) }
    };
    let to_u32 = |v: u64| u32::try_from(v).map_err(|e| e.to_string());
    Ok(InstanceTypeInfo {
        name: f[0].to_string(),
        family: f[1].to_string(),
        vcpu: to_u32(num(5)?)?,
        memory_mib: num(6)?,
        arch: f[7].to_string(),
        ec2_architectures: f[8].split('|').map(str::to_string).collect(),
        cpu_manufacturer: f[9].to_string(),
        hypervisor: opt_str(10),
        bare_metal: f[11] == "true",
        current_generation: f[12] == "true",
        burstable: f[13] == "true",
        usage_classes: f[14].split('|').filter(|s| !s.is_empty()).map(str::to_string).collect(),
        gpu_count: to_u32(num(15)?)?,
        gpu_name: opt_str(16),
        gpu_manufacturer: opt_str(17),
        gpu_memory_mib: num(18)?,
        accelerator_count: to_u32(num(19)?)?,
        accelerator_name: opt_str(20),
        local_nvme_gb: opt_num(21)?,
        max_enis: to_u32(num(22)?)?,
        max_enis_all_cards: to_u32(num(23)?)?,
        ipv4_per_eni: to_u32(num(24)?)?,
        network_performance: f[26].to_string(),
        network_baseline_gbps: opt_f64(27)?.unwrap_or(0.0),
        ebs_max_bandwidth_mbps: opt_num(28)?,
        on_demand_price: opt_f64(29)?,
        spot_price_estimate: opt_f64(32)?,
        interruption: InterruptionBucket::parse(f[31]),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A three-type, two-zone catalog for unit tests, with round prices.
    pub(crate) fn small() -> Catalog {
        let mut catalog = Catalog::load("us-west-2").expect("catalog loads");
        catalog.retain_types(&["m5.large", "c5.large", "m5.xlarge"]).expect("types exist");
        catalog.retain_zones(&["us-west-2a", "us-west-2b"]).expect("zones exist");
        catalog.set_prices("m5.large", Some(0.096), Some(0.04)).expect("known");
        catalog.set_prices("c5.large", Some(0.085), Some(0.035)).expect("known");
        catalog.set_prices("m5.xlarge", Some(0.192), Some(0.08)).expect("known");
        catalog
    }

    #[test]
    fn loads_the_full_catalog() {
        let catalog = Catalog::load("us-east-1").expect("catalog loads");
        assert_eq!(catalog.types().count(), 1395);
        let m5 = catalog.get("m5.large").expect("m5.large exists");
        assert_eq!((m5.vcpu, m5.memory_mib, m5.max_enis, m5.ipv4_per_eni), (2, 8192, 3, 10));
        assert_eq!(m5.arch, "amd64");
        assert!(m5.supports("spot"));
        assert_eq!(catalog.zones().len(), 6);
        assert_eq!(catalog.zone("us-east-1a").map(|z| z.id.as_str()), Some("use1-az4"));
        assert!(catalog.is_offered("m5.large", "us-east-1a"));
        assert_eq!(catalog.offerings().count(), 6436);
    }

    #[test]
    fn scenario_overrides_narrow_and_reprice() {
        let catalog = small();
        assert_eq!(catalog.types().count(), 3);
        assert_eq!(catalog.zones().len(), 2);
        assert_eq!(catalog.get("m5.large").and_then(|t| t.on_demand_price), Some(0.096));
        assert!(catalog.offerings().all(|(_, z)| z == "us-west-2a" || z == "us-west-2b"));
        let mut c = small();
        assert!(c.retain_types(&["nope.large"]).is_err());
    }
}
