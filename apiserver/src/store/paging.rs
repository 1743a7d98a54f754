//! Lists and their pages: `limit` cuts a list, and a continue token (the list's
//! resourceVersion and the last key returned) resumes it, until compaction makes it too old.

use std::sync::Arc;

use serde_json::{Value, json};

use super::events::Matcher;
use super::objects::Store;
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceType;

/// A page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// Matching objects, in (namespace, name) order.
    pub items: Vec<Arc<Value>>,
    /// The list's resourceVersion.
    pub rv: u64,
    /// Token for the next page, if any.
    pub continue_token: Option<String>,
    /// Objects left after this page.
    pub remaining: Option<usize>,
}

impl Store {
    /// Lists objects with optional pagination.
    pub fn list(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        matcher: Option<&Matcher>,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> ApiResult<ListPage> {
        let (list_rv, start_after) = match continue_token {
            Some(tok) => {
                let (rv, ns, name) = decode_continue(tok)?;
                if rv < self.compacted_rv {
                    return Err(ApiError::gone(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                    ));
                }
                (rv, Some((ns, name)))
            }
            None => (self.rv, None),
        };
        let mut items = Vec::new();
        let mut continue_out = None;
        let mut remaining = None;
        if let Some(objs) = self.objects.get(&rt.key()) {
            use std::ops::Bound;
            let lower = match &start_after {
                Some(k) => Bound::Excluded(k.clone()),
                None => Bound::Unbounded,
            };
            let mut it = objs
                .range((lower, Bound::Unbounded))
                .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
                .filter(|(_, s)| matcher.is_none_or(|m| m(&s.obj)));
            for ((ns, name), s) in it.by_ref() {
                items.push(s.obj.clone());
                if limit.is_some_and(|l| items.len() >= l) {
                    continue_out = Some(encode_continue(list_rv, ns, name));
                    break;
                }
            }
            if continue_out.is_some() {
                let left = it.count();
                if left == 0 {
                    continue_out = None;
                } else {
                    remaining = Some(left);
                }
            }
        }
        Ok(ListPage { items, rv: list_rv, continue_token: continue_out, remaining })
    }
}

fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    hex::encode(serde_json::to_vec(&json!({"rv": rv, "ns": ns, "name": name})).unwrap_or_default())
}

fn decode_continue(tok: &str) -> ApiResult<(u64, String, String)> {
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let bytes = hex::decode(tok).map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    Ok((
        v["rv"].as_u64().ok_or_else(bad)?,
        v["ns"].as_str().ok_or_else(bad)?.to_string(),
        v["name"].as_str().ok_or_else(bad)?.to_string(),
    ))
}
