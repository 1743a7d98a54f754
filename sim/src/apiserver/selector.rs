//! Label and field selectors (interim; replaced by the full apimachinery port).

use std::collections::BTreeMap;

use serde_json::Value;

/// A parse error.
#[derive(Debug, Clone)]
pub struct SelectorError(pub String);

impl std::fmt::Display for SelectorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone)]
enum Req {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A label selector.
#[derive(Debug, Clone, Default)]
pub struct LabelSelector {
    reqs: Vec<Req>,
    nothing: bool,
}

impl LabelSelector {
    /// Parses the query-string form.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut reqs = Vec::new();
        let mut depth = 0;
        let mut cur = String::new();
        let mut terms = Vec::new();
        for c in s.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    terms.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(c);
        }
        terms.push(cur);
        for t in terms.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
            let set = |v: &str| -> Vec<String> {
                v.trim().trim_start_matches('(').trim_end_matches(')').split(',').map(|x| x.trim().to_string()).collect()
            };
            if let Some(k) = t.strip_prefix('!') {
                reqs.push(Req::NotExists(k.trim().into()));
            } else if let Some((k, v)) = t.split_once(" notin ") {
                reqs.push(Req::NotIn(k.trim().into(), set(v)));
            } else if let Some((k, v)) = t.split_once(" in ") {
                reqs.push(Req::In(k.trim().into(), set(v)));
            } else if let Some((k, v)) = t.split_once("!=") {
                reqs.push(Req::NotIn(k.trim().into(), vec![v.trim().into()]));
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                reqs.push(Req::In(k.trim().into(), vec![v.trim().into()]));
            } else if t.chars().all(|c| c.is_alphanumeric() || "-_./".contains(c)) {
                reqs.push(Req::Exists(t.into()));
            } else {
                return Err(SelectorError(format!("unable to parse requirement: {t}")));
            }
        }
        Ok(Self { reqs, nothing: false })
    }

    /// From a `metav1.LabelSelector`.
    pub fn from_api(s: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector) -> Result<Self, SelectorError> {
        let mut reqs = Vec::new();
        for (k, v) in s.match_labels.iter().flatten() {
            reqs.push(Req::In(k.clone(), vec![v.clone()]));
        }
        for e in s.match_expressions.iter().flatten() {
            let vals = e.values.clone().unwrap_or_default();
            reqs.push(match e.operator.as_str() {
                "In" => Req::In(e.key.clone(), vals),
                "NotIn" => Req::NotIn(e.key.clone(), vals),
                "Exists" => Req::Exists(e.key.clone()),
                "DoesNotExist" => Req::NotExists(e.key.clone()),
                o => return Err(SelectorError(format!("{o} is not a valid label selector operator"))),
            });
        }
        Ok(Self { reqs, nothing: false })
    }

    /// Whether labels match.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        !self.nothing
            && self.reqs.iter().all(|r| match r {
                Req::In(k, v) => labels.get(k).is_some_and(|l| v.contains(l)),
                Req::NotIn(k, v) => labels.get(k).is_none_or(|l| !v.contains(l)),
                Req::Exists(k) => labels.contains_key(k),
                Req::NotExists(k) => !labels.contains_key(k),
            })
    }
}

/// A field selector.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses `a=b,c!=d`.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        for t in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if let Some((k, v)) = t.split_once("!=") {
                terms.push((k.into(), false, v.into()));
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                terms.push((k.into(), true, v.into()));
            } else {
                return Err(SelectorError(format!("invalid selector: '{t}'; can't understand '{t}'")));
            }
        }
        Ok(Self { terms })
    }

    /// Whether the object matches.
    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(k, eq, v)| {
            let mut cur = obj;
            for part in k.split('.') {
                cur = &cur[part];
            }
            let actual = match cur {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (actual == *v) == *eq
        })
    }
}
