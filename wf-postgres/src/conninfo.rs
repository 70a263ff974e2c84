//! Connection strings as libpq reads them, in both forms: a URL
//! (`postgres://user:password@host:port,host2:port2/db?key=value&...`, keys and values
//! percent-decoded) and `key=value` pairs (`host=a,b port=5432,5433 sslmode=require`, values
//! optionally in single quotes, `\` escaping the next character).
//!
//! The TLS keys wf handles itself (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`) are taken
//! out here, since tokio-postgres's own parser refuses `verify-ca`, `verify-full` and the file
//! keys; everything else is left as it was written, for `tokio_postgres::Config` to parse (so
//! multi-host lists and `target_session_attrs` keep their meaning). Plain string work: this
//! file imports nothing of the crate.

/// A connection string split into what wf reads and what tokio-postgres reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnInfo {
    /// The string without the keys in [`SslKeys`], in the form it was written in.
    pub(crate) rest: String,
    /// The TLS keys, decoded.
    pub(crate) ssl: SslKeys,
}

/// The TLS keys of a connection string, as written (decoded); the last of a repeated key wins,
/// as in libpq.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SslKeys {
    /// `sslmode`.
    pub(crate) mode: Option<String>,
    /// `sslrootcert`.
    pub(crate) root_cert: Option<String>,
    /// `sslcert`.
    pub(crate) cert: Option<String>,
    /// `sslkey`.
    pub(crate) key: Option<String>,
}

impl SslKeys {
    /// Takes `key = value` if it is one of the TLS keys; `false` for any other key.
    fn take(&mut self, key: &str, value: String) -> bool {
        let slot = match key {
            "sslmode" => &mut self.mode,
            "sslrootcert" => &mut self.root_cert,
            "sslcert" => &mut self.cert,
            "sslkey" => &mut self.key,
            _ => return false,
        };
        *slot = Some(value);
        true
    }
}

/// The URL prefixes libpq accepts.
const URL_PREFIXES: [&str; 2] = ["postgres://", "postgresql://"];

/// Splits `s` (either form). The error says what is wrong without quoting any value.
pub(crate) fn parse(s: &str) -> Result<ConnInfo, String> {
    if URL_PREFIXES.iter().any(|p| s.starts_with(p)) {
        parse_url(s)
    } else {
        parse_pairs(s)
    }
}

/// Where a URL's query starts (its `?`), if it has one. Credentials run to the first `@`, as
/// tokio-postgres reads them, so a `?` in a password does not start the query.
fn query_start(url: &str) -> Option<usize> {
    let after_prefix = URL_PREFIXES
        .iter()
        .find_map(|p| url.strip_prefix(p).map(|_| p.len()))
        .unwrap_or(0);
    let after_creds = url[after_prefix..]
        .find('@')
        .map_or(after_prefix, |at| after_prefix + at + 1);
    url[after_creds..].find('?').map(|q| after_creds + q)
}

fn parse_url(url: &str) -> Result<ConnInfo, String> {
    let Some(q) = query_start(url) else {
        return Ok(ConnInfo {
            rest: url.to_string(),
            ssl: SslKeys::default(),
        });
    };
    let mut ssl = SslKeys::default();
    let mut kept = Vec::new();
    for param in url[q + 1..].split('&').filter(|p| !p.is_empty()) {
        let Some((key, value)) = param.split_once('=') else {
            return Err(format!(
                "the URL's parameter {:?} has no '=' (write key=value)",
                percent_decode(param).unwrap_or_default()
            ));
        };
        let key = percent_decode(key)?;
        if !ssl.take(&key, percent_decode(value)?) {
            kept.push(param);
        }
    }
    let mut rest = url[..q].to_string();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    Ok(ConnInfo { rest, ssl })
}

/// Decodes `%XX` escapes (a `+` stays a `+`, as in libpq).
pub(crate) fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    "the URL has a '%' not followed by two hex digits (write %25 for '%')"
                        .to_string()
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the URL's percent-escapes are not UTF-8".to_string())
}

/// One `key=value` pair of the `key=value` form.
struct Pair<'a> {
    key: &'a str,
    value: String,
}

/// The pairs of the `key=value` form, read as tokio-postgres and libpq read them: blanks
/// around `=` allowed, a value in single quotes may hold blanks, `\` escapes the next
/// character.
fn pairs(s: &str) -> Result<Vec<Pair<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let key_end = rest
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(rest.len());
        let key = &rest[..key_end];
        if key.is_empty() {
            return Err("a '=' with no key before it".to_string());
        }
        rest = rest[key_end..].trim_start();
        rest = rest
            .strip_prefix('=')
            .ok_or_else(|| format!("the key {key:?} has no '=' after it (write {key}=value)"))?;
        rest = rest.trim_start();
        let (value, after) = read_value(rest).map_err(|e| format!("the value of {key:?}: {e}"))?;
        out.push(Pair { key, value });
        rest = after.trim_start();
    }
    Ok(out)
}

/// A value at the start of `s` and what follows it.
fn read_value(s: &str) -> Result<(String, &str), String> {
    let mut value = String::new();
    let (quoted, body) = match s.strip_prefix('\'') {
        Some(body) => (true, body),
        None => (false, s),
    };
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, next)) = chars.next() {
                    value.push(next);
                }
            }
            '\'' if quoted => return Ok((value, &body[i + 1..])),
            c if c.is_whitespace() && !quoted => return Ok((value, &body[i..])),
            c => value.push(c),
        }
    }
    if quoted {
        return Err("a quote is not closed".to_string());
    }
    if value.is_empty() {
        return Err("it is missing (write key='' for an empty value)".to_string());
    }
    Ok((value, ""))
}

/// `value` quoted for the `key=value` form.
fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

fn parse_pairs(s: &str) -> Result<ConnInfo, String> {
    let mut ssl = SslKeys::default();
    let mut kept = Vec::new();
    for Pair { key, value } in pairs(s)? {
        if !ssl.take(key, value.clone()) {
            kept.push(format!("{key}={}", quote(&value)));
        }
    }
    Ok(ConnInfo {
        rest: kept.join(" "),
        ssl,
    })
}

/// `s` with its password (URL credentials, a `password` key or parameter) replaced by `***`,
/// for messages. A string that cannot be read is shown only if it holds no password.
pub(crate) fn redact(s: &str) -> String {
    if URL_PREFIXES.iter().any(|p| s.starts_with(p)) {
        redact_url(s)
    } else {
        match pairs(s) {
            Ok(pairs) => pairs
                .iter()
                .map(|p| match p.key {
                    "password" => "password=***".to_string(),
                    key => format!("{key}={}", quote(&p.value)),
                })
                .collect::<Vec<_>>()
                .join(" "),
            Err(_) if s.contains("password") => "(a connection string with a password)".to_string(),
            Err(_) => s.to_string(),
        }
    }
}

fn redact_url(url: &str) -> String {
    let prefix = URL_PREFIXES
        .iter()
        .find(|p| url.starts_with(*p))
        .map_or(0, |p| p.len());
    let query = query_start(url);
    let mut out = url[..query.unwrap_or(url.len())].to_string();
    if let Some(at) = out[prefix..].find('@').map(|at| prefix + at) {
        if let Some(colon) = out[prefix..at].find(':').map(|c| prefix + c) {
            out.replace_range(colon + 1..at, "***");
        }
    }
    if let Some(q) = query {
        let params: Vec<String> = url[q + 1..]
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _)) if percent_decode(key).is_ok_and(|k| k == "password") => {
                    format!("{key}=***")
                }
                _ => param.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;
    use tokio_postgres::config::{Host, TargetSessionAttrs};

    fn ssl(mode: &str, root: &str, cert: &str, key: &str) -> SslKeys {
        let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
        SslKeys {
            mode: some(mode),
            root_cert: some(root),
            cert: some(cert),
            key: some(key),
        }
    }

    #[test]
    fn a_url_loses_its_tls_keys_and_keeps_the_rest() {
        let info = parse(
            "postgres://wf:pw@db.internal:5433/app?sslmode=verify-full&application_name=x\
             &sslrootcert=/etc/wf/ca.pem&sslcert=/c.pem&sslkey=/k.pem",
        )
        .unwrap();
        assert_eq!(
            info.rest,
            "postgres://wf:pw@db.internal:5433/app?application_name=x"
        );
        assert_eq!(
            info.ssl,
            ssl("verify-full", "/etc/wf/ca.pem", "/c.pem", "/k.pem")
        );
        let config = tokio_postgres::Config::from_str(&info.rest).unwrap();
        assert_eq!(config.get_user(), Some("wf"));
        assert_eq!(config.get_password(), Some(&b"pw"[..]));
        assert_eq!(config.get_dbname(), Some("app"));
        assert_eq!(config.get_ports(), [5433]);
    }

    #[test]
    fn url_keys_and_values_are_percent_decoded() {
        let info = parse(
            "postgresql://u@h/db?ssl%6Dode=verify-ca&sslrootcert=%2Ftmp%2Fmy%20certs%2Fca+1.pem",
        )
        .unwrap();
        assert_eq!(info.rest, "postgresql://u@h/db");
        assert_eq!(info.ssl, ssl("verify-ca", "/tmp/my certs/ca+1.pem", "", ""));
        assert!(parse("postgres://h/db?sslrootcert=%zz").is_err());
        assert!(parse("postgres://h/db?sslmode").is_err());
    }

    #[test]
    fn a_question_mark_in_a_url_password_does_not_start_the_query() {
        let info = parse("postgres://u:p?w@h/db?sslmode=require").unwrap();
        assert_eq!(info.rest, "postgres://u:p?w@h/db");
        assert_eq!(info.ssl.mode.as_deref(), Some("require"));
        assert_eq!(
            redact("postgres://u:p?w@h/db?sslmode=require"),
            "postgres://u:***@h/db?sslmode=require"
        );
    }

    #[test]
    fn multi_host_urls_keep_their_hosts_ports_and_session_attrs() {
        let info = parse(
            "postgres://wf@10.0.0.1:5432,10.0.0.2:5433/app?target_session_attrs=read-write\
             &sslmode=verify-full&sslrootcert=/ca.pem",
        )
        .unwrap();
        let config = tokio_postgres::Config::from_str(&info.rest).unwrap();
        assert_eq!(
            config.get_hosts(),
            [Host::Tcp("10.0.0.1".into()), Host::Tcp("10.0.0.2".into())]
        );
        assert_eq!(config.get_ports(), [5432, 5433]);
        assert_eq!(
            config.get_target_session_attrs(),
            TargetSessionAttrs::ReadWrite
        );
    }

    #[test]
    fn key_value_strings_lose_their_tls_keys_and_keep_the_rest() {
        let info = parse(
            "host=a,b port=5432,5433 user=wf password='it''s' sslmode = require \
             sslcert=/c.pem sslkey='/my keys/k.pem' target_session_attrs=read-write \
             dbname=app",
        );
        // `''` is not an escape in libpq's grammar: the quote closes after `it`.
        assert!(info.is_err());
        let info = parse(
            "host=a,b port=5432,5433 user=wf password='it\\'s a \\\\secret' sslmode = require \
             sslcert=/c.pem sslkey='/my keys/k.pem' target_session_attrs=read-write dbname=app",
        )
        .unwrap();
        assert_eq!(info.ssl, ssl("require", "", "/c.pem", "/my keys/k.pem"));
        let config = tokio_postgres::Config::from_str(&info.rest).unwrap();
        assert_eq!(
            config.get_hosts(),
            [Host::Tcp("a".into()), Host::Tcp("b".into())]
        );
        assert_eq!(config.get_ports(), [5432, 5433]);
        assert_eq!(config.get_password(), Some(&b"it's a \\secret"[..]));
        assert_eq!(config.get_dbname(), Some("app"));
        assert_eq!(
            config.get_target_session_attrs(),
            TargetSessionAttrs::ReadWrite
        );
    }

    #[test]
    fn the_last_of_a_repeated_key_wins() {
        let info = parse("host=h sslmode=disable sslmode=verify-full").unwrap();
        assert_eq!(info.ssl.mode.as_deref(), Some("verify-full"));
        let info = parse("postgres://h/?sslmode=disable&sslmode=require").unwrap();
        assert_eq!(info.ssl.mode.as_deref(), Some("require"));
    }

    #[test]
    fn broken_key_value_strings_are_refused() {
        for bad in ["host", "host=", "=x", "host='a", "host=a sslmode"] {
            assert!(parse(bad).is_err(), "{bad:?} must be refused");
        }
        assert_eq!(parse("").unwrap().rest, "");
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact("postgres://u@h/db?password=secret&sslmode=require"),
            "postgres://u@h/db?password=***&sslmode=require"
        );
        assert_eq!(
            redact("postgres://u@h/db?pass%77ord=secret"),
            "postgres://u@h/db?pass%77ord=***"
        );
        assert_eq!(
            redact("host=h password=secret sslmode=require"),
            "host='h' password=*** sslmode='require'"
        );
        assert!(!redact("host=h password='unclosed secret").contains("secret"));
    }
}
