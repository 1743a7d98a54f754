//! The AWS Price List Query API (`AWSPriceListService.GetProducts`, awsJson1_1), as
//! aws-sdk-pricing speaks it: Karpenter's AWS provider reads every on-demand price of its
//! region from it (aws/karpenter-provider-aws `pkg/providers/pricing/pricing.go`
//! `fetchOnDemandPricing`, `onDemandPage`).
//!
//! Each EC2 instance type the region offers is one product per tenancy: `Shared` tenancy
//! with product family `Compute Instance`, and for bare-metal types also `Dedicated` with
//! `Compute Instance (bare metal)` — the two queries upstream sends. A product is a JSON
//! *string* in `PriceList` with the attributes upstream filters on and one on-demand term
//! whose price dimension carries `pricePerUnit.USD`, the catalog's current on-demand price.
//! Filters are `TERM_MATCH` on an attribute (an attribute the product lacks never matches);
//! pages hold at most `MaxResults` (1–100, default 100) products in instance-type order, and
//! `NextToken` is the index of the next product.

use serde_json::{Value, json};

use crate::cloud::FakeCloud;
use crate::error::{ApiError, ApiResult};

/// The most products one GetProducts page returns (the API's documented maximum).
pub const MAX_RESULTS: usize = 100;

/// One product's attributes, in the order the real price list prints them.
fn product_attributes(cloud: &FakeCloud, instance_type: &str, metal_dedicated: bool) -> Vec<(&'static str, String)> {
    let (tenancy, family) =
        if metal_dedicated { ("Dedicated", "Compute Instance (bare metal)") } else { ("Shared", "Compute Instance") };
    vec![
        ("servicecode", "AmazonEC2".to_owned()),
        ("serviceCode", "AmazonEC2".to_owned()),
        ("productFamily", family.to_owned()),
        ("instanceType", instance_type.to_owned()),
        ("regionCode", cloud.region().to_owned()),
        ("tenancy", tenancy.to_owned()),
        ("operatingSystem", "Linux".to_owned()),
        ("preInstalledSw", "NA".to_owned()),
        ("capacitystatus", "Used".to_owned()),
        ("marketoption", "OnDemand".to_owned()),
    ]
}

/// Every product of the region, in (instance type, tenancy) order, with its price.
fn products(cloud: &FakeCloud) -> Vec<(Vec<(&'static str, String)>, f64)> {
    let offered: std::collections::BTreeSet<&str> = cloud.catalog().offerings().map(|(t, _)| t).collect();
    let mut out = Vec::new();
    for info in cloud.catalog().types().filter(|t| offered.contains(t.name.as_str())) {
        let Some(price) = info.on_demand_price else { continue };
        out.push((product_attributes(cloud, &info.name, false), price));
        if info.bare_metal {
            out.push((product_attributes(cloud, &info.name, true), price));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The `(Field, Value)` pairs of the request's `TERM_MATCH` filters.
///
/// # Errors
/// A filter without `Field`/`Value` or of another type, as the API rejects it.
fn filters(v: &Value) -> ApiResult<Vec<(String, String)>> {
    let Some(list) = v.get("Filters") else { return Ok(Vec::new()) };
    let list =
        list.as_array().ok_or_else(|| ApiError::client("InvalidParameterException", "Filters must be a list"))?;
    list.iter()
        .map(|f| {
            let kind = f.get("Type").and_then(Value::as_str).unwrap_or("TERM_MATCH");
            if kind != "TERM_MATCH" {
                return Err(ApiError::client(
                    "InvalidParameterException",
                    format!("Filter Type {kind} is not supported by this fake (TERM_MATCH only)"),
                ));
            }
            let field = f.get("Field").and_then(Value::as_str).ok_or_else(|| ApiError::missing_parameter("Field"))?;
            let value = f.get("Value").and_then(Value::as_str).ok_or_else(|| ApiError::missing_parameter("Value"))?;
            Ok((field.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The price-list document of one product: the shape upstream's `priceItem` reads.
fn price_item(attributes: &[(&'static str, String)], price: f64) -> String {
    let instance_type = attributes.iter().find(|(k, _)| *k == "instanceType").map_or("", |(_, v)| v.as_str());
    let tenancy = attributes.iter().find(|(k, _)| *k == "tenancy").map_or("", |(_, v)| v.as_str());
    let sku = format!("SKU-{instance_type}-{tenancy}").to_uppercase().replace('.', "-");
    let term = format!("{sku}.JRTCKXETXF");
    let dimension = format!("{term}.6YS6EN2CT7");
    let attrs: serde_json::Map<String, Value> =
        attributes.iter().map(|(k, v)| ((*k).to_owned(), Value::String(v.clone()))).collect();
    json!({
        "product": { "productFamily": attributes.iter().find(|(k, _)| *k == "productFamily").map(|(_, v)| v.clone()),
                     "attributes": attrs, "sku": sku },
        "serviceCode": "AmazonEC2",
        "terms": { "OnDemand": { term.clone(): {
            "offerTermCode": "JRTCKXETXF", "sku": sku,
            "priceDimensions": { dimension.clone(): {
                "unit": "Hrs", "rateCode": dimension,
                "description": format!("${price:.6} per On Demand Linux {instance_type} Instance Hour"),
                "pricePerUnit": { "USD": format!("{price:.10}") }
            }}
        }}},
    })
    .to_string()
}

/// `GetProducts`; every other operation is refused as the real endpoint refuses it.
pub(crate) fn dispatch(cloud: &mut FakeCloud, op: &str, v: &Value) -> ApiResult<Value> {
    if op != "GetProducts" {
        return Err(ApiError::client("InvalidAction", format!("The action {op} is not valid for this endpoint.")));
    }
    let service = v.get("ServiceCode").and_then(Value::as_str).unwrap_or_default();
    let max = match v.get("MaxResults").and_then(Value::as_u64) {
        None => MAX_RESULTS,
        Some(n) if (1..=MAX_RESULTS as u64).contains(&n) => n as usize,
        Some(n) => {
            return Err(ApiError::client(
                "InvalidParameterException",
                format!("MaxResults {n} is outside 1..={MAX_RESULTS}"),
            ));
        }
    };
    let start = match v.get("NextToken").and_then(Value::as_str) {
        None => 0,
        Some(token) => token
            .parse::<usize>()
            .map_err(|_| ApiError::client("InvalidNextTokenException", format!("NextToken {token:?} is not valid")))?,
    };
    let wanted = filters(v)?;
    let matching: Vec<_> = if service == "AmazonEC2" {
        products(cloud)
            .into_iter()
            .filter(|(attributes, _)| {
                wanted.iter().all(|(field, value)| attributes.iter().any(|(k, v)| *k == field && v == value))
            })
            .collect()
    } else {
        Vec::new()
    };
    let end = (start + max).min(matching.len());
    let page: Vec<Value> = matching
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|(attributes, price)| Value::String(price_item(attributes, *price)))
        .collect();
    let mut out = json!({ "FormatVersion": "aws_v1", "PriceList": page });
    if end < matching.len() {
        out["NextToken"] = Value::String(end.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    use crate::catalog::Catalog;
    use crate::config::{CloudConfig, EPOCH_2026};

    fn cloud() -> FakeCloud {
        let mut catalog = Catalog::load("us-east-1").expect("the shared catalog");
        catalog.retain_types(&["m5.large", "m5.xlarge", "c5.large", "m5.metal"]).expect("known types");
        catalog.set_prices("m5.large", Some(0.5), None).expect("known");
        FakeCloud::new(CloudConfig::new(1, UNIX_EPOCH + EPOCH_2026), catalog)
    }

    fn request(filters: &[(&str, &str)], max: Option<u64>, token: Option<&str>) -> Value {
        let mut v = json!({ "ServiceCode": "AmazonEC2",
            "Filters": filters.iter().map(|(f, x)| json!({"Type": "TERM_MATCH", "Field": f, "Value": x})).collect::<Vec<_>>() });
        if let Some(m) = max {
            v["MaxResults"] = json!(m);
        }
        if let Some(t) = token {
            v["NextToken"] = json!(t);
        }
        v
    }

    fn price_of(item: &Value, instance_type: &str) -> Option<f64> {
        item["PriceList"].as_array()?.iter().find_map(|doc| {
            let doc: Value = serde_json::from_str(doc.as_str()?).ok()?;
            (doc["product"]["attributes"]["instanceType"] == instance_type).then(|| {
                let terms = doc["terms"]["OnDemand"].as_object()?;
                let dims = terms.values().next()?["priceDimensions"].as_object()?;
                dims.values().next()?["pricePerUnit"]["USD"].as_str()?.parse().ok()
            })?
        })
    }

    #[test]
    fn shared_compute_instances_carry_the_catalog_price() {
        let mut cloud = cloud();
        let shared = [("regionCode", "us-east-1"), ("tenancy", "Shared"), ("productFamily", "Compute Instance")];
        let out = dispatch(&mut cloud, "GetProducts", &request(&shared, None, None)).expect("answers");
        assert_eq!(out["PriceList"].as_array().map(Vec::len), Some(4), "{out}");
        assert_eq!(price_of(&out, "m5.large"), Some(0.5));
        assert!(out.get("NextToken").is_none());
    }

    #[test]
    fn bare_metal_is_listed_again_under_dedicated_tenancy() {
        let mut cloud = cloud();
        let metal = [("tenancy", "Dedicated"), ("productFamily", "Compute Instance (bare metal)")];
        let out = dispatch(&mut cloud, "GetProducts", &request(&metal, None, None)).expect("answers");
        let list = out["PriceList"].as_array().expect("a list");
        assert_eq!(list.len(), 1, "{out}");
        assert!(price_of(&out, "m5.metal").is_some());
    }

    #[test]
    fn pages_follow_next_token_and_other_regions_match_nothing() {
        let mut cloud = cloud();
        let first = dispatch(&mut cloud, "GetProducts", &request(&[], Some(2), None)).expect("answers");
        assert_eq!(first["PriceList"].as_array().map(Vec::len), Some(2));
        let token = first["NextToken"].as_str().expect("more pages").to_owned();
        let second = dispatch(&mut cloud, "GetProducts", &request(&[], Some(2), Some(&token))).expect("answers");
        let third_token = second["NextToken"].as_str().expect("a third page").to_owned();
        let third = dispatch(&mut cloud, "GetProducts", &request(&[], Some(2), Some(&third_token))).expect("answers");
        assert_eq!(third["PriceList"].as_array().map(Vec::len), Some(1), "5 products in pages of 2");
        assert!(third.get("NextToken").is_none());
        let elsewhere = dispatch(&mut cloud, "GetProducts", &request(&[("regionCode", "eu-west-1")], None, None));
        assert_eq!(elsewhere.expect("answers")["PriceList"].as_array().map(Vec::len), Some(0));
    }

    #[test]
    fn bad_requests_are_refused_by_name() {
        let mut cloud = cloud();
        let e = dispatch(&mut cloud, "GetProducts", &request(&[], Some(500), None)).unwrap_err();
        assert!(e.message.contains("MaxResults"), "{}", e.message);
        let e = dispatch(&mut cloud, "GetProducts", &request(&[], None, Some("x"))).unwrap_err();
        assert_eq!(e.code, "InvalidNextTokenException");
        let e = dispatch(&mut cloud, "DescribeServices", &json!({})).unwrap_err();
        assert_eq!(e.code, "InvalidAction");
    }
}
