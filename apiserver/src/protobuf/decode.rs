//! One protobuf message to the JSON the store keeps, driven by the message table, with
//! the apimachinery types whose JSON form differs from their protobuf form written as
//! kube-apiserver writes them (Quantity, Time, MicroTime, Duration, IntOrString,
//! RawExtension, FieldsV1, the CRD schema's JSON and "X or Y" unions, string lists).

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::messages::{Card, Field, Kind, MESSAGES};
use super::wire::{self, Reader};

/// Go's zero `time.Time` in Unix seconds (0001-01-01T00:00:00Z).
const GO_ZERO_TIME: i64 = -62_135_596_800;

/// Nesting deeper than this is refused (a CRD schema nests, a request body should not be
/// able to exhaust the stack).
const MAX_DEPTH: usize = 64;

/// Decodes `buf` as the message at module path `path`.
pub(super) fn message(path: &str, buf: &[u8], depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("messages nest deeper than {MAX_DEPTH}"));
    }
    if let Some(v) = special(path, buf, depth)? {
        return Ok(v);
    }
    let m = MESSAGES.get(path).ok_or_else(|| format!("no protobuf message {path}"))?;
    let mut out = Map::new();
    let mut r = Reader::new(buf);
    while let Some((tag, value)) = r.next_field()? {
        // Unknown fields are skipped, as protobuf readers do.
        let Some(f) = m.fields.get(&tag) else { continue };
        let ctx = |e: String| format!("{}: {e}", f.json);
        match f.card {
            Card::Optional => {
                let v = scalar_or_message(f, &value, depth).map_err(ctx)?;
                match v {
                    // Go writes its non-pointer strings and zero times even when empty; its
                    // JSON leaves them out (`omitempty`), and absent and empty are one value.
                    Value::Null => {
                        out.remove(f.json);
                    }
                    Value::String(s) if s.is_empty() && f.kind == Kind::String => {}
                    v => {
                        out.insert(f.json.to_string(), v);
                    }
                }
            }
            Card::Repeated => {
                let list = out.entry(f.json).or_insert_with(|| Value::Array(vec![]));
                let Value::Array(items) = list else { unreachable!("only lists are inserted here") };
                match (&value, f.kind) {
                    // A packed list of numbers or booleans.
                    (wire::Value::Bytes(packed), Kind::Int32 | Kind::Int64 | Kind::Bool) => {
                        let mut pr = Reader::new(packed);
                        while !pr.at_end() {
                            items.push(scalar(f.kind, &wire::Value::Varint(pr.varint().map_err(ctx)?)).map_err(ctx)?);
                        }
                    }
                    _ => items.push(scalar_or_message(f, &value, depth).map_err(ctx)?),
                }
            }
            Card::Map => {
                let wire::Value::Bytes(entry) = value else { return Err(ctx("a map entry is not a record".into())) };
                let (k, v) = map_entry(f, entry, depth).map_err(ctx)?;
                let map = out.entry(f.json).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(map) = map {
                    map.insert(k, v);
                }
            }
            Card::Inline => {
                if let Value::Object(fields) = scalar_or_message(f, &value, depth).map_err(ctx)? {
                    out.extend(fields);
                }
            }
        }
    }
    Ok(Value::Object(out))
}

/// A map entry: key (field 1, a string) and value (field 2).
fn map_entry(f: &Field, entry: &[u8], depth: usize) -> Result<(String, Value), String> {
    let (mut key, mut val) = (String::new(), None);
    let mut r = Reader::new(entry);
    while let Some((tag, v)) = r.next_field()? {
        match tag {
            1 => key = as_str(&v)?.to_string(),
            2 => val = Some(scalar_or_message(f, &v, depth)?),
            _ => {}
        }
    }
    let empty = match f.kind {
        Kind::String | Kind::Bytes => json!(""),
        Kind::Message => json!({}),
        _ => json!(0),
    };
    Ok((key, val.unwrap_or(empty)))
}

fn scalar_or_message(f: &Field, v: &wire::Value<'_>, depth: usize) -> Result<Value, String> {
    match f.kind {
        Kind::Message => message(f.message, bytes(v)?, depth + 1),
        k => scalar(k, v),
    }
}

fn scalar(kind: Kind, v: &wire::Value<'_>) -> Result<Value, String> {
    Ok(match (kind, v) {
        (Kind::String, _) => json!(as_str(v)?),
        (Kind::Bytes, _) => json!(base64::engine::general_purpose::STANDARD.encode(bytes(v)?)),
        (Kind::Bool, wire::Value::Varint(n)) => json!(*n != 0),
        // int32 is sign-extended to 64 bits on the wire.
        (Kind::Int32, wire::Value::Varint(n)) => json!(*n as i64 as i32),
        (Kind::Int64, wire::Value::Varint(n)) => json!(*n as i64),
        (Kind::Double, wire::Value::Fixed64(n)) => json!(f64::from_bits(*n)),
        (k, v) => return Err(format!("a {k:?} field arrived as {v:?}")),
    })
}

fn bytes<'a>(v: &wire::Value<'a>) -> Result<&'a [u8], String> {
    match v {
        wire::Value::Bytes(b) => Ok(b),
        v => Err(format!("expected a length-delimited record, got {v:?}")),
    }
}

fn as_str<'a>(v: &wire::Value<'a>) -> Result<&'a str, String> {
    std::str::from_utf8(bytes(v)?).map_err(|_| "a string is not UTF-8".to_string())
}

/// The fields of a small message, by tag (last occurrence wins).
fn fields<'a>(buf: &'a [u8]) -> Result<Vec<(u32, wire::Value<'a>)>, String> {
    let mut r = Reader::new(buf);
    let mut out = vec![];
    while let Some(f) = r.next_field()? {
        out.push(f);
    }
    Ok(out)
}

fn field<'a, 'b>(fs: &'b [(u32, wire::Value<'a>)], tag: u32) -> Option<&'b wire::Value<'a>> {
    fs.iter().rev().find(|(t, _)| *t == tag).map(|(_, v)| v)
}

fn varint(fs: &[(u32, wire::Value<'_>)], tag: u32) -> i64 {
    match field(fs, tag) {
        Some(wire::Value::Varint(n)) => *n as i64,
        _ => 0,
    }
}

/// The apimachinery and apiextensions types whose JSON is not their protobuf shape
/// (k8s.io/apimachinery `pkg/api/resource/quantity_proto.go`, `pkg/apis/meta/v1/time_proto.go`,
/// `micro_time_proto.go`, `pkg/util/intstr/intstr.go`, `pkg/runtime/types_proto.go`,
/// apiextensions-apiserver `pkg/apis/apiextensions/v1/marshal.go`).
fn special(path: &str, buf: &[u8], depth: usize) -> Result<Option<Value>, String> {
    let fs = fields(buf)?;
    let raw_json = |tag| -> Result<Value, String> {
        match field(&fs, tag) {
            Some(v) => serde_json::from_slice(bytes(v)?).map_err(|e| format!("raw JSON: {e}")),
            None => Ok(Value::Null),
        }
    };
    let schema = "apiextensions_apiserver::pkg::apis::apiextensions::v1::JsonSchemaProps";
    let schema_v1beta1 = "apiextensions_apiserver::pkg::apis::apiextensions::v1beta1::JsonSchemaProps";
    let schema_for = |p: &str| if p.contains("::v1beta1::") { schema_v1beta1 } else { schema };
    Ok(Some(match path {
        "apimachinery::pkg::api::resource::Quantity" => match field(&fs, 1) {
            Some(v) => json!(as_str(v)?),
            None => json!("0"),
        },
        "apimachinery::pkg::apis::meta::v1::Time" | "apimachinery::pkg::apis::meta::v1::MicroTime" => {
            if fs.is_empty() {
                return Ok(Some(Value::Null));
            }
            let (secs, nanos) = (varint(&fs, 1), varint(&fs, 2));
            if secs == GO_ZERO_TIME && nanos == 0 {
                return Ok(Some(Value::Null));
            }
            json!(rfc3339(secs, nanos, path.ends_with("MicroTime"))?)
        }
        "apimachinery::pkg::apis::meta::v1::Duration" => {
            let n = varint(&fs, 1);
            let d = dovetail_goduration::format(std::time::Duration::from_nanos(n.unsigned_abs()));
            json!(if n < 0 { format!("-{d}") } else { d })
        }
        "apimachinery::pkg::util::intstr::IntOrString" => match varint(&fs, 1) {
            0 => json!(varint(&fs, 2) as i32),
            _ => json!(field(&fs, 3).map(as_str).transpose()?.unwrap_or("")),
        },
        "apimachinery::pkg::runtime::RawExtension"
        | "apimachinery::pkg::apis::meta::v1::FieldsV1"
        | "apiextensions_apiserver::pkg::apis::apiextensions::v1::Json"
        | "apiextensions_apiserver::pkg::apis::apiextensions::v1beta1::Json" => raw_json(1)?,
        "apimachinery::pkg::apis::meta::v1::Verbs" => string_list(&fs)?,
        p if p.ends_with("::ExtraValue") => string_list(&fs)?,
        p if p.ends_with("::JsonSchemaPropsOrArray") => match field(&fs, 1) {
            Some(v) => message(schema_for(p), bytes(v)?, depth + 1)?,
            None => Value::Array(
                fs.iter()
                    .filter(|(t, _)| *t == 2)
                    .map(|(_, v)| message(schema_for(p), bytes(v)?, depth + 1))
                    .collect::<Result<_, _>>()?,
            ),
        },
        p if p.ends_with("::JsonSchemaPropsOrBool") => match field(&fs, 2) {
            Some(v) => message(schema_for(p), bytes(v)?, depth + 1)?,
            None => json!(varint(&fs, 1) != 0),
        },
        p if p.ends_with("::JsonSchemaPropsOrStringArray") => match field(&fs, 1) {
            Some(v) => message(schema_for(p), bytes(v)?, depth + 1)?,
            None => string_list(&fs.into_iter().filter(|(t, _)| *t == 2).map(|(_, v)| (1, v)).collect::<Vec<_>>())?,
        },
        _ => return Ok(None),
    }))
}

/// A message that is a Go `[]string` in JSON: its repeated field 1.
fn string_list(fs: &[(u32, wire::Value<'_>)]) -> Result<Value, String> {
    fs.iter()
        .filter(|(t, _)| *t == 1)
        .map(|(_, v)| as_str(v).map(|s| json!(s)))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// Go's RFC 3339 form of a metav1.Time (seconds) or MicroTime (microseconds), in UTC.
fn rfc3339(secs: i64, nanos: i64, micro: bool) -> Result<String, String> {
    let t = jiff::Timestamp::new(secs, i32::try_from(nanos).unwrap_or(0)).map_err(|e| format!("time: {e}"))?;
    let format = if micro { "%Y-%m-%dT%H:%M:%S%.6fZ" } else { "%Y-%m-%dT%H:%M:%SZ" };
    Ok(t.strftime(format).to_string())
}
