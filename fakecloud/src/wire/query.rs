//! Reading EC2 query-protocol parameters (`Action=…&Filter.1.Name=…`).

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{ApiError, ApiResult};
use crate::tags::{Filter, Tags};

/// Form parameters of one request, with helpers for EC2's flattened lists.
#[derive(Debug, Clone, Default)]
pub(crate) struct Params {
    map: BTreeMap<String, String>,
}

impl Params {
    pub(crate) fn parse(body: &[u8]) -> Self {
        Self { map: form_urlencoded::parse(body).into_owned().collect() }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(String::as_str)
    }

    pub(crate) fn string(&self, key: &str) -> Option<String> {
        self.get(key).map(str::to_string)
    }

    pub(crate) fn required(&self, key: &str) -> ApiResult<&str> {
        self.get(key).ok_or_else(|| ApiError::missing_parameter(key))
    }

    pub(crate) fn u32(&self, key: &str) -> ApiResult<Option<u32>> {
        self.get(key)
            .map(|v| {
                v.parse::<u32>().map_err(|_| ApiError::invalid_parameter(format!("Invalid value '{v}' for {key}")))
            })
            .transpose()
    }

    pub(crate) fn f64(&self, key: &str) -> ApiResult<Option<f64>> {
        self.get(key)
            .map(|v| {
                v.parse::<f64>().map_err(|_| ApiError::invalid_parameter(format!("Invalid value '{v}' for {key}")))
            })
            .transpose()
    }

    /// The numeric indices N of `prefix.N` or `prefix.N.*`, sorted numerically
    /// ("10" after "2", unlike a string sort).
    pub(crate) fn indices(&self, prefix: &str) -> Vec<u32> {
        let dotted = format!("{prefix}.");
        let set: BTreeSet<u32> = self
            .map
            .keys()
            .filter_map(|k| k.strip_prefix(&dotted))
            .filter_map(|rest| rest.split('.').next())
            .filter_map(|n| n.parse().ok())
            .collect();
        set.into_iter().collect()
    }

    /// Values of `prefix.1`, `prefix.2`, … in index order.
    pub(crate) fn list(&self, prefix: &str) -> Vec<String> {
        self.indices(prefix).into_iter().filter_map(|i| self.string(&format!("{prefix}.{i}"))).collect()
    }

    /// The parameters under `prefix.` with that prefix removed.
    pub(crate) fn sub(&self, prefix: &str) -> Params {
        let dotted = format!("{prefix}.");
        Params {
            map: self
                .map
                .iter()
                .filter_map(|(k, v)| k.strip_prefix(&dotted).map(|rest| (rest.to_string(), v.clone())))
                .collect(),
        }
    }

    /// `Filter.N.Name` / `Filter.N.Value.M`.
    pub(crate) fn filters(&self) -> Vec<Filter> {
        self.indices("Filter")
            .into_iter()
            .filter_map(|i| {
                let f = self.sub(&format!("Filter.{i}"));
                Some(Filter { name: f.string("Name")?, values: f.list("Value") })
            })
            .collect()
    }

    /// `Tag.N.Key` / `Tag.N.Value` under this view.
    pub(crate) fn tags(&self, prefix: &str) -> Tags {
        self.indices(prefix)
            .into_iter()
            .filter_map(|i| {
                let t = self.sub(&format!("{prefix}.{i}"));
                Some((t.string("Key")?, t.string("Value").unwrap_or_default()))
            })
            .collect()
    }

    /// `TagSpecification.N.ResourceType` + tags, grouped by resource type.
    pub(crate) fn tag_specifications(&self, prefix: &str) -> BTreeMap<String, Tags> {
        let mut out: BTreeMap<String, Tags> = BTreeMap::new();
        for i in self.indices(prefix) {
            let spec = self.sub(&format!("{prefix}.{i}"));
            let kind = spec.string("ResourceType").unwrap_or_else(|| "instance".into());
            out.entry(kind).or_default().extend(spec.tags("Tag"));
        }
        out
    }

    /// All raw parameters (for launch template data capture).
    pub(crate) fn raw(&self) -> &BTreeMap<String, String> {
        &self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_sort_numerically_and_nest() {
        let p = Params::parse(
            b"InstanceId.10=c&InstanceId.2=b&InstanceId.1=a&Filter.1.Name=tag%3Ak&Filter.1.Value.1=v&TagSpecification.1.ResourceType=instance&TagSpecification.1.Tag.1.Key=x&TagSpecification.1.Tag.1.Value=y",
        );
        assert_eq!(p.list("InstanceId"), vec!["a", "b", "c"]);
        assert_eq!(p.filters(), vec![Filter::new("tag:k", &["v"])]);
        assert_eq!(p.tag_specifications("TagSpecification")["instance"]["x"], "y");
    }
}
