//! Loading settings: file then flags, and the trusted-peer networks.

use super::*;

#[test]
fn file_then_flags() {
    let dir = std::env::temp_dir().join(format!("ardacat-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("c.toml");
    std::fs::write(&f, "tcp_port = 9000\nsessions = \"force\"\nmax_line_bytes = 4096\ntcp_write_buffer_bytes = 1024\n")
        .unwrap();
    let flags = Flags::parse_from(["x", "--config", f.to_str().unwrap(), "--tcp-port", "9001"]);
    let c = Config::load(flags).unwrap();
    assert_eq!(c.tcp_port, 9001);
    assert_eq!(c.sessions, SessionMode::Force);
    assert_eq!(c.max_line_bytes, 4096);
    assert_eq!(c.tcp_write_buffer_bytes, 1024);
    assert_eq!(Config::default().tcp_write_buffer_bytes, 64 << 10);
    std::fs::write(&f, "no_such_setting = 1\n").unwrap();
    let flags = Flags::parse_from(["x", "--config", f.to_str().unwrap()]);
    assert!(Config::load(flags).is_err());
}

#[test]
fn trusted_peers_parse_and_match() {
    let lb: IpNet = "10.1.2.3".parse().unwrap();
    assert!(lb.contains("10.1.2.3".parse().unwrap()));
    assert!(lb.contains("::ffff:10.1.2.3".parse().unwrap()));
    assert!(!lb.contains("10.1.2.4".parse().unwrap()));
    let net: IpNet = "10.0.0.0/8".parse().unwrap();
    assert!(net.contains("10.200.0.1".parse().unwrap()) && !net.contains("11.0.0.1".parse().unwrap()));
    let all: IpNet = "0.0.0.0/0".parse().unwrap();
    assert!(all.contains("192.0.2.1".parse().unwrap()) && !all.contains("::1".parse().unwrap()));
    let v6: IpNet = "fd00::/8".parse().unwrap();
    assert!(v6.contains("fd12::1".parse().unwrap()) && !v6.contains("fe80::1".parse().unwrap()));
    assert_eq!(net.to_string(), "10.0.0.0/8");
    assert_eq!(lb.to_string(), "10.1.2.3");
    for bad in ["10.0.0.0/33", "nowhere", "10.0.0.0/x", "::/129"] {
        assert!(bad.parse::<IpNet>().is_err(), "{bad}");
    }
    let flags = Flags::parse_from(["x", "--trusted-peers", "127.0.0.3,10.0.0.0/8"]);
    let c = Config::load(flags).unwrap();
    assert_eq!(c.trusted_peers, vec!["127.0.0.3".parse().unwrap(), net]);
    let c: Config = toml::from_str("trusted_peers = [\"::1\", \"10.0.0.0/8\"]").unwrap();
    assert_eq!(c.trusted_peers.len(), 2);
    assert!(toml::from_str::<Config>("trusted_peers = [\"10.0.0.0/99\"]").is_err());
}

#[test]
fn forwarding_settings_load_and_are_checked() {
    let flags =
        Flags::parse_from(["x", "--primary", "p.example.org:8822", "--primary-tls", "--replica-wait-ms", "100"]);
    let c = Config::load(flags).unwrap();
    assert_eq!(c.primary.as_deref(), Some("p.example.org:8822"));
    assert!(c.primary_ssl);
    assert_eq!(c.replica_wait_ms, 100);
    let keys: Vec<&str> = c.primary_problems().iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, ["primary_login"]);
    let c: Config =
        toml::from_str("primary = \"nohost\"\nprimary_login = \"f\"\nprimary_tls_cert = \"c.pem\"").unwrap();
    let keys: Vec<&str> = c.primary_problems().iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, ["primary", "primary_tls_cert", "primary_ssl"]);
    let c: Config = toml::from_str("primary = \"10.0.0.1:8822\"\nprimary_login = \"forwarder\"").unwrap();
    assert!(c.primary_problems().is_empty());
    assert_eq!(Config::default().replica_wait_ms, 5000);
    assert!(Config::default().primary_problems().is_empty());
}
