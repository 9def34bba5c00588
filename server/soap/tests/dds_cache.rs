//! The DDS template cache: outcomes, keys, LRU and memory caps, idle expiry, back-off,
//! shadow mode, counters, and concurrent use.

#[path = "common/dds_gen.rs"]
mod dds_gen;

use std::sync::Arc;
use std::time::Duration;

use ardacat_soap::dds::{DdsCache, DdsConfig, DdsOutcome, DeclineReason, TemplateKey};
use ardacat_soap::{Limits, Request, SoapError, SoapVersion, parse_request};
use dds_gen::*;

const V11: SoapVersion = SoapVersion::V11;
const CT: &str = "text/xml; charset=utf-8";

fn one_shard() -> DdsConfig {
    DdsConfig { shards: 1, ..DdsConfig::default() }
}

fn outcome(c: &DdsCache, key: &TemplateKey, msg: &[u8]) -> DdsOutcome {
    let (p, o) = c.parse(key, msg, V11, &Limits::default()).unwrap();
    assert_eq!(p, parse_request(msg, V11, &Limits::default()).unwrap());
    o
}

#[test]
fn miss_hit_decline_refresh() {
    let c = DdsCache::new(one_shard());
    let key = TemplateKey::new("alice", CT);
    let m0 = message(Style::Zeep, V11, &set_attributes(60, 0));
    let m1 = message(Style::Zeep, V11, &set_attributes(60, 10));
    assert_eq!(outcome(&c, &key, &m0), DdsOutcome::Miss);
    assert!(matches!(outcome(&c, &key, &m1), DdsOutcome::Hit { loop_path: false, changed_slots } if changed_slots > 0));
    assert!(matches!(outcome(&c, &key, &m0), DdsOutcome::Hit { changed_slots: 0, .. }));
    // A structural change declines, and the template is refreshed from that message.
    let m2 = message(Style::Gsoap, V11, &set_attributes(60, 0));
    assert_eq!(outcome(&c, &key, &m2), DdsOutcome::Miss, "another envelope prefix selects no template");
    let with_condition = |pct| {
        let mut r = set_attributes(60, pct);
        if let Request::SetAttributes { condition, .. } = &mut r {
            *condition = Some("a0 > 1".into());
        }
        message(Style::Zeep, V11, &r)
    };
    assert_eq!(outcome(&c, &key, &with_condition(0)), DdsOutcome::Declined(DeclineReason::Structure));
    assert!(outcome(&c, &key, &with_condition(50)).is_hit());
    // Errors are the full parser's, and do not disturb the template.
    let bad = &with_condition(0)[..200];
    assert_eq!(
        c.parse(&key, bad, V11, &Limits::default()).unwrap_err(),
        parse_request(bad, V11, &Limits::default()).unwrap_err()
    );
    assert!(outcome(&c, &key, &with_condition(1)).is_hit());
    let s = c.stats();
    assert_eq!((s.hits, s.misses, s.declines_total(), s.full_parse_errors), (4, 2, 2, 1), "{s:?}");
    assert_eq!(s.declines_for(DeclineReason::Structure), 1);
    assert_eq!(s.declines_for(DeclineReason::Truncated), 1);
    assert!(s.bytes_skipped > 0 && s.bytes_skipped <= s.bytes_hit);
    assert_eq!(s.templates, 2);
    assert!(s.template_bytes > m0.len() + m2.len());
}

#[test]
fn keys_separate_clients_content_types_and_operations() {
    let c = DdsCache::new(DdsConfig::default());
    let ping = message(Style::Jaxws, V11, &Request::Ping);
    let list = |n: &str| message(Style::Jaxws, V11, &Request::ListAttributes { entry_name: n.into() });
    let a = TemplateKey::new("a", CT);
    assert_eq!(outcome(&c, &a, &ping), DdsOutcome::Miss);
    assert_eq!(outcome(&c, &a, &list("/x")), DdsOutcome::Miss);
    assert!(outcome(&c, &a, &ping).is_hit());
    assert!(outcome(&c, &a, &list("/y")).is_hit());
    assert_eq!(outcome(&c, &TemplateKey::new("b", CT), &ping), DdsOutcome::Miss);
    assert_eq!(outcome(&c, &TemplateKey::new("a", "text/xml"), &ping), DdsOutcome::Miss);
    assert_eq!(c.stats().templates, 4);
}

#[test]
fn lru_eviction_by_count_and_bytes() {
    let c = DdsCache::new(DdsConfig { max_templates: 3, ..one_shard() });
    let msg = message(Style::Zeep, V11, &set_attributes(10, 0));
    for k in 0..3 {
        assert_eq!(outcome(&c, &TemplateKey::new(format!("c{k}"), CT), &msg), DdsOutcome::Miss);
    }
    assert!(outcome(&c, &TemplateKey::new("c0", CT), &msg).is_hit()); // c1 is now least recent
    assert_eq!(outcome(&c, &TemplateKey::new("c3", CT), &msg), DdsOutcome::Miss);
    assert_eq!(c.stats().evictions, 1);
    assert!(outcome(&c, &TemplateKey::new("c0", CT), &msg).is_hit());
    assert_eq!(outcome(&c, &TemplateKey::new("c1", CT), &msg), DdsOutcome::Miss);
    assert_eq!(c.stats().templates, 3);

    // Byte cap: room for about two templates of this size.
    let big = message(Style::Gsoap, V11, &create_entry(200, 0));
    let probe = DdsCache::new(one_shard());
    outcome(&probe, &TemplateKey::new("p", CT), &big);
    let one = probe.stats().template_bytes;
    let c = DdsCache::new(DdsConfig { max_bytes: one * 5 / 2, ..one_shard() });
    for k in 0..4 {
        outcome(&c, &TemplateKey::new(format!("b{k}"), CT), &big);
        assert!(c.stats().template_bytes <= one * 5 / 2);
    }
    let s = c.stats();
    assert_eq!((s.templates, s.evictions), (2, 2), "{s:?}");
    // The caps are global, not split across shards: a template may use most of max_bytes,
    // and LRU entries of other shards make room.
    let c = DdsCache::new(DdsConfig { max_bytes: one * 5 / 2, shards: 8, ..DdsConfig::default() });
    for k in 0..12 {
        outcome(&c, &TemplateKey::new(format!("m{k}"), CT), &big);
        let s = c.stats();
        assert!(s.template_bytes <= one * 5 / 2 && s.templates == (k + 1).min(2), "{s:?}");
    }
    let c = DdsCache::new(DdsConfig { max_templates: 3, shards: 8, ..DdsConfig::default() });
    for k in 0..20 {
        outcome(&c, &TemplateKey::new(format!("n{k}"), CT), &msg);
        assert!(c.stats().templates <= 3);
    }
    c.clear();
    assert_eq!((c.stats().templates, c.stats().template_bytes), (0, 0));
    outcome(&c, &TemplateKey::new("after-clear", CT), &msg);
    assert_eq!(c.stats().templates, 1);
    // A message whose template alone exceeds the cap is parsed but not cached.
    let c = DdsCache::new(DdsConfig { max_bytes: one / 2, ..one_shard() });
    assert_eq!(outcome(&c, &TemplateKey::new("x", CT), &big), DdsOutcome::Miss);
    assert_eq!(outcome(&c, &TemplateKey::new("x", CT), &big), DdsOutcome::Miss);
    assert_eq!((c.stats().templates, c.stats().unrecordable), (0, 2));
}

#[test]
fn idle_templates_expire() {
    let c = DdsCache::new(DdsConfig { idle: Duration::from_millis(30), ..one_shard() });
    let key = TemplateKey::new("idle", CT);
    let msg = message(Style::Zeep, V11, &set_attributes(5, 0));
    assert_eq!(outcome(&c, &key, &msg), DdsOutcome::Miss);
    assert!(outcome(&c, &key, &msg).is_hit());
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(outcome(&c, &key, &msg), DdsOutcome::Miss);
    assert_eq!(c.stats().expirations, 1);
    outcome(&c, &TemplateKey::new("other", CT), &msg);
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(c.purge_idle(), 2);
    assert_eq!(c.stats().templates, 0);
}

#[test]
fn repeated_declines_back_off_and_recover() {
    let c = DdsCache::new(DdsConfig { backoff_after: 2, ..one_shard() });
    let key = TemplateKey::new("flappy", CT);
    // Alternate two structures: every message declines against the previous one.
    let a = |n| {
        message(
            Style::Zeep,
            V11,
            &Request::Query { select: vec!["x".into()], condition: None, order_by: None, page_size: n },
        )
    };
    assert_eq!(outcome(&c, &key, &a(None)), DdsOutcome::Miss);
    let mut outcomes = Vec::new();
    for k in 0..12 {
        outcomes.push(outcome(&c, &key, &a(if k % 2 == 0 { Some(1) } else { None })));
    }
    assert!(outcomes.contains(&DdsOutcome::Bypassed), "{outcomes:?}");
    let s = c.stats();
    assert!(s.bypassed >= 4 && s.templates_recorded < 13, "{s:?}");
    // A steady client recovers: after the skip window it hits again.
    let mut hit = false;
    for _ in 0..200 {
        hit |= outcome(&c, &key, &a(Some(7))).is_hit();
    }
    assert!(hit);
}

/// `parse_checked`'s check runs before every full parse (a miss, a decline, a bypass), its error
/// is the answer and records nothing; a hit never runs it.
#[test]
fn the_check_runs_before_every_full_parse_and_never_for_a_hit() {
    let c = DdsCache::new(DdsConfig { backoff_after: 2, ..one_shard() });
    let key = TemplateKey::new("checked", CT);
    let limits = Limits::default();
    let checks = std::cell::Cell::new(0);
    let parse = |msg: &[u8]| {
        let (p, o) = c
            .parse_checked(&key, msg, V11, &limits, || {
                checks.set(checks.get() + 1);
                Ok(())
            })
            .unwrap();
        assert_eq!(p, parse_request(msg, V11, &limits).unwrap());
        o
    };
    let q = |n| {
        message(
            Style::Zeep,
            V11,
            &Request::Query { select: vec!["x".into()], condition: None, order_by: None, page_size: n },
        )
    };
    let refused = SoapError::NotWellFormed("refused by the check".into());
    assert_eq!(c.parse_checked(&key, &q(Some(1)), V11, &limits, || Err(refused.clone())).unwrap_err(), refused);
    assert_eq!((c.stats().templates_recorded, c.stats().full_parse_errors), (0, 0));
    assert_eq!(parse(&q(Some(1))), DdsOutcome::Miss);
    assert_eq!(checks.get(), 1);
    assert!(parse(&q(Some(2))).is_hit());
    assert!(parse(&q(Some(1))).is_hit());
    assert_eq!(checks.get(), 1, "a hit runs no check");
    for k in 0..8 {
        let before = checks.get();
        let o = parse(&q(if k % 2 == 0 { None } else { Some(3) }));
        assert!(matches!(o, DdsOutcome::Declined(_) | DdsOutcome::Bypassed), "{o:?}");
        assert_eq!(checks.get(), before + 1, "{o:?}");
    }
    assert!(c.stats().bypassed > 0);
    // A failing check after a decline is the answer too, and the template stays.
    let before = c.stats().templates_recorded;
    let e = c.parse_checked(&key, &q(None), V11, &limits, || Err(refused.clone())).unwrap_err();
    assert_eq!((e, c.stats().templates_recorded), (refused, before));
    assert_eq!(checks.get(), 1 + 8);
}

#[test]
fn shadow_mode_checks_every_hit() {
    let c = DdsCache::new(DdsConfig { shadow: true, ..DdsConfig::default() });
    let key = TemplateKey::new("s", CT);
    for pct in [0, 1, 10, 50, 100] {
        outcome(&c, &key, &message(Style::Gsoap, V11, &create_entry(30, pct)));
    }
    let s = c.stats();
    assert_eq!((s.hits, s.shadow_checks, s.shadow_mismatches), (4, 4, 0));
}

#[test]
fn utf16_is_parsed_but_not_templated() {
    let c = DdsCache::new(one_shard());
    let key = TemplateKey::new("u", CT);
    let text =
        String::from_utf8(message(Style::Jaxws, V11, &Request::ListAttributes { entry_name: "/é".into() })).unwrap();
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    assert_eq!(outcome(&c, &key, &utf16), DdsOutcome::Miss);
    assert_eq!(outcome(&c, &key, &utf16), DdsOutcome::Miss);
    assert_eq!(c.stats().unrecordable, 2);
}

#[test]
fn errors_pass_through_unchanged() {
    let c = DdsCache::new(one_shard());
    let key = TemplateKey::new("e", CT);
    let msg = message(Style::Zeep, V11, &set_attributes(3, 0));
    outcome(&c, &key, &msg);
    let limits = Limits { max_body_bytes: 10, ..Limits::default() };
    assert_eq!(c.parse(&key, &msg, V11, &limits).unwrap_err(), SoapError::BodyTooLarge { size: msg.len(), limit: 10 });
    let s = String::from_utf8(msg.clone()).unwrap().replace("a1<", "&nbsp;<");
    assert_eq!(
        c.parse(&key, s.as_bytes(), V11, &Limits::default()).unwrap_err(),
        SoapError::UndeclaredEntity("nbsp".into())
    );
    assert!(matches!(
        c.parse(&key, &msg, SoapVersion::V12, &Limits::default()).unwrap_err(),
        SoapError::VersionMismatch { .. }
    ));
}

#[test]
fn concurrent_clients_agree_with_the_full_parser() {
    let c = Arc::new(DdsCache::new(DdsConfig { shadow: true, max_templates: 8, ..DdsConfig::default() }));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let c = c.clone();
            std::thread::spawn(move || {
                for round in 0..40u32 {
                    let key = TemplateKey::new(format!("client{}", (t + round as usize) % 6), CT);
                    let style = [Style::Zeep, Style::Gsoap, Style::Jaxws][(round % 3) as usize];
                    let req = if round % 2 == 0 {
                        set_attributes(20, round % 7 * 10)
                    } else {
                        create_entry(5 + round as usize % 3, 10)
                    };
                    let msg = message(style, V11, &req);
                    let (p, _) = c.parse(&key, &msg, V11, &Limits::default()).unwrap();
                    assert_eq!(p.request, req);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = c.stats();
    assert_eq!(s.shadow_mismatches, 0);
    assert!(s.hits > 0 && s.templates <= 8, "{s:?}");
}
