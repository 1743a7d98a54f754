//! The CRDs' OpenAPI `pattern`s, compiled once, with the source text kept for messages.

use std::sync::LazyLock;

use regex::Regex;

/// A compiled OpenAPI `pattern`, with its source text for messages.
pub(crate) struct Pattern {
    source: &'static str,
    regex: Regex,
}

impl Pattern {
    /// The pattern as the CRD writes it, for error messages.
    pub(crate) fn source(&self) -> &'static str {
        self.source
    }

    /// Whether `value` matches (unanchored search, like OpenAPI; anchors come from the source).
    pub(crate) fn is_match(&self, value: &str) -> bool {
        self.regex.is_match(value)
    }
}

fn pattern(source: &'static str) -> Pattern {
    // The sources are the CRDs' literal patterns; unit tests compile every one of them.
    #[allow(clippy::unwrap_used)]
    let regex = Regex::new(source).unwrap();
    Pattern { source, regex }
}

macro_rules! patterns {
    ($($(#[$doc:meta])* $name:ident = $source:expr;)*) => {
        $( $(#[$doc])* pub(crate) static $name: LazyLock<Pattern> = LazyLock::new(|| pattern($source)); )*
        #[cfg(test)]
        pub(crate) fn all_patterns() -> Vec<&'static LazyLock<Pattern>> { vec![$(&$name),*] }
    };
}

patterns! {
    /// Label and taint keys in requirements, taints (`key` of NodeSelectorRequirement and Taint).
    LABEL_KEY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";
    /// Label values (template labels, requirement values).
    LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";
    /// `expireAfter` and `consolidateAfter`.
    NILLABLE_DURATION = r"^(([0-9]+(s|m|h))+|Never)$";
    /// `terminationGracePeriod`.
    DURATION = r"^([0-9]+(s|m|h))+$";
    /// Budget `duration`: hours and minutes only (cron has minute resolution).
    BUDGET_DURATION = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$";
    /// Budget `nodes`: a percentage up to 100% or a count.
    BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$";
    /// Budget `schedule`: a cron macro or five fields.
    BUDGET_SCHEDULE = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$";
    /// `nodeClassRef.group`.
    NODE_CLASS_GROUP = r"^[^/]*$";
    /// Resource quantities written as strings.
    QUANTITY = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
    /// Condition `type`.
    CONDITION_TYPE = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";
    /// Condition `reason` (NodePool, EC2NodeClass, NodeOverlay).
    CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
    /// Condition `reason` (NodeClaim, where it may be empty).
    CONDITION_REASON_OR_EMPTY = r"^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$";
    /// Kubelet eviction thresholds: a percentage or a quantity.
    EVICTION_THRESHOLD = r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$";
    /// EBS `volumeSize` (1Gi..59000Gi, 1G..64000G, 1Ti..58Ti, 1T..64T).
    VOLUME_SIZE = r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$";
    /// AMI selector `id` (unanchored, as upstream).
    AMI_ID = r"ami-[0-9a-z]+";
    /// Security group selector `id` (unanchored, as upstream).
    SECURITY_GROUP_ID = r"sg-[0-9a-z]+";
    /// Subnet selector `id` (unanchored, as upstream).
    SUBNET_ID = r"subnet-[0-9a-z]+";
    /// Capacity reservation `id`.
    CAPACITY_RESERVATION_ID = r"^cr-[0-9a-z]+$";
    /// AWS account ID.
    OWNER_ID = r"^[0-9]{12}$";
    /// Placement group `id`.
    PLACEMENT_GROUP_ID = r"^pg-[0-9a-z]+$";
    /// AMI alias `family@version`.
    AMI_ALIAS = r"^[a-zA-Z0-9]+@.+$";
    /// NodeOverlay `price`.
    OVERLAY_PRICE = r"^\d+(\.\d+)?$";
    /// NodeOverlay `priceAdjustment`.
    OVERLAY_PRICE_ADJUSTMENT = r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$";
    /// DNS-1123 subdomain (prefix of a qualified name).
    DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
    /// Name part of a qualified name.
    QUALIFIED_NAME_PART = r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crd_pattern_compiles() {
        for pattern in all_patterns() {
            assert!(!pattern.source.is_empty());
        }
    }
}
