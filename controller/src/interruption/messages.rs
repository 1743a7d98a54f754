//! The EventBridge messages the interruption queue carries (aws `interruption/messages/*` and
//! `parser.go`), parsed with serde into typed structs. A message is routed by
//! `(version, source, detail-type)`; a body that is not even an EventBridge envelope, or whose
//! detail does not match its declared type, is an error (the caller deletes and counts it); a
//! well-formed event nobody acts on (another detail-type, an instance state such as `running`, an
//! AWS Health event that is not an EC2 scheduled change) is [`Message::NoOp`], as in Karpenter.

use serde::Deserialize;
use serde::de::DeserializeOwned;

/// `source` of EC2 events.
pub const SOURCE_EC2: &str = "aws.ec2";
/// `source` of AWS Health events.
pub const SOURCE_HEALTH: &str = "aws.health";
/// The 2-minute spot reclaim notice.
pub const DETAIL_SPOT_INTERRUPTION: &str = "EC2 Spot Instance Interruption Warning";
/// EC2's hint that a spot instance is at elevated risk.
pub const DETAIL_REBALANCE: &str = "EC2 Instance Rebalance Recommendation";
/// Instance state transitions.
pub const DETAIL_STATE_CHANGE: &str = "EC2 Instance State-change Notification";
/// AWS Health events (scheduled maintenance among them).
pub const DETAIL_HEALTH: &str = "AWS Health Event";
/// An interruptible capacity reservation is reclaiming an instance.
pub const DETAIL_CAPACITY_RESERVATION: &str = "EC2 Capacity Reservation Instance Interruption Warning";
/// The only EventBridge schema version the parsers know.
pub const VERSION: &str = "0";
/// Instance states that mean the node is going away (aws statechange parser).
pub const ACTIONABLE_STATES: [&str; 4] = ["stopping", "stopped", "shutting-down", "terminated"];

/// The EventBridge envelope every message shares.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Metadata {
    /// Schema version (`"0"`).
    #[serde(default)]
    pub version: String,
    /// Event ID.
    #[serde(default)]
    pub id: String,
    /// What kind of event (`EC2 Spot Instance Interruption Warning`, ...).
    #[serde(rename = "detail-type")]
    pub detail_type: String,
    /// `aws.ec2` or `aws.health`.
    pub source: String,
    /// Account.
    #[serde(default)]
    pub account: String,
    /// When the event happened (RFC 3339); the message-latency metric starts here.
    #[serde(default)]
    pub time: String,
    /// Region.
    #[serde(default)]
    pub region: String,
    /// ARNs the event is about.
    #[serde(default)]
    pub resources: Vec<String>,
}

impl Metadata {
    /// When the event happened, if the envelope says.
    pub fn start_time(&self) -> Option<jiff::Timestamp> {
        self.time.parse().ok()
    }
}

/// `detail` of a spot interruption warning.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct SpotInterruptionDetail {
    /// The instance being reclaimed.
    #[serde(rename = "instance-id")]
    pub instance_id: String,
    /// `terminate`, `stop` or `hibernate`.
    #[serde(rename = "instance-action", default)]
    pub instance_action: String,
}

/// `detail` of a rebalance recommendation.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct RebalanceRecommendationDetail {
    /// The instance at elevated risk.
    #[serde(rename = "instance-id")]
    pub instance_id: String,
}

/// `detail` of an instance state-change notification.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct StateChangeDetail {
    /// The instance.
    #[serde(rename = "instance-id")]
    pub instance_id: String,
    /// The new state (`pending`, `running`, `stopping`, ...).
    pub state: String,
}

/// One entity an AWS Health event affects.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AffectedEntity {
    /// For EC2 events, the instance ID.
    pub entity_value: String,
}

/// `detail` of an AWS Health event.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HealthDetail {
    /// The service (`EC2`).
    pub service: String,
    /// e.g. `AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED`.
    #[serde(default)]
    pub event_type_code: String,
    /// `scheduledChange`, `issue`, `accountNotification`.
    pub event_type_category: String,
    /// Maintenance window start.
    #[serde(default)]
    pub start_time: String,
    /// Maintenance window end.
    #[serde(default)]
    pub end_time: String,
    /// The instances affected.
    #[serde(default)]
    pub affected_entities: Vec<AffectedEntity>,
}

/// `detail` of a capacity reservation interruption warning.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct CapacityReservationInterruptionDetail {
    /// The instance being reclaimed.
    #[serde(rename = "instance-id")]
    pub instance_id: String,
    /// What EC2 will do to it.
    #[serde(rename = "instance-action", default)]
    pub instance_action: String,
}

#[derive(Deserialize)]
struct Envelope<D> {
    detail: D,
}

/// A parsed interruption-queue message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Spot reclaim in two minutes.
    SpotInterruption(Metadata, SpotInterruptionDetail),
    /// Spot instance at elevated risk.
    RebalanceRecommendation(Metadata, RebalanceRecommendationDetail),
    /// EC2 state change to one of [`ACTIONABLE_STATES`].
    StateChange(Metadata, StateChangeDetail),
    /// AWS Health EC2 scheduled change.
    ScheduledChange(Metadata, HealthDetail),
    /// Capacity reservation reclaiming an instance.
    CapacityReservationInterruption(Metadata, CapacityReservationInterruptionDetail),
    /// A well-formed event that asks for nothing.
    NoOp(Metadata),
}

/// The message kinds, named as Karpenter's `message_type` metric label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `spot_interrupted`.
    SpotInterrupted,
    /// `rebalance_recommendation`.
    RebalanceRecommendation,
    /// `scheduled_change`.
    ScheduledChange,
    /// `instance_stopped` (stopping or stopped).
    InstanceStopped,
    /// `instance_terminated` (shutting-down or terminated).
    InstanceTerminated,
    /// `capacity_reservation_interrupted`.
    CapacityReservationInterrupted,
    /// `no_op`.
    NoOp,
}

impl Kind {
    /// The metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SpotInterrupted => "spot_interrupted",
            Self::RebalanceRecommendation => "rebalance_recommendation",
            Self::ScheduledChange => "scheduled_change",
            Self::InstanceStopped => "instance_stopped",
            Self::InstanceTerminated => "instance_terminated",
            Self::CapacityReservationInterrupted => "capacity_reservation_interrupted",
            Self::NoOp => "no_op",
        }
    }
}

impl Message {
    /// The message's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Self::SpotInterruption(..) => Kind::SpotInterrupted,
            Self::RebalanceRecommendation(..) => Kind::RebalanceRecommendation,
            Self::StateChange(_, d) if matches!(d.state.as_str(), "stopping" | "stopped") => Kind::InstanceStopped,
            Self::StateChange(..) => Kind::InstanceTerminated,
            Self::ScheduledChange(..) => Kind::ScheduledChange,
            Self::CapacityReservationInterruption(..) => Kind::CapacityReservationInterrupted,
            Self::NoOp(_) => Kind::NoOp,
        }
    }

    /// The envelope.
    pub fn metadata(&self) -> &Metadata {
        match self {
            Self::SpotInterruption(m, _)
            | Self::RebalanceRecommendation(m, _)
            | Self::StateChange(m, _)
            | Self::ScheduledChange(m, _)
            | Self::CapacityReservationInterruption(m, _)
            | Self::NoOp(m) => m,
        }
    }

    /// The EC2 instances the message is about.
    pub fn instance_ids(&self) -> Vec<&str> {
        match self {
            Self::SpotInterruption(_, d) => vec![d.instance_id.as_str()],
            Self::RebalanceRecommendation(_, d) => vec![d.instance_id.as_str()],
            Self::StateChange(_, d) => vec![d.instance_id.as_str()],
            Self::ScheduledChange(_, d) => d.affected_entities.iter().map(|e| e.entity_value.as_str()).collect(),
            Self::CapacityReservationInterruption(_, d) => vec![d.instance_id.as_str()],
            Self::NoOp(_) => Vec::new(),
        }
    }
}

/// Why a message body could not be parsed.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The body is not an EventBridge envelope. Not retryable: the message is deleted.
    #[error("unmarshalling the message as Metadata")]
    Metadata(#[source] serde_json::Error),
    /// The detail does not match its declared detail-type. Not retryable: the message is deleted.
    #[error("parsing {detail_type:?} event message")]
    Detail {
        /// The declared detail-type.
        detail_type: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
}

fn detail<D: DeserializeOwned>(body: &str, metadata: &Metadata) -> Result<D, ParseError> {
    serde_json::from_str::<Envelope<D>>(body)
        .map(|e| e.detail)
        .map_err(|source| ParseError::Detail { detail_type: metadata.detail_type.clone(), source })
}

/// Parses one message body (aws `EventParser.Parse`).
///
/// # Errors
/// [`ParseError`] when the body is not an envelope or its detail does not match its type.
pub fn parse(body: &str) -> Result<Message, ParseError> {
    if body.trim().is_empty() {
        return Ok(Message::NoOp(Metadata::default()));
    }
    let metadata: Metadata = serde_json::from_str(body).map_err(ParseError::Metadata)?;
    if metadata.version != VERSION {
        return Ok(Message::NoOp(metadata));
    }
    let message = match (metadata.source.as_str(), metadata.detail_type.as_str()) {
        (SOURCE_EC2, DETAIL_SPOT_INTERRUPTION) => {
            let d = detail(body, &metadata)?;
            Message::SpotInterruption(metadata, d)
        }
        (SOURCE_EC2, DETAIL_REBALANCE) => {
            let d = detail(body, &metadata)?;
            Message::RebalanceRecommendation(metadata, d)
        }
        (SOURCE_EC2, DETAIL_STATE_CHANGE) => {
            let d: StateChangeDetail = detail(body, &metadata)?;
            if ACTIONABLE_STATES.contains(&d.state.to_lowercase().as_str()) {
                Message::StateChange(metadata, d)
            } else {
                Message::NoOp(metadata)
            }
        }
        (SOURCE_HEALTH, DETAIL_HEALTH) => {
            let d: HealthDetail = detail(body, &metadata)?;
            if d.service == "EC2" && d.event_type_category == "scheduledChange" {
                Message::ScheduledChange(metadata, d)
            } else {
                Message::NoOp(metadata)
            }
        }
        (SOURCE_EC2, DETAIL_CAPACITY_RESERVATION) => {
            let d = detail(body, &metadata)?;
            Message::CapacityReservationInterruption(metadata, d)
        }
        _ => Message::NoOp(metadata),
    };
    Ok(message)
}

/// The instance ID in a providerID `aws:///<zone>/<instance-id>` (aws `utils.ParseInstanceID`).
pub fn instance_id_of(provider_id: &str) -> Option<&str> {
    let rest = provider_id.strip_prefix("aws:///")?;
    let (_, id) = rest.rsplit_once('/')?;
    (!id.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The exact bodies fakecloud/src/eventbridge.rs puts on the queue.
    const SPOT: &str = r#"{"account":"123456789012","detail":{"instance-action":"terminate","instance-id":"i-0abc"},"detail-type":"EC2 Spot Instance Interruption Warning","id":"e1","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],"source":"aws.ec2","time":"2026-01-01T00:02:00Z","version":"0"}"#;
    const REBALANCE: &str = r#"{"account":"123456789012","detail":{"instance-id":"i-0abc"},"detail-type":"EC2 Instance Rebalance Recommendation","id":"e2","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],"source":"aws.ec2","time":"2026-01-01T00:02:00Z","version":"0"}"#;
    const HEALTH: &str = r#"{"account":"123456789012","detail":{"affectedEntities":[{"entityValue":"i-0abc"}],"endTime":"2026-01-03T02:00:00Z","eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/e3","eventDescription":[{"language":"en_US","latestDescription":"EC2 has detected degradation of the underlying hardware hosting your instance."}],"eventTypeCategory":"scheduledChange","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","service":"EC2","startTime":"2026-01-03T00:00:00Z"},"detail-type":"AWS Health Event","id":"e3","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],"source":"aws.health","time":"2026-01-01T00:02:00Z","version":"0"}"#;

    fn state_change(state: &str) -> String {
        format!(
            r#"{{"account":"123456789012","detail":{{"instance-id":"i-0abc","state":"{state}"}},"detail-type":"EC2 Instance State-change Notification","id":"e4","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],"source":"aws.ec2","time":"2026-01-01T00:02:00Z","version":"0"}}"#
        )
    }

    #[test]
    fn spot_interruption_warning_parses_with_its_instance() {
        let message = parse(SPOT).expect("parses");
        assert_eq!(message.kind(), Kind::SpotInterrupted);
        assert_eq!(message.instance_ids(), ["i-0abc"]);
        assert_eq!(message.metadata().start_time(), Some("2026-01-01T00:02:00Z".parse().unwrap()));
        let Message::SpotInterruption(_, detail) = message else { panic!("spot") };
        assert_eq!(detail.instance_action, "terminate");
    }

    #[test]
    fn rebalance_recommendation_parses() {
        let message = parse(REBALANCE).expect("parses");
        assert_eq!(message.kind(), Kind::RebalanceRecommendation);
        assert_eq!(message.instance_ids(), ["i-0abc"]);
    }

    #[test]
    fn health_scheduled_change_names_its_affected_instances() {
        let message = parse(HEALTH).expect("parses");
        assert_eq!(message.kind(), Kind::ScheduledChange);
        assert_eq!(message.instance_ids(), ["i-0abc"]);
        let other = HEALTH.replace("scheduledChange", "issue");
        assert_eq!(parse(&other).expect("parses").kind(), Kind::NoOp);
    }

    #[test]
    fn state_changes_split_into_stopped_terminated_and_ignored() {
        for (state, kind) in [
            ("stopping", Kind::InstanceStopped),
            ("stopped", Kind::InstanceStopped),
            ("shutting-down", Kind::InstanceTerminated),
            ("terminated", Kind::InstanceTerminated),
            ("running", Kind::NoOp),
            ("pending", Kind::NoOp),
        ] {
            let message = parse(&state_change(state)).expect("parses");
            assert_eq!(message.kind(), kind, "{state}");
        }
    }

    #[test]
    fn capacity_reservation_interruption_parses() {
        let body = SPOT.replace(DETAIL_SPOT_INTERRUPTION, DETAIL_CAPACITY_RESERVATION);
        let message = parse(&body).expect("parses");
        assert_eq!(message.kind(), Kind::CapacityReservationInterrupted);
        assert_eq!(message.instance_ids(), ["i-0abc"]);
    }

    #[test]
    fn garbage_is_an_error_and_unknown_events_are_no_ops() {
        assert!(matches!(parse("not json at all"), Err(ParseError::Metadata(_))));
        assert!(matches!(parse(r#"{"hello": 1}"#), Err(ParseError::Metadata(_))));
        let bad_detail = SPOT.replace(r#""instance-id":"i-0abc""#, r#""instance":"i-0abc""#);
        assert!(matches!(parse(&bad_detail), Err(ParseError::Detail { .. })));
        let unknown = SPOT.replace(DETAIL_SPOT_INTERRUPTION, "EC2 Fleet Error");
        assert_eq!(parse(&unknown).expect("parses").kind(), Kind::NoOp);
        assert_eq!(parse("").expect("empty is a no-op").kind(), Kind::NoOp);
    }

    #[test]
    fn instance_ids_come_from_aws_provider_ids() {
        assert_eq!(instance_id_of("aws:///us-east-1a/i-0abc"), Some("i-0abc"));
        assert_eq!(instance_id_of("aws:///i-0abc"), None);
        assert_eq!(instance_id_of("kind://x/y"), None);
    }
}
