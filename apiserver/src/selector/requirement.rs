//! One ANDed term of a label selector: a key, an operator and values, validated as
//! `labels.NewRequirement` validates them.

use std::collections::BTreeMap;
use std::fmt;

use super::error::{Result, SelectorError};
use super::validation::{aggregate, go_string_slice, invalid, label_value_errors, qualified_name_errors};

/// A label selector operator (apimachinery `selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operator {
    /// `key=value`
    Equals,
    /// `key==value` (same meaning, kept for `Display`)
    DoubleEquals,
    /// `key!=value`: also true when the label is absent.
    NotEquals,
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`: also true when the label is absent.
    NotIn,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>3` (integers only)
    GreaterThan,
    /// `key<3` (integers only)
    LessThan,
}

/// One ANDed term of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and deduplicated, as `sets.String.List()` returns them.
    values: Vec<String>,
}

impl Requirement {
    /// labels.NewRequirement: validates the key, the values and their count for the operator.
    ///
    /// # Errors
    /// [`SelectorError::InvalidLabelSelector`] with the aggregated field errors.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Requirement> {
        let mut errs = Vec::new();
        let key_errs = qualified_name_errors(key);
        if !key_errs.is_empty() {
            errs.push(invalid("key", key, &key_errs.join("; ")));
        }
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                errs.push(format!(
                    "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                    go_string_slice(&values)
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
                errs.push(format!(
                    "values: Invalid value: {}: exact-match compatibility requires one single value",
                    go_string_slice(&values)
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                errs.push(format!(
                    "values: Invalid value: {}: values set must be empty for exists and does not exist",
                    go_string_slice(&values)
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(format!(
                        "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                        go_string_slice(&values)
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(invalid(
                            &format!("values[{i}]"),
                            v,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let value_errs = label_value_errors(v);
            if !value_errs.is_empty() {
                errs.push(invalid(&format!("values[{i}][{key}]"), v, &value_errs.join("; ")));
            }
        }
        if let Some(msg) = aggregate(errs) {
            return Err(SelectorError::InvalidLabelSelector(msg));
        }
        let mut values = values;
        values.sort();
        values.dedup();
        Ok(Requirement { key: key.to_string(), operator, values })
    }

    /// The label key this requirement tests.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted and deduplicated.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Requirement.Matches.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let label = labels.get(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => label.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn | Operator::NotEquals => label.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => label.is_some(),
            Operator::DoesNotExist => label.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(actual) = label.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                match self.operator {
                    Operator::GreaterThan => actual > wanted,
                    _ => actual < wanted,
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in (",
            Operator::NotIn => " notin (",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        f.write_str(&self.values.join(","))?;
        if matches!(self.operator, Operator::In | Operator::NotIn) {
            f.write_str(")")?;
        }
        Ok(())
    }
}
