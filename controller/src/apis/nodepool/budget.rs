//! Disruption budgets (`spec.disruption.budgets`): how many of a NodePool's nodes may be
//! disrupting at once, for which reasons, and during which cron-scheduled window.

use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::disruption_reason::DisruptionReason;
use crate::apis::cron::{CronError, CronSchedule};
use crate::apis::duration::GoDuration;

/// Default budget `nodes` (CRD default).
pub const DEFAULT_BUDGET_NODES: &str = "10%";

/// One disruption budget: at most `nodes` disrupting at once, optionally only during a window.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// Reasons this budget applies to; absent means all reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasons: Option<Vec<DisruptionReason>>,
    /// Maximum disrupting nodes, `"10%"` or `"3"` (default `10%`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<BudgetNodes>,
    /// Cron schedule (UTC) at which the budget window starts; set together with `duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Length of the window after each schedule hit (hours and minutes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<GoDuration>,
}

impl Budget {
    /// A budget of `nodes` that is always active and applies to every reason.
    pub fn always(nodes: BudgetNodes) -> Self {
        Self { reasons: None, nodes: Some(nodes), schedule: None, duration: None }
    }

    /// The effective `nodes` (default `10%`).
    pub fn nodes(&self) -> BudgetNodes {
        self.nodes.clone().unwrap_or_else(BudgetNodes::default_percent)
    }

    /// Whether the budget applies to disruptions for `reason` (no reasons = all).
    pub fn applies_to(&self, reason: DisruptionReason) -> bool {
        self.reasons.as_ref().is_none_or(|reasons| reasons.contains(&reason))
    }

    /// Whether the budget's window is open at `now` (core `Budget.IsActive`).
    ///
    /// A budget without schedule and duration is always active. Otherwise it is active when a
    /// schedule hit falls in `(now - duration, now]`. An unparseable schedule is an error, and
    /// Karpenter then allows zero disruptions (fails closed).
    pub fn is_active(&self, now: &Time) -> Result<bool, CronError> {
        let (Some(schedule), Some(duration)) = (&self.schedule, &self.duration) else {
            return Ok(self.schedule.is_none() && self.duration.is_none());
        };
        let schedule = CronSchedule::parse(schedule)?;
        schedule.hit_within(now, duration.duration())
    }
}

/// Budget `nodes`: a percentage of the pool's nodes or an absolute count, keeping its text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BudgetNodes {
    text: String,
    value: BudgetNodesValue,
}

/// The parsed form of [`BudgetNodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BudgetNodesValue {
    /// `"N%"`: N percent of the pool's nodes, rounded up.
    Percent(u64),
    /// `"N"`: N nodes.
    Count(u64),
}

/// Why text is not a budget `nodes` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid budget nodes {0:?}: expected a count like \"3\" or a percentage like \"10%\"")]
pub struct BudgetNodesError(pub String);

impl BudgetNodes {
    /// Parses `"N"` or `"N%"` (digits only). Percentages above 100 parse, but fail validation.
    pub fn parse(text: &str) -> Result<Self, BudgetNodesError> {
        let (digits, percent) = match text.strip_suffix('%') {
            Some(digits) => (digits, true),
            None => (text, false),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(BudgetNodesError(text.to_owned()));
        }
        // The CRD pattern admits arbitrarily long digit strings; saturate rather than reject.
        let number = digits.parse::<u64>().unwrap_or(u64::MAX);
        let value = if percent { BudgetNodesValue::Percent(number) } else { BudgetNodesValue::Count(number) };
        Ok(Self { text: text.to_owned(), value })
    }

    /// The CRD default, `10%`.
    pub fn default_percent() -> Self {
        Self { text: DEFAULT_BUDGET_NODES.to_owned(), value: BudgetNodesValue::Percent(10) }
    }

    /// The parsed value.
    pub fn value(&self) -> BudgetNodesValue {
        self.value
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// How many of `node_count` nodes this allows to disrupt at once: percentages round up
    /// (`intstr.GetScaledValueFromIntOrPercent(.., roundUp=true)`).
    pub fn allowed(&self, node_count: u64) -> u64 {
        match self.value {
            BudgetNodesValue::Count(count) => count,
            BudgetNodesValue::Percent(percent) => node_count.saturating_mul(percent).div_ceil(100),
        }
    }
}

impl FromStr for BudgetNodes {
    type Err = BudgetNodesError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for BudgetNodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for BudgetNodes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for BudgetNodes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for BudgetNodes {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BudgetNodes".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^((100|[0-9]{1,2})%|[0-9]+)$" })
    }
    fn inline_schema() -> bool {
        true
    }
}
