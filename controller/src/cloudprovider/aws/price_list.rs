//! On-demand prices from the AWS Price List Query API (`pricing:GetProducts`), as Karpenter's
//! AWS provider reads them (aws/karpenter-provider-aws `pkg/providers/pricing/pricing.go`
//! `UpdateOnDemandPricing`, `fetchOnDemandPricing`, `onDemandPage`; refreshed every 12 hours
//! by `pkg/controllers/providers/pricing/controller.go`).
//!
//! Two queries, shared-tenancy compute instances and dedicated bare metal, each filtered to
//! the region, Linux, no pre-installed software, capacity status `Used` and the on-demand
//! market, in pages of 100. A price is the product's on-demand `pricePerUnit` in USD (CNY in
//! China). The result is merged over what the price book knew (upstream's `lo.Assign`), so a
//! type the API stops listing keeps its last price; a query that fails, or that finds no
//! price, leaves the book as it was. In an isolated VPC (`--isolated-vpc`) or a GovCloud
//! region the API is not called and the built-in table stays in use.

use std::collections::BTreeMap;

use aws_sdk_pricing::types::{Filter, FilterType};

use crate::cloudprovider::CloudError;

/// Products per GetProducts page (upstream asks for 100, the API's maximum).
const PAGE_SIZE: i32 = 100;

/// The region whose Price List endpoint serves `region` (upstream `NewAPI`): the API has
/// endpoints in us-east-1, ap-south-1, eu-central-1 and cn-northwest-1 only.
pub fn pricing_region(region: &str) -> &'static str {
    if region.starts_with("ap-") {
        "ap-south-1"
    } else if region.starts_with("cn-") {
        "cn-northwest-1"
    } else if region.starts_with("eu-") {
        "eu-central-1"
    } else {
        "us-east-1"
    }
}

/// Why an on-demand refresh did not call the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// `--isolated-vpc`: the cluster has no route to the Price List API.
    IsolatedVpc,
    /// GovCloud regions have no Price List API.
    GovCloud,
}

/// What [`fetch_on_demand`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum OnDemandPrices {
    /// The API was not called.
    Skipped(Skipped),
    /// Prices per instance type, to merge over the book.
    Fetched(BTreeMap<String, f64>),
}

fn term_match(field: &str, value: &str) -> Result<Filter, CloudError> {
    Filter::builder()
        .r#type(FilterType::TermMatch)
        .field(field)
        .value(value)
        .build()
        .map_err(|e| CloudError::other("PricingRequest", e.to_string()))
}

/// Reads every page of one on-demand query into a map.
async fn fetch_query(
    client: &aws_sdk_pricing::Client,
    region: &str,
    tenancy: &str,
    product_family: &str,
) -> Result<BTreeMap<String, f64>, CloudError> {
    let mut filters = Vec::new();
    for (field, value) in [
        ("regionCode", region),
        ("serviceCode", "AmazonEC2"),
        ("preInstalledSw", "NA"),
        ("operatingSystem", "Linux"),
        ("capacitystatus", "Used"),
        ("marketoption", "OnDemand"),
        ("tenancy", tenancy),
        ("productFamily", product_family),
    ] {
        filters.push(term_match(field, value)?);
    }
    let pages = client
        .get_products()
        .service_code("AmazonEC2")
        .set_filters(Some(filters))
        .max_results(PAGE_SIZE)
        .into_paginator()
        .send()
        .try_collect()
        .await
        .map_err(|e| {
            let code = aws_sdk_pricing::error::ProvideErrorMetadata::code(&e).unwrap_or("PricingError").to_owned();
            let message = aws_sdk_pricing::error::ProvideErrorMetadata::message(&e)
                .map_or_else(|| aws_sdk_pricing::error::DisplayErrorContext(&e).to_string(), str::to_owned);
            CloudError::other(code, format!("getting pricing data: {message}"))
        })?;
    let currency = if region.starts_with("cn-") { "CNY" } else { "USD" };
    let mut prices = BTreeMap::new();
    for page in pages {
        prices.extend(on_demand_page(page.price_list(), currency));
    }
    Ok(prices)
}

/// Both on-demand queries for `region`, unless the API is out of reach.
///
/// # Errors
/// A failed call, or a query that found no price at all (upstream: "no on-demand pricing
/// found"); the caller keeps its prices and retries.
pub async fn fetch_on_demand(
    client: &aws_sdk_pricing::Client,
    region: &str,
    isolated_vpc: bool,
) -> Result<OnDemandPrices, CloudError> {
    if isolated_vpc {
        return Ok(OnDemandPrices::Skipped(Skipped::IsolatedVpc));
    }
    if region.starts_with("us-gov") {
        return Ok(OnDemandPrices::Skipped(Skipped::GovCloud));
    }
    let shared = fetch_query(client, region, "Shared", "Compute Instance").await?;
    let metal = fetch_query(client, region, "Dedicated", "Compute Instance (bare metal)").await?;
    if shared.is_empty() || metal.is_empty() {
        return Err(CloudError::other("PricingNotFound", format!("no on-demand pricing found for {region}")));
    }
    let mut prices = shared;
    prices.extend(metal);
    Ok(OnDemandPrices::Fetched(prices))
}

/// The prices of one page's price-list documents (JSON strings). A document that does not
/// parse, names no instance type, or has no positive price in `currency` is skipped, as
/// upstream skips it.
pub fn on_demand_page(price_list: &[String], currency: &str) -> BTreeMap<String, f64> {
    let mut prices = BTreeMap::new();
    for document in price_list {
        let Ok(item) = serde_json::from_str::<serde_json::Value>(document) else {
            tracing::warn!("skipping a price-list document that is not JSON");
            continue;
        };
        let Some(instance_type) = item.pointer("/product/attributes/instanceType").and_then(|v| v.as_str()) else {
            continue;
        };
        if instance_type.is_empty() {
            continue;
        }
        let Some(terms) = item.pointer("/terms/OnDemand").and_then(|v| v.as_object()) else { continue };
        for term in terms.values() {
            let Some(dimensions) = term.get("priceDimensions").and_then(|v| v.as_object()) else { continue };
            for dimension in dimensions.values() {
                let price = dimension
                    .get("pricePerUnit")
                    .and_then(|p| p.get(currency))
                    .and_then(|v| v.as_str())
                    .and_then(|s| s.parse::<f64>().ok());
                if let Some(price) = price.filter(|p| *p > 0.0 && p.is_finite()) {
                    prices.insert(instance_type.to_owned(), price);
                }
            }
        }
    }
    prices
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(instance_type: &str, usd: &str) -> String {
        serde_json::json!({
            "product": {"attributes": {"instanceType": instance_type}},
            "terms": {"OnDemand": {"T.1": {"priceDimensions": {"T.1.D": {"pricePerUnit": {"USD": usd}}}}}}
        })
        .to_string()
    }

    #[test]
    fn pages_give_the_usd_price_of_each_type() {
        let page = [document("m5.large", "0.0960000000"), document("c5.large", "0.085")];
        let prices = on_demand_page(&page, "USD");
        assert_eq!(prices, BTreeMap::from([("c5.large".to_owned(), 0.085), ("m5.large".to_owned(), 0.096)]));
    }

    #[test]
    fn zero_unparsable_and_typeless_documents_are_skipped() {
        let page = [
            document("m5.large", "0.0000000000"),
            document("c5.large", "n/a"),
            document("", "1.0"),
            "not json".to_owned(),
            serde_json::json!({"product": {"attributes": {}}}).to_string(),
        ];
        assert!(on_demand_page(&page, "USD").is_empty());
        assert!(on_demand_page(&[document("m5.large", "0.096")], "CNY").is_empty(), "China prices are in CNY");
    }

    #[test]
    fn each_region_reads_its_nearest_price_list_endpoint() {
        assert_eq!(pricing_region("us-east-1"), "us-east-1");
        assert_eq!(pricing_region("us-west-2"), "us-east-1");
        assert_eq!(pricing_region("ap-northeast-1"), "ap-south-1");
        assert_eq!(pricing_region("eu-west-1"), "eu-central-1");
        assert_eq!(pricing_region("cn-north-1"), "cn-northwest-1");
        assert_eq!(pricing_region("sa-east-1"), "us-east-1");
    }
}
