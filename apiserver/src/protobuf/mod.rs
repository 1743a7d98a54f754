//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`) for built-in types,
//! decoded into the JSON the store keeps.
//!
//! kubectl's typed commands (`create namespace`, `run`, `create deployment`, `expose`,
//! `create configmap`, ...) send protobuf and do not fall back to JSON on a 415. A body is
//! the 4-byte magic `k8s\0` and a `runtime.Unknown` (TypeMeta, raw message,
//! contentEncoding, contentType), as k8s.io/apimachinery `pkg/runtime/serializer/protobuf/
//! protobuf.go` writes it; the raw message is decoded with the message table
//! (`messages.rs`). Custom resources have no protobuf form: kube-apiserver answers 415 for
//! them, and so does the caller of [`decode`]. Responses stay JSON: client-go asks for
//! `application/vnd.kubernetes.protobuf, application/json` and reads what it gets.

mod decode;
mod messages;
mod wire;

use serde_json::{Map, Value};

use wire::Reader;

/// The prefix of every Kubernetes protobuf body.
pub const MAGIC: &[u8] = b"k8s\0";

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Decodes a protobuf body into the object's JSON, `apiVersion` and `kind` first.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let envelope =
        body.strip_prefix(MAGIC).ok_or("the body does not start with the Kubernetes protobuf prefix \"k8s\\x00\"")?;
    let (mut api_version, mut kind, mut raw, mut encoding) = (String::new(), String::new(), &[][..], String::new());
    let mut r = Reader::new(envelope);
    while let Some((tag, value)) = r.next_field()? {
        match (tag, value) {
            (1, wire::Value::Bytes(type_meta)) => {
                let mut tm = Reader::new(type_meta);
                while let Some((t, v)) = tm.next_field()? {
                    match (t, v) {
                        (1, wire::Value::Bytes(s)) => api_version = utf8(s)?,
                        (2, wire::Value::Bytes(s)) => kind = utf8(s)?,
                        _ => {}
                    }
                }
            }
            (2, wire::Value::Bytes(b)) => raw = b,
            (3, wire::Value::Bytes(s)) => encoding = utf8(s)?,
            _ => {}
        }
    }
    if !encoding.is_empty() {
        return Err(format!("contentEncoding {encoding:?} is not supported"));
    }
    let message = messages::MESSAGES
        .by_kind(&api_version, &kind)
        .ok_or_else(|| format!("no protobuf message for apiVersion {api_version:?} kind {kind:?}"))?;
    let Value::Object(fields) = decode::message(message.path, raw, 0)? else {
        return Err(format!("{kind} did not decode to an object"));
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version));
    out.insert("kind".into(), Value::String(kind));
    out.extend(fields);
    Ok(Value::Object(out))
}

fn utf8(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "a TypeMeta string is not UTF-8".to_string())
}

#[cfg(test)]
mod tests;
