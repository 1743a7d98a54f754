//! SQS's JSON protocol (awsJson1_0 with `X-Amz-Target: AmazonSQS.<Operation>`), which
//! aws-sdk-sqs 1.119 speaks, plus SSM GetParameter (awsJson1_1, `AmazonSSM.GetParameter`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::cloud::FakeCloud;
use crate::error::{ApiError, ApiResult};
use crate::sqs::Received;

/// The outcome of one JSON call: a finished body, or "nothing yet, wait up to this long"
/// for a ReceiveMessage long poll.
pub(crate) enum JsonOutcome {
    Done(Value),
    Wait(Duration),
}

fn queue_url(endpoint: &str, path: &str) -> String {
    format!("{endpoint}{path}")
}

fn secs(v: &Value, key: &str) -> Option<Duration> {
    v.get(key).and_then(Value::as_u64).map(Duration::from_secs)
}

fn attribute_secs(v: &Value, key: &str) -> Option<Duration> {
    v.get("Attributes")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
}

fn url_param(v: &Value) -> ApiResult<&str> {
    v.get("QueueUrl").and_then(Value::as_str).ok_or_else(|| ApiError::missing_parameter("QueueUrl"))
}

/// System attribute names requested through `AttributeNames` (deprecated) or
/// `MessageSystemAttributeNames`; SQS returns `Attributes` only when asked.
fn requested_attributes(v: &Value) -> Vec<String> {
    ["AttributeNames", "MessageSystemAttributeNames"]
        .iter()
        .filter_map(|k| v.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

fn received_json(cloud: &FakeCloud, m: &Received, requested: &[String]) -> Value {
    let mut out = json!({
        "MessageId": m.message_id,
        "ReceiptHandle": m.receipt_handle,
        "MD5OfBody": m.md5_of_body,
        "Body": m.body,
    });
    let wants = |name: &str| requested.iter().any(|r| r == "All" || r == name);
    let mut attributes = serde_json::Map::new();
    if wants("SentTimestamp") {
        let sent_ms = (crate::timefmt::unix_secs(cloud.config().epoch, m.sent_at) * 1000.0).round() as u64;
        attributes.insert("SentTimestamp".into(), Value::String(sent_ms.to_string()));
    }
    if wants("ApproximateReceiveCount") {
        let count = m.receive_count.to_string();
        attributes.insert("ApproximateReceiveCount".into(), Value::String(count));
    }
    if !attributes.is_empty() {
        out["Attributes"] = Value::Object(attributes);
    }
    out
}

/// Runs one SQS operation. `waited` is how long this ReceiveMessage call has already
/// long-polled; the caller re-invokes it after waiting.
pub(crate) fn dispatch(
    cloud: &mut FakeCloud,
    endpoint: &str,
    op: &str,
    v: &Value,
    waited: Duration,
) -> ApiResult<JsonOutcome> {
    let done = |v: Value| Ok(JsonOutcome::Done(v));
    match op {
        "CreateQueue" => {
            let name =
                v.get("QueueName").and_then(Value::as_str).ok_or_else(|| ApiError::missing_parameter("QueueName"))?;
            let path = cloud.sqs_create_queue(
                name,
                attribute_secs(v, "MessageRetentionPeriod"),
                attribute_secs(v, "VisibilityTimeout"),
            )?;
            done(json!({ "QueueUrl": queue_url(endpoint, &path) }))
        }
        "GetQueueUrl" => {
            let name =
                v.get("QueueName").and_then(Value::as_str).ok_or_else(|| ApiError::missing_parameter("QueueName"))?;
            let path = cloud.queue_path(name)?;
            done(json!({ "QueueUrl": queue_url(endpoint, &path) }))
        }
        "SendMessage" => {
            let body = v
                .get("MessageBody")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::missing_parameter("MessageBody"))?;
            let (id, md5) = cloud.sqs_send(url_param(v)?, body, secs(v, "DelaySeconds").unwrap_or_default())?;
            done(json!({ "MessageId": id, "MD5OfMessageBody": md5 }))
        }
        "ReceiveMessage" => {
            let url = url_param(v)?;
            let max = v.get("MaxNumberOfMessages").and_then(Value::as_u64).unwrap_or(1) as usize;
            if !(1..=10).contains(&max) {
                return Err(ApiError::client(
                    "InvalidParameterValue",
                    "Value for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.",
                ));
            }
            let messages = cloud.sqs_receive(url, max, secs(v, "VisibilityTimeout"))?;
            let wait = secs(v, "WaitTimeSeconds").unwrap_or_default().min(Duration::from_secs(20));
            if messages.is_empty() && waited < wait {
                return Ok(JsonOutcome::Wait(wait - waited));
            }
            let requested = requested_attributes(v);
            let items: Vec<Value> = messages.iter().map(|m| received_json(cloud, m, &requested)).collect();
            if items.is_empty() { done(json!({})) } else { done(json!({ "Messages": items })) }
        }
        "DeleteMessage" => {
            let handle = v
                .get("ReceiptHandle")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::missing_parameter("ReceiptHandle"))?;
            cloud.sqs_delete(url_param(v)?, handle)?;
            done(json!({}))
        }
        "DeleteMessageBatch" => {
            let url = url_param(v)?.to_string();
            let mut ok = Vec::new();
            let mut failed = Vec::new();
            for entry in v.get("Entries").and_then(Value::as_array).cloned().unwrap_or_default() {
                let id = entry.get("Id").and_then(Value::as_str).unwrap_or_default().to_string();
                let handle = entry.get("ReceiptHandle").and_then(Value::as_str).unwrap_or_default();
                match cloud.sqs_delete(&url, handle) {
                    Ok(()) => ok.push(json!({ "Id": id })),
                    Err(e) => {
                        failed.push(json!({ "Id": id, "SenderFault": true, "Code": e.code, "Message": e.message }))
                    }
                }
            }
            done(json!({ "Successful": ok, "Failed": failed }))
        }
        "PurgeQueue" => {
            cloud.sqs_purge(url_param(v)?)?;
            done(json!({}))
        }
        "GetQueueAttributes" => {
            let url = url_param(v)?;
            let (visible, in_flight) = cloud.sqs_counts(url)?;
            let retention = cloud.sqs_retention(url)?;
            let name = url.rsplit('/').next().unwrap_or_default();
            done(json!({ "Attributes": {
                "ApproximateNumberOfMessages": visible.to_string(),
                "ApproximateNumberOfMessagesNotVisible": in_flight.to_string(),
                "MessageRetentionPeriod": retention.as_secs().to_string(),
                "QueueArn": format!("arn:aws:sqs:{}:{}:{name}", cloud.region(), cloud.config().account_id),
            }}))
        }
        other => Err(ApiError::client("InvalidAction", format!("The action {other} is not valid for this endpoint."))),
    }
}

/// SSM GetParameter / GetParameters for the public AMI parameters.
pub(crate) fn dispatch_ssm(cloud: &mut FakeCloud, op: &str, v: &Value) -> ApiResult<Value> {
    let param = |name: &str, value: String| {
        json!({ "Name": name, "Type": "String", "Value": value, "Version": 1, "DataType": "aws:ec2:image",
                "ARN": format!("arn:aws:ssm:{}::parameter{name}", cloud.region()) })
    };
    match op {
        "GetParameter" => {
            let name = v.get("Name").and_then(Value::as_str).ok_or_else(|| ApiError::missing_parameter("Name"))?;
            let value = cloud.get_parameter(name)?;
            Ok(json!({ "Parameter": param(name, value) }))
        }
        "GetParameters" => {
            let names: Vec<String> = v
                .get("Names")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|n| n.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            let mut found = Vec::new();
            let mut invalid = Vec::new();
            for n in names {
                match cloud.get_parameter(&n) {
                    Ok(value) => found.push(param(&n, value)),
                    Err(_) => invalid.push(n),
                }
            }
            Ok(json!({ "Parameters": found, "InvalidParameters": invalid }))
        }
        other => Err(ApiError::client("InvalidAction", format!("The action {other} is not valid for this endpoint."))),
    }
}
