//! Integer resource arithmetic: milli-CPU, bytes and counts, so bin-packing never rounds.
//!
//! Kubernetes quantities (`"1500m"`, `"16Gi"`, `"1e3"`) are parsed once into [`Resources`];
//! the scheduler's hot loop only adds and compares `i64`s.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The `cpu` resource name.
pub const RESOURCE_CPU: &str = "cpu";
/// The `memory` resource name.
pub const RESOURCE_MEMORY: &str = "memory";
/// The `ephemeral-storage` resource name.
pub const RESOURCE_EPHEMERAL_STORAGE: &str = "ephemeral-storage";
/// The `pods` resource name (how many pods a node may run).
pub const RESOURCE_PODS: &str = "pods";

/// Parses a Kubernetes quantity into thousandths of its base unit (`"1500m"` → 1500,
/// `"2"` → 2000, `"1Ki"` → 1_024_000). `None` when the text is not a quantity or overflows.
pub fn parse_quantity_milli(text: &str) -> Option<i128> {
    let text = text.trim();
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let number_end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_end);
    if number.is_empty() || number == "." {
        return None;
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    // Value as digits / 10^scale.
    let mut digits: i128 = 0;
    for c in whole.chars().chain(fraction.chars()) {
        digits = digits.checked_mul(10)?.checked_add(i128::from(c.to_digit(10)?))?;
    }
    let mut scale = i32::try_from(fraction.len()).ok()?;
    let (binary, mut exponent): (i128, i32) = match suffix {
        "" => (1, 0),
        "n" => (1, -9),
        "u" => (1, -6),
        "m" => (1, -3),
        "k" => (1, 3),
        "M" => (1, 6),
        "G" => (1, 9),
        "T" => (1, 12),
        "P" => (1, 15),
        "E" => (1, 18),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        other => {
            let rest = other.strip_prefix('e').or_else(|| other.strip_prefix('E'))?;
            (1, rest.parse::<i32>().ok()?)
        }
    };
    exponent += 3; // thousandths
    scale -= exponent;
    let mut value = digits.checked_mul(binary)?;
    if scale > 0 {
        // Round up, as Kubernetes does for sub-unit requests.
        let divisor = 10_i128.checked_pow(u32::try_from(scale).ok()?)?;
        value = (value + divisor - 1) / divisor;
    } else if scale < 0 {
        value = value.checked_mul(10_i128.checked_pow(u32::try_from(-scale).ok()?)?)?;
    }
    Some(if negative { -value } else { value })
}

/// A quantity in whole base units (bytes, counts), rounded up; CPU uses [`parse_cpu_milli`].
pub fn parse_quantity_units(text: &str) -> Option<i64> {
    let milli = parse_quantity_milli(text)?;
    i64::try_from(milli.div_euclid(1000) + i128::from(milli.rem_euclid(1000) != 0)).ok()
}

/// A CPU quantity in milli-cores.
pub fn parse_cpu_milli(text: &str) -> Option<i64> {
    i64::try_from(parse_quantity_milli(text)?).ok()
}

/// An amount of every resource a pod can request or a node can offer.
///
/// The four resources every node has are plain fields (CPU in milli-cores, memory and
/// ephemeral storage in bytes, pods as a count) so the packing loop compares integers without
/// map lookups; anything else (GPUs, ENIs, hugepages) lives in `extended`, in base units.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resources {
    /// CPU in milli-cores.
    pub cpu_milli: i64,
    /// Memory in bytes.
    pub memory_bytes: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage_bytes: i64,
    /// Pod slots.
    pub pods: i64,
    /// Other resources by name, in base units; zero entries are never stored.
    pub extended: BTreeMap<String, i64>,
}

impl Resources {
    /// CPU and memory only, the common shape of a pod request.
    pub fn cpu_memory(cpu_milli: i64, memory_bytes: i64) -> Self {
        Self { cpu_milli, memory_bytes, ..Self::default() }
    }

    /// Parses a Kubernetes resource list; unparseable quantities are reported by name.
    pub fn from_quantities<'a, I>(list: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = (&'a String, &'a Quantity)>,
    {
        let mut resources = Self::default();
        for (name, quantity) in list {
            resources.set_text(name, &quantity.0)?;
        }
        Ok(resources)
    }

    /// Sets one resource from its quantity text (`"500m"`, `"2Gi"`).
    pub fn set_text(&mut self, name: &str, text: &str) -> Result<(), String> {
        let bad = || format!("resource {name}: invalid quantity {text:?}");
        let value = if name == RESOURCE_CPU {
            parse_cpu_milli(text).ok_or_else(bad)?
        } else {
            parse_quantity_units(text).ok_or_else(bad)?
        };
        self.set(name, value);
        Ok(())
    }

    /// Parses a Karpenter `ResourceList` (int-or-string quantities).
    pub fn from_resource_list(list: &crate::apis::ResourceList) -> Result<Self, String> {
        let mut resources = Self::default();
        for (name, quantity) in list {
            resources.set_text(name, &quantity.as_text())?;
        }
        Ok(resources)
    }

    /// The resources as a Karpenter `ResourceList`: CPU in milli-cores (`"1500m"`), memory and
    /// storage in `Ki` when exact (`"3977Mi"` style is not needed), others as integers. Zero
    /// entries of the four core resources are kept so a node shows `pods: 0` rather than nothing.
    pub fn to_resource_list(&self) -> crate::apis::ResourceList {
        use crate::apis::IntOrQuantity;
        let mut list = crate::apis::ResourceList::new();
        list.insert(RESOURCE_CPU.into(), IntOrQuantity::String(format_cpu(self.cpu_milli)));
        list.insert(RESOURCE_MEMORY.into(), IntOrQuantity::String(format_bytes(self.memory_bytes)));
        if self.ephemeral_storage_bytes != 0 {
            list.insert(
                RESOURCE_EPHEMERAL_STORAGE.into(),
                IntOrQuantity::String(format_bytes(self.ephemeral_storage_bytes)),
            );
        }
        list.insert(RESOURCE_PODS.into(), IntOrQuantity::String(self.pods.to_string()));
        for (name, value) in &self.extended {
            list.insert(name.clone(), IntOrQuantity::String(value.to_string()));
        }
        list
    }

    /// Sets one resource (CPU in milli-cores, others in base units).
    pub fn set(&mut self, name: &str, value: i64) {
        match name {
            RESOURCE_CPU => self.cpu_milli = value,
            RESOURCE_MEMORY => self.memory_bytes = value,
            RESOURCE_EPHEMERAL_STORAGE => self.ephemeral_storage_bytes = value,
            RESOURCE_PODS => self.pods = value,
            _ if value == 0 => {
                self.extended.remove(name);
            }
            _ => {
                self.extended.insert(name.to_owned(), value);
            }
        }
    }

    /// One resource (CPU in milli-cores, others in base units); zero when absent.
    pub fn get(&self, name: &str) -> i64 {
        match name {
            RESOURCE_CPU => self.cpu_milli,
            RESOURCE_MEMORY => self.memory_bytes,
            RESOURCE_EPHEMERAL_STORAGE => self.ephemeral_storage_bytes,
            RESOURCE_PODS => self.pods,
            _ => self.extended.get(name).copied().unwrap_or(0),
        }
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Self) {
        self.cpu_milli += other.cpu_milli;
        self.memory_bytes += other.memory_bytes;
        self.ephemeral_storage_bytes += other.ephemeral_storage_bytes;
        self.pods += other.pods;
        for (name, value) in &other.extended {
            let slot = self.extended.entry(name.clone()).or_insert(0);
            *slot += value;
            if *slot == 0 {
                self.extended.remove(name);
            }
        }
    }

    /// `self + other`.
    #[must_use]
    pub fn plus(&self, other: &Self) -> Self {
        let mut sum = self.clone();
        sum.add(other);
        sum
    }

    /// Subtracts `other` from `self` (values may go negative, which [`Self::fits_in`] rejects).
    pub fn sub(&mut self, other: &Self) {
        self.cpu_milli -= other.cpu_milli;
        self.memory_bytes -= other.memory_bytes;
        self.ephemeral_storage_bytes -= other.ephemeral_storage_bytes;
        self.pods -= other.pods;
        for (name, value) in &other.extended {
            let slot = self.extended.entry(name.clone()).or_insert(0);
            *slot -= value;
            if *slot == 0 {
                self.extended.remove(name);
            }
        }
    }

    /// The per-resource minimum of `self` and `other` (core `resources.MinResources`: a
    /// resource only one side names counts as zero on the other).
    pub fn min_with(&mut self, other: &Self) {
        self.cpu_milli = self.cpu_milli.min(other.cpu_milli);
        self.memory_bytes = self.memory_bytes.min(other.memory_bytes);
        self.ephemeral_storage_bytes = self.ephemeral_storage_bytes.min(other.ephemeral_storage_bytes);
        self.pods = self.pods.min(other.pods);
        let names: Vec<String> = self.extended.keys().chain(other.extended.keys()).cloned().collect();
        for name in names {
            let value = self.get(&name).min(other.get(&name));
            self.extended.remove(&name);
            if value != 0 {
                self.extended.insert(name, value);
            }
        }
    }

    /// Raises every negative resource to zero (core `NewExistingNode` clamps the DaemonSet
    /// requests still due on a node this way).
    pub fn clamp_negative(&mut self) {
        for value in [&mut self.cpu_milli, &mut self.memory_bytes, &mut self.ephemeral_storage_bytes, &mut self.pods] {
            *value = (*value).max(0);
        }
        self.extended.retain(|_, value| *value > 0);
    }

    /// The per-resource maximum of `self` and `other` (init containers vs. regular ones).
    pub fn max_with(&mut self, other: &Self) {
        self.cpu_milli = self.cpu_milli.max(other.cpu_milli);
        self.memory_bytes = self.memory_bytes.max(other.memory_bytes);
        self.ephemeral_storage_bytes = self.ephemeral_storage_bytes.max(other.ephemeral_storage_bytes);
        self.pods = self.pods.max(other.pods);
        for (name, value) in &other.extended {
            let slot = self.extended.entry(name.clone()).or_insert(0);
            *slot = (*slot).max(*value);
        }
    }

    /// Whether every resource of `self` is at most the same resource of `capacity`
    /// (a resource `capacity` lacks counts as zero).
    pub fn fits_in(&self, capacity: &Self) -> bool {
        self.cpu_milli <= capacity.cpu_milli
            && self.memory_bytes <= capacity.memory_bytes
            && self.ephemeral_storage_bytes <= capacity.ephemeral_storage_bytes
            && self.pods <= capacity.pods
            && self.extended.iter().all(|(name, value)| *value <= capacity.extended.get(name).copied().unwrap_or(0))
    }

    /// The first resource of `self` that exceeds `capacity`, for error messages.
    pub fn first_exceeding(&self, capacity: &Self) -> Option<String> {
        [RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_PODS]
            .into_iter()
            .map(str::to_owned)
            .chain(self.extended.keys().cloned())
            .find(|name| self.get(name) > capacity.get(name))
    }

    /// Whether no resource is requested.
    pub fn is_zero(&self) -> bool {
        self.cpu_milli == 0
            && self.memory_bytes == 0
            && self.ephemeral_storage_bytes == 0
            && self.pods == 0
            && self.extended.is_empty()
    }
}

/// CPU milli-cores as a quantity: whole cores as integers, else `NNNm`.
pub fn format_cpu(milli: i64) -> String {
    if milli % 1000 == 0 { (milli / 1000).to_string() } else { format!("{milli}m") }
}

/// Bytes as a quantity: the largest exact binary suffix (`Gi`, `Mi`, `Ki`), else plain bytes.
pub fn format_bytes(bytes: i64) -> String {
    for (suffix, unit) in [("Gi", GIB), ("Mi", MIB), ("Ki", 1024)] {
        if bytes != 0 && bytes % unit == 0 {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// Bytes in a mebibyte.
pub const MIB: i64 = 1 << 20;
/// Bytes in a gibibyte.
pub const GIB: i64 = 1 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_and_memory_quantities() {
        assert_eq!(parse_cpu_milli("1500m"), Some(1500));
        assert_eq!(parse_cpu_milli("2"), Some(2000));
        assert_eq!(parse_cpu_milli("0.5"), Some(500));
        assert_eq!(parse_cpu_milli("100u"), Some(1));
        assert_eq!(parse_quantity_units("16Gi"), Some(16 * GIB));
        assert_eq!(parse_quantity_units("100Mi"), Some(100 * MIB));
        assert_eq!(parse_quantity_units("1k"), Some(1000));
        assert_eq!(parse_quantity_units("1e3"), Some(1000));
        assert_eq!(parse_quantity_units("1.5Gi"), Some(3 * GIB / 2));
        assert_eq!(parse_quantity_units("10x"), None);
        assert_eq!(parse_quantity_units(""), None);
    }

    #[test]
    fn resource_list_round_trips() {
        let mut r =
            Resources { pods: 29, ephemeral_storage_bytes: 17 * GIB, ..Resources::cpu_memory(1930, 7 * GIB + 5 * MIB) };
        r.set("nvidia.com/gpu", 1);
        let list = r.to_resource_list();
        assert_eq!(list["cpu"].as_text(), "1930m");
        assert_eq!(list["memory"].as_text(), "7173Mi");
        assert_eq!(Resources::from_resource_list(&list).unwrap(), r);
    }

    #[test]
    fn fits_compares_every_resource_including_extended() {
        let mut gpu = Resources::cpu_memory(1000, GIB);
        gpu.set("nvidia.com/gpu", 1);
        let node = Resources { pods: 10, ..Resources::cpu_memory(2000, 4 * GIB) };
        assert!(!gpu.fits_in(&node));
        assert_eq!(gpu.first_exceeding(&node).as_deref(), Some("nvidia.com/gpu"));
        assert!(Resources::cpu_memory(2000, 4 * GIB).fits_in(&node));
        assert!(!Resources::cpu_memory(2001, 0).fits_in(&node));
    }
}
