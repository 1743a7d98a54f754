//! Label selectors: requirements ANDed together, from the query-string form
//! (`labels.Parse`) or from a `metav1.LabelSelector` (`LabelSelectorAsSelector`).

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use serde_json::Value;

use super::error::{Result, SelectorError};
use super::label_parser::parse_requirements;
use super::requirement::{Operator, Requirement};
use super::validation::go_quote;

/// A parsed label selector: requirements ANDed together, sorted by key.
///
/// Two selectors have no requirements: [`LabelSelector::everything`] (the empty query string
/// or an empty `metav1.LabelSelector`) and [`LabelSelector::nothing`] (a null
/// `metav1.LabelSelector`, e.g. a PDB with no selector, which must select no pods).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl LabelSelector {
    /// The selector that matches every object (`labels.Everything()`).
    pub fn everything() -> LabelSelector {
        LabelSelector { requirements: Vec::new(), nothing: false }
    }

    /// The selector that matches no object (`labels.Nothing()`).
    pub fn nothing() -> LabelSelector {
        LabelSelector { requirements: Vec::new(), nothing: true }
    }

    /// labels.Parse: the query-string form (`a=b,c in (x,y),!d`).
    ///
    /// # Errors
    /// [`SelectorError::InvalidLabelSelector`] with apimachinery's message, e.g.
    /// `unable to parse requirement: found '', expected: in, notin, =, ==, !=, gt, lt`.
    pub fn parse(input: &str) -> Result<LabelSelector> {
        let mut requirements = parse_requirements(input)?;
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(LabelSelector { requirements, nothing: false })
    }

    /// metav1.LabelSelectorAsSelector for a present selector: matchLabels become `=`
    /// requirements and matchExpressions In/NotIn/Exists/DoesNotExist. An empty selector
    /// matches everything. Use [`LabelSelector::from_api_opt`] when the selector may be null.
    ///
    /// # Errors
    /// An unknown operator (`"Foo" is not a valid label selector operator`) or an invalid
    /// key or value.
    pub fn from_api(selector: &metav1::LabelSelector) -> Result<LabelSelector> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::new(key, Operator::Equals, vec![value.clone()])?);
        }
        for expr in selector.match_expressions.iter().flatten() {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorError::InvalidLabelSelector(format!(
                        "{} is not a valid label selector operator",
                        go_quote(other)
                    )));
                }
            };
            let values = expr.values.clone().unwrap_or_default();
            requirements.push(Requirement::new(&expr.key, operator, values)?);
        }
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(LabelSelector { requirements, nothing: false })
    }

    /// metav1.LabelSelectorAsSelector including the null case: `None` matches nothing.
    ///
    /// # Errors
    /// As [`LabelSelector::from_api`].
    pub fn from_api_opt(selector: Option<&metav1::LabelSelector>) -> Result<LabelSelector> {
        match selector {
            None => Ok(LabelSelector::nothing()),
            Some(selector) => LabelSelector::from_api(selector),
        }
    }

    /// Whether the labels satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Matches against an object's `metadata.labels` (absent labels are an empty set).
    pub fn matches_object(&self, object: &Value) -> bool {
        let labels: BTreeMap<String, String> = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
            .unwrap_or_default();
        self.matches(&labels)
    }

    /// True for the selector that matches everything (no requirements, not `nothing`).
    pub fn is_everything(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector that matches nothing.
    pub fn is_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

impl Default for LabelSelector {
    /// The empty selector, which matches everything (an absent `labelSelector` parameter).
    fn default() -> LabelSelector {
        LabelSelector::everything()
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical query-string form (`labels.Selector.String()`); both `everything` and
    /// `nothing` print as the empty string, as in apimachinery.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn err(input: &str) -> String {
        LabelSelector::parse(input).expect_err(input).to_string()
    }

    #[test]
    fn equality_terms_match_as_apimachinery() {
        let s = LabelSelector::parse("app=web,tier==front,env!=prod").unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "front")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "front"), ("env", "prod")])));
        assert!(!s.matches(&labels(&[("app", "web")])));
        assert_eq!(s.to_string(), "app=web,env!=prod,tier==front");
    }

    #[test]
    fn set_terms_and_existence_match() {
        let s = LabelSelector::parse("env in (prod, qa), tier notin (db), has, !gone").unwrap();
        assert_eq!(s.to_string(), "env in (prod,qa),!gone,has,tier notin (db)");
        assert!(s.matches(&labels(&[("env", "qa"), ("has", "")])));
        assert!(!s.matches(&labels(&[("env", "qa"), ("has", ""), ("gone", "x")])));
        assert!(!s.matches(&labels(&[("env", "dev"), ("has", "")])));
        assert!(!s.matches(&labels(&[("env", "qa"), ("has", ""), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("env", "qa")])));
    }

    #[test]
    fn not_equals_and_notin_match_absent_labels() {
        assert!(LabelSelector::parse("a!=b").unwrap().matches(&labels(&[])));
        assert!(LabelSelector::parse("a notin (b)").unwrap().matches(&labels(&[])));
        assert!(!LabelSelector::parse("a in (b)").unwrap().matches(&labels(&[])));
    }

    #[test]
    fn empty_values_are_allowed() {
        let s = LabelSelector::parse("a=,b in (),c in (,x)").unwrap();
        assert!(s.matches(&labels(&[("a", ""), ("b", ""), ("c", "x")])));
        assert_eq!(s.to_string(), "a=,b in (),c in (,x)");
    }

    #[test]
    fn keywords_are_identifiers_in_value_position() {
        let s = LabelSelector::parse("in=notin").unwrap();
        assert!(s.matches(&labels(&[("in", "notin")])));
    }

    #[test]
    fn greater_and_less_than_compare_integers() {
        let s = LabelSelector::parse("gen>3,gen<10").unwrap();
        assert!(s.matches(&labels(&[("gen", "5")])));
        assert!(!s.matches(&labels(&[("gen", "3")])));
        assert!(!s.matches(&labels(&[("gen", "x")])));
        assert!(err("a>x").contains("for 'Gt', 'Lt' operators, the value must be an integer"));
    }

    #[test]
    fn empty_selector_matches_everything() {
        let s = LabelSelector::parse("").unwrap();
        assert!(s.is_everything());
        assert!(s.matches(&labels(&[])));
        assert!(LabelSelector::parse("  ").unwrap().is_everything());
    }

    #[test]
    fn malformed_selectors_report_apimachinery_messages() {
        assert_eq!(err("a,"), "found '', expected: identifier after ','");
        assert_eq!(err("a b"), "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
        assert_eq!(err("a=b=c"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(err(",a"), "found ',', expected: !, identifier, or 'end of string'");
        assert_eq!(err("a in b"), "unable to parse requirement: found 'b' expected: '('");
        assert_eq!(err("a in (b"), "unable to parse requirement: found '', expected: ',' or ')'");
        assert_eq!(err("!a=b"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(err("a foo b"), "unable to parse requirement: found 'foo', expected: in, notin, =, ==, !=, gt, lt");
    }

    #[test]
    fn invalid_keys_and_values_are_rejected_with_validation_messages() {
        let key = err("a$b=c");
        assert!(
            key.starts_with("unable to parse requirement: <nil>: Invalid value: \"a$b\": name part must consist of"),
            "{key}"
        );
        let long = "x".repeat(64);
        let value = err(&format!("a={long}"));
        assert!(value.starts_with(&format!("unable to parse requirement: values[0][a]: Invalid value: \"{long}\": must be no more than 63 characters")), "{value}");
        let prefix = err("Example.com/a");
        assert!(prefix.contains("prefix part a lowercase RFC 1123 subdomain"), "{prefix}");
        assert!(LabelSelector::parse("karpenter.sh/nodepool=default").is_ok());
        assert!(err("a/b/c").contains("a qualified name must consist of"));
    }

    fn api(labels: &[(&str, &str)], exprs: &[(&str, &str, &[&str])]) -> metav1::LabelSelector {
        metav1::LabelSelector {
            match_labels: if labels.is_empty() {
                None
            } else {
                Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
            },
            match_expressions: if exprs.is_empty() {
                None
            } else {
                Some(
                    exprs
                        .iter()
                        .map(|(k, op, vs)| metav1::LabelSelectorRequirement {
                            key: k.to_string(),
                            operator: op.to_string(),
                            values: Some(vs.iter().map(|v| v.to_string()).collect()),
                        })
                        .collect(),
                )
            },
        }
    }

    #[test]
    fn api_selector_converts_like_label_selector_as_selector() {
        let s = LabelSelector::from_api(&api(
            &[("app", "web")],
            &[("zone", "In", &["a", "b"]), ("spot", "DoesNotExist", &[])],
        ))
        .unwrap();
        assert_eq!(s.to_string(), "app=web,!spot,zone in (a,b)");
        assert!(s.matches(&labels(&[("app", "web"), ("zone", "b")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("zone", "b"), ("spot", "1")])));
    }

    #[test]
    fn empty_api_selector_matches_everything_and_null_matches_nothing() {
        let empty = LabelSelector::from_api_opt(Some(&metav1::LabelSelector::default())).unwrap();
        assert!(empty.matches(&labels(&[("a", "b")])));
        let null = LabelSelector::from_api_opt(None).unwrap();
        assert!(null.is_nothing());
        assert!(!null.matches(&labels(&[])));
    }

    #[test]
    fn api_selector_rejects_bad_operators_and_empty_in() {
        let bad = LabelSelector::from_api(&api(&[], &[("a", "Gt", &["1"])])).unwrap_err();
        assert_eq!(bad.to_string(), "\"Gt\" is not a valid label selector operator");
        let empty = LabelSelector::from_api(&api(&[], &[("a", "In", &[])])).unwrap_err();
        assert_eq!(
            empty.to_string(),
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
        );
        let exists = LabelSelector::from_api(&api(&[], &[("a", "Exists", &["x"])])).unwrap_err();
        assert!(exists.to_string().contains("values set must be empty for exists and does not exist"));
    }

    #[test]
    fn matches_object_reads_metadata_labels() {
        let s = LabelSelector::parse("app=web").unwrap();
        assert!(s.matches_object(&json!({"metadata": {"labels": {"app": "web"}}})));
        assert!(!s.matches_object(&json!({"metadata": {}})));
    }
}
