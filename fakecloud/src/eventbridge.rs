//! EventBridge-shaped JSON messages, as the interruption queue receives them.
//!
//! Shapes follow the EC2 and AWS Health event documentation and what Karpenter's
//! `pkg/providers/sqs` / interruption parsers read (`source`, `detail-type`, `detail`).

use serde_json::{Value, json};

/// Fields common to every event.
pub(crate) struct Envelope<'a> {
    pub id: String,
    pub time: String,
    pub account: &'a str,
    pub region: &'a str,
}

fn event(env: &Envelope<'_>, source: &str, detail_type: &str, resources: Vec<String>, detail: Value) -> String {
    json!({
        "version": "0",
        "id": env.id,
        "detail-type": detail_type,
        "source": source,
        "account": env.account,
        "time": env.time,
        "region": env.region,
        "resources": resources,
        "detail": detail,
    })
    .to_string()
}

fn instance_arn(env: &Envelope<'_>, instance_id: &str) -> String {
    format!("arn:aws:ec2:{}:{}:instance/{instance_id}", env.region, env.account)
}

/// `EC2 Spot Instance Interruption Warning`.
pub(crate) fn spot_interruption(env: &Envelope<'_>, instance_id: &str) -> String {
    event(
        env,
        "aws.ec2",
        "EC2 Spot Instance Interruption Warning",
        vec![instance_arn(env, instance_id)],
        json!({ "instance-id": instance_id, "instance-action": "terminate" }),
    )
}

/// `EC2 Instance Rebalance Recommendation`.
pub(crate) fn rebalance(env: &Envelope<'_>, instance_id: &str) -> String {
    event(
        env,
        "aws.ec2",
        "EC2 Instance Rebalance Recommendation",
        vec![instance_arn(env, instance_id)],
        json!({ "instance-id": instance_id }),
    )
}

/// `EC2 Instance State-change Notification`.
pub(crate) fn state_change(env: &Envelope<'_>, instance_id: &str, state: &str) -> String {
    event(
        env,
        "aws.ec2",
        "EC2 Instance State-change Notification",
        vec![instance_arn(env, instance_id)],
        json!({ "instance-id": instance_id, "state": state }),
    )
}

/// An `AWS Health Event` for scheduled EC2 maintenance (Karpenter: `scheduled_change`).
pub(crate) fn scheduled_change(env: &Envelope<'_>, instance_id: &str, start: &str, end: &str) -> String {
    event(
        env,
        "aws.health",
        "AWS Health Event",
        vec![instance_arn(env, instance_id)],
        json!({
            "eventArn": format!("arn:aws:health:{}::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/{}", env.region, env.id),
            "service": "EC2",
            "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "eventTypeCategory": "scheduledChange",
            "startTime": start,
            "endTime": end,
            "eventDescription": [{ "language": "en_US", "latestDescription": "EC2 has detected degradation of the underlying hardware hosting your instance." }],
            "affectedEntities": [{ "entityValue": instance_id }],
        }),
    )
}
