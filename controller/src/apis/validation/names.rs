//! Kubernetes name rules (`k8s.io/apimachinery/pkg/util/validation`): qualified names and
//! label values, as Karpenter's runtime validation applies them.

use super::patterns::{DNS1123_SUBDOMAIN, LABEL_VALUE, QUALIFIED_NAME_PART};

/// Problems with `key` as a qualified name (`[prefix/]name`), empty when valid
/// (apimachinery `IsQualifiedName`).
pub fn qualified_name_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > 253 {
                    errors.push("prefix part must be no more than 253 characters".to_owned());
                }
                if !DNS1123_SUBDOMAIN.is_match(prefix) {
                    errors.push(
                        "prefix part a lowercase RFC 1123 subdomain must consist of lower case \
                         alphanumeric characters, '-' or '.', and must start and end with an \
                         alphanumeric character"
                            .to_owned(),
                    );
                }
            }
            *name
        }
        _ => {
            errors.push(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and \
                 must start and end with an alphanumeric character with an optional DNS subdomain \
                 prefix and '/'"
                    .to_owned(),
            );
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else {
        if name.len() > 63 {
            errors.push("name part must be no more than 63 characters".to_owned());
        }
        if !QUALIFIED_NAME_PART.is_match(name) {
            errors.push(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
                 start and end with an alphanumeric character"
                    .to_owned(),
            );
        }
    }
    errors
}

/// Problems with `value` as a label value, empty when valid (apimachinery `IsValidLabelValue`).
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    if !LABEL_VALUE.is_match(value) {
        errors.push(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', \
             '_' or '.', and must start and end with an alphanumeric character"
                .to_owned(),
        );
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_follow_apimachinery() {
        assert!(qualified_name_errors("example.com/team").is_empty());
        assert!(qualified_name_errors("team").is_empty());
        assert!(!qualified_name_errors("Example.com/team").is_empty());
        assert!(!qualified_name_errors("a/b/c").is_empty());
        assert!(!qualified_name_errors("/team").is_empty());
        assert!(!qualified_name_errors("example.com/").is_empty());
        assert!(!qualified_name_errors(&"x".repeat(64)).is_empty());
    }

    #[test]
    fn label_values_follow_apimachinery() {
        assert!(label_value_errors("").is_empty());
        assert!(label_value_errors("m5.large").is_empty());
        assert!(!label_value_errors("-bad").is_empty());
        assert!(!label_value_errors(&"v".repeat(64)).is_empty());
    }
}
