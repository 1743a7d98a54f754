//! Integral floats (`2.0`, `1e3`) become integers before admission. The apiserver decodes them
//! as Go `float64`, accepts them where the schema says `integer` (kube-openapi's
//! `IsFloat64AJSONInteger`) and writes them back as `2`, `1000`; normalizing up front gives the
//! same validation result and the same stored bytes, and lets CEL compare them with integer
//! literals as it does there.

use serde_json::{Number, Value};

/// Largest magnitude below which every integral `f64` converts exactly to `i64`.
const EXACT_I64_LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53

/// Rewrites integral floats as integers, everywhere in `value`.
pub(crate) fn normalize(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if !n.is_i64()
                && !n.is_u64()
                && let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() <= EXACT_I64_LIMIT
            {
                *n = Number::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        Value::Object(map) => map.iter_mut().for_each(|(_, v)| normalize(v)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_floats_become_integers_and_others_stay() {
        let mut v = json!({"a": 2.0, "b": [1.5, 1e3], "c": "2.0"});
        normalize(&mut v);
        assert_eq!(v, json!({"a": 2, "b": [1.5, 1000], "c": "2.0"}));
        assert!(v["a"].is_i64());
    }
}
