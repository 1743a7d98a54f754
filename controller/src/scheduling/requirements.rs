//! The requirements algebra (core `pkg/scheduling/requirement(s).go`): per label key, the set of
//! values a node may carry, closed under intersection, so NodePool, pod and topology constraints
//! combine into one value that instance types are filtered against.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::apis::labels;
use crate::apis::{NodeSelectorOperator, NodeSelectorRequirementWithMinValues};

/// The values one label key may take: a finite set (`In`), or the complement of one (`NotIn`,
/// `Exists`), optionally bounded as an integer (`Gt`/`Lt`, and `Gte`/`Lte` as `Gt n-1`/`Lt n+1`).
/// An empty non-complement set means the label must be absent (`DoesNotExist`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Requirement {
    complement: bool,
    values: BTreeSet<String>,
    greater_than: Option<i64>,
    less_than: Option<i64>,
    /// Minimum distinct values the chosen instance types must span for this key.
    pub min_values: Option<usize>,
}

impl Requirement {
    /// Any value, or none at all (the identity of intersection).
    pub fn any() -> Self {
        Self { complement: true, values: BTreeSet::new(), greater_than: None, less_than: None, min_values: None }
    }

    /// `In values`.
    pub fn in_values<I: IntoIterator<Item = S>, S: Into<String>>(values: I) -> Self {
        Self { complement: false, values: values.into_iter().map(Into::into).collect(), ..Self::any() }
    }

    /// `NotIn values`.
    pub fn not_in<I: IntoIterator<Item = S>, S: Into<String>>(values: I) -> Self {
        Self { values: values.into_iter().map(Into::into).collect(), ..Self::any() }
    }

    /// `DoesNotExist`.
    pub fn does_not_exist() -> Self {
        Self { complement: false, ..Self::any() }
    }

    /// Builds a requirement from an operator and its values. Numeric operators with a value
    /// that is not an integer yield `DoesNotExist` (nothing can satisfy them), as in core.
    pub fn new(operator: NodeSelectorOperator, values: &[String]) -> Self {
        let bound = || values.first().and_then(|v| v.parse::<i64>().ok());
        match operator {
            NodeSelectorOperator::In => Self::in_values(values.iter().cloned()),
            NodeSelectorOperator::NotIn => Self::not_in(values.iter().cloned()),
            NodeSelectorOperator::Exists => Self::any(),
            NodeSelectorOperator::DoesNotExist => Self::does_not_exist(),
            NodeSelectorOperator::Gt => bound().map_or_else(Self::does_not_exist, |n| Self::bounded(Some(n), None)),
            NodeSelectorOperator::Gte => {
                bound().map_or_else(Self::does_not_exist, |n| Self::bounded(Some(n.saturating_sub(1)), None))
            }
            NodeSelectorOperator::Lt => bound().map_or_else(Self::does_not_exist, |n| Self::bounded(None, Some(n))),
            NodeSelectorOperator::Lte => {
                bound().map_or_else(Self::does_not_exist, |n| Self::bounded(None, Some(n.saturating_add(1))))
            }
        }
    }

    fn bounded(greater_than: Option<i64>, less_than: Option<i64>) -> Self {
        Self { greater_than, less_than, ..Self::any() }
    }

    /// The operator this set reads as (core `Operator()`): bounds read as `Exists`/`NotIn`.
    pub fn operator(&self) -> NodeSelectorOperator {
        match (self.complement, self.values.is_empty()) {
            (true, true) => NodeSelectorOperator::Exists,
            (true, false) => NodeSelectorOperator::NotIn,
            (false, false) => NodeSelectorOperator::In,
            (false, true) => NodeSelectorOperator::DoesNotExist,
        }
    }

    /// Whether the set is the complement of `values` (NotIn/Exists/bounds).
    pub fn is_complement(&self) -> bool {
        self.complement
    }

    /// The explicit values (allowed for In, excluded for NotIn).
    pub fn values(&self) -> &BTreeSet<String> {
        &self.values
    }

    /// The single allowed value, when exactly one is allowed.
    pub fn single_value(&self) -> Option<&str> {
        if !self.complement && self.values.len() == 1 { self.values.first().map(String::as_str) } else { None }
    }

    /// Whether `value` is allowed.
    pub fn has(&self, value: &str) -> bool {
        self.within_bounds(value) && (self.complement != self.values.contains(value))
    }

    fn within_bounds(&self, value: &str) -> bool {
        if self.greater_than.is_none() && self.less_than.is_none() {
            return true;
        }
        let Ok(number) = value.parse::<i64>() else { return false };
        self.greater_than.is_none_or(|gt| number > gt) && self.less_than.is_none_or(|lt| number < lt)
    }

    /// Whether no value at all is allowed (only an absent label satisfies it).
    pub fn is_empty(&self) -> bool {
        if self.complement {
            match (self.greater_than, self.less_than) {
                // Integers strictly between the bounds, minus the excluded ones.
                (Some(gt), Some(lt)) => {
                    let span = i128::from(lt) - i128::from(gt) - 1;
                    let excluded = self.values.iter().filter(|v| self.within_bounds(v)).count();
                    span <= i128::try_from(excluded).unwrap_or(i128::MAX)
                }
                _ => false,
            }
        } else {
            self.values.is_empty()
        }
    }

    /// The number of allowed values, saturating for complements (core `Len()`).
    pub fn len(&self) -> usize {
        if self.is_empty() {
            0
        } else if self.complement {
            usize::MAX - self.values.len()
        } else {
            self.values.len()
        }
    }

    /// The intersection of two sets for the same key (core `Intersection`).
    #[must_use]
    pub fn intersection(&self, other: &Self) -> Self {
        let complement = self.complement && other.complement;
        let greater_than = max_option(self.greater_than, other.greater_than);
        let less_than = min_option(self.less_than, other.less_than);
        let min_values = max_option(self.min_values, other.min_values);
        if let (Some(gt), Some(lt)) = (greater_than, less_than)
            && i128::from(lt) - i128::from(gt) < 2
        {
            return Self { min_values, ..Self::does_not_exist() };
        }
        let mut values: BTreeSet<String> = match (self.complement, other.complement) {
            (true, true) => self.values.union(&other.values).cloned().collect(),
            (true, false) => other.values.difference(&self.values).cloned().collect(),
            (false, true) => self.values.difference(&other.values).cloned().collect(),
            (false, false) => self.values.intersection(&other.values).cloned().collect(),
        };
        let mut result = Self { complement, values: BTreeSet::new(), greater_than, less_than, min_values };
        values.retain(|v| result.within_bounds(v));
        result.values = values;
        if !complement {
            result.greater_than = None;
            result.less_than = None;
        }
        result
    }

    /// Whether the two sets share a value (or both allow the label to be absent).
    pub fn intersects(&self, other: &Self) -> bool {
        if !self.has_common_value(other) {
            return allows_absence(self.operator()) && allows_absence(other.operator());
        }
        true
    }

    /// Whether some value is allowed by both, without building the intersection for the
    /// common finite cases (this runs once per instance type per narrowed claim).
    fn has_common_value(&self, other: &Self) -> bool {
        match (self.complement, other.complement) {
            (false, _) => self.values.iter().any(|v| other.has(v)),
            (true, false) => other.values.iter().any(|v| self.has(v)),
            (true, true) => !self.intersection(other).is_empty(),
        }
    }

    #[cfg(test)]
    fn intersects_by_intersection(&self, other: &Self) -> bool {
        if !self.intersection(other).is_empty() {
            return true;
        }
        allows_absence(self.operator()) && allows_absence(other.operator())
    }
}

fn allows_absence(operator: NodeSelectorOperator) -> bool {
    matches!(operator, NodeSelectorOperator::NotIn | NodeSelectorOperator::DoesNotExist)
}

fn max_option<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn min_option<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        match self.operator() {
            NodeSelectorOperator::In => write!(f, "In [{}]", values.join(" "))?,
            NodeSelectorOperator::NotIn => write!(f, "NotIn [{}]", values.join(" "))?,
            other => write!(f, "{other}")?,
        }
        if let Some(gt) = self.greater_than {
            write!(f, " >{gt}")?;
        }
        if let Some(lt) = self.less_than {
            write!(f, " <{lt}")?;
        }
        if let Some(min) = self.min_values {
            write!(f, " minValues {min}")?;
        }
        Ok(())
    }
}

/// Why two sets of requirements cannot hold on one node; the message names the key and both
/// sides, as core's errors do, so a pod's scheduling event explains itself.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IncompatibleError {
    /// The key is required on both sides and no value satisfies both.
    #[error("key {key}, {incoming} not in {existing}")]
    NoCommonValue {
        /// Label key.
        key: String,
        /// What the pod (incoming side) asks for.
        incoming: String,
        /// What the node or NodePool allows.
        existing: String,
    },
    /// A custom label the pod requires is not defined by the NodePool, so no node will carry it.
    #[error("label {key:?} does not have known values")]
    UndefinedLabel {
        /// Label key.
        key: String,
    },
}

/// Requirements keyed by label (core `scheduling.Requirements`). Adding a requirement for a key
/// already present intersects the two, so the map is always the conjunction of what was added.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Requirements(BTreeMap<String, Requirement>);

impl Requirements {
    /// No requirements.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requirements from NodePool/NodeClaim requirements, keeping `minValues`; alias keys are
    /// normalized (`beta.kubernetes.io/arch` → `kubernetes.io/arch`).
    pub fn from_node_selector(requirements: &[NodeSelectorRequirementWithMinValues]) -> Self {
        let mut result = Self::new();
        for requirement in requirements {
            let mut set = Requirement::new(requirement.operator, requirement.values());
            set.min_values = requirement.min_values.and_then(|n| usize::try_from(n).ok());
            result.add(labels::normalize_label(&requirement.key), set);
        }
        result
    }

    /// `key In [value]` for every label (node labels, NodePool template labels, nodeSelector).
    pub fn from_labels<'a, I: IntoIterator<Item = (&'a String, &'a String)>>(labels: I) -> Self {
        let mut result = Self::new();
        for (key, value) in labels {
            result.add(labels::normalize_label(key), Requirement::in_values([value.clone()]));
        }
        result
    }

    /// Intersects `requirement` into the set for `key`.
    pub fn add(&mut self, key: &str, requirement: Requirement) {
        match self.0.get_mut(key) {
            Some(existing) => *existing = existing.intersection(&requirement),
            None => {
                self.0.insert(key.to_owned(), requirement);
            }
        }
    }

    /// Intersects every requirement of `other` into `self`.
    pub fn add_all(&mut self, other: &Self) {
        for (key, requirement) in &other.0 {
            self.add(key, requirement.clone());
        }
    }

    /// Whether intersecting `other` into `self` would change nothing (so cached instance-type
    /// filtering stays valid).
    pub fn is_narrowed_by(&self, other: &Self) -> bool {
        other.0.iter().any(|(key, incoming)| match self.0.get(key) {
            Some(existing) => existing.intersection(incoming) != *existing,
            None => true,
        })
    }

    /// The set for `key`; `None` when unconstrained.
    pub fn get(&self, key: &str) -> Option<&Requirement> {
        self.0.get(key)
    }

    /// Whether `key` is constrained.
    pub fn has(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Removes the constraint on `key`.
    pub fn remove(&mut self, key: &str) -> Option<Requirement> {
        self.0.remove(key)
    }

    /// Whether `value` is allowed for `key` (an unconstrained key allows anything).
    pub fn allows(&self, key: &str, value: &str) -> bool {
        self.0.get(key).is_none_or(|r| r.has(value))
    }

    /// Iterates `(key, requirement)` in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Requirement)> {
        self.0.iter()
    }

    /// Whether there are no constraints.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every key on both sides has a common value (core `Intersects`): the check instance types
    /// and offerings are filtered with, where a key defined on one side only is fine.
    pub fn intersects(&self, incoming: &Self) -> Result<(), IncompatibleError> {
        let (small, large, small_is_incoming) =
            if incoming.0.len() <= self.0.len() { (incoming, self, true) } else { (self, incoming, false) };
        for (key, a) in &small.0 {
            let Some(b) = large.0.get(key) else { continue };
            let (existing, incoming) = if small_is_incoming { (b, a) } else { (a, b) };
            if !existing.intersects(incoming) {
                return Err(IncompatibleError::NoCommonValue {
                    key: key.clone(),
                    incoming: incoming.to_string(),
                    existing: existing.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Whether a pod's `incoming` requirements can hold on a node with these requirements (core
    /// `Compatible` with `AllowUndefinedWellKnownLabels`): well-known keys the node leaves
    /// undefined are fine (the instance type decides them); a custom key the node does not
    /// define only passes if the pod accepts its absence (`NotIn`, `DoesNotExist`).
    pub fn compatible(&self, incoming: &Self) -> Result<(), IncompatibleError> {
        self.compatible_with(incoming, true)
    }

    /// [`Self::compatible`] for a real node, whose labels are final: every key the pod requires
    /// must be defined, well-known or not.
    pub fn compatible_strict(&self, incoming: &Self) -> Result<(), IncompatibleError> {
        self.compatible_with(incoming, false)
    }

    fn compatible_with(&self, incoming: &Self, allow_undefined_well_known: bool) -> Result<(), IncompatibleError> {
        for (key, requirement) in &incoming.0 {
            if self.0.contains_key(key)
                || allows_absence(requirement.operator())
                || (allow_undefined_well_known && (labels::is_well_known_label(key) || key == labels::HOSTNAME_LABEL))
            {
                continue;
            }
            return Err(IncompatibleError::UndefinedLabel { key: key.clone() });
        }
        self.intersects(incoming)
    }

    /// Labels a node with these requirements would carry: keys with exactly one allowed value.
    pub fn single_valued_labels(&self) -> BTreeMap<String, String> {
        self.0
            .iter()
            .filter_map(|(key, requirement)| requirement.single_value().map(|value| (key.clone(), value.to_owned())))
            .collect()
    }

    /// Back to the API form, keeping `minValues` (for a NodeClaim's spec).
    pub fn to_node_selector(&self) -> Vec<NodeSelectorRequirementWithMinValues> {
        let mut out = Vec::new();
        for (key, requirement) in &self.0 {
            let min_values = requirement.min_values.and_then(|n| i64::try_from(n).ok());
            let operator = requirement.operator();
            let values: Vec<String> = requirement.values.iter().cloned().collect();
            let mut push = |operator, values: Option<Vec<String>>| {
                out.push(NodeSelectorRequirementWithMinValues { key: key.clone(), operator, values, min_values });
            };
            match operator {
                NodeSelectorOperator::In | NodeSelectorOperator::NotIn => push(operator, Some(values)),
                _ if requirement.greater_than.is_none() && requirement.less_than.is_none() => push(operator, None),
                _ => {}
            }
            if requirement.complement {
                if let Some(gt) = requirement.greater_than {
                    push(NodeSelectorOperator::Gt, Some(vec![gt.to_string()]));
                }
                if let Some(lt) = requirement.less_than {
                    push(NodeSelectorOperator::Lt, Some(vec![lt.to_string()]));
                }
            }
        }
        out
    }
}

impl fmt::Display for Requirements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, (key, requirement)) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{key} {requirement}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use NodeSelectorOperator::*;

    fn req(operator: NodeSelectorOperator, values: &[&str]) -> Requirement {
        Requirement::new(operator, &values.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn in_and_not_in_intersect_like_sets() {
        let zones = req(In, &["a", "b", "c"]);
        assert_eq!(zones.intersection(&req(NotIn, &["a"])), req(In, &["b", "c"]));
        assert_eq!(zones.intersection(&req(In, &["c", "d"])), req(In, &["c"]));
        assert!(zones.intersection(&req(In, &["d"])).is_empty());
        assert_eq!(req(NotIn, &["a"]).intersection(&req(NotIn, &["b"])).operator(), NotIn);
        assert_eq!(zones.intersection(&req(Exists, &[])), zones);
        assert!(req(DoesNotExist, &[]).intersection(&zones).is_empty());
    }

    #[test]
    fn numeric_operators_bound_values_and_gte_lte_are_inclusive() {
        let gt = req(Gt, &["4"]);
        assert!(gt.has("5") && !gt.has("4") && !gt.has("x"));
        let gte = req(Gte, &["4"]);
        assert!(gte.has("4") && !gte.has("3"));
        let lte = req(Lte, &["8"]);
        assert!(lte.has("8") && !lte.has("9"));
        assert_eq!(req(In, &["2", "4", "8", "16"]).intersection(&gt).intersection(&lte), req(In, &["8"]));
        assert!(req(Gt, &["4"]).intersection(&req(Lt, &["5"])).is_empty());
        assert!(!req(Gt, &["4"]).intersection(&req(Lt, &["6"])).is_empty());
        assert!(req(Gt, &["x"]).is_empty(), "a non-integer bound matches nothing");
    }

    #[test]
    fn compatible_allows_undefined_well_known_labels_but_not_custom_ones() {
        let pool = Requirements::from_labels(&BTreeMap::from([("team".to_owned(), "a".to_owned())]));
        let mut pod = Requirements::new();
        pod.add(labels::ARCH_LABEL, req(In, &["arm64"]));
        assert!(pool.compatible(&pod).is_ok());
        pod.add("tier", req(In, &["web"]));
        assert_eq!(pool.compatible(&pod), Err(IncompatibleError::UndefinedLabel { key: "tier".to_owned() }));
        let mut absent = Requirements::new();
        absent.add("tier", req(DoesNotExist, &[]));
        assert!(pool.compatible(&absent).is_ok());
        let mut other_team = Requirements::new();
        other_team.add("team", req(In, &["b"]));
        let err = pool.compatible(&other_team).unwrap_err().to_string();
        assert_eq!(err, "key team, In [b] not in In [a]");
    }

    #[test]
    fn fast_intersects_agrees_with_the_intersection() {
        let samples = [
            req(In, &["1", "2", "a"]),
            req(In, &["3"]),
            req(NotIn, &["1"]),
            req(NotIn, &["2", "3"]),
            req(Exists, &[]),
            req(DoesNotExist, &[]),
            req(Gt, &["1"]),
            req(Lt, &["3"]),
            req(Gte, &["3"]),
            req(Gt, &["2"]).intersection(&req(Lt, &["4"])),
        ];
        for a in &samples {
            for b in &samples {
                assert_eq!(a.intersects(b), a.intersects_by_intersection(b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn both_sides_allowing_absence_intersect() {
        assert!(req(NotIn, &["a"]).intersects(&req(DoesNotExist, &[])));
        assert!(!req(In, &["a"]).intersects(&req(DoesNotExist, &[])));
    }

    #[test]
    fn min_values_survive_intersection_and_round_trip() {
        let api = vec![
            NodeSelectorRequirementWithMinValues::new(labels::INSTANCE_FAMILY_LABEL, Exists).min_values(3),
            NodeSelectorRequirementWithMinValues::with_values(labels::INSTANCE_CPU_LABEL, Gt, ["4"]),
        ];
        let mut requirements = Requirements::from_node_selector(&api);
        requirements.add(labels::INSTANCE_FAMILY_LABEL, req(In, &["m5", "c5", "r5", "t3"]));
        let family = requirements.get(labels::INSTANCE_FAMILY_LABEL).unwrap();
        assert_eq!(family.min_values, Some(3));
        let back = Requirements::from_node_selector(&requirements.to_node_selector());
        assert_eq!(back, requirements);
    }

    #[test]
    fn aliases_are_normalized() {
        let api = vec![NodeSelectorRequirementWithMinValues::with_values("beta.kubernetes.io/arch", In, ["amd64"])];
        assert!(Requirements::from_node_selector(&api).has(labels::ARCH_LABEL));
    }
}
