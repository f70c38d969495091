//! What a request must show before catdog does anything for it: a `Host` that is this
//! server's own address (a web page elsewhere that points its own domain name at 127.0.0.1,
//! "DNS rebinding", sends its domain name here), and, for a request that changes something,
//! the token the page was served with (another site's page cannot read it).

use std::net::IpAddr;

use super::http::Request;
use super::reply::Reply;

/// Whether `host` (a `Host` header's value) names this server: `localhost` or an IP address,
/// with this server's port. A domain name is refused whatever it resolves to: that is what
/// DNS rebinding relies on.
pub(crate) fn host_allowed(host: &str, port: u16) -> bool {
    let (name, host_port) = match host.strip_prefix('[') {
        // An IPv6 address is written in brackets, with colons of its own: `[::1]:8080`.
        Some(bracketed) => match bracketed.split_once(']') {
            Some((address, "")) => (address, None),
            Some((address, rest)) => match rest.strip_prefix(':') {
                Some(host_port) => (address, Some(host_port)),
                None => return false,
            },
            None => return false,
        },
        None => match host.rsplit_once(':') {
            Some((name, host_port)) => (name, Some(host_port)),
            None => (host, None),
        },
    };
    let port_matches = match host_port {
        Some(host_port) => host_port.parse::<u16>() == Ok(port),
        // No port: the default, 80.
        None => port == 80,
    };
    port_matches && names_this_machine(name)
}

fn names_this_machine(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok()
}

/// Refuses a request whose `Host` header is missing, doubled or names another server, or
/// whose request line names another server.
pub(crate) fn check_host(request: &Request, port: u16) -> Result<(), Reply> {
    if request.header_count("Host") > 1 {
        return Err(Reply::error(
            400,
            "the request has more than one Host header",
        ));
    }
    if let Some(authority) = &request.authority {
        name_this_server(Some(authority), port)?;
    }
    name_this_server(request.header("Host"), port)
}

fn name_this_server(host: Option<&str>, port: u16) -> Result<(), Reply> {
    match host {
        Some(host) if host_allowed(host, port) => Ok(()),
        Some(host) => Err(Reply::error(
            403,
            format!(
                "this catdog server answers requests for localhost:{port} or its IP address, \
                 not for {host}"
            ),
        )),
        None => Err(Reply::error(400, "the request has no Host header")),
    }
}

/// Refuses a request that changes something unless it carries the page's token.
pub(crate) fn check_token(sent: Option<&str>, token: &str) -> Result<(), Reply> {
    match sent {
        Some(sent) if constant_time_eq(sent.as_bytes(), token.as_bytes()) => Ok(()),
        _ => Err(Reply::error(
            403,
            "this request needs the token of catdog's page (the X-Catdog-Token header): \
             reload the page",
        )),
    }
}

/// Compares two byte strings in a time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A new random token, 32 hex digits.
pub(crate) fn new_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machines_names_with_this_port_pass() {
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert!(host_allowed(host, 8080), "{host}");
        }
        for host in [
            "evil.example:8080",
            "127.0.0.1.nip.io:8080",
            "127.0.0.1:8081",
            "localhost",
            "127.0.0.1:",
            "",
        ] {
            assert!(!host_allowed(host, 8080), "{host}");
        }
        assert!(host_allowed("localhost", 80));
        assert!(host_allowed("[::1]", 80), "a browser leaves out port 80");
        assert!(host_allowed("127.0.0.1", 80));
        for host in ["[::1]x", "[::1]:", "[evil.example]:80", "::1", "[::1"] {
            assert!(!host_allowed(host, 80), "{host}");
        }
    }

    #[test]
    fn the_token_must_match_exactly() {
        let token = new_token();
        assert_eq!(token.len(), 32);
        assert_ne!(token, new_token());
        assert!(check_token(Some(&token), &token).is_ok());
        assert!(check_token(Some(&token[1..]), &token).is_err());
        assert!(check_token(Some(&token.to_uppercase()), &token).is_err());
        assert!(check_token(None, &token).is_err());
    }
}
