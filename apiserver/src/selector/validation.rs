//! Label key and value validation (k8s.io/apimachinery/pkg/util/validation), and the
//! Go-formatted field errors selectors report, word for word as apimachinery prints them.

use std::sync::LazyLock;

use regex::Regex;

/// apimachinery validation.qualifiedNameMaxLength and LabelValueMaxLength.
const NAME_LENGTH_MAX: usize = 63;
/// apimachinery validation.DNS1123SubdomainMaxLength.
const DNS1123_SUBDOMAIN_LENGTH_MAX: usize = 253;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

static QUALIFIED_NAME_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{QUALIFIED_NAME_FMT}$")).expect("static regex"));
static LABEL_VALUE_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^({QUALIFIED_NAME_FMT})?$")).expect("static regex"));
static DNS1123_SUBDOMAIN_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{DNS1123_SUBDOMAIN_FMT}$")).expect("static regex"));

/// validation.RegexError: the message, examples and the regex, as apimachinery prints them.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// validation.IsQualifiedName: label keys (`prefix/name`).
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    const MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    let name_regex_error = || regex_error(MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"]);
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for msg in dns1123_subdomain_errors(prefix) {
                    errs.push(format!("prefix part {msg}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                name_regex_error()
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > NAME_LENGTH_MAX {
        errs.push(format!("name part {}", max_len_error(NAME_LENGTH_MAX)));
    }
    if !QUALIFIED_NAME_RE.is_match(name) {
        errs.push(format!("name part {}", name_regex_error()));
    }
    errs
}

/// validation.IsDNS1123Subdomain: label key prefixes.
fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    const MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_LENGTH_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_LENGTH_MAX));
    }
    if !DNS1123_SUBDOMAIN_RE.is_match(value) {
        errs.push(regex_error(MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// validation.IsValidLabelValue.
pub fn label_value_errors(value: &str) -> Vec<String> {
    const MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    let mut errs = Vec::new();
    if value.len() > NAME_LENGTH_MAX {
        errs.push(max_len_error(NAME_LENGTH_MAX));
    }
    if !LABEL_VALUE_RE.is_match(value) {
        errs.push(regex_error(MSG, &format!("({QUALIFIED_NAME_FMT})?"), &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// field.Invalid(...).Error(): `<path>: Invalid value: "<value>": <detail>`.
pub(super) fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

/// Go's `%q` for the strings that can reach an error message.
pub(super) fn go_quote(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| format!("\"{value}\""))
}

/// Go's `%#v` of a `[]string`, as field errors print a rejected values list.
pub(super) fn go_string_slice(values: &[String]) -> String {
    let items: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// field.ErrorList.ToAggregate().Error(): one message alone, several in brackets.
pub(super) fn aggregate(errs: Vec<String>) -> Option<String> {
    match errs.len() {
        0 => None,
        1 => errs.into_iter().next(),
        _ => Some(format!("[{}]", errs.join(", "))),
    }
}
