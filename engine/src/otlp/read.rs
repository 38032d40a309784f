//! Reading OTLP JSON (`{"resourceSpans": [...]}`) into spans: ids in hex
//! or base64, attribute values decoded to JSON, enums as numbers or names,
//! 64-bit integers as numbers or strings. Every error names the JSON path
//! of the offending value.

use std::rc::Rc;

use serde_json::{Map, Number, Value};

use crate::import::records::{json_kind, Invalid};

/// One span, read and checked.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    /// The trace id, 32 lowercase hex digits.
    pub trace_id: String,
    /// The span id, 16 lowercase hex digits.
    pub span_id: String,
    /// The parent's span id, when the span has one.
    pub parent: Option<String>,
    /// The span's name.
    pub name: String,
    /// The span kind's name (`INTERNAL`, `SERVER`, ...).
    pub kind: &'static str,
    /// Start, in nanoseconds since the Unix epoch.
    pub start: u64,
    /// End, in nanoseconds since the Unix epoch.
    pub end: u64,
    /// The attributes, decoded, in their order (a repeated key: the last).
    pub attrs: Map<String, Value>,
    /// The events: `{name, time, attributes}`.
    pub events: Vec<Event>,
    /// The links.
    pub links: Vec<Link>,
    /// The status code's name (`UNSET`, `OK`, `ERROR`).
    pub status: &'static str,
    /// The status message, when given.
    pub status_message: Option<String>,
    /// The W3C trace state, when given.
    pub trace_state: Option<String>,
    /// The resource's attributes.
    pub resource: Rc<Map<String, Value>>,
    /// The instrumentation scope: `{name, version, attributes}`.
    pub scope: Rc<Value>,
    /// Where the span is: the input's name and the span's JSON path.
    pub at: (Rc<str>, String),
}

/// A span event.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// Its name.
    pub name: String,
    /// When, in nanoseconds since the Unix epoch.
    pub time: u64,
    /// Its attributes, decoded.
    pub attrs: Map<String, Value>,
}

/// A span link.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    /// The linked span's trace id (hex).
    pub trace_id: String,
    /// The linked span's id (hex).
    pub span_id: String,
    /// The link's attributes, decoded.
    pub attrs: Map<String, Value>,
}

/// An error at a JSON path.
fn bad(path: &str, reason: impl Into<String>) -> Invalid {
    Invalid {
        path: path.to_string(),
        reason: reason.into(),
    }
}

/// Reads every span of one OTLP request object. `source` names the input
/// in each span's location.
pub(crate) fn spans(doc: &Map<String, Value>, source: &Rc<str>) -> Result<Vec<Span>, Invalid> {
    let mut out = Vec::new();
    let resource_spans = array(doc.get("resourceSpans"), "resourceSpans")?;
    for (r, rs) in resource_spans.iter().enumerate() {
        let rpath = format!("resourceSpans[{r}]");
        let rs = object(rs, &rpath)?;
        let resource = match rs.get("resource") {
            None | Some(Value::Null) => Map::new(),
            Some(v) => {
                let p = format!("{rpath}.resource");
                let res = object(v, &p)?;
                attributes(res.get("attributes"), &format!("{p}.attributes"))?
            }
        };
        let resource = Rc::new(resource);
        // `instrumentationLibrarySpans` is what OTLP called scopeSpans before 0.15.
        let (scopes_key, scope_key) = if rs.contains_key("scopeSpans") {
            ("scopeSpans", "scope")
        } else {
            ("instrumentationLibrarySpans", "instrumentationLibrary")
        };
        let scopes = match rs.get(scopes_key) {
            None | Some(Value::Null) => &[][..],
            v => array(v, &format!("{rpath}.{scopes_key}"))?,
        };
        for (s, ss) in scopes.iter().enumerate() {
            let spath = format!("{rpath}.{scopes_key}[{s}]");
            let ss = object(ss, &spath)?;
            let scope = Rc::new(scope(ss.get(scope_key), &format!("{spath}.{scope_key}"))?);
            let list = match ss.get("spans") {
                None | Some(Value::Null) => &[][..],
                v => array(v, &format!("{spath}.spans"))?,
            };
            for (i, sp) in list.iter().enumerate() {
                let path = format!("{spath}.spans[{i}]");
                out.push(span(sp, &path, &resource, &scope, source)?);
            }
        }
    }
    Ok(out)
}

pub(crate) fn array<'v>(v: Option<&'v Value>, path: &str) -> Result<&'v [Value], Invalid> {
    match v {
        Some(Value::Array(a)) => Ok(a),
        None => Err(bad(path, "required field is missing")),
        Some(other) => Err(bad(
            path,
            format!("must be an array, found {}", json_kind(other)),
        )),
    }
}

pub(crate) fn object<'v>(v: &'v Value, path: &str) -> Result<&'v Map<String, Value>, Invalid> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(bad(
            path,
            format!("must be an object, found {}", json_kind(other)),
        )),
    }
}

fn opt_str(m: &Map<String, Value>, key: &str, path: &str) -> Result<Option<String>, Invalid> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(bad(
            &format!("{path}.{key}"),
            format!("must be a string, found {}", json_kind(other)),
        )),
    }
}

pub(crate) fn scope(v: Option<&Value>, path: &str) -> Result<Value, Invalid> {
    let mut out = Map::new();
    if let Some(v) = v.filter(|v| !v.is_null()) {
        let m = object(v, path)?;
        for key in ["name", "version"] {
            if let Some(s) = opt_str(m, key, path)? {
                out.insert(key.into(), Value::String(s));
            }
        }
        let attrs = attributes(m.get("attributes"), &format!("{path}.attributes"))?;
        if !attrs.is_empty() {
            out.insert("attributes".into(), Value::Object(attrs));
        }
    }
    Ok(Value::Object(out))
}

pub(crate) fn span(
    v: &Value,
    path: &str,
    resource: &Rc<Map<String, Value>>,
    scope: &Rc<Value>,
    source: &Rc<str>,
) -> Result<Span, Invalid> {
    let m = object(v, path)?;
    let at = |k: &str| format!("{path}.{k}");
    let trace_id = id(m.get("traceId"), &at("traceId"), 16, true)?
        .ok_or_else(|| bad(&at("traceId"), "required field is missing"))?;
    let span_id = id(m.get("spanId"), &at("spanId"), 8, true)?
        .ok_or_else(|| bad(&at("spanId"), "required field is missing"))?;
    let parent = id(m.get("parentSpanId"), &at("parentSpanId"), 8, false)?;
    let name = match m.get("name") {
        Some(Value::String(s)) => s.clone(),
        None => return Err(bad(&at("name"), "required field is missing")),
        Some(other) => {
            return Err(bad(
                &at("name"),
                format!("must be a string, found {}", json_kind(other)),
            ))
        }
    };
    let kind = enum_name(m.get("kind"), &at("kind"), SPAN_KINDS, "SPAN_KIND_")?;
    let start = nanos(m.get("startTimeUnixNano"), &at("startTimeUnixNano"))?;
    let end = nanos(m.get("endTimeUnixNano"), &at("endTimeUnixNano"))?;
    let attrs = attributes(m.get("attributes"), &at("attributes"))?;
    let mut events = Vec::new();
    if let Some(list) = m.get("events").filter(|v| !v.is_null()) {
        for (i, e) in array(Some(list), &at("events"))?.iter().enumerate() {
            let p = format!("{path}.events[{i}]");
            let e = object(e, &p)?;
            events.push(Event {
                name: opt_str(e, "name", &p)?.unwrap_or_default(),
                time: match e.get("timeUnixNano") {
                    None | Some(Value::Null) => start,
                    t => nanos(t, &format!("{p}.timeUnixNano"))?,
                },
                attrs: attributes(e.get("attributes"), &format!("{p}.attributes"))?,
            });
        }
    }
    let mut links = Vec::new();
    if let Some(list) = m.get("links").filter(|v| !v.is_null()) {
        for (i, l) in array(Some(list), &at("links"))?.iter().enumerate() {
            let p = format!("{path}.links[{i}]");
            let l = object(l, &p)?;
            let trace_id = id(l.get("traceId"), &format!("{p}.traceId"), 16, true)?
                .ok_or_else(|| bad(&format!("{p}.traceId"), "required field is missing"))?;
            let span_id = id(l.get("spanId"), &format!("{p}.spanId"), 8, true)?
                .ok_or_else(|| bad(&format!("{p}.spanId"), "required field is missing"))?;
            links.push(Link {
                trace_id,
                span_id,
                attrs: attributes(l.get("attributes"), &format!("{p}.attributes"))?,
            });
        }
    }
    let (status, status_message) = match m.get("status") {
        None | Some(Value::Null) => ("UNSET", None),
        Some(v) => {
            let p = at("status");
            let s = object(v, &p)?;
            (
                enum_name(
                    s.get("code"),
                    &format!("{p}.code"),
                    STATUS_CODES,
                    "STATUS_CODE_",
                )?,
                opt_str(s, "message", &p)?.filter(|m| !m.is_empty()),
            )
        }
    };
    Ok(Span {
        trace_id,
        span_id,
        parent,
        name,
        kind,
        start,
        end,
        attrs,
        events,
        links,
        status,
        status_message,
        trace_state: opt_str(m, "traceState", path)?.filter(|s| !s.is_empty()),
        resource: resource.clone(),
        scope: scope.clone(),
        at: (source.clone(), path.to_string()),
    })
}

const SPAN_KINDS: &[&str] = &[
    "UNSPECIFIED",
    "INTERNAL",
    "SERVER",
    "CLIENT",
    "PRODUCER",
    "CONSUMER",
];

const STATUS_CODES: &[&str] = &["UNSET", "OK", "ERROR"];

/// An enum given as its number (the OTLP/JSON form) or its name (protobuf's
/// JSON mapping, with or without the prefix); absent is the first value.
fn enum_name(
    v: Option<&Value>,
    path: &str,
    names: &'static [&'static str],
    prefix: &str,
) -> Result<&'static str, Invalid> {
    let expected = || {
        format!(
            "must be one of {} (or their names), found",
            (0..names.len())
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    match v {
        None | Some(Value::Null) => Ok(names[0]),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|i| names.get(usize::try_from(i).ok()?))
            .copied()
            .ok_or_else(|| bad(path, format!("{} {n}", expected()))),
        Some(Value::String(s)) => {
            let short = s.strip_prefix(prefix).unwrap_or(s);
            names
                .iter()
                .find(|n| **n == short)
                .copied()
                .ok_or_else(|| bad(path, format!("{} {s:?}", expected())))
        }
        Some(other) => Err(bad(path, format!("{} {}", expected(), json_kind(other)))),
    }
}

/// A time in nanoseconds: a decimal string (both JSON forms write 64-bit
/// integers so) or a JSON number. Absent is 0.
fn nanos(v: Option<&Value>, path: &str) -> Result<u64, Invalid> {
    match v {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n.as_u64().ok_or_else(|| {
            bad(
                path,
                format!("must be a whole number of nanoseconds, found {n}"),
            )
        }),
        Some(Value::String(s)) => s.parse::<u64>().map_err(|_| {
            bad(
                path,
                format!("must be a whole number of nanoseconds, found {s:?}"),
            )
        }),
        Some(other) => Err(bad(
            path,
            format!(
                "must be a whole number of nanoseconds, found {}",
                json_kind(other)
            ),
        )),
    }
}

/// A trace id (16 bytes) or span id (8 bytes) in hex (the OTLP/JSON form)
/// or base64 (protobuf's JSON mapping of bytes), as lowercase hex. An
/// absent or empty id is `None` (an error when `required`); an id of zeros
/// is invalid in OpenTelemetry, and so is an error.
pub(crate) fn id(
    v: Option<&Value>,
    path: &str,
    len: usize,
    required: bool,
) -> Result<Option<String>, Invalid> {
    let s = match v {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(bad(
                path,
                format!("must be a string, found {}", json_kind(other)),
            ))
        }
    };
    if s.is_empty() {
        return if required {
            Err(bad(path, "required field is missing or empty"))
        } else {
            Ok(None)
        };
    }
    let bytes = if s.len() == 2 * len && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        (0..len)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0))
            .collect()
    } else {
        match base64(s) {
            Some(b) if b.len() == len => b,
            _ => {
                let article = if len == 8 { "an" } else { "a" };
                return Err(bad(
                    path,
                    format!(
                        "{s:?} is not {article} {len}-byte id in hex ({} hex digits) or in base64",
                        2 * len
                    ),
                ));
            }
        }
    };
    if bytes.iter().all(|&b| b == 0) {
        return Err(bad(
            path,
            "is all zeros, which OpenTelemetry reserves for an invalid id",
        ));
    }
    Ok(Some(bytes.iter().map(|b| format!("{b:02x}")).collect()))
}

/// Decodes base64, standard or URL-safe alphabet, padded or not.
pub(crate) fn base64(s: &str) -> Option<Vec<u8>> {
    let body = s.trim_end_matches('=');
    if s.len() - body.len() > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in body.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits must be padding zeros, and one character alone cannot
    // make a byte.
    (acc == 0 && body.len() % 4 != 1).then_some(out)
}

/// A list of `{key, value}` attributes as a map of decoded values.
pub(crate) fn attributes(v: Option<&Value>, path: &str) -> Result<Map<String, Value>, Invalid> {
    let mut out = Map::new();
    let list = match v {
        None | Some(Value::Null) => return Ok(out),
        v => array(v, path)?,
    };
    for (i, kv) in list.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let (key, value) = key_value(kv, &p)?;
        out.insert(key, value);
    }
    Ok(out)
}

fn key_value(kv: &Value, path: &str) -> Result<(String, Value), Invalid> {
    let m = object(kv, path)?;
    let key = match m.get("key") {
        Some(Value::String(k)) => k.clone(),
        None => return Err(bad(&format!("{path}.key"), "required field is missing")),
        Some(other) => {
            return Err(bad(
                &format!("{path}.key"),
                format!("must be a string, found {}", json_kind(other)),
            ))
        }
    };
    let value = match m.get("value") {
        None | Some(Value::Null) => Value::Null,
        Some(v) => any_value(v, &format!("{path}.value"))?,
    };
    Ok((key, value))
}

/// An OTLP `AnyValue` as JSON: strings, booleans and numbers as such,
/// arrays and key-value lists as arrays and objects, bytes as their base64
/// text, an empty value as null. A double that is not finite (protobuf's
/// JSON writes `"NaN"`, `"Infinity"`, `"-Infinity"`) stays that text.
pub(crate) fn any_value(v: &Value, path: &str) -> Result<Value, Invalid> {
    let m = object(v, path)?;
    let mut it = m.iter();
    let Some((kind, inner)) = it.next() else {
        return Ok(Value::Null);
    };
    if let Some((other, _)) = it.next() {
        return Err(bad(
            path,
            format!("holds both {kind:?} and {other:?}; an AnyValue holds one value"),
        ));
    }
    let p = format!("{path}.{kind}");
    let wrong = |what: &str| bad(&p, format!("must be {what}, found {}", json_kind(inner)));
    Ok(match kind.as_str() {
        "stringValue" => match inner {
            Value::String(_) => inner.clone(),
            _ => return Err(wrong("a string")),
        },
        "boolValue" => match inner {
            Value::Bool(_) => inner.clone(),
            _ => return Err(wrong("a boolean")),
        },
        "intValue" => match inner {
            Value::Number(n) if n.as_i64().is_some() => inner.clone(),
            Value::String(s) => match s.parse::<i64>() {
                Ok(i) => Value::Number(i.into()),
                Err(_) => return Err(bad(&p, format!("{s:?} is not a 64-bit integer"))),
            },
            Value::Number(n) => return Err(bad(&p, format!("{n} is not a 64-bit integer"))),
            _ => return Err(wrong("an integer")),
        },
        "doubleValue" => match inner {
            Value::Number(n) => match n.as_f64().and_then(Number::from_f64) {
                Some(x) => Value::Number(x),
                None => inner.clone(),
            },
            Value::String(s) if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") => {
                inner.clone()
            }
            Value::String(s) => match s.parse::<f64>().ok().and_then(Number::from_f64) {
                Some(x) => Value::Number(x),
                None => return Err(bad(&p, format!("{s:?} is not a number"))),
            },
            _ => return Err(wrong("a number")),
        },
        "bytesValue" => match inner {
            Value::String(s) if base64(s).is_some() => inner.clone(),
            Value::String(s) => return Err(bad(&p, format!("{s:?} is not base64"))),
            _ => return Err(wrong("a base64 string")),
        },
        "arrayValue" => {
            let a = object(inner, &p)?;
            let values = match a.get("values") {
                None | Some(Value::Null) => &[][..],
                v => array(v, &format!("{p}.values"))?,
            };
            Value::Array(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, x)| any_value(x, &format!("{p}.values[{i}]")))
                    .collect::<Result<_, _>>()?,
            )
        }
        "kvlistValue" => {
            let a = object(inner, &p)?;
            let mut out = Map::new();
            if let Some(values) = a.get("values").filter(|v| !v.is_null()) {
                for (i, kv) in array(Some(values), &format!("{p}.values"))?
                    .iter()
                    .enumerate()
                {
                    let (k, v) = key_value(kv, &format!("{p}.values[{i}]"))?;
                    out.insert(k, v);
                }
            }
            Value::Object(out)
        }
        other => {
            return Err(bad(
                path,
                format!(
                    "{other:?} is not a kind of AnyValue (stringValue, boolValue, intValue, \
                     doubleValue, arrayValue, kvlistValue, bytesValue)"
                ),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(v: Value) -> Result<Vec<Span>, Invalid> {
        let Value::Object(m) = v else { panic!() };
        spans(&m, &Rc::from("t"))
    }

    fn doc(span: Value) -> Value {
        json!({"resourceSpans": [{"resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "svc"}}]},
            "scopeSpans": [{"scope": {"name": "s"}, "spans": [span]}]}]})
    }

    #[test]
    fn ids_read_in_hex_and_in_base64() {
        let hex = one(doc(json!({"traceId": "0102030405060708090A0B0C0D0E0F10",
            "spanId": "a1a2a3a4a5a6a7a8", "name": "x", "kind": 2})))
        .unwrap();
        let b64 = one(doc(json!({"traceId": "AQIDBAUGBwgJCgsMDQ4PEA==",
            "spanId": "oaKjpKWmp6g=", "name": "x", "kind": "SPAN_KIND_SERVER"})))
        .unwrap();
        assert_eq!(hex[0].trace_id, "0102030405060708090a0b0c0d0e0f10");
        assert_eq!(hex[0].trace_id, b64[0].trace_id);
        assert_eq!(hex[0].span_id, b64[0].span_id);
        assert_eq!((hex[0].kind, b64[0].kind), ("SERVER", "SERVER"));
        assert_eq!(hex[0].resource.get("service.name"), Some(&json!("svc")));
    }

    #[test]
    fn bad_ids_name_their_path() {
        let e = one(doc(
            json!({"traceId": "xyz", "spanId": "a1a2a3a4a5a6a7a8", "name": "x"}),
        ))
        .unwrap_err();
        assert_eq!(e.path, "resourceSpans[0].scopeSpans[0].spans[0].traceId");
        assert!(e.reason.contains("16-byte id"), "{}", e.reason);
        let e = one(doc(json!({"traceId": "0102030405060708090a0b0c0d0e0f10",
            "spanId": "0000000000000000", "name": "x"})))
        .unwrap_err();
        assert_eq!(e.path, "resourceSpans[0].scopeSpans[0].spans[0].spanId");
        assert!(e.reason.contains("all zeros"));
        let e = one(doc(
            json!({"traceId": "0102030405060708090a0b0c0d0e0f10", "name": "x"}),
        ))
        .unwrap_err();
        assert!(e.path.ends_with("spanId") && e.reason.contains("missing"));
    }

    #[test]
    fn attribute_values_decode() {
        let v = |x: Value| any_value(&x, "$").unwrap();
        assert_eq!(v(json!({"intValue": "42"})), json!(42));
        assert_eq!(v(json!({"intValue": 42})), json!(42));
        assert_eq!(v(json!({"doubleValue": 0.5})), json!(0.5));
        assert_eq!(v(json!({"doubleValue": "NaN"})), json!("NaN"));
        assert_eq!(v(json!({})), Value::Null);
        assert_eq!(
            v(json!({"arrayValue": {"values": [{"stringValue": "a"}, {"boolValue": true}]}})),
            json!(["a", true])
        );
        assert_eq!(
            v(json!({"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "1"}}]}})),
            json!({"k": 1})
        );
        let e = any_value(&json!({"intValue": "4.5"}), "a").unwrap_err();
        assert_eq!(e.path, "a.intValue");
        let e = any_value(&json!({"stringValue": 3}), "a").unwrap_err();
        assert!(e.reason.contains("must be a string, found a number"));
        let e = any_value(&json!({"stringValue": "a", "intValue": 1}), "a").unwrap_err();
        assert!(e.reason.contains("holds both"));
    }

    #[test]
    fn base64_accepts_both_alphabets_and_refuses_junk() {
        assert_eq!(base64("aGk=").unwrap(), b"hi");
        assert_eq!(base64("aGk").unwrap(), b"hi");
        assert_eq!(base64("-_8").unwrap(), base64("+/8").unwrap());
        assert!(base64("a").is_none());
        assert!(base64("a*b=").is_none());
        assert!(base64("aGl===").is_none());
    }

    #[test]
    fn wrong_types_and_times_name_their_path() {
        let e = one(json!({"resourceSpans": {}})).unwrap_err();
        assert_eq!(e.path, "resourceSpans");
        let e = one(doc(json!({"traceId": "0102030405060708090a0b0c0d0e0f10",
            "spanId": "a1a2a3a4a5a6a7a8", "name": "x", "startTimeUnixNano": "soon"})))
        .unwrap_err();
        assert!(e.path.ends_with("spans[0].startTimeUnixNano"), "{e:?}");
        let e = one(doc(json!({"traceId": "0102030405060708090a0b0c0d0e0f10",
            "spanId": "a1a2a3a4a5a6a7a8", "name": "x", "kind": 9})))
        .unwrap_err();
        assert!(e.path.ends_with("spans[0].kind"), "{e:?}");
        let e = one(doc(json!({"traceId": "0102030405060708090a0b0c0d0e0f10",
            "spanId": "a1a2a3a4a5a6a7a8", "name": "x",
            "attributes": [{"key": "k", "value": {"intValue": true}}]})))
        .unwrap_err();
        assert_eq!(
            e.path,
            "resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.intValue"
        );
    }
}
