//! Label selectors, node selector terms and tolerations, matched as apimachinery and
//! component-helpers match them.
//!
//! Selectors are compiled once per pod so that the filters, run thousands of times per
//! scheduling cycle, compare strings only.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Labels of an object, as stored in `metadata.labels`.
pub type Labels = BTreeMap<String, String>;

/// One requirement of a compiled label selector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum LabelRequirement {
    /// The label exists and its value is in the set.
    In(String, BTreeSet<String>),
    /// The label is absent or its value is not in the set.
    NotIn(String, BTreeSet<String>),
    /// The label exists.
    Exists(String),
    /// The label does not exist.
    DoesNotExist(String),
}

impl LabelRequirement {
    fn matches(&self, labels: &Labels) -> bool {
        match self {
            LabelRequirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            LabelRequirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            LabelRequirement::Exists(k) => labels.contains_key(k),
            LabelRequirement::DoesNotExist(k) => !labels.contains_key(k),
        }
    }
}

/// A label selector compiled to requirements. `Nothing` is what apimachinery returns for a nil
/// selector (and for an invalid one, which the API server would have rejected).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PodSelector {
    /// Matches no object.
    Nothing,
    /// Matches objects satisfying every requirement (none means everything).
    All(Vec<LabelRequirement>),
}

impl PodSelector {
    /// `metav1.LabelSelectorAsSelector`: nil selects nothing, empty selects everything.
    pub fn from_label_selector(selector: Option<&LabelSelector>) -> Self {
        let Some(selector) = selector else {
            return PodSelector::Nothing;
        };
        let mut reqs = Vec::new();
        for (k, v) in selector.match_labels.iter().flatten() {
            reqs.push(LabelRequirement::In(k.clone(), BTreeSet::from([v.clone()])));
        }
        for e in selector.match_expressions.iter().flatten() {
            let values: BTreeSet<String> = e.values.iter().flatten().cloned().collect();
            let req = match e.operator.as_str() {
                "In" if !values.is_empty() => LabelRequirement::In(e.key.clone(), values),
                "NotIn" if !values.is_empty() => LabelRequirement::NotIn(e.key.clone(), values),
                "Exists" if values.is_empty() => LabelRequirement::Exists(e.key.clone()),
                "DoesNotExist" if values.is_empty() => LabelRequirement::DoesNotExist(e.key.clone()),
                _ => return PodSelector::Nothing,
            };
            reqs.push(req);
        }
        reqs.sort();
        PodSelector::All(reqs)
    }

    /// Adds `key In (value)` (used for `matchLabelKeys`). Selecting nothing stays nothing.
    pub fn with_requirement(mut self, req: LabelRequirement) -> Self {
        if let PodSelector::All(reqs) = &mut self
            && !reqs.contains(&req)
        {
            reqs.push(req);
            reqs.sort();
        }
        self
    }

    /// A label (key, value) every matching object must carry, if the selector has one: lets
    /// indexes look up candidate selectors by an object's labels instead of trying them all.
    pub fn required_label(&self) -> Option<(&str, &str)> {
        let PodSelector::All(reqs) = self else {
            return None;
        };
        reqs.iter().find_map(|r| match r {
            LabelRequirement::In(k, vs) if vs.len() == 1 => vs.first().map(|v| (k.as_str(), v.as_str())),
            _ => None,
        })
    }

    /// Whether the labels satisfy the selector.
    pub fn matches(&self, labels: &Labels) -> bool {
        match self {
            PodSelector::Nothing => false,
            PodSelector::All(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }
}

/// `metadata.name`, the only field node selector `matchFields` may use.
pub const NODE_NAME_FIELD: &str = "metadata.name";

fn node_requirement_matches(req: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let ([bound], Some(v)) = (values, value) else {
                return false;
            };
            let (Ok(bound), Ok(v)) = (bound.parse::<i64>(), v.parse::<i64>()) else {
                return false;
            };
            if req.operator == "Gt" { v > bound } else { v < bound }
        }
        _ => false,
    }
}

/// One node selector term: every expression and field requirement must hold; a term with
/// neither matches no node (component-helpers `nodeSelectorTerm`).
pub fn node_selector_term_matches(term: &NodeSelectorTerm, node_name: &str, labels: &Labels) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions.iter().all(|r| node_requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            r.key == NODE_NAME_FIELD
                && matches!(r.operator.as_str(), "In" | "NotIn")
                && node_requirement_matches(r, Some(node_name))
        })
}

/// Terms are ORed: the node matches when any term does.
pub fn node_selector_terms_match(terms: &[NodeSelectorTerm], node_name: &str, labels: &Labels) -> bool {
    terms.iter().any(|t| node_selector_term_matches(t, node_name, labels))
}

/// `Toleration.ToleratesTaint`: empty effect or key are wildcards; operator Exists ignores the
/// value; Equal (or empty) compares it.
pub fn toleration_tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref()
        && !effect.is_empty()
        && effect != taint.effect
    {
        return false;
    }
    if let Some(key) = toleration.key.as_deref()
        && !key.is_empty()
        && key != taint.key
    {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        "Exists" => true,
        _ => false,
    }
}

/// Whether any toleration tolerates the taint.
pub fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| toleration_tolerates(t, taint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn nil_selector_matches_nothing_and_empty_matches_everything() {
        let l = labels(&[("app", "a")]);
        assert!(!PodSelector::from_label_selector(None).matches(&l));
        assert!(PodSelector::from_label_selector(Some(&LabelSelector::default())).matches(&l));
    }

    #[test]
    fn selector_expressions_follow_apimachinery() {
        let sel = LabelSelector {
            match_labels: Some(BTreeMap::from([("app".into(), "a".into())])),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "NotIn".into(),
                    values: Some(vec!["db".into()]),
                },
                LabelSelectorRequirement { key: "canary".into(), operator: "DoesNotExist".into(), values: None },
            ]),
        };
        let s = PodSelector::from_label_selector(Some(&sel));
        assert!(s.matches(&labels(&[("app", "a")])));
        assert!(s.matches(&labels(&[("app", "a"), ("tier", "web")])));
        assert!(!s.matches(&labels(&[("app", "a"), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("app", "a"), ("canary", "")])));
        assert!(!s.matches(&labels(&[("app", "b")])));
    }

    #[test]
    fn node_selector_operators_all_work() {
        let l = labels(&[("zone", "a"), ("cores", "8")]);
        let ok = |r: NodeSelectorRequirement| {
            node_selector_term_matches(
                &NodeSelectorTerm { match_expressions: Some(vec![r]), match_fields: None },
                "n1",
                &l,
            )
        };
        assert!(ok(req("zone", "In", &["a", "b"])));
        assert!(!ok(req("zone", "In", &["b"])));
        assert!(ok(req("zone", "NotIn", &["b"])));
        assert!(ok(req("missing", "NotIn", &["b"])));
        assert!(ok(req("zone", "Exists", &[])));
        assert!(ok(req("missing", "DoesNotExist", &[])));
        assert!(ok(req("cores", "Gt", &["4"])));
        assert!(!ok(req("cores", "Gt", &["8"])));
        assert!(ok(req("cores", "Lt", &["9"])));
        assert!(!ok(req("zone", "Lt", &["9"])), "non-integer label never matches Gt/Lt");
        assert!(!ok(req("missing", "Gt", &["1"])));
    }

    #[test]
    fn match_fields_select_by_node_name_and_empty_terms_match_nothing() {
        let term =
            NodeSelectorTerm { match_expressions: None, match_fields: Some(vec![req(NODE_NAME_FIELD, "In", &["n1"])]) };
        assert!(node_selector_term_matches(&term, "n1", &Labels::new()));
        assert!(!node_selector_term_matches(&term, "n2", &Labels::new()));
        assert!(!node_selector_term_matches(&NodeSelectorTerm::default(), "n1", &Labels::new()));
    }

    #[test]
    fn tolerations_match_by_key_value_and_effect() {
        let taint = Taint { key: "k".into(), value: Some("v".into()), effect: "NoSchedule".into(), time_added: None };
        let t = |key: Option<&str>, op: Option<&str>, value: Option<&str>, effect: Option<&str>| Toleration {
            key: key.map(Into::into),
            operator: op.map(Into::into),
            value: value.map(Into::into),
            effect: effect.map(Into::into),
            toleration_seconds: None,
        };
        assert!(toleration_tolerates(&t(Some("k"), None, Some("v"), None), &taint));
        assert!(!toleration_tolerates(&t(Some("k"), None, Some("w"), None), &taint));
        assert!(toleration_tolerates(&t(Some("k"), Some("Exists"), None, Some("NoSchedule")), &taint));
        assert!(!toleration_tolerates(&t(Some("k"), Some("Exists"), None, Some("NoExecute")), &taint));
        assert!(toleration_tolerates(&t(None, Some("Exists"), None, None), &taint));
    }
}
