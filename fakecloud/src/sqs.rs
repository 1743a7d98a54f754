//! SQS queues: at-least-once delivery with visibility timeouts, retention and faults.

use std::collections::BTreeMap;
use std::time::Duration;

use md5::{Digest, Md5};
use rand::Rng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::error::{ApiError, ApiResult};
use crate::faults::Faults;
use crate::ids::IdGen;

/// SQS's `MD5OfMessageBody`: lowercase hex MD5 of the body, which clients may verify.
pub(crate) fn md5_of(body: &str) -> String {
    hex::encode(Md5::digest(body.as_bytes()))
}

/// SQS's default visibility timeout.
pub const DEFAULT_VISIBILITY: Duration = Duration::from_secs(30);
/// Karpenter's CloudFormation sets 300 s retention on the interruption queue.
pub const INTERRUPTION_QUEUE_RETENTION: Duration = Duration::from_secs(300);
/// SQS's own default retention (4 days), for queues created through the API.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(4 * 86_400);
/// ReceiveMessage returns at most 10 messages.
pub const RECEIVE_MAX: usize = 10;

/// One message in a queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `MessageId` (a duplicate delivery shares it).
    pub message_id: String,
    /// Body.
    pub body: String,
    /// When sent.
    pub sent_at: Duration,
    /// Invisible until this time (delivery delay or visibility timeout).
    pub visible_at: Duration,
    /// Times received so far.
    pub receive_count: u32,
    /// Current receipt handle, once received.
    pub receipt_handle: Option<String>,
    /// First receive time.
    pub first_received_at: Option<Duration>,
}

/// A received message as ReceiveMessage returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// `MessageId`.
    pub message_id: String,
    /// `ReceiptHandle` for DeleteMessage.
    pub receipt_handle: String,
    /// Body.
    pub body: String,
    /// Hex MD5 of the body.
    pub md5_of_body: String,
    /// `SentTimestamp` (simulated).
    pub sent_at: Duration,
    /// `ApproximateReceiveCount`.
    pub receive_count: u32,
}

/// One queue.
#[derive(Debug, Clone)]
pub struct Queue {
    /// Name.
    pub name: String,
    /// Retention: messages older than this vanish unreceived.
    pub retention: Duration,
    /// Default visibility timeout.
    pub visibility: Duration,
    /// Messages by insertion sequence.
    pub messages: BTreeMap<u64, Message>,
    seq: u64,
}

impl Queue {
    fn expire(&mut self, now: Duration) {
        let retention = self.retention;
        self.messages.retain(|_, m| m.sent_at + retention > now);
    }

    /// Messages not yet deleted (visible or in flight).
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The earliest time an invisible message becomes visible.
    pub fn next_visible(&self, now: Duration) -> Option<Duration> {
        self.messages.values().map(|m| m.visible_at).filter(|t| *t > now).min()
    }
}

/// All queues of the account.
#[derive(Debug, Clone, Default)]
pub struct Sqs {
    /// Queues by name.
    pub queues: BTreeMap<String, Queue>,
    /// Messages the loss fault dropped.
    pub lost: u64,
    /// Messages the duplicate fault delivered twice.
    pub duplicated: u64,
}

impl Sqs {
    /// Creates a queue (idempotent for an existing name, as SQS is).
    pub fn create_queue(&mut self, name: &str, retention: Duration, visibility: Duration) {
        self.queues.entry(name.to_string()).or_insert_with(|| Queue {
            name: name.to_string(),
            retention,
            visibility,
            messages: BTreeMap::new(),
            seq: 0,
        });
    }

    fn queue(&mut self, name: &str) -> ApiResult<&mut Queue> {
        self.queues.get_mut(name).ok_or_else(|| {
            ApiError::client("AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.")
        })
    }

    /// Sends a message, applying the loss/delay/duplicate faults. Returns the MessageId.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send(
        &mut self,
        name: &str,
        body: String,
        delay: Duration,
        now: Duration,
        faults: &Faults,
        rng: &mut ChaCha8Rng,
        ids: &mut IdGen,
    ) -> ApiResult<String> {
        self.queue(name)?;
        let message_id = ids.uuid();
        // Drawn only while the fault is on, so runs without it keep their draws.
        if faults.sqs_loss_rate > 0.0 && rng.random::<f64>() < faults.sqs_loss_rate {
            self.lost += 1;
            return Ok(message_id);
        }
        let extra = if faults.sqs_delay_max.is_zero() {
            Duration::ZERO
        } else {
            faults.sqs_delay_max.mul_f64(rng.random::<f64>())
        };
        let copies =
            if faults.sqs_duplicate_rate > 0.0 && rng.random::<f64>() < faults.sqs_duplicate_rate { 2 } else { 1 };
        self.duplicated += copies - 1;
        let queue = self.queue(name)?;
        for copy in 0..copies {
            queue.seq += 1;
            let jitter = if copy == 0 { Duration::ZERO } else { Duration::from_millis(rng.random_range(0..5_000)) };
            queue.messages.insert(
                queue.seq,
                Message {
                    message_id: message_id.clone(),
                    body: body.clone(),
                    sent_at: now,
                    visible_at: now + delay + extra + jitter,
                    receive_count: 0,
                    receipt_handle: None,
                    first_received_at: None,
                },
            );
        }
        Ok(message_id)
    }

    /// Receives up to `max` visible messages and hides them for `visibility`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn receive(
        &mut self,
        name: &str,
        max: usize,
        visibility: Option<Duration>,
        now: Duration,
        faults: &Faults,
        rng: &mut ChaCha8Rng,
        ids: &mut IdGen,
    ) -> ApiResult<Vec<Received>> {
        let queue = self.queue(name)?;
        queue.expire(now);
        let visibility = visibility.unwrap_or(queue.visibility);
        let mut ready: Vec<u64> =
            queue.messages.iter().filter(|(_, m)| m.visible_at <= now).map(|(seq, _)| *seq).collect();
        if faults.sqs_reorder {
            ready.shuffle(rng);
        }
        let mut out = Vec::new();
        for seq in ready.into_iter().take(max.clamp(1, RECEIVE_MAX)) {
            let handle = format!("AQEB{}", ids.uuid().replace('-', ""));
            let m = queue.messages.get_mut(&seq).expect("listed above");
            m.receive_count += 1;
            m.visible_at = now + visibility;
            m.receipt_handle = Some(handle.clone());
            m.first_received_at.get_or_insert(now);
            out.push(Received {
                message_id: m.message_id.clone(),
                receipt_handle: handle,
                md5_of_body: md5_of(&m.body),
                body: m.body.clone(),
                sent_at: m.sent_at,
                receive_count: m.receive_count,
            });
        }
        Ok(out)
    }

    /// Deletes the message holding `receipt_handle`. A handle of a message already deleted
    /// succeeds silently, as in SQS; a handle never issued is `ReceiptHandleIsInvalid`.
    pub(crate) fn delete(&mut self, name: &str, receipt_handle: &str) -> ApiResult<()> {
        let queue = self.queue(name)?;
        if !receipt_handle.starts_with("AQEB") {
            return Err(ApiError::client(
                "ReceiptHandleIsInvalid",
                format!("The input receipt handle \"{receipt_handle}\" is not a valid receipt handle."),
            ));
        }
        queue.messages.retain(|_, m| m.receipt_handle.as_deref() != Some(receipt_handle));
        Ok(())
    }

    /// Drops every message.
    pub(crate) fn purge(&mut self, name: &str) -> ApiResult<()> {
        self.queue(name)?.messages.clear();
        Ok(())
    }

    /// The earliest time any queue has a message becoming visible after `now`.
    pub fn next_visible(&self, now: Duration) -> Option<Duration> {
        self.queues.values().filter_map(|q| q.next_visible(now)).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dovetail_world::Stream;

    fn setup() -> (Sqs, ChaCha8Rng, IdGen) {
        let mut sqs = Sqs::default();
        sqs.create_queue("q", INTERRUPTION_QUEUE_RETENTION, DEFAULT_VISIBILITY);
        (sqs, Stream::CloudSqs.rng(1), IdGen::new(1))
    }

    #[test]
    fn md5_of_body_matches_rfc1321_vectors() {
        assert_eq!(md5_of(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_of("abc"), "900150983cd24fb0d6963f7d28e17f72");
    }

    #[test]
    fn visibility_timeout_redelivers_until_deleted() {
        let (mut sqs, mut rng, mut ids) = setup();
        let f = Faults::default();
        let t0 = Duration::ZERO;
        sqs.send("q", "hello".into(), Duration::ZERO, t0, &f, &mut rng, &mut ids).expect("sent");
        let got = sqs.receive("q", 10, Some(Duration::from_secs(20)), t0, &f, &mut rng, &mut ids).expect("ok");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].md5_of_body, "5d41402abc4b2a76b9719d911017c592");
        let none = sqs.receive("q", 10, None, Duration::from_secs(19), &f, &mut rng, &mut ids).expect("ok");
        assert!(none.is_empty());
        let again = sqs.receive("q", 10, None, Duration::from_secs(20), &f, &mut rng, &mut ids).expect("ok");
        assert_eq!(again[0].receive_count, 2);
        sqs.delete("q", &again[0].receipt_handle).expect("deleted");
        assert!(sqs.queues["q"].is_empty());
    }

    #[test]
    fn retention_drops_old_messages() {
        let (mut sqs, mut rng, mut ids) = setup();
        let f = Faults::default();
        sqs.send("q", "x".into(), Duration::ZERO, Duration::ZERO, &f, &mut rng, &mut ids).expect("sent");
        let got = sqs.receive("q", 10, None, Duration::from_secs(300), &f, &mut rng, &mut ids).expect("ok");
        assert!(got.is_empty());
    }

    #[test]
    fn duplicate_fault_delivers_twice_with_one_id() {
        let (mut sqs, mut rng, mut ids) = setup();
        let f = Faults { sqs_duplicate_rate: 1.0, ..Faults::default() };
        let id = sqs.send("q", "x".into(), Duration::ZERO, Duration::ZERO, &f, &mut rng, &mut ids).expect("sent");
        let got = sqs.receive("q", 10, None, Duration::from_secs(10), &f, &mut rng, &mut ids).expect("ok");
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|m| m.message_id == id));
        assert!(sqs.delete("q", "bogus").is_err());
        assert!(sqs.receive("nope", 1, None, Duration::ZERO, &f, &mut rng, &mut ids).is_err());
    }

    #[test]
    fn loss_fault_accepts_the_message_and_never_delivers_it() {
        let (mut sqs, mut rng, mut ids) = setup();
        let f = Faults { sqs_loss_rate: 1.0, ..Faults::default() };
        let id = sqs.send("q", "x".into(), Duration::ZERO, Duration::ZERO, &f, &mut rng, &mut ids).expect("sent");
        assert!(!id.is_empty());
        let got = sqs.receive("q", 10, None, Duration::from_secs(10), &f, &mut rng, &mut ids).expect("ok");
        assert!(got.is_empty());
        let kept = Faults::default();
        sqs.send("q", "y".into(), Duration::ZERO, Duration::ZERO, &kept, &mut rng, &mut ids).expect("sent");
        let got = sqs.receive("q", 10, None, Duration::from_secs(10), &kept, &mut rng, &mut ids).expect("ok");
        assert_eq!(got.len(), 1);
    }
}
