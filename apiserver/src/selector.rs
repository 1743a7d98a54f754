//! Label and field selectors with the parsing, validation and matching rules of apimachinery.
//!
//! Clients (kube-rs, kubectl, the scheduler) send selectors as query strings
//! (`labelSelector=app=web,tier!=db`, `fieldSelector=spec.nodeName=`), and objects carry
//! selectors as `metav1.LabelSelector` (Deployments, PDBs). Both must behave exactly as
//! `k8s.io/apimachinery/pkg/labels` and `.../fields` do, including their error messages,
//! because a client that works against the simulator must work against EKS.
//!
//! ```
//! use dovetail_apiserver::selector::{FieldSelector, LabelSelector};
//! use serde_json::json;
//!
//! let pod = json!({"kind": "Pod", "metadata": {"name": "web-1", "labels": {"app": "web"}},
//!                  "status": {"phase": "Pending"}});
//! let labels = LabelSelector::parse("app in (web, api), !canary").unwrap();
//! let fields = FieldSelector::parse("spec.nodeName=,status.phase!=Failed").unwrap();
//! fields.supported_for("Pod").unwrap();
//! assert!(labels.matches_object(&pod) && fields.matches(&pod));
//! assert_eq!(labels.to_string(), "app in (api,web),!canary");
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use regex::Regex;
use serde_json::Value;

/// Why a selector was rejected. The API server answers each with 400 BadRequest and the
/// `Display` text as the Status message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A label selector query string or `metav1.LabelSelector` is malformed or invalid.
    #[error("{0}")]
    InvalidLabelSelector(String),
    /// A field selector query string is malformed (bad term or escape sequence).
    #[error("{0}")]
    InvalidFieldSelector(String),
    /// The field selector names a field the kind does not index
    /// (apiserver: `field label not supported: spec.foo`).
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

/// Result of selector operations.
pub type Result<T, E = SelectorError> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------------------
// Validation (k8s.io/apimachinery/pkg/util/validation)
// ---------------------------------------------------------------------------------------

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
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

/// Go's `%q` for the strings that can reach an error message.
fn go_quote(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| format!("\"{value}\""))
}

/// Go's `%#v` of a `[]string`, as field errors print a rejected values list.
fn go_string_slice(values: &[String]) -> String {
    let items: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// field.ErrorList.ToAggregate().Error(): one message alone, several in brackets.
fn aggregate(errs: Vec<String>) -> Option<String> {
    match errs.len() {
        0 => None,
        1 => errs.into_iter().next(),
        _ => Some(format!("[{}]", errs.join(", "))),
    }
}

// ---------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------

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
        let tokens = lex(input)?;
        let mut parser = Parser { tokens, position: 0 };
        let mut requirements = parser.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
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
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
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

/// Lexer tokens of labels.Lexer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Identifier(String),
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    DoesNotExist,
    OpenPar,
    ClosedPar,
    Comma,
    End,
}

impl Token {
    /// The literal as apimachinery prints it in "found '...'" messages.
    fn literal(&self) -> &str {
        match self {
            Token::Identifier(s) => s,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::GreaterThan => ">",
            Token::LessThan => "<",
            Token::DoesNotExist => "!",
            Token::OpenPar => "(",
            Token::ClosedPar => ")",
            Token::Comma => ",",
            Token::End => "",
        }
    }

    /// In `Values` context the keywords `in`/`notin` are ordinary identifiers.
    fn as_value(&self) -> Token {
        match self {
            Token::In => Token::Identifier("in".to_string()),
            Token::NotIn => Token::Identifier("notin".to_string()),
            other => other.clone(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn special_token(s: &str) -> Option<Token> {
    Some(match s {
        "=" => Token::Equals,
        "==" => Token::DoubleEquals,
        "!=" => Token::NotEquals,
        "!" => Token::DoesNotExist,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "(" => Token::OpenPar,
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        _ => return None,
    })
}

/// labels.Lexer: whitespace-separated identifiers and the longest matching special symbol.
fn lex(input: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, ' ' | '\t' | '\r' | '\n') {
            i += 1;
        } else if is_special(c) {
            let mut buffer = String::new();
            let mut last: Option<(Token, usize)> = None;
            let mut j = i;
            while j < chars.len() && is_special(chars[j]) {
                buffer.push(chars[j]);
                if let Some(tok) = special_token(&buffer) {
                    last = Some((tok, j + 1));
                } else if last.is_some() {
                    break;
                }
                j += 1;
            }
            let Some((tok, end)) = last else {
                return Err(SelectorError::InvalidLabelSelector(format!(
                    "unable to parse requirement: found 'error expected: keyword found '{buffer}'', expected: !, identifier, or 'end of string'"
                )));
            };
            tokens.push(tok);
            i = end;
        } else {
            let start = i;
            while i < chars.len() && !is_special(chars[i]) && !matches!(chars[i], ' ' | '\t' | '\r' | '\n') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            tokens.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier(word),
            });
        }
    }
    tokens.push(Token::End);
    Ok(tokens)
}

/// labels.Parser over the pre-lexed tokens.
struct Parser {
    tokens: Vec<Token>,
    position: usize,
}

fn requirement_error(msg: String) -> SelectorError {
    SelectorError::InvalidLabelSelector(format!("unable to parse requirement: {msg}"))
}

fn plain_error(msg: String) -> SelectorError {
    SelectorError::InvalidLabelSelector(msg)
}

impl Parser {
    fn lookahead_value(&self) -> Token {
        self.tokens[self.position.min(self.tokens.len() - 1)].as_value()
    }

    fn consume_value(&mut self) -> Token {
        let tok = self.lookahead_value();
        self.position = (self.position + 1).min(self.tokens.len() - 1);
        tok
    }

    fn consume_operator(&mut self) -> Token {
        let tok = self.tokens[self.position.min(self.tokens.len() - 1)].clone();
        self.position = (self.position + 1).min(self.tokens.len() - 1);
        tok
    }

    fn parse(&mut self) -> Result<Vec<Requirement>> {
        let mut requirements = Vec::new();
        // Each iteration consumes at least one token, so the token count bounds the loop.
        for _ in 0..self.tokens.len() {
            match self.lookahead_value() {
                Token::Identifier(_) | Token::DoesNotExist => {
                    requirements.push(self.parse_requirement()?);
                    match self.consume_value() {
                        Token::End => return Ok(requirements),
                        Token::Comma => match self.lookahead_value() {
                            Token::Identifier(_) | Token::DoesNotExist => {}
                            other => {
                                return Err(plain_error(format!(
                                    "found '{}', expected: identifier after ','",
                                    other.literal()
                                )));
                            }
                        },
                        other => {
                            return Err(plain_error(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                other.literal()
                            )));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                other => {
                    return Err(plain_error(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        other.literal()
                    )));
                }
            }
        }
        Ok(requirements)
    }

    fn parse_requirement(&mut self) -> Result<Requirement> {
        let (key, unary) = self.parse_key_and_infer_operator()?;
        if let Some(op) = unary {
            return Requirement::new(&key, op, Vec::new()).map_err(|e| requirement_error(e.to_string()));
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, op, values).map_err(|e| requirement_error(e.to_string()))
    }

    /// Returns the key and, for `key` or `!key`, the unary operator.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>)> {
        let mut tok = self.consume_value();
        let mut operator = None;
        if tok == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            tok = self.consume_value();
        }
        let Token::Identifier(key) = tok else {
            return Err(requirement_error(format!("found '{}', expected: identifier", tok.literal())));
        };
        let key_errs = qualified_name_errors(&key);
        if !key_errs.is_empty() {
            return Err(requirement_error(invalid("<nil>", &key, &key_errs.join("; "))));
        }
        if matches!(self.lookahead_value(), Token::End | Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((key, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator> {
        Ok(match self.consume_operator() {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            other => {
                return Err(requirement_error(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    other.literal()
                )));
            }
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>> {
        let tok = self.consume_value();
        if tok != Token::OpenPar {
            return Err(requirement_error(format!("found '{}' expected: '('", tok.literal())));
        }
        match self.lookahead_value() {
            Token::Identifier(_) | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let close = self.consume_value();
                if close != Token::ClosedPar {
                    return Err(requirement_error(format!("found '{}', expected: ')'", close.literal())));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume_value();
                Ok(vec![String::new()])
            }
            other => Err(requirement_error(format!("found '{}', expected: ',', ')' or identifier", other.literal()))),
        }
    }

    /// A possibly empty list of possibly empty identifiers: `(a,,b)`, `(,a)`, `(a,)`.
    fn parse_identifiers_list(&mut self) -> Result<Vec<String>> {
        let mut values: Vec<String> = Vec::new();
        for _ in 0..self.tokens.len() {
            match self.consume_value() {
                Token::Identifier(value) => {
                    values.push(value);
                    match self.lookahead_value() {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        other => {
                            return Err(requirement_error(format!(
                                "found '{}', expected: ',' or ')'",
                                other.literal()
                            )));
                        }
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.lookahead_value() {
                        Token::ClosedPar => {
                            values.push(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            self.consume_value();
                            values.push(String::new());
                        }
                        _ => {}
                    }
                }
                other => {
                    return Err(requirement_error(format!(
                        "found '{}', expected: ',', or identifier",
                        other.literal()
                    )));
                }
            }
        }
        Ok(values)
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>> {
        if matches!(self.lookahead_value(), Token::End | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.consume_value() {
            Token::Identifier(value) => Ok(vec![value]),
            other => Err(requirement_error(format!("found '{}', expected: identifier", other.literal()))),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------

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

const META_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// The field labels the real API server accepts per built-in kind (the field label
/// conversion functions registered in `pkg/apis/*/v1/conversion.go`); other kinds accept
/// `metadata.name` and `metadata.namespace` (`runtime.DefaultMetaV1FieldSelectorConversion`).
pub fn supported_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            // Old v1 clients' name for spec.nodeName.
            "spec.host",
        ],
        "Node" => &["metadata.name", "spec.unschedulable"],
        "Namespace" => &["metadata.name", "status.phase"],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        ],
        "Service" => &["metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"],
        "ReplicaSet" | "ReplicationController" => &["metadata.name", "metadata.namespace", "status.replicas"],
        "Job" => &["metadata.name", "metadata.namespace", "status.successful"],
        "Secret" => &["metadata.name", "metadata.namespace", "type"],
        _ => META_FIELDS,
    }
}

/// The string value a field label has on an object, as the registry's `GetAttrs` computes
/// it: absent fields are `""`, booleans and integers print in Go form, and some fields have
/// kind-specific sources or defaults (a Node's `spec.unschedulable` is `"false"` when unset,
/// a Pod's `status.podIP` is its first `podIPs` entry, an Event's `source` is
/// `source.component`, a Job's `status.successful` is `status.succeeded`).
pub fn field_value(kind: &str, object: &Value, field: &str) -> String {
    match (kind, field) {
        ("Node", "spec.unschedulable") | ("Pod", "spec.hostNetwork") => {
            path_string(object, field).unwrap_or_else(|| "false".to_string())
        }
        ("Pod", "spec.host") => path_string(object, "spec.nodeName").unwrap_or_default(),
        ("Pod", "status.podIP" | "status.podIPs") => object
            .pointer("/status/podIPs/0/ip")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| path_string(object, "status.podIP"))
            .unwrap_or_default(),
        ("Event", "source") => path_string(object, "source.component").unwrap_or_default(),
        ("Job", "status.successful") => path_string(object, "status.succeeded").unwrap_or_else(|| "0".to_string()),
        ("ReplicaSet" | "ReplicationController", "status.replicas") => {
            path_string(object, field).unwrap_or_else(|| "0".to_string())
        }
        _ => path_string(object, field).unwrap_or_default(),
    }
}

/// Looks up a dotted path and renders a scalar; objects, arrays and null count as absent.
fn path_string(object: &Value, field: &str) -> Option<String> {
    let mut current = object;
    for part in field.split('.') {
        current = current.get(part)?;
    }
    match current {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
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
