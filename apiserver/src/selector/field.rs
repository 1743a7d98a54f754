//! Field selectors: `field=value` and `field!=value` terms ANDed together, as
//! `fields.ParseSelector` parses and escapes them.

use std::fmt;

use serde_json::Value;

use super::error::{Result, SelectorError};
use super::field_labels::{field_value, supported_fields};

/// One term of a field selector: `field=value` (also written `==`) or `field!=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    /// The field label, e.g. `spec.nodeName`.
    pub field: String,
    /// True for `!=`.
    pub negated: bool,
    /// The unescaped value.
    pub value: String,
}

/// A parsed field selector: terms ANDed together. Missing fields compare as the empty
/// string, so `spec.nodeName=` selects unscheduled pods (the scheduler relies on it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// fields.ParseSelector: comma-separated terms (`\,` `\=` `\\` escapes in values).
    ///
    /// # Errors
    /// [`SelectorError::InvalidFieldSelector`], e.g. `invalid selector: 'x'; can't understand 'x'`.
    pub fn parse(input: &str) -> Result<FieldSelector> {
        let mut parts = split_terms(input);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts.iter().filter(|p| !p.is_empty()) {
            let Some((field, negated, raw)) = split_term(part) else {
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                )));
            };
            terms.push(FieldTerm { field: field.to_string(), negated, value: unescape_value(raw)? });
        }
        Ok(FieldSelector { terms })
    }

    /// The terms in canonical (sorted) order.
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// True when the selector has no terms and selects everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Checks every field against what the real API server indexes for `kind` (a built-in
    /// kind name such as `Pod`; any other kind allows `metadata.name` and
    /// `metadata.namespace`).
    ///
    /// # Errors
    /// [`SelectorError::UnsupportedField`]: the API server answers 400 BadRequest.
    pub fn supported_for(&self, kind: &str) -> Result<()> {
        self.supported_by(supported_fields(kind))
    }

    /// The custom resource rule (apiextensions `crConverter`): `metadata.name`, plus
    /// `metadata.namespace` for namespaced resources, plus the CRD's `selectableFields`
    /// (given as field labels, e.g. `spec.nodeClassRef.name`).
    ///
    /// # Errors
    /// [`SelectorError::UnsupportedField`] for the first other field.
    pub fn supported_for_custom_resource(&self, cluster_scoped: bool, selectable_fields: &[&str]) -> Result<()> {
        let mut allowed = vec!["metadata.name"];
        if !cluster_scoped {
            allowed.push("metadata.namespace");
        }
        allowed.extend_from_slice(selectable_fields);
        self.supported_by(&allowed)
    }

    /// As [`FieldSelector::supported_for`] with an explicit list (a CRD's `selectableFields`
    /// plus `metadata.name` and `metadata.namespace`).
    ///
    /// # Errors
    /// [`SelectorError::UnsupportedField`] for the first field not in `allowed`.
    pub fn supported_by(&self, allowed: &[&str]) -> Result<()> {
        match self.terms.iter().find(|t| !allowed.contains(&t.field.as_str())) {
            Some(term) => Err(SelectorError::UnsupportedField(term.field.clone())),
            None => Ok(()),
        }
    }

    /// Whether the object satisfies every term. Field values come from
    /// [`field_value`], using the object's own `kind` for kind-specific defaults.
    pub fn matches(&self, object: &Value) -> bool {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        self.matches_as(kind, object)
    }

    /// As [`FieldSelector::matches`] for an object of a known kind (stored objects that do
    /// not carry `kind`).
    pub fn matches_as(&self, kind: &str, object: &Value) -> bool {
        self.terms.iter().all(|t| (field_value(kind, object, &t.field) == t.value) != t.negated)
    }
}

impl fmt::Display for FieldSelector {
    /// Canonical form: `field=escaped` / `field!=escaped`, comma-separated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if t.negated { "!=" } else { "=" };
            write!(f, "{}{op}{}", t.field, escape_value(&t.value))?;
        }
        Ok(())
    }
}

/// fields.splitTerms: commas split terms unless backslash-escaped.
fn split_terms(input: &str) -> Vec<&str> {
    if input.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in input.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&input[start..i]);
            start = i + 1;
        }
    }
    terms.push(&input[start..]);
    terms
}

/// fields.splitTerm: the first `!=`, `==` or `=` splits field from raw value.
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        if let Some(v) = rest.strip_prefix("!=") {
            return Some((&term[..i], true, v));
        }
        if let Some(v) = rest.strip_prefix("==") {
            return Some((&term[..i], false, v));
        }
        if let Some(v) = rest.strip_prefix('=') {
            return Some((&term[..i], false, v));
        }
    }
    None
}

/// fields.UnescapeValue.
fn unescape_value(raw: &str) -> Result<String> {
    let mut out = String::with_capacity(raw.len());
    let mut in_slash = false;
    for c in raw.chars() {
        if in_slash {
            if matches!(c, '\\' | ',' | '=') {
                out.push(c);
            } else {
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                )));
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v, i.e. as its code point number.
            ',' | '=' => {
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                )));
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::InvalidFieldSelector(
            "invalid field selector: invalid escape sequence: \\".to_string(),
        ));
    }
    Ok(out)
}

/// fields.EscapeValue.
pub fn escape_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace(',', "\\,").replace('=', "\\=")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_selector_parses_and_matches_pods() {
        let s = FieldSelector::parse("spec.nodeName=,status.phase!=Failed").unwrap();
        let pending = json!({"kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Pending"}});
        let bound = json!({"kind": "Pod", "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        assert!(s.matches(&pending));
        assert!(!s.matches(&bound));
        assert_eq!(s.to_string(), "spec.nodeName=,status.phase!=Failed");
        assert!(FieldSelector::parse("spec.nodeName==n1").unwrap().matches(&bound));
    }

    #[test]
    fn field_selector_uses_kind_specific_defaults() {
        let node = json!({"kind": "Node", "metadata": {"name": "n"}, "spec": {}});
        assert!(FieldSelector::parse("spec.unschedulable=false").unwrap().matches(&node));
        let cordoned = json!({"kind": "Node", "spec": {"unschedulable": true}});
        assert!(FieldSelector::parse("spec.unschedulable=true").unwrap().matches(&cordoned));
        let event = json!({"kind": "Event", "involvedObject": {"kind": "Pod", "name": "p"}, "source": {"component": "kubelet"}});
        assert!(FieldSelector::parse("involvedObject.name=p,source=kubelet").unwrap().matches(&event));
        let bare_node = json!({"metadata": {"name": "n"}});
        let unschedulable = FieldSelector::parse("spec.unschedulable=false").unwrap();
        assert!(unschedulable.matches_as("Node", &bare_node));
        assert!(!unschedulable.matches(&bare_node), "without a kind there is no Node default");
        let pod = json!({"kind": "Pod", "status": {"podIPs": [{"ip": "10.0.0.1"}]}});
        assert!(FieldSelector::parse("status.podIP=10.0.0.1,spec.hostNetwork=false").unwrap().matches(&pod));
    }

    #[test]
    fn field_selector_escapes_round_trip() {
        let s = FieldSelector::parse(r"metadata.name=a\,b\=c\\d").unwrap();
        assert_eq!(s.terms()[0].value, r"a,b=c\d");
        assert_eq!(s.to_string(), r"metadata.name=a\,b\=c\\d");
        assert!(s.matches(&json!({"metadata": {"name": r"a,b=c\d"}})));
    }

    #[test]
    fn field_selector_errors_match_apimachinery() {
        assert_eq!(
            FieldSelector::parse("foo").unwrap_err().to_string(),
            "invalid selector: 'foo'; can't understand 'foo'"
        );
        assert_eq!(
            FieldSelector::parse(r"a=b\x").unwrap_err().to_string(),
            r"invalid field selector: invalid escape sequence: \x"
        );
        assert_eq!(
            FieldSelector::parse("a=b=c").unwrap_err().to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
    }

    #[test]
    fn unsupported_field_labels_are_rejected_per_kind() {
        let s = FieldSelector::parse("spec.foo=x").unwrap();
        assert_eq!(s.supported_for("Pod").unwrap_err().to_string(), "field label not supported: spec.foo");
        assert!(FieldSelector::parse("spec.nodeName=n").unwrap().supported_for("Pod").is_ok());
        assert!(
            FieldSelector::parse("metadata.name=x,metadata.namespace=y").unwrap().supported_for("NodeClaim").is_ok()
        );
        assert!(FieldSelector::parse("spec.unschedulable=false").unwrap().supported_for("Node").is_ok());
        assert!(FieldSelector::parse("status.phase=Running").unwrap().supported_for("NodeClaim").is_err());
        let ns = FieldSelector::parse("metadata.namespace=default").unwrap();
        assert!(ns.supported_for("Node").is_err(), "nodes index only metadata.name and spec.unschedulable");
        assert!(ns.supported_for_custom_resource(true, &[]).is_err());
        assert!(ns.supported_for_custom_resource(false, &[]).is_ok());
        let sel = FieldSelector::parse("spec.nodeClassRef.name=default").unwrap();
        assert!(sel.supported_for_custom_resource(true, &["spec.nodeClassRef.name"]).is_ok());
        let host = FieldSelector::parse("spec.host=n1").unwrap();
        assert!(host.supported_for("Pod").is_ok());
        assert!(host.matches(&json!({"kind": "Pod", "spec": {"nodeName": "n1"}})));
    }
}
