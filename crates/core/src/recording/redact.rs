//! [`Redaction`]: the rules that replace secrets with stable placeholders before a recording is kept, and the
//! optional consistent renaming of ids.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::format::{Body, EntryKind, Recording};
use crate::Secret;

/// One redaction rule, on by default; [`Redaction::without`] turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum RedactionRule {
    /// `authorization` / `proxy-authorization` headers: bearer tokens, basic credentials, and an AWS
    /// signature's access key id and signature (its date, region, service and signed headers are kept).
    Authorization,
    /// API key headers: `x-api-key`, `api-key`, `x-goog-api-key`, and those added with [`Redaction::header`].
    ApiKeyHeaders,
    /// `cookie` and `set-cookie` headers.
    Cookies,
    /// The AWS session token header, `x-amz-security-token`.
    AwsSessionToken,
    /// Secret query parameters: `X-Amz-Signature`, `X-Amz-Credential`, `X-Amz-Security-Token`, `api_key`,
    /// `key`, `token`, `access_token`, `sig`, `signature`.
    QuerySecrets,
    /// JSON fields named like a secret, at any depth of any body or event: `api_key`, `password`, `secret`,
    /// `client_secret`, `access_token`, `refresh_token`, `token`, `authorization_token`, `accessKeyId`,
    /// `secretAccessKey`, `sessionToken`, `private_key`.
    SecretFields,
    /// The credentials the providers registered ([`Recorder::secret`](super::Recorder::secret)), wherever they
    /// appear.
    KnownSecrets,
    /// The JSON paths added with [`Redaction::json_path`].
    JsonPaths,
    /// The account number of every AWS ARN (`arn:aws:iam::123456789012:role/…` → `…::000000000000:…`, also
    /// percent-encoded in a path).
    AwsAccountIds,
}

impl RedactionRule {
    /// Every rule.
    pub const ALL: [RedactionRule; 9] = [
        RedactionRule::Authorization,
        RedactionRule::ApiKeyHeaders,
        RedactionRule::Cookies,
        RedactionRule::AwsSessionToken,
        RedactionRule::QuerySecrets,
        RedactionRule::SecretFields,
        RedactionRule::KnownSecrets,
        RedactionRule::JsonPaths,
        RedactionRule::AwsAccountIds,
    ];

    /// Its name in a recording's header.
    pub fn name(self) -> &'static str {
        match self {
            RedactionRule::Authorization => "authorization",
            RedactionRule::ApiKeyHeaders => "api-key-headers",
            RedactionRule::Cookies => "cookies",
            RedactionRule::AwsSessionToken => "aws-session-token",
            RedactionRule::QuerySecrets => "query-secrets",
            RedactionRule::SecretFields => "secret-fields",
            RedactionRule::KnownSecrets => "known-secrets",
            RedactionRule::JsonPaths => "json-paths",
            RedactionRule::AwsAccountIds => "aws-account-ids",
        }
    }
}

/// What is removed from a recording before it is kept. Every [`RedactionRule`] is on by default; after them,
/// the leak scan still refuses a recording that holds anything shaped like a secret.
///
/// Placeholders are stable (`[redacted:x-api-key]`, `[redacted:aws-signature]` …), so two recordings of the
/// same session differ only where the session did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Redaction {
    disabled: BTreeSet<RedactionRule>,
    headers: Vec<String>,
    json_paths: Vec<Vec<String>>,
    rename_ids: bool,
}

const API_KEY_HEADERS: [&str; 3] = ["x-api-key", "api-key", "x-goog-api-key"];
const QUERY_SECRETS: [&str; 10] = [
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "api_key",
    "api-key",
    "key",
    "token",
    "access_token",
    "sig",
    "signature",
];
/// Secret field names, lowercase without `_` and `-`.
const SECRET_FIELDS: [&str; 13] = [
    "apikey",
    "xapikey",
    "password",
    "secret",
    "clientsecret",
    "accesstoken",
    "refreshtoken",
    "token",
    "authorizationtoken",
    "accesskeyid",
    "secretaccesskey",
    "sessiontoken",
    "privatekey",
];

/// `[redacted:<what>]`.
pub fn placeholder(what: &str) -> String {
    format!("[redacted:{what}]")
}

impl Redaction {
    /// Every rule on, no extra header or path, ids kept.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `rule` off (for a recording that must keep what it covers, or to see the leak scan catch it).
    pub fn without(mut self, rule: RedactionRule) -> Self {
        self.disabled.insert(rule);
        self
    }

    /// With one more header treated as an API key (case-insensitive).
    pub fn header(mut self, name: impl Into<String>) -> Self {
        self.headers.push(name.into().to_ascii_lowercase());
        self
    }

    /// With the JSON values at `path` replaced, in every body, event and payload: a JSON pointer whose segments
    /// may be `*` (any key or index), e.g. `/mcp_servers/*/authorization_token`.
    pub fn json_path(mut self, path: &str) -> Self {
        let segments =
            path.trim_start_matches('/').split('/').map(|s| s.replace("~1", "/").replace("~0", "~")).collect();
        self.json_paths.push(segments);
        self
    }

    /// Whether to rename ids (`sesn_011C…` → `sesn_r0001`, UUIDs → `00000000-0000-4000-8000-000000000001`)
    /// consistently across the recording, so recordings of the same session diff cleanly.
    pub fn rename_ids(mut self, rename: bool) -> Self {
        self.rename_ids = rename;
        self
    }

    fn on(&self, rule: RedactionRule) -> bool {
        !self.disabled.contains(&rule)
    }

    /// Applies the rules (and the renaming) to `recording`, with `secrets` the known credentials.
    pub fn apply(&self, recording: &mut Recording, secrets: &[Secret]) {
        let known: Vec<&str> = if self.on(RedactionRule::KnownSecrets) {
            secrets.iter().map(Secret::expose).filter(|secret| secret.len() >= 4).collect()
        } else {
            Vec::new()
        };
        let accounts = self.on(RedactionRule::AwsAccountIds);
        let scrub = |text: &mut String| {
            for secret in &known {
                if text.contains(secret) {
                    *text = text.replace(secret, &placeholder("secret"));
                }
            }
            if accounts && let Some(redacted) = account_ids_redacted(text) {
                *text = redacted;
            }
        };
        for entry in &mut recording.entries {
            match &mut entry.kind {
                EntryKind::Request(request) => {
                    self.headers_redacted(&mut request.headers);
                    if self.on(RedactionRule::QuerySecrets) {
                        request.uri = query_redacted(&request.uri);
                    }
                    scrub(&mut request.uri);
                    request.headers.values_mut().for_each(scrub);
                    if let Some(body) = &mut request.body {
                        self.body_redacted(body, &scrub);
                    }
                }
                EntryKind::Response(response) => {
                    self.headers_redacted(&mut response.headers);
                    response.headers.values_mut().for_each(scrub);
                }
                EntryKind::Body(body) => self.body_redacted(body, &scrub),
                EntryKind::Sse(frame) => {
                    if let Ok(mut json) = serde_json::from_str::<Value>(&frame.data)
                        && self.json_redacted(&mut json, &scrub)
                    {
                        frame.data = json.to_string();
                    }
                    scrub(&mut frame.data);
                }
                EntryKind::Message(message) => {
                    if let Some(payload) = &mut message.payload {
                        self.body_redacted(payload, &scrub);
                    }
                    for value in message.headers.values_mut() {
                        if let Value::String(text) = value {
                            scrub(text);
                        }
                    }
                }
                EntryKind::End(_) => {}
            }
        }
        for extra in [&mut recording.header.app, &mut recording.header.result].into_iter().flatten() {
            self.json_redacted(extra, &scrub);
        }
        recording.header.redacted =
            RedactionRule::ALL.into_iter().filter(|rule| self.on(*rule)).map(|rule| rule.name().to_owned()).collect();
        if self.rename_ids {
            rename_ids(recording);
            recording.header.ids_renamed = true;
        }
    }

    fn headers_redacted(&self, headers: &mut std::collections::BTreeMap<String, String>) {
        for (name, value) in headers.iter_mut() {
            let name = name.as_str();
            if self.on(RedactionRule::Authorization) && matches!(name, "authorization" | "proxy-authorization") {
                *value = authorization_redacted(value);
            } else if (self.on(RedactionRule::ApiKeyHeaders)
                && (API_KEY_HEADERS.contains(&name) || self.headers.iter().any(|extra| extra == name)))
                || (self.on(RedactionRule::Cookies) && matches!(name, "cookie" | "set-cookie"))
            {
                *value = placeholder(name);
            } else if self.on(RedactionRule::AwsSessionToken) && name == "x-amz-security-token" {
                *value = placeholder("aws-session-token");
            }
        }
    }

    fn body_redacted(&self, body: &mut Body, scrub: &impl Fn(&mut String)) {
        match body {
            Body::Json(json) => {
                self.json_redacted(json, scrub);
            }
            Body::Text(text) => scrub(text),
            Body::Base64(_) => {}
        }
    }

    /// Redacts `json` in place; whether anything changed.
    fn json_redacted(&self, json: &mut Value, scrub: &impl Fn(&mut String)) -> bool {
        let before = json.clone();
        if self.on(RedactionRule::SecretFields) {
            secret_fields_redacted(json);
        }
        if self.on(RedactionRule::JsonPaths) {
            for path in &self.json_paths {
                path_redacted(json, path);
            }
        }
        strings_scrubbed(json, scrub);
        *json != before
    }
}

/// The separators an ARN's fields may be joined by: `:`, or `%3A` in a percent-encoded path.
const ARN_SEPARATORS: [&str; 3] = [":", "%3A", "%3a"];

/// Where, in `text`, each ARN's account number is (byte ranges of 12 digits that are not all zeros).
pub(crate) fn arn_accounts(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut found = Vec::new();
    for separator in ARN_SEPARATORS {
        let marker = format!("arn{separator}aws");
        for (start, _) in text.match_indices(&marker) {
            // arn:partition:service:region:account: — the account follows the fourth separator.
            let mut at = start;
            let mut fields = 0;
            while fields < 4 {
                match text[at..].find(separator) {
                    Some(next) => {
                        at += next + separator.len();
                        fields += 1;
                    }
                    None => break,
                }
            }
            let digits = text[at..].bytes().take_while(u8::is_ascii_digit).count();
            let account = &text[at..at + digits];
            if fields == 4
                && digits == 12
                && text[at + 12..].starts_with(separator)
                && account.bytes().any(|b| b != b'0')
            {
                found.push(at..at + 12);
            }
        }
    }
    found
}

/// `text` with every ARN's account number zeroed, or `None` when it has none.
pub(crate) fn account_ids_redacted(text: &str) -> Option<String> {
    let accounts = arn_accounts(text);
    if accounts.is_empty() {
        return None;
    }
    let mut out = text.to_owned();
    for range in accounts {
        out.replace_range(range, "000000000000");
    }
    Some(out)
}

fn authorization_redacted(value: &str) -> String {
    if let Some(rest) = value.strip_prefix("AWS4-HMAC-SHA256") {
        let parts: Vec<String> = rest
            .split(',')
            .map(|part| {
                let trimmed = part.trim();
                if let Some(credential) = trimmed.strip_prefix("Credential=") {
                    let scope = credential.split_once('/').map_or("", |(_, scope)| scope);
                    format!("Credential={}/{scope}", placeholder("aws-access-key-id"))
                } else if trimmed.starts_with("Signature=") {
                    format!("Signature={}", placeholder("aws-signature"))
                } else {
                    trimmed.to_owned()
                }
            })
            .collect();
        return format!("AWS4-HMAC-SHA256 {}", parts.join(", "));
    }
    for scheme in ["Bearer", "Basic"] {
        if value.len() > scheme.len() && value.get(..scheme.len()).is_some_and(|head| head.eq_ignore_ascii_case(scheme))
        {
            return format!("{scheme} {}", placeholder(&format!("{}-token", scheme.to_ascii_lowercase())));
        }
    }
    placeholder("authorization")
}

fn query_redacted(uri: &str) -> String {
    let Some((path, query)) = uri.split_once('?') else { return uri.to_owned() };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if QUERY_SECRETS.contains(&name.to_ascii_lowercase().as_str()) => {
                format!("{name}={}", placeholder(&name.to_ascii_lowercase()))
            }
            _ => pair.to_owned(),
        })
        .collect();
    format!("{path}?{}", pairs.join("&"))
}

fn secret_field(name: &str) -> bool {
    let folded: String = name.chars().filter(|c| *c != '_' && *c != '-').collect::<String>().to_ascii_lowercase();
    SECRET_FIELDS.contains(&folded.as_str())
}

fn secret_fields_redacted(json: &mut Value) {
    match json {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if secret_field(key) && !value.is_null() && !value.is_object() && !value.is_array() {
                    *value = Value::String(placeholder(key));
                } else {
                    secret_fields_redacted(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(secret_fields_redacted),
        _ => {}
    }
}

fn path_redacted(json: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        *json = Value::String(placeholder("json-path"));
        return;
    };
    match json {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if first == "*" || first == key {
                    path_redacted(value, rest);
                }
            }
        }
        Value::Array(items) => {
            for (index, value) in items.iter_mut().enumerate() {
                if first == "*" || *first == index.to_string() {
                    path_redacted(value, rest);
                }
            }
        }
        _ => {}
    }
}

fn strings_scrubbed(json: &mut Value, scrub: &impl Fn(&mut String)) {
    match json {
        Value::String(text) => scrub(text),
        Value::Array(items) => items.iter_mut().for_each(|item| strings_scrubbed(item, scrub)),
        Value::Object(map) => map.values_mut().for_each(|value| strings_scrubbed(value, scrub)),
        _ => {}
    }
}

/// Whether `text` is shaped like a provider id: `prefix_` then at least 4 letters and digits, one a digit
/// (`sesn_011C…`, `toolu_01…`), or `prefix-` then at least 10 (`chatcmpl-…`).
pub(crate) fn looks_like_id(text: &str) -> bool {
    let split = text.find(['_', '-']);
    let Some(at) = split else { return false };
    let (prefix, rest) = (&text[..at], &text[at + 1..]);
    let minimum = if text.as_bytes()[at] == b'_' { 4 } else { 10 };
    (1..=12).contains(&prefix.len())
        && prefix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && prefix.as_bytes()[0].is_ascii_lowercase()
        && rest.len() >= minimum
        && rest.bytes().all(|b| b.is_ascii_alphanumeric())
        && rest.bytes().any(|b| b.is_ascii_digit())
}

/// Whether `text` is a UUID in its hyphenated form.
pub(crate) fn looks_like_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(index, b)| match index {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

struct Renamer {
    names: HashMap<String, String>,
    counts: HashMap<String, usize>,
}

impl Renamer {
    fn rename(&mut self, text: &str) -> Option<String> {
        if let Some(name) = self.names.get(text) {
            return Some(name.clone());
        }
        let name = if looks_like_uuid(text) {
            let count = self.counts.entry(String::new()).or_default();
            *count += 1;
            format!("00000000-0000-4000-8000-{count:012}")
        } else if looks_like_id(text) {
            let at = text.find(['_', '-']).unwrap_or(0);
            let prefix = &text[..=at];
            let count = self.counts.entry(prefix.to_owned()).or_default();
            *count += 1;
            format!("{prefix}r{count:04}")
        } else {
            return None;
        };
        self.names.insert(text.to_owned(), name.clone());
        Some(name)
    }

    fn text(&mut self, text: &mut String) {
        if let Some(name) = self.rename(text) {
            *text = name;
        }
    }

    fn uri(&mut self, uri: &mut String) {
        let (path, query) = match uri.split_once('?') {
            Some((path, query)) => (path.to_owned(), Some(query.to_owned())),
            None => (uri.clone(), None),
        };
        let segments: Vec<String> =
            path.split('/').map(|segment| self.rename(segment).unwrap_or_else(|| segment.to_owned())).collect();
        *uri = segments.join("/");
        if let Some(query) = query {
            uri.push('?');
            uri.push_str(&query);
        }
    }

    fn json(&mut self, json: &mut Value) {
        match json {
            Value::String(text) => self.text(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.json(item)),
            Value::Object(map) => map.values_mut().for_each(|value| self.json(value)),
            _ => {}
        }
    }

    fn body(&mut self, body: &mut Body) {
        match body {
            Body::Json(json) => self.json(json),
            Body::Text(text) => self.text(text),
            Body::Base64(_) => {}
        }
    }
}

fn rename_ids(recording: &mut Recording) {
    let mut renamer = Renamer { names: HashMap::new(), counts: HashMap::new() };
    for entry in &mut recording.entries {
        match &mut entry.kind {
            EntryKind::Request(request) => {
                renamer.uri(&mut request.uri);
                request.headers.values_mut().for_each(|value| renamer.text(value));
                if let Some(body) = &mut request.body {
                    renamer.body(body);
                }
            }
            EntryKind::Response(response) => response.headers.values_mut().for_each(|value| renamer.text(value)),
            EntryKind::Body(body) => renamer.body(body),
            EntryKind::Sse(frame) => {
                if let Ok(mut json) = serde_json::from_str::<Value>(&frame.data) {
                    renamer.json(&mut json);
                    frame.data = json.to_string();
                }
                if let Some(id) = &mut frame.id {
                    renamer.text(id);
                }
            }
            EntryKind::Message(message) => {
                if let Some(payload) = &mut message.payload {
                    renamer.body(payload);
                }
            }
            EntryKind::End(_) => {}
        }
    }
    for extra in [&mut recording.header.app, &mut recording.header.result].into_iter().flatten() {
        renamer.json(extra);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::recording::format::{Entry, Header, RecordedRequest, SseRecord};
    use crate::recording::leaks::scan;

    fn recording_with(kinds: Vec<EntryKind>) -> Recording {
        let mut recording = Recording::new(Header::new("test"));
        recording.entries = kinds.into_iter().map(|kind| Entry::new(0, 0, kind)).collect();
        recording
    }

    fn planted() -> Recording {
        let headers = [
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261202/us-east-1/bedrock-agentcore/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            ),
            ("x-amz-security-token", "FwoGZXIvYXdzEBYaDPLANTEDtokenPLANTEDtokenPLANTEDtoken"),
            ("x-api-key", "sk-ant-api03-PLANTEDplantedPLANTEDplanted"),
            ("cookie", "session=PLANTED"),
        ];
        let request = RecordedRequest::new(
            "POST",
            "/v1/things?X-Amz-Signature=PLANTED&api_key=PLANTED&page=2",
            headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            Some(Body::Json(json!({
                "executionRoleArn": "arn:aws:iam::123456789012:role/Prod",
                "credentials": {"accessKeyId": "AKIAIOSFODNN7EXAMPLE", "SecretAccessKey": "PLANTED", "SessionToken": "PLANTED"},
                "apiKey": "PLANTED",
                "mcp_servers": [{"name": "x", "authorization_token": "PLANTED"}],
                "custom": {"deep": "PLANTED-by-path"},
                "text": "the known key is KNOWN-SECRET-1234",
                "modelId": "anthropic.claude-sonnet-4-6",
            }))),
        );
        let sse =
            SseRecord::new(None, None, r#"{"type":"agent.message","token":"PLANTED","text":"KNOWN-SECRET-1234"}"#);
        recording_with(vec![EntryKind::Request(request), EntryKind::Sse(sse)])
    }

    fn text(recording: &Recording) -> String {
        let mut out = Vec::new();
        recording.write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn headers_queries_bodies_sse_data_and_arns_are_redacted_to_stable_placeholders() {
        let mut recording = planted();
        Redaction::new().json_path("/custom/deep").apply(&mut recording, &[Secret::new("KNOWN-SECRET-1234")]);
        let text = text(&recording);
        assert!(!text.contains("PLANTED") && !text.contains("KNOWN-SECRET") && !text.contains("AKIA"), "{text}");
        assert!(!text.contains("123456789012"), "{text}");
        for expected in [
            "Credential=[redacted:aws-access-key-id]/20261202/us-east-1/bedrock-agentcore/aws4_request",
            "SignedHeaders=host;x-amz-date",
            "Signature=[redacted:aws-signature]",
            "[redacted:aws-session-token]",
            "[redacted:x-api-key]",
            "[redacted:cookie]",
            "X-Amz-Signature=[redacted:x-amz-signature]&api_key=[redacted:api_key]&page=2",
            "arn:aws:iam::000000000000:role/Prod",
            "[redacted:json-path]",
            "the known key is [redacted:secret]",
            "anthropic.claude-sonnet-4-6",
        ] {
            assert!(text.contains(expected), "{expected} in {text}");
        }
        scan(&recording).expect("nothing left");
        // Stable: redacting the same input again gives the same text.
        let mut again = planted();
        Redaction::new().json_path("/custom/deep").apply(&mut again, &[Secret::new("KNOWN-SECRET-1234")]);
        assert_eq!(self::text(&again), text);
    }

    #[test]
    fn each_rule_left_off_leaves_something_the_scan_refuses() {
        for (rule, shape) in [
            (RedactionRule::Authorization, "an AWS access key id (AKIA…/ASIA…)"),
            (RedactionRule::ApiKeyHeaders, "an Anthropic API key (sk-ant-…)"),
            (RedactionRule::SecretFields, "an AWS access key id (AKIA…/ASIA…)"),
            (RedactionRule::AwsAccountIds, "an AWS account number in an ARN"),
        ] {
            let mut recording = planted();
            Redaction::new().without(rule).json_path("/custom/deep").apply(&mut recording, &[]);
            match scan(&recording) {
                Err(crate::recording::RecordingError::Leak { shape: found, .. }) => {
                    assert_eq!(found, shape, "{rule:?}")
                }
                other => panic!("{rule:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn odd_header_values_do_not_panic() {
        for value in ["Bearé x", "é", "Basic", ""] {
            let redacted = authorization_redacted(value);
            assert!(redacted.contains("[redacted:"), "{value}: {redacted}");
        }
        // A signature header without its parts has nothing to hide, and is kept as it is.
        assert_eq!(authorization_redacted("AWS4-HMAC-SHA256").trim(), "AWS4-HMAC-SHA256");
    }

    #[test]
    fn ids_are_renamed_consistently_across_paths_bodies_and_frames() {
        let request = RecordedRequest::new(
            "POST",
            "/v1/sessions/sesn_011CZabc123/events",
            Default::default(),
            Some(Body::Json(json!({"events": [{"tool_use_id": "sevt_01XYZ789qq"}]}))),
        );
        let sse = SseRecord::new(
            None,
            None,
            r#"{"id":"sevt_01XYZ789qq","session":"sesn_011CZabc123","u":"3f2b8c1e-9d4a-4e6f-8b7c-1a2b3c4d5e6f"}"#,
        );
        let mut recording = recording_with(vec![EntryKind::Request(request), EntryKind::Sse(sse)]);
        Redaction::new().rename_ids(true).apply(&mut recording, &[]);
        let text = text(&recording);
        assert!(text.contains("/v1/sessions/sesn_r0001/events") && text.matches("sesn_r0001").count() == 2, "{text}");
        assert!(text.matches("sevt_r0001").count() == 2, "{text}");
        assert!(text.contains("00000000-0000-4000-8000-000000000001"), "{text}");
        assert!(recording.header.ids_renamed);
    }
}
