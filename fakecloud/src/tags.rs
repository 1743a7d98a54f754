//! Tags and the EC2 `Filter.N` semantics shared by every Describe call.

use std::collections::BTreeMap;

/// Resource tags, sorted by key (EC2 keys are unique per resource).
pub type Tags = BTreeMap<String, String>;

/// One `Filter.N`: a name and the values any of which may match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// e.g. `tag:karpenter.sh/nodepool`, `tag-key`, `instance-state-name`.
    pub name: String,
    /// Accepted values; `*` and `?` wildcards as in EC2.
    pub values: Vec<String>,
}

impl Filter {
    /// Builds a filter.
    pub fn new(name: &str, values: &[&str]) -> Self {
        Self { name: name.into(), values: values.iter().map(|v| (*v).to_string()).collect() }
    }

    /// Whether any value matches `actual` (EC2 wildcard semantics).
    pub fn matches(&self, actual: &str) -> bool {
        self.values.iter().any(|pattern| wildcard(pattern, actual))
    }

    /// Whether any value matches any of `actuals`.
    pub fn matches_any<'a>(&self, actuals: impl IntoIterator<Item = &'a str>) -> bool {
        actuals.into_iter().any(|a| self.matches(a))
    }

    /// Applies the tag filters (`tag:K`, `tag-key`, `tag-value`); `None` when the filter is
    /// not a tag filter and the caller must handle it.
    pub fn match_tags(&self, tags: &Tags) -> Option<bool> {
        if let Some(key) = self.name.strip_prefix("tag:") {
            return Some(tags.get(key).is_some_and(|v| self.matches(v)));
        }
        match self.name.as_str() {
            "tag-key" => Some(tags.keys().any(|k| self.matches(k))),
            "tag-value" => Some(tags.values().any(|v| self.matches(v))),
            _ => None,
        }
    }
}

/// EC2 filter wildcard match: `*` any run, `?` any one character.
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_like_ec2() {
        assert!(wildcard("karpenter.k8s.aws/*", "karpenter.k8s.aws/abc"));
        assert!(wildcard("m5.?arge", "m5.large"));
        assert!(!wildcard("m5.*", "c5.large"));
        assert!(wildcard("*", ""));
        assert!(wildcard("a*b*c", "aXXbYYc"));
    }

    #[test]
    fn tag_filters() {
        let tags: Tags = [("karpenter.sh/nodepool".to_string(), "default".to_string())].into();
        assert_eq!(Filter::new("tag:karpenter.sh/nodepool", &["default"]).match_tags(&tags), Some(true));
        assert_eq!(Filter::new("tag:karpenter.sh/nodepool", &["x"]).match_tags(&tags), Some(false));
        assert_eq!(Filter::new("tag-key", &["karpenter.sh/*"]).match_tags(&tags), Some(true));
        assert_eq!(Filter::new("instance-state-name", &["running"]).match_tags(&tags), None);
    }
}
