//! SQS operations addressed by queue URL, as the SDK sends them.

use std::time::Duration;

use crate::cloud::FakeCloud;
use crate::error::{ApiError, ApiResult};
use crate::sqs::{DEFAULT_RETENTION, DEFAULT_VISIBILITY, Received};

impl FakeCloud {
    /// The queue name in a URL `http(s)://host/<account>/<name>`.
    fn queue_name(&self, url: &str) -> ApiResult<String> {
        let name = url.rsplit('/').next().unwrap_or_default();
        if self.sqs.queues.contains_key(name) {
            Ok(name.to_string())
        } else {
            Err(ApiError::client("AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist."))
        }
    }

    /// The path part of a queue URL; the wire layer prefixes its own endpoint.
    pub fn queue_path(&self, name: &str) -> ApiResult<String> {
        if self.sqs.queues.contains_key(name) {
            Ok(format!("/{}/{name}", self.config.account_id))
        } else {
            Err(ApiError::client("AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist."))
        }
    }

    /// CreateQueue (idempotent). Returns the URL path.
    pub fn sqs_create_queue(
        &mut self,
        name: &str,
        retention: Option<Duration>,
        visibility: Option<Duration>,
    ) -> ApiResult<String> {
        if name.is_empty()
            || name.len() > 80
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ApiError::client("InvalidParameterValue", format!("Invalid queue name: {name}")));
        }
        self.sqs.create_queue(name, retention.unwrap_or(DEFAULT_RETENTION), visibility.unwrap_or(DEFAULT_VISIBILITY));
        self.queue_path(name)
    }

    /// SendMessage. Returns `(MessageId, MD5OfMessageBody)`.
    pub fn sqs_send(&mut self, url: &str, body: &str, delay: Duration) -> ApiResult<(String, String)> {
        let name = self.queue_name(url)?;
        let id = self.sqs.send(
            &name,
            body.to_string(),
            delay,
            self.now,
            &self.faults,
            &mut self.rng_sqs,
            &mut self.message_ids,
        )?;
        Ok((id, crate::sqs::md5_of(body)))
    }

    /// ReceiveMessage (no waiting; the wire layer implements long polling on top).
    pub fn sqs_receive(&mut self, url: &str, max: usize, visibility: Option<Duration>) -> ApiResult<Vec<Received>> {
        let name = self.queue_name(url)?;
        self.sqs.receive(&name, max, visibility, self.now, &self.faults, &mut self.rng_sqs, &mut self.message_ids)
    }

    /// DeleteMessage.
    pub fn sqs_delete(&mut self, url: &str, receipt_handle: &str) -> ApiResult<()> {
        let name = self.queue_name(url)?;
        self.sqs.delete(&name, receipt_handle)
    }

    /// PurgeQueue.
    pub fn sqs_purge(&mut self, url: &str) -> ApiResult<()> {
        let name = self.queue_name(url)?;
        self.sqs.purge(&name)
    }

    /// `(ApproximateNumberOfMessages, ApproximateNumberOfMessagesNotVisible)` now.
    pub fn sqs_counts(&self, url: &str) -> ApiResult<(usize, usize)> {
        let name = self.queue_name(url)?;
        let q = &self.sqs.queues[&name];
        let visible =
            q.messages.values().filter(|m| m.visible_at <= self.now && m.sent_at + q.retention > self.now).count();
        Ok((visible, q.len() - visible))
    }

    /// Retention of a queue.
    pub fn sqs_retention(&self, url: &str) -> ApiResult<Duration> {
        let name = self.queue_name(url)?;
        Ok(self.sqs.queues[&name].retention)
    }
}
